"""jaxrl's PPO and SAC parameters and observation statistics in Brax's layouts, and back.

Brax's `ppo.train` returns `(normalizer_params, policy_params, value_params)`: a
`running_statistics.RunningStatisticsState` and the two networks' flax trees as
`ppo_networks.make_ppo_networks` builds them (`{"params": {"hidden_0": ..., "hidden_L": ...}}`).
jaxrl's PPO keeps `{"policy": {"params": {"MLP_0": {"Dense_i": ...}}}, "value": {"params":
{"Dense_i": ...}}}` and a `normalization.RunningStats`. The layers are the same matrices in the
same order (jaxrl's default PPO widths are Brax's), so a rename carries them both ways; a tree
with any other module (LayerNorm, a residual block) has no Brax counterpart and is refused.
Brax's `sac.train` returns `(normalizer_params, policy_params)`, the policy the same MLP
(`hidden_i`) that jaxrl's SAC policy keeps as `{"params": {"MLP_0": {"Dense_i": ...}}}`.

The statistics: Brax keeps the count as a `UInt64`, the summed squared deviations and the std
(clipped to [1e-6, 1e6], as its `update` leaves it); jaxrl the float count and the variance.
"""

from __future__ import annotations

import re
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxrl.errors import ConfigError
from jaxrl.normalization import RunningStats

_DENSE, _HIDDEN = re.compile(r"Dense_(\d+)$"), re.compile(r"hidden_(\d+)$")
STD_MIN, STD_MAX = 1e-6, 1e6  # Brax's running_statistics.update defaults


def _renamed(layers: dict, pattern: re.Pattern, name: str, what: str) -> dict:
    out = {}
    for key, value in layers.items():
        match = pattern.match(key)
        if match is None:
            raise ConfigError(f"{what}: layer {key!r} has no counterpart in Brax's PPO networks")
        out[name.format(match.group(1))] = value
    return out


def ppo_to_brax(
    agent_params: dict, stats: RunningStats, std_eps: float = 0.0, mode: str = "welford"
) -> tuple:
    """(normalizer_params, policy_params, value_params) as Brax's `ppo.train` returns them,
    from one member's PPO parameters and observation statistics."""
    policy = agent_params["policy"]["params"]
    if set(policy) != {"MLP_0"}:
        raise ConfigError(f"the policy network holds {sorted(policy)}: Brax's is one MLP")
    hidden = "hidden_{}"
    policy = _renamed(policy["MLP_0"], _DENSE, hidden, "the policy network")
    value = _renamed(agent_params["value"]["params"], _DENSE, hidden, "the value network")
    return normalizer_to_brax(stats, std_eps, mode), {"params": policy}, {"params": value}


def ppo_from_brax(params: tuple) -> tuple[dict, RunningStats]:
    """jaxrl's PPO parameters and observation statistics from Brax's triple."""
    normalizer, policy, value = params
    dense = "Dense_{}"
    return (
        {
            "policy": {"params": {"MLP_0": _renamed(policy["params"], _HIDDEN, dense, "policy")}},
            "value": {"params": _renamed(value["params"], _HIDDEN, dense, "value")},
        },
        normalizer_from_brax(normalizer),
    )


def normalizer_to_brax(stats: Any, std_eps: float = 0.0, mode: str = "welford"):
    """A Brax `RunningStatisticsState` holding `stats`' moments in Brax's `mode`: "welford"
    keeps the summed squared deviations in `summed_variance`, "ema" the variance itself; the
    std is Brax's, sqrt(var + std_eps) clipped. Dict observations' statistics (one entry per
    observation key) become Brax's of the same keys, under one count, as Brax keeps them."""
    from brax.training import types
    from brax.training.acme import running_statistics

    ema = mode == "ema"
    entries = stats if isinstance(stats, dict) else {None: stats}
    counts = {int(round(float(np.asarray(entry.count)))) for entry in entries.values()}
    if len(counts) != 1:  # updated together, so never apart; Brax keeps one count
        raise ConfigError(f"the observation entries' statistics hold different counts {counts}")
    (count,) = counts

    def moments(entry: RunningStats) -> tuple:
        var = jnp.asarray(entry.var, jnp.float32)
        summed = var if ema else var * count
        return (
            jnp.asarray(entry.mean, jnp.float32),
            summed,
            jnp.clip(jnp.sqrt(var + std_eps), STD_MIN, STD_MAX),
        )

    parts = {key: moments(entry) for key, entry in entries.items()}

    def tree(i: int) -> Any:
        if not isinstance(stats, dict):
            return parts[None][i]
        return {key: part[i] for key, part in parts.items()}

    return running_statistics.RunningStatisticsState(
        count=types.UInt64(hi=count >> 32, lo=count & 0xFFFFFFFF),
        mean=tree(0),
        summed_variance=tree(1),
        std=tree(2),
        std_eps=std_eps,
        mode=running_statistics._mode_from_string(mode),  # Brax's own names for its modes
    )


