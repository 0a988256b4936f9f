"""Agent registry: name -> (config class, make(config) -> Agent)."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxrl.agents import crossq, droq, dsac_t, fast_td3, ppo, pql, redq, sac, td3
from jaxrl.agents.base import Agent
from jaxrl.errors import JaxrlError


@functools.cache
def _on_policy(config_cls: type, make: Callable[[Any], Agent]) -> bool:
    return make(config_cls()).on_policy


class AlgorithmSpec(NamedTuple):
    config_cls: type
    make: Callable[[Any], Agent]
    description: str

    @property
    def on_policy(self) -> bool:
        """Trained by the on-policy loop (rollouts) instead of replay. Said in one place, the
        agent (`Agent.on_policy`: it has `explore`), read here from the default config's."""
        return _on_policy(self.config_cls, self.make)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "sac": AlgorithmSpec(sac.SACConfig, sac.make, "Soft Actor-Critic, learned temperature"),
    "redq": AlgorithmSpec(
        redq.REDQConfig, redq.make, "REDQ: 10 critics, random-subset target min, mean actor"
    ),
    "droq": AlgorithmSpec(droq.DroQConfig, droq.make, "DroQ: dropout + LayerNorm critics"),
    "crossq": AlgorithmSpec(
        crossq.CrossQConfig, crossq.make, "CrossQ: BatchRenorm, joint pass, no target network"
    ),
    "dsac_t": AlgorithmSpec(
        dsac_t.DSACTConfig, dsac_t.make, "DSAC-T: Gaussian distributional twin critics, SAC"
    ),
    "td3": AlgorithmSpec(td3.TD3Config, td3.make, "TD3: clipped double Q, smoothing, delay"),
    "fast_td3": AlgorithmSpec(
        fast_td3.FastTD3Config, fast_td3.make, "FastTD3: C51 twin critic, per-env noise, AdamW"
    ),
    "pql": AlgorithmSpec(
        pql.PQLConfig, pql.make, "Parallel Q-Learning: mixed exploration, n-step, no target actor"
    ),
    "ppo": AlgorithmSpec(
        ppo.PPOConfig, ppo.make, "PPO: clipped surrogate, GAE, on-policy rollouts"
    ),
}


class UnknownAlgorithmError(JaxrlError, ValueError):
    pass


def get(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        close = difflib.get_close_matches(name, ALGORITHMS, n=3, cutoff=0.4)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownAlgorithmError(
            f"Unknown algorithm {name!r}.{hint} Available: {', '.join(ALGORITHMS)}."
        )
    return ALGORITHMS[name]


__all__ = ["ALGORITHMS", "Agent", "AlgorithmSpec", "UnknownAlgorithmError", "get"]


def algorithm_of(agent_config: Any) -> str:
    """The name of the algorithm whose config `agent_config` is (its exact class)."""
    from jaxrl.errors import ConfigError

    for name, spec in ALGORITHMS.items():
        if type(agent_config) is spec.config_cls:
            return name
    raise ConfigError(f"no algorithm takes a {type(agent_config).__name__}")
