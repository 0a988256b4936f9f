"""Every agent's config class, in modules that import no jax, flax nor optax: `jaxrl train
--help`, the registry (`jaxrl.agents.ALGORITHMS`) and config checks read them without building
an agent. The agents' modules (`jaxrl.agents.sac`, ...) re-export their config; the networks'
shared settings are `network.NetworkSettings` and `network.InitSettings`."""

from jaxrl.agents.configs.network import InitSettings, NetworkSettings
from jaxrl.agents.configs.offline import (
    E2OConfig,
    EDACConfig,
    ReBRACConfig,
    SACNConfig,
    SACRNDConfig,
    TD3BCConfig,
)
from jaxrl.agents.configs.ppo import PPOConfig
from jaxrl.agents.configs.sac import (
    CrossQConfig,
    DroQConfig,
    DSACTConfig,
    FastSACConfig,
    REDQConfig,
    SACConfig,
)
from jaxrl.agents.configs.td3 import FastTD3Config, PQLConfig, TD3Config

__all__ = [
    "CrossQConfig",
    "DSACTConfig",
    "DroQConfig",
    "E2OConfig",
    "EDACConfig",
    "FastSACConfig",
    "FastTD3Config",
    "InitSettings",
    "NetworkSettings",
    "PPOConfig",
    "PQLConfig",
    "REDQConfig",
    "ReBRACConfig",
    "SACConfig",
    "SACNConfig",
    "SACRNDConfig",
    "TD3BCConfig",
    "TD3Config",
]
