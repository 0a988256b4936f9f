"""The plan of a `jaxrl scale` grid: its axes checked (UTD ratios, batch sizes, learning rates,
critic widths), the axes not given proposed around the base config, every program's run config
checked as `jaxrl train` would, and the folder's own grid (scale_grid.json) and runs compared,
so that `plan` says what each program will do (new, resume, done or failed) and writes nothing.
`Plan` and `Program` are what `scale_train.train_grid` trains.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Sequence
from typing import Any

from jaxrl.config import ConfigError, TrainConfig
from jaxrl.experiments.scale_folder import (
    FAILED_FILE,
    GRID_FILE,
    ScaleError,
    read_grid_file,
    run_name,
)
from jaxrl.run.folder import check_run_dir

DEFAULT_SEEDS = 4
DEFAULT_LR_FIELD = "actor_lr+critic_lr"  # one learning rate for actor and critic (a tied axis)
MIN_UTDS = 3  # D_J(sigma) has three parameters
# The grid proposed around the base config where an axis is not given (--budget sets the steps).
PROPOSED_UTD = (0.25, 0.5, 1.0, 2.0, 4.0)
PROPOSED_BATCH = (0.5, 1.0, 2.0)
PROPOSED_LR = (1 / 3, 1.0, 3.0)
# The width axis (--widths): the critic's hidden sizes, scaled so that the first layer is W wide.
WIDTH_FIELD = "critic_hidden"


@dataclasses.dataclass(frozen=True)
class Program:
    """One (sigma, batch size) run of the grid, or (sigma, batch size, critic width) of a grid
    with a width axis: its folder name, its run config, status and agent config."""

    sigma: float
    batch_size: int
    name: str
    config: TrainConfig
    status: str  # "new", "resume", "done" or "failed"
    width: int | None = None
    agent_config: Any = None  # its own where the grid has a width axis (the critic's sizes)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A checked grid, ready to train: nothing has been written yet."""

    out: pathlib.Path
    config: TrainConfig  # the base config (its updates_per_step and batch_size are the grid's)
    agent_config: Any
    target: float
    utds: tuple[float, ...]
    batch_sizes: tuple[int, ...]
    lrs: tuple[float, ...]
    lr_field: str  # the --vmap axis: a field, or fields joined by '+' (tied: one value for all)
    seeds: tuple[int, ...]
    programs: tuple[Program, ...]
    spec: dict  # scale_grid.json as it will be written
    notes: tuple[str, ...] = ()  # what the plan chose that the user did not name
    widths: tuple[int, ...] | None = None  # the critic widths, of a grid with a width axis

    @property
    def members(self) -> int:
        return len(self.lrs) * len(self.seeds)

    def cost(self) -> float:
        """Gradient updates of every member of every program together: sigma per env step
        after the warm-up (none before learning_starts); the chunks' rounding up of the steps
        left out."""
        return sum(
            p.sigma * max(p.config.total_steps - p.config.learning_starts, 0) * self.members
            for p in self.programs
        )


# ---------------------------------------------------------------- checking the grid


def numbers(text: str | None, flag: str, kind=float) -> tuple | None:
    """A comma-separated axis of the grid (None where not given), checked by `_axis`."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",") if v]
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: give numbers joined by commas") from None
    return _axis(values, flag, kind, text)


def _axis(values: Sequence[float] | None, flag: str, kind=float, text: str | None = None):
    """An axis of the grid sorted, each value a finite number > 0 (whole, for kind int), none
    twice; None stays None (the axis is proposed)."""
    if values is None:
        return None
    floats = [float(v) for v in values]
    text = text if text is not None else ",".join(f"{v:g}" for v in floats)
    if not floats:
        raise ConfigError(f"{flag} needs at least one value")
    if any(not math.isfinite(v) or v <= 0 for v in floats):
        raise ConfigError(f"{flag} {text!r}: every value must be a finite number > 0")
    if kind is int and any(v != int(v) for v in floats):
        raise ConfigError(f"{flag} {text!r}: batch sizes are whole numbers")
    values = tuple(kind(v) for v in floats)
    if len(set(values)) != len(values):
        raise ConfigError(f"{flag} {text!r}: a value is listed twice")
    return tuple(sorted(values))


def updates_per_step(sigma: float, num_envs: int) -> int:
    """The whole number of updates per loop iteration (a step of num_envs envs) that is UTD
    sigma; ConfigError where there is none."""
    per_step = round(sigma * num_envs)
    if per_step < 1 or not math.isclose(per_step, sigma * num_envs, rel_tol=1e-6):
        raise ConfigError(
            f"--utd {sigma:g} with {num_envs} envs: updates_per_step = UTD x num_envs must be a "
            f"whole number >= 1, so a UTD ratio is a multiple of 1/{num_envs} = {1 / num_envs:g}"
        )
    return per_step


def critic_sizes(base: Sequence[int], width: int) -> tuple[int, ...]:
    """The critic's hidden sizes at `width`: the base config's shape scaled so that its first
    layer is `width` wide ((256, 256) at 64: (64, 64); FastTD3's (1024, 512, 256) at 256:
    (256, 128, 64)), every layer at least 1 wide."""
    return tuple(max(1, round(h * width / base[0])) for h in base)


def critic_parameters(trainer: Any) -> int:
    """The critic parameter count N of a trainer's agent (every critic of its ensemble, the
    papers' model size), from the shapes of its initial state (nothing runs)."""
    import jax
    import numpy as np

    from jaxrl.loops.base import init_agent

    shapes = jax.eval_shape(
        lambda key: init_agent(trainer.agent, key, trainer.observation, trainer.env.action_size),
        jax.random.PRNGKey(0),
    )
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes.critic.params))


