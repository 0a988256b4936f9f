"""A `jaxrl scale` folder read back (issue 40): its grid (scale_grid.json), and its runs' members
as eval curves per (UTD ratio, batch size, learning rate) and seed.

A scale folder holds `scale_grid.json` (what the grid is: `scale_plan` makes it, `scale_train`
writes it) and one run folder per (UTD ratio, batch size), a `jaxrl train --seeds S --vmap
LR_FIELD=...` run: its members' own metrics are RUN/SETTING/seed_N/metrics.jsonl, SETTING each
field of the axis with its value (`actor_lr=0.001,critic_lr=0.001` for the tied
actor_lr+critic_lr, the default; `critic_lr=0.001` for a folder made with one field). Everything
a crossing needs is read from the run's own config.json and metrics: the UTD ratio is
updates_per_step / num_envs of the saved config, the learning rate the member's setting, and
the x axis of a curve its rows' `env_steps` (never their gradient `updates`, which are
reported beside it). numpy, and jaxrl.grid for where a run keeps each member's metrics.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Sequence

import numpy as np

from jaxrl.errors import JaxrlError
from jaxrl.experiments import scale_fit as sf
from jaxrl.files import SCALE_GRID

GRID_FILE = SCALE_GRID
FAILED_FILE = "scale_failed.json"  # in a run folder whose program stopped (NaN): not retried


class ScaleError(JaxrlError, ValueError):
    """A scale folder that cannot be read or fitted as asked."""


def run_name(sigma: float, batch_size: int, width: int | None = None) -> str:
    """The run folder of one (UTD ratio, batch size) program, e.g. utd=0.5-batch=256; of a grid
    with a width axis (`--widths`), one (UTD ratio, batch size, critic width) program:
    utd=0.5-batch=256-width=64."""
    name = f"utd={sigma:g}-batch={batch_size}"
    return name if width is None else f"{name}-width={width}"


@dataclasses.dataclass(frozen=True)
class Member:
    """One (UTD ratio, batch size, learning rate) configuration of the grid, read back: the
    env steps of its evaluations, each seed's return there (seeds, evals; NaN where a seed has
    no row), and the cumulative gradient updates of one seed at each evaluation."""

    sigma: float
    batch_size: int
    lr: float
    folder: str  # the program's run folder, relative to the scale folder
    seeds: tuple[int, ...]
    steps: np.ndarray
    returns: np.ndarray
    updates: np.ndarray
    finished: bool  # the program wrote its summary.json
    failed: str | None = None  # why the program stopped (scale_failed.json), None if it did not
    width: int | None = None  # the critic's width (first hidden layer), of a grid with --widths
    critic_params: int | None = None  # the critic's parameter count, of a grid with --widths

    def as_run(self) -> sf.Run:
        return sf.Run(self.sigma, self.batch_size, self.lr, self.steps, self.returns)


def read_grid_file(folder: str | os.PathLike) -> dict:
    """A scale folder's scale_grid.json."""
    path = pathlib.Path(folder) / GRID_FILE
    if not path.is_file():
        what = "does not exist" if not pathlib.Path(folder).exists() else f"has no {GRID_FILE}"
        raise ScaleError(f"{folder} is not a scale folder: it {what} (jaxrl scale writes it)")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ScaleError(f"{path} cannot be read: {error}") from None


def _curves(member_dirs: list[pathlib.Path]):
    """(steps, returns (seeds, evals), cumulative updates) of one setting's seeds. Rows are keyed
    by env step (a resumed run's repeated rows count once, the last one)."""
    from jaxrl.plot import NotLoggedYet, read_metrics

    per_seed = []
    for member in member_dirs:
        try:
            rows = read_metrics(member)
        except NotLoggedYet:  # killed while compiling, say (a garbled file is an error)
            rows = []
        # The untrained policy's evaluation (step 0, no chunk) is not data the run trained on:
        # a target it already meets would take no data at all.
        per_seed.append({int(r["env_steps"]): r for r in rows if r.get("chunk", 0) is not None})
    steps = sorted(set().union(*per_seed))
    returns = np.full((len(member_dirs), len(steps)), np.nan)
    updates = np.zeros(len(steps))
    for i, rows in enumerate(per_seed):
        for j, step in enumerate(steps):
            row = rows.get(step)
            if row is not None and row.get("eval_return") is not None:
                returns[i, j] = float(row["eval_return"])
    # Every seed of a program takes the same updates: the first seed with every row gives them.
    complete = [rows for rows in per_seed if len(rows) == len(steps)]
    if complete and steps:
        counts = [float(complete[0][s].get("updates", 0.0) or 0.0) for s in steps]
        updates = np.cumsum(counts)
    return np.asarray(steps, float), returns, updates


