"""Domain randomization: each training env steps with physics of its own.

A randomization function follows Brax's and MuJoCo Playground's convention,
`randomization_fn(model, rng) -> (models, in_axes)`: `model` is the env's MJX model (a Brax
`System` for brax/* tasks), `rng` one key per env ([num_envs, 2]); `models` is the model with
the randomized fields batched along a leading env axis and `in_axes` the matching tree (0 where
batched, None elsewhere). Playground's own randomizers for its robot tasks have this form, as
have the built-in ones here (`mass`, `friction`). `RandomizedVmapWrapper` then steps env i with
model i. It is written here rather than taken from Playground's or Brax's wrappers because those
also carry their own auto-reset and episode wrappers, which jaxrl replaces (envs/wrappers.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax

from jaxrl.config import RANDOMIZERS
from jaxrl.envs.wrappers import VmapWrapper
from jaxrl.errors import EnvOptionError

RandomizationFn = Callable[[Any, jax.Array], tuple[Any, Any]]

# What each built-in randomizer scales by U[1 - scale, 1 + scale], per env and per entry.
BUILT_IN = {"mass": ("body_mass",), "friction": ("geom_friction",)}
NAMES = RANDOMIZERS  # "playground" and the BUILT_IN ones (TrainConfig checks names by it)


class RandomizationError(EnvOptionError):
    pass


def model_holder(env: Any) -> tuple[Any, str]:
    """(object, attribute) holding the physics model the env steps with: a Playground env's
    `_mjx_model`, a Brax PipelineEnv's `sys`."""
    base = getattr(env, "unwrapped", env)
    for attribute in ("_mjx_model", "sys"):
        if hasattr(base, attribute):
            return base, attribute
    raise RandomizationError(
        f"{type(base).__name__} has no MJX model (_mjx_model) or Brax System (sys) to "
        "randomize: domain randomization is for playground/* and brax/* tasks"
    )


def model_of(env: Any) -> Any:
    holder, attribute = model_holder(env)
    return getattr(holder, attribute)


def scale_fields(fields: tuple[str, ...], scale: float) -> RandomizationFn:
    """Multiplies each named model field by U[1 - scale, 1 + scale], entry by entry, per env."""

    def randomize(model: Any, rng: jax.Array) -> tuple[Any, Any]:
        def one(key):
            keys = jax.random.split(key, len(fields))
            return {
                name: getattr(model, name)
                * jax.random.uniform(
                    k, getattr(model, name).shape, minval=1 - scale, maxval=1 + scale
                )
                for name, k in zip(fields, keys, strict=True)
            }

        values = jax.vmap(one)(rng)
        in_axes = jax.tree.map(lambda _: None, model).tree_replace({n: 0 for n in fields})
        return model.tree_replace(values), in_axes

    return randomize


def _combine(parts: list[RandomizationFn]) -> RandomizationFn:
    """Several randomizers applied in turn, each with keys of its own; the batched fields of
    all of them batched in the result."""

    def randomize(model: Any, rng: jax.Array) -> tuple[Any, Any]:
        keys = jax.vmap(lambda k: jax.random.split(k, len(parts)))(rng)
        batched: dict[str, Any] = {}
        for index, part in enumerate(parts):
            models, in_axes = part(model, keys[:, index])
            for name in _batched_fields(in_axes):
                batched[name] = getattr(models, name)
        in_axes = jax.tree.map(lambda _: None, model).tree_replace({n: 0 for n in batched})
        return model.tree_replace(batched), in_axes

    return randomize


def _batched_fields(in_axes: Any) -> list[str]:
    return [
        name
        for name in vars(in_axes)
        # Static fields of a model are arrays even in an in_axes tree: only ints are axes.
        if any(type(axis) is int and axis == 0 for axis in jax.tree.leaves(getattr(in_axes, name)))
    ]


def named(spec: str, scale: float, env_name: str, env: Any) -> RandomizationFn:
    """The randomization `--randomize SPEC` names: "playground" (the task's own randomizer in
    Playground's registry), "mass", "friction", or several joined by commas."""
    parts = []
    for name in (part.strip() for part in spec.split(",")):
        if name == "playground":
            parts.append(_playground(env_name))
        elif name in BUILT_IN:
            _check_backend(env, env_name, name)
            parts.append(scale_fields(BUILT_IN[name], scale))
        else:
            raise RandomizationError(
                f"unknown randomization {name!r}; choose from {', '.join(NAMES)} (or several, "
                "joined by commas)"
            )
    return parts[0] if len(parts) == 1 else _combine(parts)


def _playground(env_name: str) -> RandomizationFn:
    family, _, task = env_name.partition("/")
    randomizer = None
    if family == "playground":
        from mujoco_playground import registry

        randomizer = registry.get_domain_randomizer(task)
    if randomizer is None:
        raise RandomizationError(
            f"{env_name} has no randomizer of Playground's own (its robot tasks have); use the "
            f"built-in ones instead: --randomize mass, friction or mass,friction"
        )
    return randomizer


def _check_backend(env: Any, env_name: str, name: str) -> None:
    backend = getattr(getattr(env, "unwrapped", env), "backend", "mjx")
    if backend != "mjx":
        raise RandomizationError(
            f"--randomize {name} scales fields of the MJX model, which the {backend} backend of "
            f"{env_name} does not read; train it with --env-option backend=mjx"
        )


class RandomizedVmapWrapper(VmapWrapper):
    """`num_envs` copies of an env, copy i stepping with model i of `models` (batched as
    `in_axes` marks, as a randomization function returns them)."""

    def __init__(self, env: Any, num_envs: int, models: Any, in_axes: Any):
        super().__init__(env, num_envs)
        self.models, self.in_axes = models, in_axes
        self._holder, self._attribute = model_holder(env)

    @contextlib.contextmanager
    def _physics(self, model: Any):
        # Traced inside vmap: the env reads the swapped-in (batched) model while it is traced.
        old = getattr(self._holder, self._attribute)
        setattr(self._holder, self._attribute, model)
        try:
            yield
        finally:
            setattr(self._holder, self._attribute, old)

    def reset_each(self, keys: jax.Array):
        def one(model, key):
            with self._physics(model):
                return self.env.reset(key)

        return jax.vmap(one, in_axes=(self.in_axes, 0))(self.models, keys)

    def step(self, state, action: jax.Array):
        def one(model, state, action):
            with self._physics(model):
                return self.env.step(state, action)

        return jax.vmap(one, in_axes=(self.in_axes, 0, 0))(self.models, state, action)
