"""The environment registry: `make("family/name", **options)` over Brax, MuJoCo Playground and
the pure-JAX classic tasks, all behind Brax's reset/step/State convention."""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any

from envs import classic
from envs.wrappers import (
    ActionRepeat,
    AutoResetWrapper,
    EpisodeWrapper,
    VmapWrapper,
    require_positive,
)

FAMILIES = ("brax", "playground", "classic")
BRAX_BACKENDS = ("mjx", "generalized", "positional", "spring")


class UnknownEnvError(ValueError):
    pass


class EnvOptionError(ValueError):
    pass


@functools.cache
def _brax_names() -> tuple[str, ...]:
    from brax import envs as brax_envs

    # `fast` is Brax's test stub, not a task.
    return tuple(sorted(n for n in brax_envs._envs if n != "fast"))


def _menagerie_available() -> bool:
    # Playground's locomotion and manipulation tasks load robot assets from a git clone of MuJoCo
    # Menagerie, which it downloads on first use; without network access only the tasks that
    # ship their assets in the wheel (the DM Control Suite) load.
    from mujoco_playground._src import mjx_env

    return mjx_env.MENAGERIE_PATH.exists()


@functools.cache
def _playground_names() -> tuple[str, ...]:
    from mujoco_playground import registry

    names = list(registry.dm_control_suite.ALL_ENVS)
    if _menagerie_available():
        names += list(registry.locomotion.ALL_ENVS) + list(registry.manipulation.ALL_ENVS)
    return tuple(names)


def _names_of(family: str) -> tuple[str, ...]:
    if family == "brax":
        return _brax_names()
    if family == "playground":
        return _playground_names()
    return tuple(classic.ENVS)


def list_envs(family: str | None = None) -> list[str]:
    """All registered names, as `family/name`."""
    families = FAMILIES if family is None else (family,)
    return [f"{fam}/{name}" for fam in families for name in _names_of(fam)]


def check_name(name: str) -> tuple[str, str]:
    """Splits and validates `family/name`, or raises UnknownEnvError naming close matches."""
    family, _, task = name.partition("/")
    if family in FAMILIES and task in _names_of(family):
        return family, task
    if family not in FAMILIES:
        candidates = [f"{fam}/{name}" for fam in FAMILIES]
    else:
        candidates = list_envs(family)
    if family == "playground" and not _menagerie_available():
        from mujoco_playground import registry

        if task in registry.ALL_ENVS:
            raise UnknownEnvError(
                f"playground/{task} needs the MuJoCo Menagerie robot assets, which are not "
                "installed and cannot be downloaded without network access; the DM Control "
                "Suite tasks (`jaxrl list playground`) work offline."
            )
    close = difflib.get_close_matches(name, candidates + list_envs(), n=5, cutoff=0.5)
    hint = f" Did you mean: {', '.join(dict.fromkeys(close))}?" if close else ""
    raise UnknownEnvError(
        f"Unknown environment {name!r}.{hint} Names are family/task with family one of "
        f"{', '.join(FAMILIES)}; `jaxrl list` prints them all."
    )


