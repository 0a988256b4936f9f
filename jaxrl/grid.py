"""Several runs in one compiled program: seeds (`--seeds`) times settings (`--vmap`).

A setting varies only fields that are data, not program: `TrainConfig.ARRAY_FIELDS` (gamma,
the exploration noise range) and the agent config's own `ARRAY_FIELDS` (learning rates, tau,
scales, ...). Those live in the state, so the members' states stack and one
`jax.vmap(trainer.chunk)` trains them all; a field that shapes the program (sizes, counts,
modes) cannot vary there: `jaxrl sweep` trains such grids one run after another.

An axis is one field (`--vmap actor_lr=1e-4,3e-4`) or several tied fields
(`--vmap actor_lr+critic_lr=1e-4,3e-4`): a tied axis gives every field it names the same value,
one setting per value (not their product). Its name keeps the '+' in the axes, in `as_json`
and so in a run's config.json; a setting always maps each field to its own value.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Any

from jaxrl.agents.base import array_fields
from jaxrl.config import ConfigError, TrainConfig

TIE = "+"  # joins the fields of a tied axis: actor_lr+critic_lr


@dataclasses.dataclass(frozen=True)
class Grid:
    """Members: every setting (the product of `axes`) for every seed, setting-major. An axis's
    name is a field, or fields joined by '+' that take the same value (a tied axis)."""

    seeds: tuple[int, ...]
    axes: tuple[tuple[str, tuple[float, ...]], ...] = ()

    @staticmethod
    def fields(axis: str) -> tuple[str, ...]:
        """The fields an axis sets: actor_lr+critic_lr -> (actor_lr, critic_lr)."""
        return tuple(axis.split(TIE))

    @property
    def settings(self) -> list[dict[str, float]]:
        """Every setting, {field: value}, each field of a tied axis with its axis's value."""
        names = [self.fields(name) for name, _ in self.axes]
        points = itertools.product(*(values for _, values in self.axes))
        return [
            {field: value for tied, value in zip(names, point, strict=True) for field in tied}
            for point in points
        ]

    @property
    def members(self) -> list[tuple[dict[str, float], int]]:
        return [(setting, seed) for setting in self.settings for seed in self.seeds]

    def __len__(self) -> int:
        return len(self.settings) * len(self.seeds)

    @staticmethod
    def label(setting: Mapping[str, float]) -> str:
        """actor_lr=0.0001,tau=0.005: a setting as folders and summaries name it."""
        return ",".join(f"{name}={value:g}" for name, value in setting.items())

    def member_dir(self, setting: Mapping[str, float], seed: int) -> str:
        """Where a member's own metrics go, under the run's folder."""
        return f"{self.label(setting)}/seed_{seed}" if self.axes else f"seed_{seed}"

    def describe(self, index: int) -> str:
        setting, seed = self.members[index]
        return f"seed {seed}" + (f" of {self.label(setting)}" if self.axes else "")

    def as_json(self) -> dict:
        """{"seeds": [...], "vmap": {axis: values}}, a tied axis under its '+' name."""
        return {"seeds": list(self.seeds), "vmap": {name: list(v) for name, v in self.axes}}

    @classmethod
    def from_json(cls, saved: Mapping[str, Any]) -> Grid | None:
        if not saved.get("seeds"):
            return None
        axes = tuple((name, tuple(values)) for name, values in (saved.get("vmap") or {}).items())
        return cls(tuple(saved["seeds"]), axes)


