"""`jaxrl sweep`: a grid of settings x seeds trained one run after another, one run folder
each (FOLDER/SETTING/sSEED), every run's config checked before the first trains, then the final
evaluation returns summarised per setting (summary.md, summary.json, a table).

FOLDER/sweep.json keeps the command line, so `jaxrl sweep --resume FOLDER` goes on with a sweep
that stopped part-way: a finished run (its summary.json) is read, one under way resumes from its
newest checkpoint (`driver.resume`), one not begun trains."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import os
import pathlib
import typing
from typing import Any

from jaxrl.config import ConfigError, TrainConfig
from jaxrl.config.parsing import parse_int, parse_widths
from jaxrl.config.resolve import TrainOptions, build_configs, default_out
from jaxrl.errors import Interrupted, JaxrlError
from jaxrl.files import SWEEP_PLAN, write_atomically
from jaxrl.run.folder import RunDirError, check_run_dir

PLAN_FILE = SWEEP_PLAN  # the sweep's command line, for --resume


def _grid_value(cls: type, name: str, text: str) -> Any:
    kind = typing.get_type_hints(cls)[name]
    if typing.get_origin(kind) in (typing.Union, __import__("types").UnionType):
        if text.lower() == "none":
            return None
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if kind is int:
        return parse_int(text)
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
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
        if name in (axis[0][0] for axis in axes):
            raise ConfigError(f"--grid {name} is given twice; give its values once: {name}=V1,V2")
        try:
            parsed = [_grid_value(type(owner), name, v) for v in values.split(",")]
        except ValueError as error:
            raise ConfigError(f"--grid {name}: {error}") from None
        repeated = sorted({str(v) for v in parsed if parsed.count(v) > 1})
        if repeated:
            raise ConfigError(f"--grid {name} repeats a value: {', '.join(repeated)}")
        axes.append([(name, value) for value in parsed])
    return [dict(point) for point in itertools.product(*axes)]


def _setting_label(point: dict[str, Any]) -> str:
    def text(v):
        return "x".join(map(str, v)) if isinstance(v, tuple) else str(v)

    return "-".join(f"{k}={text(v)}" for k, v in point.items()) or "base"


def plan_sweep(
    argv: list[str], *, resuming: bool = False
) -> tuple[pathlib.Path, list, list[int], TrainOptions] | None:
    """The sweep's folder, its runs (setting, seed, run config, agent config), the seeds and the
    train options; every run's config checked. None for --help (printed). `resuming`: the
    folder holds this sweep begun (`--resume` re-plans it from its sweep.json), and its runs'
    folders may hold their runs, finished or not, but no other ones."""
    from jaxrl.run import driver

    parser = argparse.ArgumentParser(prog="jaxrl sweep", add_help=False, allow_abbrev=False)
    parser.add_argument("--grid", action="append", default=[])
    parser.add_argument("--seeds", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--resume", action="append", default=None)
    parser.add_argument("-h", "--help", action="store_true")
    args, rest = parser.parse_known_args(argv)
    if args.help:
        print(
            "usage: jaxrl sweep [TRAIN FLAGS] --grid NAME=V1,V2 [--grid ...] [--seeds N | "
            "--seeds 0,3,7] [--out FOLDER]\n       jaxrl sweep --resume FOLDER [--quiet]\n\n"
            "Trains every combination of the grid's values for every seed (--seeds N: N seeds "
            "from --seed, 0 by default, as jaxrl train), one after another, one run "
            "folder each (FOLDER/SETTING/sSEED), then prints and writes (FOLDER/summary.md, "
            "summary.json) the final eval return per setting: mean, std and each seed's. "
            "TRAIN FLAGS are those of jaxrl train (--preset, --algo, --env, ...); widths in a "
            "grid are written 64x64. --resume goes on with a sweep that stopped part-way, with "
            "its own settings: finished runs are kept, the one under way resumes from its "
            "newest checkpoint, the others train."
        )
        return None
    if args.resume is not None:
        saved_argv, cwd = _saved_argv(args, rest)
        # Planned from the folder the sweep began in: its relative paths (--config, --import)
        # name what they named then.
        with contextlib.chdir(cwd) if cwd.is_dir() else contextlib.nullcontext():
            return plan_sweep(saved_argv, resuming=True)
    if any(w == "--resume" or w.startswith("--resume=") for w in rest):
        raise ConfigError("jaxrl sweep takes --resume FOLDER (the sweep's own folder) alone")
    train, agent, options = build_configs(rest)
    # As jaxrl train reads them: a count from --seed (--seeds 3: 0, 1, 2), or a list.
    seeds = list(driver.parse_seeds(args.seeds if args.seeds is not None else 1, train.seed))
    if options.vmap:
        raise ConfigError(
            "jaxrl sweep trains one run per setting and takes no --vmap; to train settings "
            "that are data in one program, use jaxrl train --vmap NAME=V1,V2"
        )
    points = parse_grid(args.grid, train, agent)
    out = pathlib.Path(args.out or default_out(train).replace("runs/", "sweeps/", 1))
    if (out / PLAN_FILE).exists():  # a sweep's folder: its runs are checked below
        if (out / "summary.json").exists() and not resuming:
            raise RunDirError(f"{out} already holds a finished sweep; pick another --out")
        if not resuming:
            _check_same_sweep(out, argv)
    else:
        check_run_dir(out)
    # Every run's config is built and checked before the first one trains.
    plan = []
    resolved = {}  # per setting, its grid values as a run's config.json keeps them
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
            trainer = driver.check_setting(config, agent_config)
        except ValueError as error:
            raise ConfigError(f"grid setting {_setting_label(point)}: {error}") from None
        resolved[_setting_label(point)] = {  # the algorithm's loop defaults filled in
            name: getattr(trainer.config if name in train_fields else agent_config, name)
            for name in point
        }
    begun = [
        (point, seed)
        for point, seed, _, _ in plan
        if (_run_dir(out, point, seed) / "config.json").exists()
    ]
    if begun and not resuming:
        raise RunDirError(
            f"{out} holds a sweep begun earlier ({len(begun)} of its {len(plan)} runs begun); "
            f"go on with it: jaxrl sweep --resume {out}, or pick another --out"
        )
    for point, seed, _, _ in plan:
        if (point, seed) in begun:
            _check_same_run(_run_dir(out, point, seed), resolved[_setting_label(point)], seed)
        else:
            check_run_dir(_run_dir(out, point, seed))
    return out, plan, seeds, options


def _run_dir(out: pathlib.Path, point: dict[str, Any], seed: int) -> pathlib.Path:
    return out / _setting_label(point) / f"s{seed}"


def _saved_argv(args: argparse.Namespace, rest: list[str]) -> tuple[list[str], pathlib.Path]:
    """The command line of the sweep in `args.resume`, from its sweep.json, with --out (the
    folder, absolute) and (if given now) --quiet, and the folder the sweep began in (this one,
    for a sweep.json that does not name it); anything else given beside --resume is an
    error."""
    others = [w for w in rest if w.startswith("-") and w != "--quiet"]
    words = [w for w in rest if not w.startswith("-")]
    if words and not others:  # `--resume a b`: a shell's glob of several folders, say
        raise ConfigError(f"--resume takes one sweep's folder; also given: {' '.join(words)}")
    others += [f"--{n}" for n in ("grid", "seeds", "out") if getattr(args, n)]
    if others:
        raise ConfigError(
            f"--resume goes on with the sweep's saved settings; {', '.join(others)} cannot "
            "change (only --quiet can be given)"
        )
    if len(args.resume) > 1:
        raise ConfigError(f"--resume is given twice ({', '.join(args.resume)}); give one sweep")
    folder = pathlib.Path(args.resume[0])
    if folder.name == PLAN_FILE and folder.is_file():  # the sweep's file named for its folder
        folder = folder.parent
    if not folder.is_dir():
        what = "no such folder" if not folder.exists() else "a file, not a folder"
        raise ConfigError(f"--resume {folder}: {what}; give the sweep's folder (--out)")
    if not (folder / PLAN_FILE).exists():
        raise ConfigError(
            f"{folder} is not a sweep to resume: it has no {PLAN_FILE} (a sweep begun by a "
            "jaxrl before 'jaxrl sweep --resume' has none; resume its runs one by one with "
            "jaxrl train --resume FOLDER/SETTING/sN)"
        )
    argv, cwd = _read_plan(folder)
    if argv is None:
        raise ConfigError(f"{folder / PLAN_FILE} cannot be read: it holds no command line")
    quiet = ["--quiet"] if "--quiet" in rest else []
    return [*argv, "--out", str(folder.resolve()), *quiet], cwd


def _read_plan(folder: pathlib.Path) -> tuple[list[str] | None, pathlib.Path]:
    """The command line (None where the file cannot be read) and the folder the sweep in
    `folder` began in (this one, where its sweep.json does not name it)."""
    try:
        saved = json.loads((folder / PLAN_FILE).read_text())
        return [str(w) for w in saved["argv"]], pathlib.Path(saved.get("cwd") or os.getcwd())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, pathlib.Path.cwd()


def _check_same_sweep(out: pathlib.Path, argv: list[str]) -> None:
    """A new sweep into `out`, which holds a sweep's sweep.json: refused where that sweep has
    begun runs and another command line (it would be lost to --resume, and the folder would
    mix two sweeps); the same command line's begun runs are refused by name, with --resume."""
    saved, _ = _read_plan(out)
    mine = [w for w in _without_out(argv) if w != "--quiet"]
    if saved != mine and any(out.glob("*/s*/config.json")):
        raise JaxrlError(
            f"{out} holds another sweep, begun with: jaxrl sweep {' '.join(map(str, saved or []))}"
            f"; pick another --out, or go on with that one: jaxrl sweep --resume {out}"
        )