def _width_configs(agent_config: Any, widths: Sequence[int] | None) -> dict:
    """{width: agent config with the critic's sizes at that width}; {None: agent_config} where
    the grid has no width axis."""
    if not widths:
        return {None: agent_config}
    base = getattr(agent_config, WIDTH_FIELD, None)
    if not base:
        raise ConfigError(f"--widths: this algorithm's config has no {WIDTH_FIELD} to scale")
    out = {}
    for width in widths:
        try:
            out[width] = dataclasses.replace(
                agent_config, **{WIDTH_FIELD: critic_sizes(base, width)}
            )
        except ValueError as error:
            raise ConfigError(f"--widths {width}: {error}") from None
    return out


def _propose(config: TrainConfig, agent_config: Any, lr_field: str, utds, batch_sizes, lrs):
    """The axes not given, proposed around the base config: sigma0 x (1/4 .. 4) where whole,
    B0 x (1/2, 1, 2) and lr0 x (1/3, 1, 3) (PROPOSED_*); lr0 is the base value of the
    learning-rate axis's fields (of a tied axis, one they share: ConfigError otherwise)."""
    sigma0 = config.updates_per_step / config.num_envs
    if utds is None:
        utds = tuple(
            s
            for s in (sigma0 * f for f in PROPOSED_UTD)
            if round(s * config.num_envs) >= 1
            and math.isclose(round(s * config.num_envs), s * config.num_envs)
        )
    if batch_sizes is None:
        batch_sizes = tuple(sorted({max(1, round(config.batch_size * f)) for f in PROPOSED_BATCH}))
    if lrs is None:
        base = {name: getattr(agent_config, name) for name in lr_field.split("+")}
        if len(set(base.values())) > 1:
            given = ", ".join(f"{name} {value:g}" for name, value in base.items())
            raise ConfigError(
                f"--lr-field {lr_field} gives its fields one learning rate, but the base config "
                f"has {given}: give the learning rates to try, --lrs LR1,LR2,..., or make the "
                "base values equal"
            )
        lr0 = next(iter(base.values()))
        lrs = tuple(sorted({float(f"{lr0 * f:.3g}") for f in PROPOSED_LR}))
    return utds, batch_sizes, lrs


def _spec(plan_args: dict) -> dict:
    """scale_grid.json: the base configs (without the fields the grid sets), the learning-rate
    axis and seeds (fixed for a folder: they train inside every program), the target, and the
    runs (their UTD ratio and batch size by folder)."""
    config, agent = plan_args["config"], plan_args["agent_config"]
    train = dataclasses.asdict(config)
    for name in ("updates_per_step", "batch_size", "seed"):
        train.pop(name)
    agent_dict = dataclasses.asdict(agent)
    for name in plan_args["lr_field"].split("+"):
        agent_dict.pop(name)
    widths = {}
    if plan_args.get("widths"):  # the grid sets the critic's sizes
        agent_dict.pop(WIDTH_FIELD)
        widths = {"widths": list(plan_args["widths"])}
    return json.loads(
        json.dumps(
            {
                "algo": config.algo,
                "env": config.env,
                "target": plan_args["target"],
                "lr_field": plan_args["lr_field"],
                "lrs": list(plan_args["lrs"]),
                "seeds": list(plan_args["seeds"]),
                **widths,
                "train": train,
                "agent": agent_dict,
                "runs": plan_args["runs"],
            }
        )
    )


