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


def normalizer_to_brax(stats: RunningStats, std_eps: float = 0.0, mode: str = "welford"):
    """A Brax `RunningStatisticsState` holding `stats`' moments in Brax's `mode`: "welford"
    keeps the summed squared deviations in `summed_variance`, "ema" the variance itself; the
    std is Brax's, sqrt(var + std_eps) clipped."""
    from brax.training import types
    from brax.training.acme import running_statistics

    if isinstance(stats, dict):
        raise ConfigError("dict observations' statistics have no Brax PPO counterpart yet")
    count = int(round(float(np.asarray(stats.count))))
    var = jnp.asarray(stats.var, jnp.float32)
    ema = mode == "ema"
    return running_statistics.RunningStatisticsState(
        count=types.UInt64(hi=count >> 32, lo=count & 0xFFFFFFFF),
        mean=jnp.asarray(stats.mean, jnp.float32),
        summed_variance=var if ema else var * count,
        std=jnp.clip(jnp.sqrt(var + std_eps), STD_MIN, STD_MAX),
        std_eps=std_eps,
        mode=running_statistics._mode_from_string(mode),  # Brax's own names for its modes
    )


def normalizer_from_brax(state: Any) -> RunningStats:
    """jaxrl's statistics of a Brax `RunningStatisticsState` of either mode (the variance 1
    at count 0, as jaxrl's fresh statistics)."""
    from brax.training.acme import running_statistics

    count = int(state.count) if hasattr(state.count, "hi") else int(np.asarray(state.count))
    ema = getattr(state, "mode", 0) == running_statistics.NormalizationMode.EMA
    if not count:
        var = jnp.ones_like(state.mean)
    else:
        var = state.summed_variance if ema else state.summed_variance / count
    return RunningStats(jnp.asarray(state.mean), jnp.asarray(var), jnp.asarray(count, jnp.float32))


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
