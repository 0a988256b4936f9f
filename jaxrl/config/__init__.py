"""The config layer: `TrainConfig` (jaxrl.config.train), the errors bad settings raise, and,
imported on its own, `jaxrl.config.resolve`, which resolves a command line into configs
(defaults < preset or saved config < flags)."""

from jaxrl.config.train import (
    EXPLORATION_MODES,
    LOOP_DEFAULTS,
    RANDOMIZERS,
    REPLAY_OBS_DTYPES,
    WARMUP_ACTIONS,
    TrainConfig,
)
from jaxrl.errors import ConfigError

__all__ = [
    "EXPLORATION_MODES",
    "LOOP_DEFAULTS",
    "RANDOMIZERS",
    "REPLAY_OBS_DTYPES",
    "WARMUP_ACTIONS",
    "ConfigError",
    "TrainConfig",
]