def read_run(
    scale_folder: pathlib.Path, name: str, lr_field: str, entry: dict | None = None
) -> list[Member]:
    """The members of one program's run folder, one per learning rate (its seeds together);
    `entry`: the run's entry in scale_grid.json (its width and critic parameter count)."""
    from jaxrl.grid import Grid
    from jaxrl.plot import PlotError, read_config

    run = scale_folder / name
    try:
        saved = read_config(run)
    except PlotError as error:
        raise ScaleError(str(error)) from None
    train = saved["train"]
    run_grid = Grid.from_json(saved)
    if run_grid is None or lr_field not in dict(run_grid.axes):
        raise ScaleError(f"{run} is not a run of the grid: it has no --vmap {lr_field}=... axis")
    field = Grid.fields(lr_field)[0]  # a tied axis gives each of its fields the same value
    sigma = train["updates_per_step"] / train["num_envs"]
    failed = None
    if (run / FAILED_FILE).is_file():
        failed = json.loads((run / FAILED_FILE).read_text()).get("error", "stopped")
    members = []
    for setting in run_grid.settings:
        dirs = [run / run_grid.member_dir(setting, seed) for seed in run_grid.seeds]
        steps, returns, updates = _curves(dirs)
        members.append(
            Member(
                sigma=sigma,
                batch_size=int(train["batch_size"]),
                lr=float(setting[field]),
                folder=name,
                seeds=tuple(run_grid.seeds),
                steps=steps,
                returns=returns,
                updates=updates,
                finished=(run / "summary.json").is_file(),
                failed=failed,
                width=(entry or {}).get("width"),
                critic_params=(entry or {}).get("critic_params"),
            )
        )
    return members


def read_scale_folder(
    folder: str | os.PathLike,
    utds: Sequence[float] | None = None,
    batch_sizes: Sequence[int] | None = None,
    lrs: Sequence[float] | None = None,
    widths: Sequence[int] | None = None,
) -> tuple[dict, list[Member]]:
    """scale_grid.json and the members of its runs that have logged, optionally only those of
    the given UTD ratios, batch sizes, learning rates and critic widths (each must be in the
    grid)."""
    folder = pathlib.Path(folder)
    spec = read_grid_file(folder)
    runs = spec.get("runs", {})
    if widths is not None and not spec.get("widths"):
        raise ScaleError(f"--widths: the grid of {folder} has no width axis")
    axes = (("--utd", utds), ("--batch-sizes", batch_sizes), ("--lrs", lrs), ("--widths", widths))
    keys = {"--utd": "utd", "--batch-sizes": "batch_size", "--lrs": None, "--widths": "width"}
    for name, values in axes:
        if values is None:
            continue
        key = keys[name]
        known = spec["lrs"] if key is None else sorted({r[key] for r in runs.values()})
        missing = [v for v in values if not any(_same(v, k) for k in known)]
        if missing:
            raise ScaleError(
                f"{name} {','.join(f'{v:g}' for v in missing)}: not in the grid of {folder} "
                f"({', '.join(f'{k:g}' for k in known)})"
            )
    members = []

    def order(item):
        return item[1]["utd"], item[1]["batch_size"], item[1].get("width") or 0

    for name, run in sorted(runs.items(), key=order):
        if utds is not None and not any(_same(run["utd"], s) for s in utds):
            continue
        if batch_sizes is not None and run["batch_size"] not in batch_sizes:
            continue
        if widths is not None and run.get("width") not in widths:
            continue
        if not (folder / name / "config.json").is_file():
            continue  # not started yet
        for member in read_run(folder, name, spec["lr_field"], run):
            if lrs is None or any(_same(member.lr, lr) for lr in lrs):
                members.append(member)
    return spec, members


def _same(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
