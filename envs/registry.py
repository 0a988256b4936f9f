"""The environment registry: `make("family/name", **options)` over Brax, MuJoCo Playground,
the pure-JAX classic tasks and the user's own (`register`), all behind Brax's reset/step/State
convention."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from jaxrl.envs import menagerie
from jaxrl.envs.wrappers import (
    ActionRepeat,
    AutoResetWrapper,
    EpisodeWrapper,
    JointLimitActions,
    VmapWrapper,
    Wrapper,
    require_positive,
    with_action_bounds,
)
from jaxrl.errors import EnvOptionError, JaxrlError

FAMILIES = ("brax", "playground", "classic")
BRAX_BACKENDS = ("mjx", "generalized", "positional", "spring")


class UnknownEnvError(JaxrlError, ValueError):
    pass


class RegistrationError(JaxrlError, ValueError):
    """A bad `register` call."""


# -- The user's own envs ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Registration:
    factory: Callable[..., Any]
    episode_length: int | None
    action_repeat: int | None


_REGISTERED: dict[str, Registration] = {}
ENV_METHODS = ("reset", "step", "observation_size", "action_size")


def register(
    name: str,
    factory: Callable[..., Any],
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
) -> None:
    """Makes `factory(**options)` the env `name` ("family/task", family not a built-in one),
    for `make`, `jaxrl.train`, the CLI (`--env name`, with `--import MODULE` naming the module
    that registers it) and the run commands. The factory returns an object with Brax's
    reset/step/observation_size/action_size (a Brax PipelineEnv, a Playground MjxEnv, or pure
    JAX); `episode_length` and `action_repeat` are its defaults where it has no such attribute.
    Registering a name again replaces it."""
    family, slash, task = name.partition("/")
    if not slash or not family or not task or "/" in task:
        raise RegistrationError(
            f"register: env names are family/task, e.g. mylab/Reach; got {name!r}"
        )
    if family in FAMILIES:
        raise RegistrationError(
            f"register: {family}/ is a built-in family of jaxrl; register {task!r} under a "
            f"family of your own, e.g. mylab/{task}"
        )
    if not callable(factory):
        raise RegistrationError(
            f"register: the factory of {name} must be callable, got {factory!r}"
        )
    for value, what in ((episode_length, "episode_length"), (action_repeat, "action_repeat")):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise RegistrationError(f"register: {what} must be a positive integer, got {value!r}")
    _REGISTERED[name] = Registration(factory, episode_length, action_repeat)


def registration(name: str) -> Registration | None:
    """What `register` was given for `name`; None for a name not registered."""
    return _REGISTERED.get(name)


def unregister(name: str) -> None:
    """Removes an env added by `register` (no error if there is none)."""
    _REGISTERED.pop(name, None)


class EnvImportError(JaxrlError, ImportError):
    pass


def import_modules(modules: Iterable[str]) -> None:
    """Imports the modules that register the user's envs (the CLI's `--import`). The current
    folder is searched too, as `python -m` does, so `--import mylab.tasks` finds
    ./mylab/tasks.py when jaxrl runs as a console script (which does not search it)."""
    modules = list(modules)
    if modules and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            raise EnvImportError(
                f"--import {module}: no module named {error.name!r} (searched the current "
                "folder and the Python path; install the package or run from the folder "
                "holding it)"
            ) from None
        except RegistrationError as error:
            raise EnvImportError(f"--import {module}: {error}") from None


def _registered_families() -> list[str]:
    return sorted({name.partition("/")[0] for name in _REGISTERED})


def families() -> tuple[str, ...]:
    """The built-in families and those of registered envs."""
    return FAMILIES + tuple(f for f in _registered_families() if f not in FAMILIES)


def _has(env: Any, name: str) -> bool:
    try:
        inspect.getattr_static(env, name)
        return True
    except AttributeError:
        return hasattr(env, name)  # given by a __getattr__ (a wrapper's), so run to know


def check_env_object(env: Any, what: str = "the env") -> Any:
    """`env` if it has Brax's env interface, else an error naming what it lacks. Its members
    are looked up without running them where the lookup can be static: Playground's
    `observation_size` traces the task's reset at every read (1.6 s on CheetahRun), and the
    loops read it once after this check."""
    missing = [name for name in ENV_METHODS if not _has(env, name)]
    if missing:
        raise EnvOptionError(
            f"{what} ({type(env).__name__}) lacks {', '.join(missing)}: an env needs Brax's "
            "reset(key) -> State, step(state, action) -> State, observation_size, action_size"
        )
    config = getattr(env, "_config", None)  # a MuJoCo Playground env's config
    impl = config.get("impl", None) if hasattr(config, "get") else None
    if isinstance(impl, str) and impl.lower() == "warp":
        # Playground 0.2 builds its Warp version when `impl` is not given: its physics is not
        # JAX, and ends in a broadcasting error deep in the batched wrappers.
        raise EnvOptionError(
            f"{what} ({type(env).__name__}) is MuJoCo Playground's Warp implementation "
            "(impl='warp', Playground's default): jaxrl runs MJX's JAX one; load it with "
            "registry.load(name, config_overrides={'impl': 'jax'})"
        )
    return env


def _make_registered(name: str, options: dict):
    registration = _REGISTERED[name]
    factory = registration.factory
    parameters = inspect.signature(factory).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        allowed = [
            p.name
            for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        _check_options(name, options, allowed)
    env = check_env_object(factory(**options), f"the factory of {name}")
    env = adapt(env)
    for attribute in ("episode_length", "action_repeat"):
        default = getattr(registration, attribute)
        if default is not None and getattr(env, attribute, None) is None:
            try:
                setattr(env, attribute, default)
            except (AttributeError, TypeError):
                raise EnvOptionError(
                    f"{name}: cannot set {attribute} on {type(env).__name__}; give the env "
                    f"that attribute, or pass --{attribute.replace('_', '-')}"
                ) from None
    return env


@functools.cache
def _brax_names() -> tuple[str, ...]:
    from brax import envs as brax_envs

    # `fast` is Brax's test stub, not a task.
    return tuple(sorted(n for n in brax_envs._envs if n != "fast"))


@functools.cache
def robot_names() -> tuple[str, ...]:
    """Playground's robot tasks (locomotion and manipulation): those that load Menagerie."""
    from mujoco_playground import registry

    return tuple(registry.locomotion.ALL_ENVS) + tuple(registry.manipulation.ALL_ENVS)