FIXED_KEYS = ("algo", "env", "lr_field", "lrs", "seeds", "train", "agent")


def _check_against_folder(out: pathlib.Path, spec: dict) -> dict:
    """The spec merged with the folder's scale_grid.json, if any: the runs it had stay, the
    base configs, learning rates and seeds must be the same (ScaleError naming what differs)."""
    if not (out / GRID_FILE).is_file():
        return spec
    saved = read_grid_file(out)
    differ = []
    for key in FIXED_KEYS:
        if key in ("train", "agent"):
            differ += [
                f"{key}.{name}"
                for name in sorted(set(saved.get(key, {})) | set(spec[key]))
                if saved.get(key, {}).get(name) != spec[key].get(name)
            ]
        elif saved.get(key) != spec[key]:
            differ.append(key)
    if saved.get("lr_field") != spec["lr_field"]:
        raise ScaleError(
            f"{out} holds a scale grid whose learning-rate axis is --lr-field "
            f"{saved.get('lr_field')}, not {spec['lr_field']} (folders made before the tied "
            "default vary critic_lr alone): go on with it by leaving --lr-field out or giving "
            f"--lr-field {saved.get('lr_field')}, or use another --out"
        )
    if bool(saved.get("widths")) != bool(spec.get("widths")):
        made = "with" if saved.get("widths") else "without"
        raise ScaleError(
            f"{out} holds a scale grid made {made} a width axis (--widths); a folder keeps it "
            "(widths can be added to one that has the axis): use another --out"
        )
    if differ:
        raise ScaleError(
            f"{out} holds a scale grid with other settings ({', '.join(differ)} differ); a "
            "folder keeps its base config, learning rates and seeds (UTD ratios and batch sizes "
            "can be added): use another --out, or the same settings"
        )
    merged = {**spec, "runs": {**saved.get("runs", {}), **spec["runs"]}}
    if spec.get("widths"):
        merged["widths"] = sorted({*saved["widths"], *spec["widths"]})
    return merged


def _status(
    folder: pathlib.Path, config: TrainConfig, plan_args: dict, agent_config: Any = None
) -> str:
    """new, done, failed or resume; a folder of another run is a ScaleError."""
    if (folder / FAILED_FILE).is_file():
        return "failed"
    if not (folder / "config.json").is_file():
        if (folder / "metrics.jsonl").is_file() or (folder / "checkpoints").is_dir():
            raise ScaleError(f"{folder} holds metrics or checkpoints but no config.json")
        return "new"
    saved = json.loads((folder / "config.json").read_text())
    train = saved.get("train", {})
    mine = {
        "updates_per_step": config.updates_per_step,
        "batch_size": config.batch_size,
        "num_envs": config.num_envs,
        "seeds": list(plan_args["seeds"]),
        "vmap": {plan_args["lr_field"]: list(plan_args["lrs"])},
    }
    theirs = {
        **{k: train.get(k) for k in mine if k in train},
        **{k: saved.get(k) for k in ("seeds", "vmap")},
    }
    if plan_args.get("widths"):
        mine[WIDTH_FIELD] = list(getattr(agent_config, WIDTH_FIELD))
        theirs[WIDTH_FIELD] = saved.get("agent", {}).get(WIDTH_FIELD)
    if theirs != mine:
        raise ScaleError(f"{folder} holds another run ({theirs}, expected {mine})")
    return "done" if (folder / "summary.json").is_file() else "resume"


