"""Agent registry: name -> (config class, description, on-policy or not, make(config) -> Agent).

Imports no jax, flax nor optax: the table names each algorithm's config class (jax-free,
`jaxrl.agents.configs`) and the module of its `make`, imported only when an agent is built, so
`jaxrl train --help`, the config checks and `algorithm_of` never pay for jax."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from jaxrl.agents import configs
from jaxrl.errors import JaxrlError

if TYPE_CHECKING:
    from jaxrl.agents.base import Agent


class AlgorithmSpec(NamedTuple):
    config_cls: type
    module: str
    """The module whose `make(config) -> Agent` builds the agent (imported by `make`)."""
    description: str
    on_policy: bool
    """Trained by the on-policy loop (rollouts) instead of replay: the agent has `explore`
    (`Agent.on_policy`). Said here without building the agent; tests/test_registry.py checks
    that it is `make(config_cls()).on_policy` for every algorithm."""

    @property
    def make(self) -> Callable[[Any], Agent]:
        """The agent's `make`, its module imported (with jax) on first use."""
        return importlib.import_module(self.module).make


def _spec(config_cls: type, name: str, description: str, on_policy: bool = False):
    return AlgorithmSpec(config_cls, f"jaxrl.agents.{name}", description, on_policy)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "sac": _spec(configs.SACConfig, "sac", "Soft Actor-Critic, learned temperature"),
    "redq": _spec(
        configs.REDQConfig, "redq", "REDQ: 10 critics, random-subset target min, mean actor"
    ),
    "droq": _spec(configs.DroQConfig, "droq", "DroQ: dropout + LayerNorm critics"),
    "crossq": _spec(
        configs.CrossQConfig, "crossq", "CrossQ: BatchRenorm, joint pass, no target network"
    ),
    "dsac_t": _spec(
        configs.DSACTConfig, "dsac_t", "DSAC-T: Gaussian distributional twin critics, SAC"
    ),
    "fast_sac": _spec(
        configs.FastSACConfig, "fast_sac", "FastSAC: C51 twin critics, LayerNorm, AdamW, SAC"
    ),
    "sac_n": AlgorithmSpec(
        configs.SACNConfig, "jaxrl.agents.edac", "SAC-N: SAC, N critics, target min over all", False
    ),
    "edac": _spec(configs.EDACConfig, "edac", "EDAC: SAC-N plus critic action-gradient diversity"),
    "e2o": _spec(
        configs.E2OConfig, "e2o", "E2O: SAC-N/EDAC offline, then online: pair-min target, UCB"
    ),
    "sac_rnd": _spec(
        configs.SACRNDConfig, "sac_rnd", "SAC-RND: SAC, RND anti-exploration penalty, 2 critics"
    ),
    "td3": _spec(configs.TD3Config, "td3", "TD3: clipped double Q, smoothing, delay"),
    "td3_bc": _spec(configs.TD3BCConfig, "td3_bc", "TD3+BC: TD3, actor also regressed onto data"),
    "rebrac": _spec(
        configs.ReBRACConfig, "rebrac", "ReBRAC: TD3+BC, BC penalty in critic target, LayerNorm"
    ),
    "fast_td3": _spec(
        configs.FastTD3Config, "fast_td3", "FastTD3: C51 twin critic, per-env noise, AdamW"
    ),
    "pql": _spec(
        configs.PQLConfig, "pql", "Parallel Q-Learning: mixed exploration, n-step, no target actor"
    ),
    "ppo": _spec(
        configs.PPOConfig, "ppo", "PPO: clipped surrogate, GAE, on-policy rollouts", on_policy=True
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


def __getattr__(name: str):
    """`jaxrl.agents.Agent`, imported (with jax) on first use (PEP 562, as `jaxrl` does)."""
    if name == "Agent":
        from jaxrl.agents.base import Agent

        return Agent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ALGORITHMS",
    "TAKES_NETWORKS",
    "Agent",
    "AlgorithmSpec",
    "UnknownAlgorithmError",
    "build",
    "get",
]


# The algorithms whose `make(config, nets)` takes networks of the caller's (network injection),
# and the module whose `Networks` they take.
TAKES_NETWORKS = {"ppo": "jaxrl.agents.ppo", "sac": "jaxrl.agents.sac_family"}


def build(algo: str, agent_config: Any = None, networks: Any = None) -> Agent:
    """`algo`'s agent with `agent_config` (its defaults where None), over `networks` where
    given: networks of the caller's, in the shape that algorithm's `make` takes (PPO's
    `jaxrl.agents.ppo.Networks`, SAC's `jaxrl.agents.sac_family.Networks`)."""
    from jaxrl.errors import ConfigError

    spec = get(algo)
    config = spec.config_cls() if agent_config is None else agent_config
    if networks is None:
        return spec.make(config)
    if algo not in TAKES_NETWORKS:
        raise ConfigError(
            f"networks: {algo} takes no networks of the caller's (only {', '.join(TAKES_NETWORKS)})"
        )
    expected = importlib.import_module(TAKES_NETWORKS[algo]).Networks
    if not isinstance(networks, expected):
        raise ConfigError(
            f"networks: {algo} takes a {TAKES_NETWORKS[algo]}.Networks, not a "
            f"{type(networks).__module__}.{type(networks).__name__}"
        )
    return spec.make(config, networks)


def algorithm_of(agent_config: Any) -> str:
    """The name of the algorithm whose config `agent_config` is (its exact class)."""
    from jaxrl.errors import ConfigError

    for name, spec in ALGORITHMS.items():
        if type(agent_config) is spec.config_cls:
            return name
    raise ConfigError(f"no algorithm takes a {type(agent_config).__name__}")