@functools.cache
def _playground_names() -> tuple[str, ...]:
    from mujoco_playground import registry

    return tuple(registry.dm_control_suite.ALL_ENVS) + robot_names()


def _names_of(family: str) -> tuple[str, ...]:
    if family == "brax":
        return _brax_names()
    if family == "playground":
        return _playground_names()
    from jaxrl.envs import classic  # imports brax (its State): only when a classic env is named

    return tuple(classic.ENVS)


def list_envs(family: str | None = None) -> list[str]:
    """All names, as `family/name`: the built-in families', then those `register` added."""
    built_in = [fam for fam in FAMILIES if family in (None, fam)]
    names = [f"{fam}/{name}" for fam in built_in for name in _names_of(fam)]
    return names + sorted(n for n in _REGISTERED if family in (None, n.partition("/")[0]))


def check_name(name: str) -> tuple[str, str]:
    """Splits and validates `family/name`, or raises UnknownEnvError naming close matches."""
    family, _, task = name.partition("/")
    if name in _REGISTERED or (family in FAMILIES and task in _names_of(family)):
        return family, task
    if family not in families():
        candidates = [f"{fam}/{task}" for fam in families()]
    else:
        candidates = list_envs(family)
    close = difflib.get_close_matches(name, candidates + list_envs(), n=5, cutoff=0.5)
    hint = f" Did you mean: {', '.join(dict.fromkeys(close))}?" if close else ""
    raise UnknownEnvError(
        f"Unknown environment {name!r}.{hint} Names are family/task with family one of "
        f"{', '.join(families())}; `jaxrl list` prints them all (your own envs: "
        "jaxrl.envs.register, and --import the module that registers them)."
    )


