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


def update(stats: RunningStats, batch: jax.Array, until: int = 0) -> RunningStats:
    """Merges a batch [N, obs_size] into the statistics (Chan et al. parallel variance: the
    same moments as Brax's Welford and "ema" modes, which differ only in rounding). `until`
    > 0: once the count, this batch's included, exceeds it, the mean and variance stay as
    they were and only the count grows (Brax's `normalize_until_count`)."""
    if isinstance(stats, dict):
        return {key: update(stats[key], batch[key], until) for key in stats}
    n = jnp.asarray(batch.shape[0], jnp.float32)
    batch_mean = batch.mean(0)
    batch_var = batch.var(0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + batch_var * n + delta**2 * stats.count * n / total
    if until:
        frozen = total > until
        mean, m2 = jnp.where(frozen, stats.mean, mean), jnp.where(frozen, stats.var * total, m2)
    return RunningStats(mean, m2 / total, total)


def normalize(
    stats: RunningStats, obs: jax.Array, clip: float = 10.0, std_eps: float = 0.0
) -> jax.Array:
    """(obs - mean) / sqrt(var + std_eps), clipped to [-clip, clip] (clip 0: not clipped);
    1e-8 more under the root keeps a constant dimension finite."""
    if isinstance(stats, dict):
        return {key: normalize(stats[key], obs[key], clip, std_eps) for key in stats}
    normalized = (obs - stats.mean) / jnp.sqrt(stats.var + (1e-8 + std_eps))
    return jnp.clip(normalized, -clip, clip) if clip else normalized