def parse_vmap(spec: Any, config: TrainConfig, agent_config: Any) -> tuple:
    """`--vmap NAME=V1,V2` (a list of such strings, or a mapping name -> values) as the grid's
    axes, each name a field that is data (ConfigError naming the input otherwise). A name
    `A+B` (or, in a mapping, a tuple of names) ties the fields: one axis whose every value
    sets them all."""
    if spec is None:
        return ()
    items = spec.items() if isinstance(spec, Mapping) else [_split(item) for item in spec]
    allowed = {name: "run" for name in TrainConfig.ARRAY_FIELDS}
    allowed.update({name: config.algo for name in array_fields(agent_config)})
    axes: dict[str, tuple[float, ...]] = {}
    seen: dict[str, str] = {}  # field -> the axis that sets it
    for given, values in items:
        tied = _fields(given)
        name = TIE.join(tied)
        for i, field in enumerate(tied):
            _check_field(field, name, allowed, config, agent_config)
            if field in tied[:i]:
                raise ConfigError(f"--vmap {name} names {field} twice; tie each field once")
            if field in seen:
                both = (seen[field], name)
                where = f" (in {both[0]} and {both[1]})" if both != (field, field) else ""
                raise ConfigError(
                    f"--vmap {field} is given twice{where}; list its values once, V1,V2, in "
                    "one axis"
                )
            seen[field] = name
        try:
            values = tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise ConfigError(
                f"--vmap {name}={_text(values)}: the values must be numbers"
            ) from None
        if not values or not all(math.isfinite(v) for v in values):
            raise ConfigError(f"--vmap {name}={_text(values)}: give finite numbers, V1,V2,...")
        if len(set(values)) != len(values):
            raise ConfigError(f"--vmap {name}={_text(values)}: a value is listed twice")
        axes[name] = values
    return tuple(axes.items())


def _fields(name: Any) -> tuple[str, ...]:
    """The fields an axis's name gives: 'actor_lr+critic_lr', ('actor_lr', 'critic_lr') or a
    field; ConfigError for an empty part (a+, +b, a++b)."""
    parts = list(name) if isinstance(name, list | tuple) else str(name).split(TIE)
    fields = tuple(str(part).strip().lstrip("-").replace("-", "_") for part in parts)
    if not fields or not all(fields):
        shown = TIE.join(map(str, parts)) if isinstance(name, list | tuple) else name
        raise ConfigError(
            f"--vmap {shown}: a tied axis names its fields joined by '+', each a field: "
            "A+B=V1,V2 (e.g. actor_lr+critic_lr=1e-4,3e-4)"
        )
    return fields


def _check_field(field: str, axis: str, allowed, config: TrainConfig, agent_config: Any):
    """ConfigError, naming the field (and its axis where tied), for a field that cannot vary
    inside one program."""
    if field in allowed:
        return
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    known |= {f.name for f in dataclasses.fields(agent_config)}
    why = (
        "it shapes the compiled program (sizes, counts, modes), so it cannot vary "
        "inside one; `jaxrl sweep --grid` trains such settings one run after another"
        if field in known
        else f"no such field of the run or the {config.algo} config"
    )
    where = f" (in {axis})" if axis != field else ""
    raise ConfigError(
        f"--vmap {field}{where}: {why}. Fields that can: {', '.join(sorted(allowed))}."
    )


def _split(item: str) -> tuple[str, list[str]]:
    name, sep, values = str(item).partition("=")
    name = name.strip()
    if not sep or not values.strip() or not name:
        raise ConfigError(f"--vmap takes NAME=V1,V2,..., got {item!r}")
    return name, [v.strip() for v in values.split(",")]


def _text(values) -> str:
    return ",".join(map(str, values)) if isinstance(values, list | tuple) else str(values)


def member_configs(
    setting: Mapping[str, float], config: TrainConfig, agent_config: Any
) -> tuple[TrainConfig, Any]:
    """The run and agent configs of one setting (each checked as its own run's would be)."""
    run = {k: v for k, v in setting.items() if k in TrainConfig.ARRAY_FIELDS}
    agent = {k: v for k, v in setting.items() if k not in run}
    try:
        return (
            dataclasses.replace(config, **run),
            dataclasses.replace(agent_config, **agent),
        )
    except ValueError as error:
        raise ConfigError(f"--vmap setting {Grid.label(setting)}: {error}") from None
