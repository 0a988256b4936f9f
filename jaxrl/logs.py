"""Where a run's metric rows go: metrics.jsonl, metrics.csv, TensorBoard event files (tensorboardX),
optionally Weights & Biases; and the live progress display (rich's progress bar on a terminal,
one plain line per chunk elsewhere)."""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import math
import numbers
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from jaxrl.errors import JaxrlError

# Rows hold these keys first, in this order; the algorithm's own metrics follow, sorted.
FIRST_COLUMNS = (
    "chunk",
    "env_steps",
    "eval_return",
    "eval_return_std",
    "eval_length",
    "train_episode_return",
    "train_episode_length",
    "train_episodes",
    "train_seconds",
    "wall_seconds",
    "chunk_seconds",
    "env_steps_per_second",
    "chunk_env_steps_per_second",
)


# TensorBoard shows scalars grouped by the part of their tag before "/". The metric files keep
# the rows' own names (other code reads them); only the TensorBoard tags are grouped, here.
PERF_COLUMNS = frozenset(
    {
        "train_seconds",
        "wall_seconds",
        "chunk_seconds",
        "compile_seconds",
        "env_steps_per_second",
        "chunk_env_steps_per_second",
        "all_seeds_env_steps_per_second",
        "offline_updates_per_second",
    }
)
EPISODE_COLUMNS = {
    "train_episode_return": "return",
    "train_episode_length": "length",
    "train_episodes": "count",
}


def tensorboard_tag(name: str) -> str:
    """A row's column as a grouped TensorBoard tag: eval/return (eval_return, eval_return_std,
    eval_length, the seeds' summary, best_seed), episode/return (training episodes: return,
    length, count), perf/env_steps_per_second (rates and seconds), losses/critic_loss (the
    agent's *_loss metrics), and train/NAME for every other metric (alpha, entropy, updates,
    env_steps, ...)."""
    if name.startswith("eval_"):
        return f"eval/{name[len('eval_') :]}"
    if name == "best_seed":
        return "eval/best_seed"
    if name in EPISODE_COLUMNS:
        return f"episode/{EPISODE_COLUMNS[name]}"
    if name in PERF_COLUMNS:
        return f"perf/{name}"
    if name.endswith("_loss"):
        return f"losses/{name}"
    return f"train/{name}"


def columns(row: dict) -> list[str]:
    first = [name for name in FIRST_COLUMNS if name in row]
    return first + sorted(name for name in row if name not in FIRST_COLUMNS)


_WRITERS = itertools.count()  # this process's TensorBoard writers, each its own file


class RunLogger:
    """Writes each chunk's row to the run folder's files (and W&B when a project is given).

    `history`: rows already logged by an earlier process of this run (a resume): the files are
    rewritten to hold exactly those, so rows a killed process wrote after its last checkpoint do
    not appear twice, and TensorBoard drops its events past them (`purge_step`)."""

    def __init__(
        self,
        out_path: pathlib.Path,
        *,
        history: list[dict] | None = None,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        config: dict | None = None,
    ):
        self.out_path = out_path
        history = list(history or [])
        reopened = (out_path / "metrics.jsonl").exists()  # a resume's or a rollback's
        self._jsonl = open(out_path / "metrics.jsonl", "w")  # noqa: SIM115
        self._csv_file = open(out_path / "metrics.csv", "w", newline="")  # noqa: SIM115
        self._csv = None
        self._rows: list[dict] = []  # what metrics.csv holds, to rewrite it with new columns
        for row in history:
            self._write_files(row)
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            # TensorBoard drops an earlier process's events from this step on. A rollback to
            # the run's start keeps no rows but left events: all of them go (step 0).
            purge = history[-1].get("step", history[-1]["env_steps"]) + 1 if history else None
            if purge is None and (out_path / "tensorboard").exists():
                purge = 0
            # tensorboardX names its file by the second and the host: a writer opened in the
            # same second (a rollback of a short run) would write over the one before.
            self._tb = SummaryWriter(
                str(out_path / "tensorboard"),
                purge_step=purge,
                filename_suffix=f".{os.getpid()}.{next(_WRITERS)}",
            )
        self._wandb = None
        if wandb_project:
            resume = bool(history) or reopened  # a rollback to the start keeps no rows
            self._wandb = start_wandb(wandb_project, out_path, config, resume=resume)

    def _write_files(self, row: dict) -> None:
        self._jsonl.write(json.dumps(row) + "\n")
        self._jsonl.flush()
        self._rows.append(row)
        if self._csv is None or not set(row) <= set(self._csv.fieldnames):
            # The header takes every column of every row so far: a row with columns the ones
            # before lacked (the first chunk's losses after the step-0 evaluation's row)
            # rewrites the file once with them.
            every = {name: None for kept in self._rows for name in kept}
            self._csv_file.seek(0)
            self._csv_file.truncate()
            self._csv = csv.DictWriter(self._csv_file, columns(every))
            self._csv.writeheader()
            self._csv.writerows(self._rows)
        else:
            self._csv.writerow(row)
        self._csv_file.flush()

    def write(self, row: dict) -> None:
        self._write_files(row)
        scalars = {
            k: v
            for k, v in row.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "chunk"
        }
        if self._tb is not None:
            for name, value in scalars.items():
                step = row.get("step", row["env_steps"])
                self._tb.add_scalar(tensorboard_tag(name), value, global_step=step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=row.get("step", row["env_steps"]))

    def add_scalar(self, name: str, value: float, env_steps: int) -> None:
        """A value that is no column of the rows (the compile time of this process), to
        TensorBoard only, under its grouped tag."""
        if self._tb is not None:
            self._tb.add_scalar(tensorboard_tag(name), value, global_step=env_steps)
            self._tb.flush()

    def close(self) -> None:
        self._jsonl.close()
        self._csv_file.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