def _check_same_run(run_dir: pathlib.Path, point: dict[str, Any], seed: int) -> None:
    """The run begun in `run_dir` is this sweep's: its seed and its grid values (resolved, as
    its config.json keeps them) are those planned for that folder."""
    from jaxrl.run import runs

    saved = runs.read_config_json(run_dir)
    values = {**saved.get("agent", {}), **saved.get("train", {})}
    planned = {"seed": seed, **point}
    differ = [
        f"{name} {values.get(name)!r} (the sweep's: {value!r})"
        for name, value in planned.items()
        if _json_value(value) != values.get(name)
    ]
    if differ:
        raise JaxrlError(
            f"{run_dir} holds a run of other settings than the sweep's: {', '.join(differ)}; "
            "move it away, or resume it alone (jaxrl train --resume)"
        )


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def main(argv: list[str]) -> int:
    """jaxrl sweep [train flags] --grid NAME=V1,V2 ... --seeds 0,1,2 --out FOLDER, or
    jaxrl sweep --resume FOLDER"""
    from jaxrl.version import version

    planned = plan_sweep(argv)
    if planned is None:
        return 0
    out, plan, seeds, options = planned
    here = contextlib.nullcontext()
    if not any(w == "--resume" or w.startswith("--resume=") for w in argv):
        out.mkdir(parents=True, exist_ok=True)
        kept = [w for w in _without_out(argv) if w != "--quiet"]
        saved = {"argv": kept, "cwd": os.getcwd(), "jaxrl": version()}
        write_atomically(out / PLAN_FILE, json.dumps(saved, indent=2))
    else:  # trained, as planned, from the folder the sweep began in (`plan_sweep`)
        cwd = _read_plan(out)[1]
        here = contextlib.chdir(cwd) if cwd.is_dir() else here
    with here:
        finals = _train_runs(out, plan, options)
    _write_sweep_summary(out, finals, seeds)
    return 0


