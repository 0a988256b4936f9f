"""What Brax's trainers' arguments mean to jaxrl, shared by the doors (`jaxrl.brax.ppo`,
`jaxrl.brax.sac`): checks that raise a ConfigError naming the argument, Brax's units in jaxrl's,
and the parameters a run starts from (`restore_checkpoint_path`, read by Brax's own loader).
"""

from __future__ import annotations

import numbers
from typing import Any

from jaxrl.errors import ConfigError


def refuse(s: dict, refused: dict, door: str) -> None:
    """A ConfigError for the first argument of `s` that `refused` ({name: (allowed, why)})
    does not allow."""
    for name, (allowed, why) in refused.items():
        value = s[name]
        if value is allowed or value == allowed:
            continue
        raise ConfigError(f"{name}={value!r} cannot be honoured by {door}: {why}")


def is_integer(value: Any) -> bool:
    """An int or a numpy integer (Brax takes either), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def integer(s: dict, name: str) -> int:
    """`s[name]` as an int, else a ConfigError."""
    if not is_integer(s[name]):
        raise ConfigError(f"{name} must be an integer, got {s[name]!r}")
    return int(s[name])


def positive(s: dict, name: str) -> int:
    """`s[name]` as an int >= 1, else a ConfigError."""
    if not is_integer(s[name]) or s[name] < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {s[name]!r}")
    return int(s[name])


def episode_length(s: dict, env: Any, repeat: int) -> int:
    """jaxrl's time limit in control steps from Brax's in physics steps (its EpisodeWrapper
    ends an episode once steps x action_repeat reach episode_length); where None, the env's
    own `episode_length` or its Playground config's."""
    from jaxrl import envs

    length = s["episode_length"]
    if length is None:
        length = getattr(env, "episode_length", None) or envs.config_value(env, "episode_length")
        if length is None:
            raise ConfigError(
                f"episode_length=None and the env ({type(env).__name__}) has none of its own: "
                "pass episode_length (physics steps, as Brax counts them)"
            )
        return int(length)  # the env's own count is of control steps
    return -(-positive(s, "episode_length") // repeat)


def devices(max_devices_per_host: int | None) -> int | str:
    """jaxrl's `devices` for Brax's max_devices_per_host (0: one device, unsharded)."""
    import jax

    local = jax.local_device_count()
    if max_devices_per_host is not None and max_devices_per_host < 1:
        raise ConfigError(f"max_devices_per_host must be >= 1, got {max_devices_per_host}")
    count = min(local, max_devices_per_host or local)
    return 0 if count == 1 else count


def checked_env(env: Any) -> Any:
    """The unwrapped env, which jaxrl wraps itself (`factories.autoreset_of` reads the
    caller's `wrap_env_fn`), its observation size read once (`envs.traced_size`): the door,
    its checks and the loops read it several times, and Brax's property runs an eager reset
    at each read (benchmarks/notes/2026-12-07-door-speed-step-0.md), Playground's a trace."""
    from jaxrl import envs

    try:
        envs.check_env_object(env)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"environment: {error}") from None
    return envs.traced_size(env)


def checked_envs(env: Any, eval_env: Any) -> Any:
    """What the trainer is given: the unwrapped `env` (`checked_env`), or, with Brax's
    `eval_env`, an `envs.WithEvalEnv` of the two, whose sizes must agree; both are wrapped
    alike, as Brax wraps its `eval_env` as it wraps the training env."""
    from jaxrl import envs

    env = checked_env(env)
    if eval_env is None:
        return env
    both = envs.WithEvalEnv(env, envs.traced_size(eval_env))
    try:
        envs.split_eval_env(both)  # compared here, and not again by the driver and loops
    except (TypeError, ValueError) as error:
        raise ConfigError(f"eval_env: {error}") from None
    return both


def load_checkpoint(path: Any, checkpoint_module: Any) -> Any:
    """Brax's params in the checkpoint folder `path` (a `<step>/` folder Brax's trainer wrote),
    read by that trainer's own `checkpoint.load`; None where `path` is None."""
    if path is None:
        return None
    try:
        return checkpoint_module.load(path)
    except (OSError, ValueError) as error:  # a missing path, or not an orbax checkpoint
        raise ConfigError(f"restore_checkpoint_path={str(path)!r}: {error}") from None


def cast_like(tree: Any, like: Any, what: str) -> Any:
    """`tree` (restored parameters or statistics) in the dtypes of `like`, whose structure and
    shapes it must have, else a ConfigError saying what does not fit."""
    import jax
    import jax.numpy as jnp

    shapes = lambda t: jax.tree.map(jnp.shape, t)  # noqa: E731
    if jax.tree.structure(tree) != jax.tree.structure(like) or shapes(tree) != shapes(like):
        raise ConfigError(
            f"{what}: the parameters do not fit the networks network_factory builds here "
            f"({shapes(tree)} against {shapes(like)})"
        )
    return jax.tree.map(lambda x, y: jnp.asarray(x, y.dtype), tree, like)
