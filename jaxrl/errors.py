"""The base of every error jaxrl raises on bad input or a run it cannot carry on, and the
errors bad settings raise before anything is compiled.

Their own module, imported by the modules that raise them and importing nothing: the config,
the agents and the envs each raise them without importing one another. Each error also keeps
the standard base it had (ValueError, ...), so code that caught those still catches them.
"""

from __future__ import annotations

from typing import Any


class JaxrlError(Exception):
    """An error jaxrl reports as a message, not a traceback: the CLI prints it and exits 2,
    with nothing written. Every jaxrl error derives from it; `except JaxrlError` catches them
    all."""


class ConfigError(JaxrlError, ValueError):
    """An inconsistent or out-of-range setting, found before anything is compiled."""


class SavedConfigError(ConfigError):
    """A bad value in a config.json (a run's, or one written by hand): named by its field, as
    the file spells it, not by a command-line flag."""


class EnvOptionError(JaxrlError, ValueError):
    """An env option, task or asset that the env cannot take."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during training: the chunk under way finished, a checkpoint was saved. `result`:
    the run's `RunResult` (jaxrl.run.plan) up to there. A KeyboardInterrupt, not a JaxrlError:
    the CLI exits 130 on it."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result