def _train_runs(out: pathlib.Path, plan: list, options: TrainOptions) -> dict[str, list[float]]:
    """Each planned run trained (or resumed, or read where it finished), one after another;
    the final eval returns by setting."""
    from jaxrl.run import driver

    finals: dict[str, list[float]] = {}
    progress = None if options.quiet else "auto"
    for index, (point, seed, config, agent_config) in enumerate(plan):
        label = _setting_label(point)
        run_dir = _run_dir(out, point, seed)
        head = f"[sweep {index + 1}/{len(plan)}] {label} seed {seed}"
        which = f"run {index + 1} of {len(plan)} ({run_dir})"
        again = f"continue the sweep with: jaxrl sweep --resume {out}"
        summary = run_dir / "summary.json"
        result = None
        try:
            if summary.exists():  # finished before a --resume
                final = _final_return(summary)
                print(f"{head}: finished earlier, eval return {final:.2f} ({run_dir})")
            elif (run_dir / "config.json").exists():  # under way when the sweep stopped
                print(f"{head} -> {run_dir} (resumed)")
                result = driver.resume(
                    run_dir, progress=progress, compile_cache=options.compile_cache
                )
            else:
                print(f"{head} -> {run_dir}")
                result = driver.train(
                    config,
                    agent_config,
                    run_dir,
                    progress=progress,
                    options=options.kept(),
                    compile_cache=options.compile_cache,
                )
        except Interrupted as stop:  # Ctrl-C in training: a checkpoint was saved
            history = stop.result.history if stop.result is not None else []
            steps = history[-1]["env_steps"] if history else 0
            raise Interrupted(
                f"{which} interrupted at {steps:,} env steps; checkpoint saved. "
                f"{again[0].upper()}{again[1:]}",
                stop.result,
            ) from None
        except KeyboardInterrupt:  # while starting, or a second Ctrl-C: the CLI prints this
            raise KeyboardInterrupt(
                f"{which} stopped, nothing saved since its last checkpoint, if it has one; {again}"
            ) from None
        if result is not None:
            final = result.final_eval_return
            if result.interrupted:  # Ctrl-C in its last chunk: it finished, the sweep stops
                raise Interrupted(f"{which} finished as Ctrl-C came; {again}", result)
        finals.setdefault(label, []).append(final)
    return finals


