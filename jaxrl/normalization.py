"""Running observation statistics held in the train state (pure init / update / normalize).

Asymmetric actor-critic observations (`jaxrl.observations`) are a dict of arrays: their
statistics are a dict of the same keys, each entry normalised with its own."""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class RunningStats:
    mean: jax.Array  # [obs_size]
    var: jax.Array  # [obs_size]
    count: jax.Array  # scalar float32


def init(size: int | dict[str, int]) -> RunningStats | dict[str, RunningStats]:
    if isinstance(size, dict):
        return {key: init(value) for key, value in size.items()}
    return RunningStats(jnp.zeros(size), jnp.ones(size), jnp.zeros(()))


def update(stats: RunningStats, batch: jax.Array) -> RunningStats:
    """Merges a batch [N, obs_size] into the statistics (Chan et al. parallel variance)."""
    if isinstance(stats, dict):
        return {key: update(stats[key], batch[key]) for key in stats}
    n = jnp.asarray(batch.shape[0], jnp.float32)
    batch_mean = batch.mean(0)
    batch_var = batch.var(0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + batch_var * n + delta**2 * stats.count * n / total
    return RunningStats(mean, m2 / total, total)


def normalize(stats: RunningStats, obs: jax.Array, clip: float = 10.0) -> jax.Array:
    """(obs - mean) / std, clipped to [-clip, clip] (clip 0: not clipped)."""
    if isinstance(stats, dict):
        return {key: normalize(stats[key], obs[key], clip) for key in stats}
    normalized = (obs - stats.mean) / jnp.sqrt(stats.var + 1e-8)
    return jnp.clip(normalized, -clip, clip) if clip else normalized