def normalizer_from_brax(state: Any) -> Any:
    """jaxrl's statistics of a Brax `RunningStatisticsState` of either mode (the variance 1
    at count 0, as jaxrl's fresh statistics); a dict of them where Brax's are per key."""
    from brax.training.acme import running_statistics

    count = int(state.count) if hasattr(state.count, "hi") else int(np.asarray(state.count))
    ema = getattr(state, "mode", 0) == running_statistics.NormalizationMode.EMA

    def entry(mean: Any, summed: Any) -> RunningStats:
        if not count:
            var = jnp.ones_like(mean)
        else:
            var = summed if ema else summed / count
        return RunningStats(jnp.asarray(mean), jnp.asarray(var), jnp.asarray(count, jnp.float32))

    if isinstance(state.mean, dict):
        return {key: entry(state.mean[key], state.summed_variance[key]) for key in state.mean}
    return entry(state.mean, state.summed_variance)


def stats_by_key(stats: Any, keys: tuple[str, str], observation_size: Any) -> Any:
    """jaxrl's observation statistics as Brax keeps them for the env's observations: an
    array's as they are; a dict's per entry of the env's dict, `keys` = (the actor's entry,
    the critic's). jaxrl keeps statistics of the entries its networks read (one, or
    {"actor", "critic"}: `jaxrl.observations`); an entry neither reads gets fresh ones (mean 0,
    variance 1) at the same count, so that Brax's tree holds every entry, as its own does."""
    if not isinstance(observation_size, dict):
        return stats
    from jaxrl.observations import ACTOR, CRITIC

    actor, critic = keys
    kept = (
        {actor: stats[ACTOR], critic: stats[CRITIC]} if isinstance(stats, dict) else {actor: stats}
    )
    count = next(iter(kept.values())).count
    out = {}
    for key, shape in observation_size.items():
        if key.startswith("pixels/"):  # Brax's normaliser leaves pixels out
            continue
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        out[key] = (
            kept[key] if key in kept else RunningStats(jnp.zeros(shape), jnp.ones(shape), count)
        )
    return out


def stats_of_view(stats: Any, keys: tuple[str, str]) -> Any:
    """`stats_by_key`'s inverse: Brax's per-entry statistics as jaxrl's networks read them."""
    if not isinstance(stats, dict):
        return stats
    from jaxrl.observations import ACTOR, CRITIC

    actor, critic = keys
    return stats[actor] if actor == critic else {ACTOR: stats[actor], CRITIC: stats[critic]}


def sac_to_brax(actor_params: dict, stats: RunningStats) -> tuple:
    """(normalizer_params, policy_params) as Brax's `sac.train` returns them, from one
    member's SAC policy parameters (a GaussianActor's `{"params": {"MLP_0": ...}}`) and
    observation statistics."""
    policy = actor_params["params"]
    if set(policy) != {"MLP_0"}:
        raise ConfigError(f"the policy network holds {sorted(policy)}: Brax's is one MLP")
    policy = _renamed(policy["MLP_0"], _DENSE, "hidden_{}", "the policy network")
    return normalizer_to_brax(stats), {"params": policy}


def sac_from_brax(params: tuple) -> tuple[dict, RunningStats]:
    """jaxrl's SAC policy parameters and observation statistics from Brax's pair."""
    normalizer, policy = params[0], params[1]
    layers = _renamed(policy["params"], _HIDDEN, "Dense_{}", "policy")
    return {"params": {"MLP_0": layers}}, normalizer_from_brax(normalizer)
