"""`jaxrl sweep`: a grid of settings x seeds trained one run after another, one run folder
each (FOLDER/SETTING/sSEED), every run's config checked before the first trains, then the final
evaluation returns summarised per setting (summary.md, summary.json, a table)."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import pathlib
import typing
from typing import Any

from jaxrl.config import ConfigError, TrainConfig
from jaxrl.config.resolve import (
    TrainOptions,
    build_configs,
    default_out,
    parse_int,
    parse_widths,
    run_options,
)


def _grid_value(cls: type, name: str, text: str) -> Any:
    kind = typing.get_type_hints(cls)[name]
    if typing.get_origin(kind) in (typing.Union, __import__("types").UnionType):
        if text.lower() == "none":
            return None
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"--grid {name}: expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is int:
        return parse_int(text)
    if kind is float:
        return float(text)
    if typing.get_origin(kind) is tuple:
        return parse_widths(text)
    return text


def parse_grid(items: list[str], train: TrainConfig, agent: Any) -> list[dict[str, Any]]:
    """--grid NAME=V1,V2 (repeatable) as the list of settings of their product; widths are
    separated by x in a grid (critic_hidden=64x64,256x256)."""
    axes = []
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().lstrip("-").replace("-", "_")
        if not sep or not values:
            raise ConfigError(f"--grid takes NAME=V1,V2,..., got {item!r}")
        owner = next(
            (c for c in (train, agent) if name in {f.name for f in dataclasses.fields(c)}), None
        )
        if owner is None or name in ("algo", "seed", "env_options"):
            raise ConfigError(
                f"--grid {name}: not a field of the run or {train.algo} config (seeds: --seeds)"
            )
        parsed = [_grid_value(type(owner), name, v) for v in values.split(",")]
        axes.append([(name, value) for value in parsed])
    return [dict(point) for point in itertools.product(*axes)]


def _setting_label(point: dict[str, Any]) -> str:
    def text(v):
        return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)

    return "-".join(f"{k}={text(v)}" for k, v in point.items()) or "base"


def plan_sweep(argv: list[str]) -> tuple[pathlib.Path, list, list[int], TrainOptions] | None:
    """The sweep's folder, its runs (setting, seed, run config, agent config), the seeds and the
    train options; every run's config checked. None for --help (printed)."""
    from jaxrl import driver

    parser = argparse.ArgumentParser(prog="jaxrl sweep", add_help=False, allow_abbrev=False)
    parser.add_argument("--grid", action="append", default=[])
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--out", default=None)
    parser.add_argument("-h", "--help", action="store_true")
    args, rest = parser.parse_known_args(argv)
    if args.help:
        print(
            "usage: jaxrl sweep [TRAIN FLAGS] --grid NAME=V1,V2 [--grid ...] [--seeds 0,1,2] "
            "[--out FOLDER]\n\nTrains every combination of the grid's values for every seed, "
            "one after another, one run folder each (FOLDER/SETTING/sSEED), then prints and "
            "writes (FOLDER/summary.md, summary.json) the final eval return per setting: mean, "
            "std and each seed's. TRAIN FLAGS are those of jaxrl train (--preset, --algo, "
            "--env, ...); widths in a grid are written 64x64."
        )
        return None
    if "--resume" in rest:
        raise ConfigError("jaxrl sweep does not take --resume; resume its runs one by one")
    if any(w == "--seed" or w.startswith("--seed=") for w in rest):
        raise ConfigError(
            "jaxrl sweep takes --seeds 0,1,2 (the seeds of every setting), not --seed"
        )
    try:
        seeds = [parse_int(s) for s in args.seeds.split(",") if s]
    except ValueError as error:
        raise ConfigError(f"--seeds: {error}") from None
    if not seeds:
        raise ConfigError("--seeds needs at least one seed, e.g. --seeds 0,1,2")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds repeats a seed: {args.seeds}")
    train, agent, options = build_configs(rest)
    points = parse_grid(args.grid, train, agent)
    out = pathlib.Path(args.out or default_out(train).replace("runs/", "sweeps/", 1))
    driver.check_run_dir(out)
    if (out / "summary.json").exists():
        raise driver.RunDirError(f"{out} already holds a sweep; pick another --out")
    # Every run's config is built and checked before the first one trains.
    plan = []
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for point in points:
        run_kwargs = {k: v for k, v in point.items() if k in train_fields}
        agent_kwargs = {k: v for k, v in point.items() if k not in train_fields}
        try:
            agent_config = dataclasses.replace(agent, **agent_kwargs)
            for seed in seeds:
                config = dataclasses.replace(train, seed=seed, **run_kwargs)
                plan.append((point, seed, config, agent_config))
            # The checks jaxrl train makes before compiling (env name and options, sizes the
            # agent needs of the run, the algorithm's loop defaults), once per setting.
            driver.check_setting(config, agent_config)
        except ValueError as error:
            raise ConfigError(f"grid setting {_setting_label(point)}: {error}") from None
        for seed in seeds:
            driver.check_run_dir(out / _setting_label(point) / f"s{seed}")
    return out, plan, seeds, options


def main(argv: list[str]) -> int:
    """jaxrl sweep [train flags] --grid NAME=V1,V2 ... --seeds 0,1,2 --out FOLDER"""
    from jaxrl import driver

    planned = plan_sweep(argv)
    if planned is None:
        return 0
    out, plan, seeds, options = planned
    finals: dict[str, list[float]] = {}
    for index, (point, seed, config, agent_config) in enumerate(plan):
        label = _setting_label(point)
        run_dir = out / label / f"s{seed}"
        print(f"[sweep {index + 1}/{len(plan)}] {label} seed {seed} -> {run_dir}")
        result = driver.train(
            config,
            agent_config,
            run_dir,
            progress=None if options.quiet else "auto",
            options=run_options(options),
            compile_cache=options.compile_cache,
        )
        finals.setdefault(label, []).append(result.final_eval_return)
    _write_sweep_summary(out, finals, seeds)
    return 0


def _write_sweep_summary(out: pathlib.Path, finals: dict[str, list[float]], seeds) -> None:
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    rows = []
    for label, values in finals.items():
        values_array = np.asarray(values)
        std = float(values_array.std(ddof=1)) if len(values) > 1 else 0.0
        rows.append(
            {
                "setting": label,
                "mean": float(values_array.mean()),
                "std": std,
                "stderr": std / math.sqrt(len(values)),
                "returns": [float(v) for v in values],
                "seeds": list(seeds),
            }
        )
    rows.sort(key=lambda r: -r["mean"])
    (out / "summary.json").write_text(json.dumps(rows, indent=2))
    lines = ["| setting | mean | std | stderr | per seed |", "| --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        per_seed = ", ".join(f"{v:.1f}" for v in r["returns"])
        lines.append(
            f"| {r['setting']} | {r['mean']:.2f} | {r['std']:.2f} | {r['stderr']:.2f} "
            f"| {per_seed} |"
        )
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    table = Table(title=f"final eval return, seeds {', '.join(map(str, seeds))}")
    for column in ("setting", "mean", "std", "stderr", "per seed"):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for r in rows:
        per_seed = ", ".join(f"{v:.1f}" for v in r["returns"])
        stats = (f"{r['mean']:.2f}", f"{r['std']:.2f}", f"{r['stderr']:.2f}")
        table.add_row(r["setting"], *stats, per_seed)
    Console().print(table)
    print(f"summary: {out / 'summary.md'}")
