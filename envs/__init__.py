"""Environment registry and wrappers: `envs.make("playground/CheetahRun")`, `envs.make_vec(...)`."""

from envs.registry import (
    BRAX_BACKENDS,
    FAMILIES,
    EnvOptionError,
    UnknownEnvError,
    check_name,
    list_envs,
    make,
    make_vec,
    wrap,
)
from envs.wrappers import ActionRepeat, AutoResetWrapper, EpisodeWrapper, VmapWrapper

__all__ = [
    "BRAX_BACKENDS",
    "FAMILIES",
    "ActionRepeat",
    "AutoResetWrapper",
    "EnvOptionError",
    "EpisodeWrapper",
    "UnknownEnvError",
    "VmapWrapper",
    "check_name",
    "list_envs",
    "make",
    "make_vec",
    "wrap",
]