def plan(
    config: TrainConfig,
    agent_config: Any,
    out: str | os.PathLike,
    *,
    target: float,
    utds: Sequence[float] | None = None,
    batch_sizes: Sequence[int] | None = None,
    lrs: Sequence[float] | None = None,
    seeds: Any = DEFAULT_SEEDS,
    lr_field: str | None = None,
    budget: float | None = None,
    widths: Sequence[int] | None = None,
) -> Plan:
    """Checks the whole grid and says what each program will do; writes nothing. Every input
    error is a ConfigError (or ScaleError) raised here, before anything compiles.

    `widths`: a width axis (Fu et al. 2025's model size): one program per (sigma, batch size,
    width), the critic's hidden sizes scaled to each width (`critic_sizes`); None: the base
    config's critic only.

    `lr_field`: the learning-rate axis, a field or fields joined by '+' (tied: every field
    takes each value). None: the folder's own, where `out` already holds a grid, else
    `default_lr_field` (actor_lr+critic_lr, or what the algorithm has of them)."""
    from jaxrl import grid
    from jaxrl.run import driver

    if target is None or not math.isfinite(target):
        raise ConfigError("jaxrl scale needs the target return J: --target J")
    config = driver.with_algorithm(config, agent_config)
    if config.on_policy:
        raise ConfigError(
            f"{config.algo} is on-policy: it has no replay buffer and no updates-to-data ratio "
            "to scale; jaxrl scale takes an off-policy algorithm (sac, td3, crossq, ...)"
        )
    if agent_config is None:
        from jaxrl import agents

        agent_config = agents.get(config.algo).config_cls()
    notes = []
    if lr_field is None:
        lr_field, note = _lr_field_of(pathlib.Path(out), agent_config)
        notes += [note] if note else []
    lr_field = _check_lr_field(lr_field, agent_config, config.algo)
    utds, batch_sizes, lrs, widths = (
        _axis(utds, "--utd"),
        _axis(batch_sizes, "--batch-sizes", int),
        _axis(lrs, "--lrs"),
        _axis(widths, "--widths", int),
    )
    by_width = _width_configs(agent_config, widths)
    utds, batch_sizes, lrs = _propose(config, agent_config, lr_field, utds, batch_sizes, lrs)
    if len(set(utds)) < MIN_UTDS:
        raise ConfigError(
            f"--utd {','.join(f'{u:g}' for u in utds)}: fitting D_J(sigma) = D_min + "
            f"(beta/sigma)^alpha needs at least {MIN_UTDS} UTD ratios, got {len(set(utds))}"
        )
    seeds = driver.parse_seeds(seeds)
    per_steps = {s: updates_per_step(s, config.num_envs) for s in utds}
    cost_per_step = len(seeds) * len(lrs) * len(batch_sizes) * len(by_width) * sum(utds)
    if budget is not None:
        if not budget > 0:
            raise ConfigError(f"--budget must be > 0 gradient updates, got {budget:g}")
        # The updates run after the warm-up: learning_starts steps, then budget's worth.
        steps = config.learning_starts + max(1, int(budget // cost_per_step))
        config = _replace(config, total_steps=steps)
    axis = grid.parse_vmap({lr_field: lrs}, config, agent_config)
    for setting in grid.Grid(tuple(seeds), axis).settings:  # each as its member would take it
        grid.member_configs(setting, config, agent_config)
    out = pathlib.Path(out)
    plan_args = {"config": config, "agent_config": agent_config, "lr_field": lr_field}
    plan_args.update(target=target, lrs=lrs, seeds=seeds, widths=widths)
    # The env, the agent config and the run's sizes, as jaxrl train checks them, once per
    # width (the programs differ only in updates_per_step and batch_size, checked below).
    first = _replace(config, updates_per_step=per_steps[utds[0]], batch_size=int(batch_sizes[0]))
    sizes = _checked_widths(first, by_width)
    programs, plan_args["runs"] = _programs(config, per_steps, batch_sizes, by_width, sizes)
    spec = _check_against_folder(out, _spec(plan_args))
    checked = []
    for real, batch, name, one, width, width_config in programs:
        folder = out / name
        status = _status(folder, one, plan_args, width_config) if folder.exists() else "new"
        if status == "new":
            check_run_dir(folder)
        checked.append(Program(real, batch, name, one, status, width, width_config))
    return Plan(
        out=out,
        config=config,
        agent_config=agent_config,
        target=float(target),
        utds=tuple(p[0] for p in programs[:: len(batch_sizes) * len(by_width)]),
        batch_sizes=tuple(int(b) for b in batch_sizes),
        lrs=tuple(float(lr) for lr in lrs),
        lr_field=lr_field,
        seeds=tuple(seeds),
        programs=tuple(checked),
        spec=spec,
        notes=tuple(notes),
        widths=widths,
    )


def _checked_widths(config: TrainConfig, by_width: dict) -> dict[int, int]:
    """Each width's critic parameter count N (its model size, for its compute in FLOPs), once
    `config` with the width's agent config passed jaxrl train's checks."""
    from jaxrl.run import driver

    sizes = {}
    for width, width_config in by_width.items():
        try:
            trainer = driver.check_setting(config, width_config)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if width is not None:
            sizes[width] = critic_parameters(trainer)
    return sizes


def _programs(config: TrainConfig, per_steps: dict, batch_sizes, by_width: dict, sizes: dict):
    """The grid's programs, (UTD, batch size, name, run config, width, agent config) in the
    order they train (UTD, then batch size, then width), and the runs as scale_grid.json keeps
    them, by name."""
    programs, runs = [], {}
    for per_step in per_steps.values():
        for batch in batch_sizes:
            one = _replace(config, updates_per_step=per_step, batch_size=int(batch))
            real = per_step / config.num_envs
            for width, width_config in by_width.items():
                name = run_name(real, int(batch), width)
                runs[name] = {
                    "utd": real,
                    "batch_size": int(batch),
                    "updates_per_step": one.updates_per_step,
                }
                if width is not None:
                    runs[name].update(
                        width=width,
                        critic_hidden=list(getattr(width_config, WIDTH_FIELD)),
                        critic_params=sizes[width],
                    )
                programs.append((real, int(batch), name, one, width, width_config))
    return programs, runs


def default_lr_field(agent_config: Any) -> tuple[str, str | None]:
    """The learning-rate axis of an algorithm's grid, and a note where it is not the default:
    actor_lr+critic_lr (one learning rate for both, as Rybkin et al. and Fu et al. tune it);
    where the config has only one of them, that one; where it has neither, its learning rates
    tied (alpha_lr, the temperature's, kept out unless it is the only one)."""
    names = [name for name, _ in _lr_fields(agent_config)]
    algo = type(agent_config).__name__
    if "actor_lr" in names and "critic_lr" in names:
        return DEFAULT_LR_FIELD, None
    have = [name for name in ("actor_lr", "critic_lr") if name in names]
    have = have or [name for name in names if name != "alpha_lr"] or names
    if not have:
        raise ConfigError(f"{algo} has no learning rate that can vary inside one program")
    field = "+".join(have)
    return field, (
        f"{algo} lacks {' and '.join(n for n in ('actor_lr', 'critic_lr') if n not in names)}: "
        f"the learning-rate axis is {field}"
    )


def _lr_field_of(out: pathlib.Path, agent_config: Any) -> tuple[str, str | None]:
    """The learning-rate axis where --lr-field is not given: that of the grid `out` holds (a
    folder made before the tied default goes on as it was made), else the default."""
    if (out / GRID_FILE).is_file():
        saved = read_grid_file(out).get("lr_field")
        field, _ = default_lr_field(agent_config)
        if saved and saved != field:
            return saved, (
                f"{out} was made with --lr-field {saved}, not the default {field}: going on "
                "with its own axis (the other learning rates stay at their base values)"
            )
        if saved:
            return saved, None
    return default_lr_field(agent_config)


def _check_lr_field(lr_field: str, agent_config: Any, algo: str) -> str:
    """--lr-field as the grid's axis name: each '+'-joined part a learning rate of the algorithm
    that can vary inside one program, none twice (ConfigError naming the part otherwise)."""
    known = [name for name, _ in _lr_fields(agent_config)]
    parts = [part.strip().lstrip("-").replace("-", "_") for part in str(lr_field).split("+")]
    if not all(parts):
        raise ConfigError(
            f"--lr-field {lr_field}: an empty field; tie learning rates by joining them with "
            f"'+' (actor_lr+critic_lr), each one of {', '.join(known)}"
        )
    for part in parts:
        if part not in known:
            where = f" (in {lr_field})" if len(parts) > 1 else ""
            raise ConfigError(
                f"--lr-field {part}{where}: not a learning rate of {algo} that "
                f"can vary inside one program; choose from {', '.join(known)}, or tie several "
                "with '+' (actor_lr+critic_lr)"
            )
    if len(set(parts)) != len(parts):
        raise ConfigError(f"--lr-field {lr_field}: a field is named twice")
    return "+".join(parts)


def _lr_fields(agent_config: Any) -> list[tuple[str, float]]:
    from jaxrl.agents.base import array_fields

    return [
        (name, getattr(agent_config, name))
        for name in array_fields(agent_config)
        if name.endswith("_lr") or name == "learning_rate"
    ]


def _replace(config: TrainConfig, **changes) -> TrainConfig:
    try:
        return dataclasses.replace(config, **changes)
    except ValueError as error:
        raise ConfigError(str(error)) from None