class WandbMissingError(JaxrlError, RuntimeError):
    pass


def check_wandb(resuming: bool = False) -> None:
    """Weights & Biases is optional: `pip install wandb` (or the `wandb` extra) to use it."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        hint = " (or resume with --no-wandb to go on without W&B logging)" if resuming else ""
        raise WandbMissingError(
            "--wandb needs the wandb package, which is optional: pip install 'jaxrl[wandb]' "
            f"(or pip install wandb), then run again{hint}."
        ) from None


def start_wandb(project: str, out_path: pathlib.Path, config: dict | None, resume: bool):
    """A W&B run named after the run folder; its id is the run's own `run_id` (config.json),
    so a resume continues the same W&B run and two runs never share one."""
    check_wandb()
    import wandb

    run_id = (config or {}).get("run_id")
    if not run_id:  # a config.json without one: stable per folder
        run_id = hashlib.sha1(str(out_path.absolute()).encode()).hexdigest()[:12]
    return wandb.init(
        project=project,
        name=out_path.name,
        id=run_id,
        dir=str(out_path),
        config=config,
        resume="allow" if resume else None,
    )


def _remaining(total_steps: int, env_steps: int, rate: float, warming_up: bool) -> float:
    if warming_up or not rate > 0:
        return math.inf
    return (total_steps - env_steps) / rate


def _eta(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _advance(row: dict) -> tuple[int, float, str]:
    """(the run's step at `row`, its chunk's rate, the rate's unit): env steps, or in a run
    with offline updates its step (updates and env steps), at an offline chunk's update rate."""
    step = row.get("step", row["env_steps"])
    if row.get("phase") == "offline":
        return step, row["offline_updates_per_second"], "updates"
    return step, row["chunk_env_steps_per_second"], "env-steps"


def progress_line(row: dict, name: str, total_steps: int, warming_up: bool = False) -> str:
    """One chunk as a line: env steps, the last chunk's rate, ETA at that rate, returns.
    `warming_up`: the chunk ran (some of) an off-policy run's warm-up, random actions and no
    updates, so its rate says nothing of the rest: no ETA ("?"). The evaluation before the
    first chunk (`chunk` None) as its own line."""
    if row.get("chunk", 0) is None:
        return (
            f"[{name}] step 0, untrained | eval {row['eval_return']:9.2f} ± "
            f"{row['eval_return_std']:.1f} | evaluated in {row['eval_seconds']:.1f}s"
        )
    done, rate, unit = _advance(row)
    remaining = _remaining(total_steps, done, rate, warming_up)
    parts = [
        f"[{name}] {done:>9,}/{total_steps:,} {'updates' if unit == 'updates' else 'steps'}",
        f"{rate:>8,.0f} {unit}/s",
        f"ETA {_eta(remaining)}",
        f"eval {row['eval_return']:9.2f} ± {row['eval_return_std']:.1f}",
    ]
    if row.get("train_episode_return") is not None:
        parts.append(f"train ep {row['train_episode_return']:9.2f}")
    return " | ".join(parts)


def _short(number: float) -> str:
    """A rate in three or four figures: 250, 66.9k, 1.23M (the lines above the bar keep it
    whole)."""
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if abs(number) >= scale * 0.9995:  # 999,999 is 1M, not 1e+03k
            value = number / scale
            return f"{value:.3g}{unit}" if value < 1000 else f"{value:,.0f}{unit}"
    return f"{number:.0f}"


def _bar(name: str) -> Any:
    """rich's progress bar, laid out for the terminal's width (in 80 columns a fixed layout's
    text took the whole line, dropping the bar and cutting each column short): the bar
    stretches over what the text leaves, the run's name is cut first, and the steps done show
    as a percentage (their count on a terminal 120 columns wide or more; each chunk's line
    above the bar has them too)."""
    import rich.progress as rp
    from rich.markup import escape
    from rich.table import Column

    console = rp.get_console()
    columns = [
        rp.TextColumn(
            f"[bold]{escape(name)}",
            table_column=Column(max_width=max(12, console.width // 4), no_wrap=True),
        ),
        rp.BarColumn(bar_width=None),
        rp.TaskProgressColumn(),
    ]
    if console.width >= 120:
        columns.append(rp.TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"))
    columns += [
        rp.TextColumn("{task.fields[rate]}"),
        rp.TextColumn("ETA {task.fields[eta]}"),
        rp.TextColumn("eval {task.fields[eval]}"),
    ]
    return rp.Progress(*columns, console=console, expand=True, transient=False)


class Progress:
    """Reports compile time and each chunk. `mode`: "bar" (rich's live progress bar, with a
    line per chunk printed above it), "lines" (one line per chunk to `printer`), or "auto" (the
    bar when stderr is a terminal, else lines)."""

    def __init__(
        self,
        name: str,
        total_steps: int,
        done_steps: int = 0,
        mode: str = "auto",
        printer: Callable[[str], None] = print,
        warm_up_until: int = 0,
    ):
        """`warm_up_until`: an off-policy run's learning_starts; a chunk that began before it
        shows no ETA (`progress_line`)."""
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        self.name, self.total_steps, self.mode, self.printer = name, total_steps, mode, printer
        self.warm_up_until, self._last_steps = warm_up_until, done_steps
        self._bar = None
        if mode == "bar":
            self._bar = _bar(name)
            self._task = self._bar.add_task(
                name, total=total_steps, completed=done_steps, rate="", eta="?", eval="-"
            )
            self._bar.start()

    def message(self, text: str) -> None:
        if self._bar is not None:
            self._print(text)
        else:
            self.printer(text)

    def _print(self, text: str) -> None:
        """`text` above the bar as written: no rich markup, which took a line's "[sac
        brax/ant]" for a style tag and dropped it."""
        self._bar.console.print(text, markup=False)

    def status(self, text: str) -> None:
        """What the run is doing ("compiling", "training"), in the bar's rate column until the
        first chunk's rate replaces it; lines (one per event) have their messages instead."""
        if self._bar is not None:
            self._bar.update(self._task, rate=text)

    def chunk(self, row: dict) -> None:
        warming_up = self._last_steps < self.warm_up_until and row.get("phase") != "offline"
        self._last_steps = row["env_steps"]
        line = progress_line(row, self.name, self.total_steps, warming_up)
        if self._bar is None:
            self.printer(line)
            return
        done, rate, unit = _advance(row)
        remaining = _remaining(self.total_steps, done, rate, warming_up)
        self._bar.update(
            self._task,
            completed=done,
            rate=f"{_short(rate)} {'updates' if unit == 'updates' else 'steps'}/s",
            eta=_eta(remaining),
            eval=f"{row['eval_return']:.2f}",
        )
        self._print(line)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def make_progress(
    progress: Any,
    name: str,
    total: int,
    done: int,
    progress_fn: Callable | None = None,
    warm_up_until: int = 0,
) -> Any:
    """`progress`: None (silent), "auto" / "bar" / "lines", or a callable taking each line;
    `progress_fn(env_steps, metrics)` also gets each chunk's row as numbers. `warm_up_until`:
    see `Progress`."""
    if progress is None:
        lines = None
    elif isinstance(progress, str):
        lines = Progress(name, total, done, mode=progress, warm_up_until=warm_up_until)
    else:
        lines = Progress(
            name, total, done, mode="lines", printer=progress, warm_up_until=warm_up_until
        )
    if progress_fn is None:
        return lines
    return _Reporters([r for r in (lines, MetricsCallback(progress_fn)) if r is not None])


class MetricsCallback:
    """Hands each chunk's row to `fn(env_steps, metrics)`, its numbers as floats (Brax's
    `progress_fn` convention); messages (compile time, rollbacks) are for the lines only."""

    def __init__(self, fn: Callable[[int, dict[str, float]], Any]):
        self.fn = fn

    def message(self, text: str) -> None:
        pass

    def status(self, text: str) -> None:
        pass

    def chunk(self, row: dict) -> None:
        values = {
            k: float(v)
            for k, v in row.items()
            if isinstance(v, numbers.Real) and not isinstance(v, bool)
        }
        self.fn(int(row["env_steps"]), values)

    def close(self) -> None:
        pass


class _Reporters:
    """Several reporters as one (the progress lines and a metrics callback)."""

    def __init__(self, reporters: list):
        self.reporters = reporters

    def message(self, text: str) -> None:
        for reporter in self.reporters:
            reporter.message(text)

    def status(self, text: str) -> None:
        for reporter in self.reporters:
            reporter.status(text)

    def chunk(self, row: dict) -> None:
        for reporter in self.reporters:
            reporter.chunk(row)

    def close(self) -> None:
        for reporter in self.reporters:
            reporter.close()