def _check_options(name: str, options: dict, allowed: list[str]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise EnvOptionError(
            f"Unknown option(s) {unknown} for {name}; it accepts: {', '.join(sorted(allowed))}."
        )


def _make_brax(task: str, options: dict):
    from brax import envs as brax_envs

    env_cls = brax_envs._envs[task]
    allowed = [
        p for p in inspect.signature(env_cls.__init__).parameters if p not in ("self", "kwargs")
    ]
    allowed = sorted(set(allowed) | {"backend"})
    _check_options(f"brax/{task}", options, allowed)
    backend = options.get("backend", "generalized")
    if backend not in BRAX_BACKENDS:
        raise EnvOptionError(
            f"Unknown Brax backend {backend!r} for brax/{task}; choose one of {BRAX_BACKENDS}."
        )
    env = env_cls(**{**options, "backend": backend})
    env.episode_length = 1000
    env.action_repeat = 1
    return env


class _PlaygroundEnv:
    """Adapts a MuJoCo Playground env: dict observations keep their "state" entry (the policy's
    input in Playground's own trainers) and the time limit comes from the task's config."""

    def __init__(self, env: Any, episode_length: int, action_repeat: int):
        self.env = env
        self.episode_length = episode_length
        self.action_repeat = action_repeat
        size = env.observation_size
        self._obs_key = "state" if isinstance(size, dict) else None
        self._obs_size = size["state"][0] if self._obs_key else size

    @property
    def observation_size(self) -> int:
        return int(self._obs_size)

    @property
    def action_size(self) -> int:
        return self.env.action_size

    @property
    def unwrapped(self) -> Any:
        return self.env

    def _flat(self, state):
        if self._obs_key is None:
            return state
        return state.replace(obs=state.obs[self._obs_key])

    def reset(self, key):
        return self._flat(self.env.reset(key))

    def step(self, state, action):
        # Playground tasks build each observation afresh from the physics and `info`, so the
        # flattened observation carried in `state.obs` is never read back by the task.
        return self._flat(self.env.step(state, action))


def _make_playground(task: str, options: dict):
    from mujoco_playground import registry

    config = registry.get_default_config(task)
    _check_options(f"playground/{task}", options, list(config.keys()))
    # Playground 0.2 defaults to its Warp implementation; the JAX one (MJX) runs anywhere jax
    # does, the CPU included, and is what its published JAX training numbers use.
    overrides = {"impl": "jax", **options}
    env = registry.load(task, config_overrides=overrides)
    cfg = registry.get_default_config(task)
    cfg.update(overrides)
    return _PlaygroundEnv(env, int(cfg.episode_length), int(cfg.get("action_repeat", 1)))


def _make_classic(task: str, options: dict):
    env_cls = classic.ENVS[task]
    allowed = [p for p in inspect.signature(env_cls.__init__).parameters if p != "self"]
    _check_options(f"classic/{task}", options, allowed)
    return env_cls(**options)


def make(name: str, **options):
    """Makes one (unbatched) environment.

    `options` go to the family: Brax takes `backend` (mjx, generalized, positional, spring) and
    its env's constructor arguments; Playground takes its task config's keys; classic tasks
    take their constructor's arguments. The env carries its default `episode_length` and
    `action_repeat`.
    """
    family, task = check_name(name)
    maker = {"brax": _make_brax, "playground": _make_playground, "classic": _make_classic}[family]
    return maker(task, dict(options))


def make_vec(
    name: str,
    num_envs: int,
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    auto_reset: bool = True,
    **options,
):
    """A batched training env: `num_envs` copies with time limit, episode statistics, action
    repeat and (optionally) auto-reset. Sizes default to the task's own."""
    require_positive("num_envs", num_envs)  # before building the (slow) base env
    base = make(name, **options)
    return wrap(
        base,
        num_envs,
        episode_length=episode_length,
        action_repeat=action_repeat,
        auto_reset=auto_reset,
    )


def wrap(
    base,
    num_envs: int,
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    auto_reset: bool = True,
):
    """The training wrappers around an env made by `make` (one base env can serve several
    batched envs, e.g. for training and for evaluation)."""
    episode_length = episode_length or getattr(base, "episode_length", None)
    if episode_length is None:
        raise ValueError(
            "the env has no episode_length attribute: pass episode_length (the time limit)"
        )
    action_repeat = action_repeat or getattr(base, "action_repeat", 1)
    env = EpisodeWrapper(ActionRepeat(base, action_repeat), episode_length)
    env = VmapWrapper(env, num_envs)
    if auto_reset:
        env = AutoResetWrapper(env)
    env.episode_length = episode_length
    env.num_envs = num_envs
    return env