def _check_options(name: str, options: dict, allowed: list[str]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise EnvOptionError(
            f"Unknown option(s) {unknown} for {name}; it accepts: {', '.join(sorted(allowed))}."
        )


def _check_types(name: str, options: dict, defaults: dict, typed: bool = False) -> None:
    """Each option of the kind its default is (a number, a flag, a string), so that a bad
    value is named here rather than failing in the env's code while the program traces.
    `typed`: the defaults' types are the options' own (a Playground ConfigDict, which refuses
    1.5 for an integer field); a Python default of 1 may stand for any number."""
    for key, value in options.items():
        default = defaults.get(key)
        if isinstance(default, bool):
            ok, kind = isinstance(value, bool), "true or false (a flag)"
        elif typed and isinstance(default, int):
            ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif isinstance(default, int | float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            kind = "a number"
        elif isinstance(default, str):
            ok, kind = isinstance(value, str), "a string"
        else:  # no default, or one of another kind: the env checks it
            continue
        if not ok:
            raise EnvOptionError(
                f"env option {key}={value!r} for {name}: {key} takes {kind} (its default is "
                f"{default!r}); e.g. --env-option {key}={default!r}"
            )


def _defaults(function: Any) -> dict:
    return {
        k: p.default
        for k, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


_BRAX_UNMAINTAINED = "Brax System, piplines and environments are not actively being maintained"


def _make_brax(task: str, options: dict):
    from brax import envs as brax_envs

    env_cls = brax_envs._envs[task]
    allowed = [
        p for p in inspect.signature(env_cls.__init__).parameters if p not in ("self", "kwargs")
    ]
    allowed = sorted(set(allowed) | {"backend"})
    _check_options(f"brax/{task}", options, allowed)
    _check_types(f"brax/{task}", options, _defaults(env_cls.__init__))
    backend = options.get("backend", "generalized")
    if backend not in BRAX_BACKENDS:
        raise EnvOptionError(
            f"Unknown Brax backend {backend!r} for brax/{task}; choose one of {BRAX_BACKENDS}."
        )
    with warnings.catch_warnings():
        # Brax's every env load warns that its envs are unmaintained; jaxrl keeps them for
        # comparison with Brax's trainers, and the README says so once.
        warnings.filterwarnings("ignore", message=_BRAX_UNMAINTAINED, category=UserWarning)
        env = TracedSize(env_cls(**{**options, "backend": backend}))
    env.episode_length = 1000
    env.action_repeat = 1
    return env


class TracedSize(Wrapper):
    """An env whose observation size is read once, from the shapes of a traced reset, as
    Playground's envs read theirs: Brax's own property runs the reset eagerly, op by op, which
    compiled hundreds of little programs (about 4 s on inverted_pendulum, before any training
    program), and Playground's traces the reset at every read. Everything else is the env's
    (`backend`, `sys`, `dt`, `_config`, ...)."""

    @functools.cached_property
    def observation_size(self) -> Any:
        import jax

        obs = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0)).obs
        return obs.shape[-1] if hasattr(obs, "shape") else jax.tree.map(lambda x: x.shape, obs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def traced_size(env: Any) -> Any:
    """`env` read through `TracedSize` where its `observation_size` is a property computed
    at each read (Brax's eager reset, Playground's trace), else `env` itself (a number kept
    on it, or a `TracedSize` already); a `WithEvalEnv`'s two envs each so. For env objects
    handed in whole (the Brax door's `environment`), whose size the loops and checks read
    several times."""
    if isinstance(env, WithEvalEnv):
        pair = WithEvalEnv(traced_size(env.env), traced_size(env.eval_env))
        pair._sizes_agree.extend(env._sizes_agree)
        return pair
    member = inspect.getattr_static(type(env), "observation_size", None)
    if isinstance(env, TracedSize) or not isinstance(member, property):
        return env
    return TracedSize(env)


class _PlaygroundEnv(Wrapper):
    """Adapts a MuJoCo Playground env: the time limit and action repeat come from the task's
    config. Observations (an int size, or for robot tasks a dict of entry -> shape) stay whole
    (some tasks read their last observation back in `step`); the training loops read the
    entries a run names (`jaxrl.observations`)."""

    def __init__(self, env: Any, episode_length: int | None, action_repeat: int | None):
        super().__init__(env)
        self.episode_length = episode_length
        self.action_repeat = action_repeat

    @functools.cached_property
    def observation_size(self) -> Any:
        """Read once: Playground's own property traces the task's reset at every read (and
        with the store of compiled programs on, once per task, options and sources:
        `jaxrl.run.programs.remember_observation_size`)."""
        return self.env.observation_size

    @property
    def action_bounds(self) -> Any:
        return getattr(self.env, "action_bounds", None)


def _make_playground(task: str, options: dict):
    from mujoco_playground import registry

    config = registry.get_default_config(task)
    robot = task in robot_names()
    allowed = list(config.keys()) + (["menagerie_path"] if robot else [])
    _check_options(f"playground/{task}", options, allowed)
    _check_types(f"playground/{task}", options, {k: config[k] for k in config.keys()}, typed=True)
    # Playground 0.2 defaults to its Warp implementation; the JAX one (MJX) runs anywhere jax
    # does, the CPU included, and is what its published JAX training numbers use. A task
    # whose config has no `impl` (e.g. AeroCubeRotateZAxis) has no choice to make.
    path = options.pop("menagerie_path", None) or os.environ.get(menagerie.MENAGERIE_ENV)
    if robot and path:
        menagerie.use(path)
    overrides = {**({"impl": "jax"} if "impl" in config else {}), **options}
    if robot:
        env = menagerie.load_robot(registry, task, overrides)
    else:
        env = registry.load(task, config_overrides=overrides)
    cfg = registry.get_default_config(task)
    cfg.update(overrides)
    return _PlaygroundEnv(env, int(cfg.episode_length), int(cfg.get("action_repeat", 1)))


@dataclasses.dataclass(frozen=True)
class WithEvalEnv:
    """An env to train in and another to evaluate in (Brax's trainers' `eval_env`), passed
    wherever jaxrl takes an env object: `jaxrl.train(config, agent, env=WithEvalEnv(env,
    eval_env))`. Both are wrapped alike (time limit, action repeat, randomization); evaluation
    then runs on envs of its own. Their observation and action sizes must agree."""

    env: Any
    eval_env: Any
    # Set once the sizes agreed: a Playground env's `observation_size` traces its reset at
    # every read, and the door, the driver and the loops each split the pair before compiling.
    _sizes_agree: list = dataclasses.field(default_factory=list, compare=False, repr=False)


def split_eval_env(env: Any) -> tuple[Any, Any]:
    """(training env, evaluation env or None) of an env object or a `WithEvalEnv`, each
    checked (`adapt`), their sizes compared (once per `WithEvalEnv`)."""
    if not isinstance(env, WithEvalEnv):
        return check_env_object(env), None
    train = check_env_object(env.env, "the env")
    evaluate = check_env_object(env.eval_env, "eval_env")
    if env._sizes_agree:
        return train, evaluate
    for name in ("observation_size", "action_size"):
        mine, theirs = getattr(train, name), getattr(evaluate, name)
        if mine != theirs:
            raise EnvOptionError(
                f"eval_env ({type(evaluate).__name__}) has {name} {theirs}, the env it "
                f"evaluates ({type(train).__name__}) {mine}: they must agree"
            )
    env._sizes_agree.append(True)
    return train, evaluate


def adapt(env: Any) -> Any:
    """Your env, checked. Dict observations (a Playground robot task's) stay whole: the run's
    `actor_obs` / `critic_obs` name the entries actor and critic read (`jaxrl.observations`)."""
    check_env_object(env)
    return env


def _make_classic(task: str, options: dict):
    from jaxrl.envs import classic

    env_cls = classic.ENVS[task]
    allowed = [p for p in inspect.signature(env_cls.__init__).parameters if p != "self"]
    _check_options(f"classic/{task}", options, allowed)
    _check_types(f"classic/{task}", options, _defaults(env_cls.__init__))
    return env_cls(**options)


def make(name: str, **options):
    """Makes one (unbatched) environment.

    `options` go to the family: Brax takes `backend` (mjx, generalized, positional, spring) and
    its env's constructor arguments; Playground takes its task config's keys; classic tasks
    take their constructor's arguments; a registered env, its factory's. The env carries its
    default `episode_length` and `action_repeat`.
    """
    family, task = check_name(name)
    if name in _REGISTERED:
        return _make_registered(name, dict(options))
    maker = {"brax": _make_brax, "playground": _make_playground, "classic": _make_classic}[family]
    return maker(task, dict(options))


def bounded_actions(base, joint_limit_actions: bool = False):
    """`base` acting in [-1, 1]: rescaled to its `action_bounds` where it declares them, or
    (`joint_limit_actions`) bounded by its joints' limits (`envs.robots`)."""
    if not joint_limit_actions:
        return with_action_bounds(base)
    from jaxrl.envs import robots

    label = type(getattr(base, "unwrapped", base)).__name__
    return JointLimitActions(base, *robots.joint_limit_bounds(base, label))


def make_vec(
    name: str,
    num_envs: int,
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    auto_reset: bool = True,
    reset_to_first: bool = False,
    randomization: tuple[Callable, Any] | None = None,
    joint_limit_actions: bool = False,
    **options,
):
    """A batched training env: `num_envs` copies with time limit, episode statistics, action
    repeat and (optionally) auto-reset, domain randomization and actions bounded by the joints'
    limits (see `wrap`), as `jaxrl train` builds them. Sizes default to the task's own."""
    require_positive("num_envs", num_envs)  # before building the (slow) base env
    base = make(name, **options)
    return wrap(
        base,
        num_envs,
        episode_length=episode_length,
        action_repeat=action_repeat,
        auto_reset=auto_reset,
        reset_to_first=reset_to_first,
        randomization=randomization,
        joint_limit_actions=joint_limit_actions,
    )


def config_value(env: Any, name: str) -> int | None:
    """`name` (episode_length, action_repeat) from a MuJoCo Playground env's task config, or
    None: an env the caller built with `registry.load` keeps its config in `_config` only."""
    config = getattr(env, "_config", None)
    value = config.get(name, None) if hasattr(config, "get") else None
    return None if value is None else int(value)


def episode_env(
    base,
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    joint_limit_actions: bool = False,
    metric_sums: bool = False,
):
    """One env of `wrap`'s batch: `base` with its actions bounded, each repeated
    `action_repeat` times and its episodes cut at `episode_length` control steps (where None,
    the env's own, or its Playground config's); `metric_sums`: its own metrics summed over
    each episode (`EpisodeWrapper`). Returns (env, episode_length, action_repeat)."""
    episode_length = (
        episode_length
        or getattr(base, "episode_length", None)
        or config_value(base, "episode_length")
    )
    if episode_length is None:
        raise EnvOptionError(
            f"the env ({type(base).__name__}) has no episode_length attribute: give the time "
            "limit as episode_length (--episode-length N, TrainConfig(episode_length=N), or "
            "register(..., episode_length=N))"
        )
    action_repeat = (
        action_repeat
        or getattr(base, "action_repeat", None)
        or config_value(base, "action_repeat")
        or 1
    )
    env = EpisodeWrapper(
        ActionRepeat(bounded_actions(base, joint_limit_actions), action_repeat),
        episode_length,
        metric_sums,
    )
    return env, int(episode_length), int(action_repeat)


def wrap(
    base,
    num_envs: int,
    *,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    auto_reset: bool = True,
    reset_to_first: bool = False,
    randomization: tuple[Callable, Any] | None = None,
    joint_limit_actions: bool = False,
    metric_sums: bool = False,
):
    """The training wrappers around an env made by `make` (one base env can serve several
    batched envs, e.g. for training and for evaluation). `metric_sums`: each finished episode's
    sums of the env's own metrics in `info["finished_metrics"]` (`EpisodeWrapper`,
    `AutoResetWrapper`). `randomization`: (randomization_fn,
    key) gives each of the `num_envs` envs physics of its own (`envs.randomization`).
    `joint_limit_actions`: actions bounded by the joints' limits (`envs.robots`).
    `reset_to_first`: finished envs restart from the state they started from (Brax's
    training wrappers), not from a fresh random one."""
    env, episode_length, _ = episode_env(
        base,
        episode_length=episode_length,
        action_repeat=action_repeat,
        joint_limit_actions=joint_limit_actions,
        metric_sums=metric_sums,
    )
    if randomization is None:
        env = VmapWrapper(env, num_envs)
    else:
        import jax

        from jaxrl.envs import randomization as dr

        randomization_fn, key = randomization  # one randomized model per env:
        models, in_axes = randomization_fn(dr.model_of(base), jax.random.split(key, num_envs))
        env = dr.RandomizedVmapWrapper(env, num_envs, models, in_axes)
    if auto_reset:
        env = AutoResetWrapper(env, first=reset_to_first)
    env.episode_length = episode_length
    env.num_envs = num_envs
    return env
