"""Environment registry and wrappers: `envs.make("playground/CheetahRun")`, `envs.make_vec(...)`,
and the user's own envs: `envs.register("mylab/Task", factory)`."""

from jaxrl.envs import skip_warp
from jaxrl.envs.registry import (
    BRAX_BACKENDS,
    FAMILIES,
    EnvImportError,
    EnvOptionError,
    RegistrationError,
    TracedSize,
    UnknownEnvError,
    WithEvalEnv,
    adapt,
    bounded_actions,
    check_env_object,
    check_name,
    episode_env,
    families,
    import_modules,
    list_envs,
    make,
    make_vec,
    register,
    split_eval_env,
    traced_size,
    unregister,
    wrap,
)
from jaxrl.envs.wrappers import ActionRepeat, AutoResetWrapper, EpisodeWrapper, VmapWrapper

# Before anything imports MuJoCo's MJX (the registry and the wrappers import no simulator).
skip_warp.install()

__all__ = [
    "BRAX_BACKENDS",
    "FAMILIES",
    "ActionRepeat",
    "AutoResetWrapper",
    "EnvImportError",
    "EnvOptionError",
    "RegistrationError",
    "EpisodeWrapper",
    "UnknownEnvError",
    "WithEvalEnv",
    "VmapWrapper",
    "adapt",
    "bounded_actions",
    "check_env_object",
    "check_name",
    "episode_env",
    "families",
    "import_modules",
    "list_envs",
    "make",
    "make_vec",
    "register",
    "split_eval_env",
    "TracedSize",
    "traced_size",
    "unregister",
    "wrap",
]
