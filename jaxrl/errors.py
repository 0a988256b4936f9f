"""The errors bad settings raise, before anything is compiled (the CLI exits 2 on them).

Their own module, imported by the modules that raise them and importing nothing: the config,
the agents and the envs each raise them without importing one another.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """An inconsistent or out-of-range setting, found before anything is compiled."""


class EnvOptionError(ValueError):
    """An env option, task or asset that the env cannot take."""