def _final_return(summary: pathlib.Path) -> float:
    try:
        return float(json.loads(summary.read_text())["final_eval_return"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise JaxrlError(
            f"{summary} cannot be read ({error!r}); move it away and the sweep's --resume "
            "writes it again from the run's last checkpoint"
        ) from None


def _without_out(argv: list[str]) -> list[str]:
    """`argv` less its --out FOLDER (the sweep's folder, given anew to --resume)."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out="):
            kept.append(word)
    return kept


def _write_sweep_summary(out: pathlib.Path, finals: dict[str, list[float]], seeds) -> None:
    """summary.json, summary.md and the table printed: per setting, best mean first, the mean,
    the sample std and standard error over the seeds (None, "-" in the tables, of one seed)."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    rows = []
    for label, values in finals.items():
        values_array = np.asarray(values)
        std = float(values_array.std(ddof=1)) if len(values) > 1 else None
        rows.append(
            {
                "setting": label,
                "mean": float(values_array.mean()),
                "std": std,
                "stderr": None if std is None else std / math.sqrt(len(values)),
                "returns": [float(v) for v in values],
                "seeds": list(seeds),
            }
        )
    rows.sort(key=lambda r: -r["mean"])
    write_atomically(out / "summary.json", json.dumps(rows, indent=2))
    title = f"final eval return, seeds {', '.join(map(str, seeds))}"
    columns = ("setting", "mean", "std", "stderr", "per seed")
    cells = [
        (
            r["setting"],
            *("-" if r[k] is None else f"{r[k]:.2f}" for k in ("mean", "std", "stderr")),
            ", ".join(f"{v:.1f}" for v in r["returns"]),
        )
        for r in rows
    ]
    lines = [title, "", f"| {' | '.join(columns)} |", "| --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in cells]
    write_atomically(out / "summary.md", "\n".join(lines) + "\n")
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="left" if column == "setting" else "right")
    for row in cells:
        table.add_row(*row)
    Console().print(table)
    print(f"summary: {out / 'summary.md'}")
