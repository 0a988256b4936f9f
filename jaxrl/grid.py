"""Several runs in one compiled program: seeds (`--seeds`) times settings (`--vmap`).

A setting varies only fields that are data, not program: `TrainConfig.ARRAY_FIELDS` (gamma,
the exploration noise range) and the agent config's own `ARRAY_FIELDS` (learning rates, tau,
scales, ...). Those live in the state, so the members' states stack and one
`jax.vmap(trainer.chunk)` trains them all; a field that shapes the program (sizes, counts,
modes) cannot vary there: `jaxrl sweep` trains such grids one run after another.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Any

from jaxrl.agents.base import array_fields
from jaxrl.config import ConfigError, TrainConfig


@dataclasses.dataclass(frozen=True)
class Grid:
    """Members: every setting (the product of `axes`) for every seed, setting-major."""

    seeds: tuple[int, ...]
    axes: tuple[tuple[str, tuple[float, ...]], ...] = ()

    @property
    def settings(self) -> list[dict[str, float]]:
        names = [name for name, _ in self.axes]
        points = itertools.product(*(values for _, values in self.axes))
        return [dict(zip(names, point, strict=True)) for point in points]

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
        return {"seeds": list(self.seeds), "vmap": {name: list(v) for name, v in self.axes}}

    @classmethod
    def from_json(cls, saved: Mapping[str, Any]) -> Grid | None:
        if not saved.get("seeds"):
            return None
        axes = tuple((name, tuple(values)) for name, values in (saved.get("vmap") or {}).items())
        return cls(tuple(saved["seeds"]), axes)


def parse_vmap(spec: Any, config: TrainConfig, agent_config: Any) -> tuple:
    """`--vmap NAME=V1,V2` (a list of such strings, or a mapping name -> values) as the grid's
    axes, each name a field that is data (ConfigError naming the input otherwise)."""
    if spec is None:
        return ()
    items = spec.items() if isinstance(spec, Mapping) else [_split(item) for item in spec]
    allowed = {name: "run" for name in TrainConfig.ARRAY_FIELDS}
    allowed.update({name: config.algo for name in array_fields(agent_config)})
    axes = {}
    for name, values in items:
        if name not in allowed:
            known = {f.name for f in dataclasses.fields(TrainConfig)}
            known |= {f.name for f in dataclasses.fields(agent_config)}
            why = (
                "it shapes the compiled program (sizes, counts, modes), so it cannot vary "
                "inside one; `jaxrl sweep --grid` trains such settings one run after another"
                if name in known
                else f"no such field of the run or the {config.algo} config"
            )
            raise ConfigError(
                f"--vmap {name}: {why}. Fields that can: {', '.join(sorted(allowed))}."
            )
        if name in axes:
            raise ConfigError(f"--vmap {name} is given twice; list its values once: V1,V2")
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


def _split(item: str) -> tuple[str, list[str]]:
    name, sep, values = str(item).partition("=")
    name = name.strip().lstrip("-").replace("-", "_")
    if not sep or not values.strip():
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
