"""The reading and reporting half of `jaxrl scale` (issue 40): a scale folder's runs read back
into eval curves per (UTD ratio, batch size, learning rate) and seed, their crossings of the
target return J, the fitted laws with bootstrap intervals, predictions for a budget, and
`scale.json` / `scale.png`. No training here: numpy, scipy (through `scale_fit`) and
matplotlib, and jaxrl.grid for where a run keeps each member's metrics.

A scale folder holds `scale_grid.json` (what the grid is: `experiments/scale.py` writes it) and
one run folder per (UTD ratio, batch size), a `jaxrl train --seeds S --vmap LR_FIELD=...` run:
its members' own metrics are RUN/SETTING/seed_N/metrics.jsonl, SETTING each field of the axis
with its value (`actor_lr=0.001,critic_lr=0.001` for the tied actor_lr+critic_lr, the default;
`critic_lr=0.001` for a folder made with one field). Everything a crossing
needs is read from the run's own config.json and metrics: the UTD ratio is
updates_per_step / num_envs of the saved config, the learning rate the member's setting, and
the x axis of a curve its rows' `env_steps` (never their gradient `updates`, which are
reported beside it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxrl.errors import JaxrlError
from jaxrl.experiments import scale_fit as sf
from jaxrl.files import SCALE_GRID, write_atomically

GRID_FILE = SCALE_GRID
FLOPS_UNIT = "FLOPs (10 N B per update)"  # compute with a model size N, B the batch size
FAILED_FILE = "scale_failed.json"  # in a run folder whose program stopped (NaN): not retried
LEVEL = 0.95  # bootstrap interval level


class ScaleError(JaxrlError, ValueError):
    """A scale folder that cannot be read or fitted as asked."""


# ---------------------------------------------------------------- the folder


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
        per_seed.append({int(r["env_steps"]): r for r in rows})
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


# ---------------------------------------------------------------- crossings and the fit


@dataclasses.dataclass(frozen=True)
class Budget:
    """What a prediction is asked for: exactly one of a data budget (env steps), a compute
    budget (gradient updates, or FLOPs with a model size) or delta, the cost of one env step in
    compute units (the sigma minimising C + delta * D)."""

    data: float | None = None
    compute: float | None = None
    delta: float | None = None

    def __post_init__(self):
        given = [v for v in (self.data, self.compute, self.delta) if v is not None]
        if len(given) != 1:
            raise ScaleError("a budget is exactly one of data, compute or delta")
        value = float(given[0])
        low_ok = value >= 0 if self.delta is not None else value > 0
        if not (math.isfinite(value) and low_ok):
            what = (
                "delta must be a finite number >= 0"
                if self.delta is not None
                else (f"a {self.kind} budget must be a finite number > 0")
            )
            raise ScaleError(f"{what}, got {value:g}")

    @property
    def kind(self) -> str:
        return (
            "data" if self.data is not None else "compute" if self.compute is not None else "delta"
        )

    @property
    def value(self) -> float:
        return float(getattr(self, self.kind))

    def kwargs(self) -> dict[str, float]:
        name = {"data": "data_budget", "compute": "compute_budget", "delta": "delta"}[self.kind]
        return {name: self.value}


def crossings(members: Sequence[Member], target: float, model_size: float | None) -> list[dict]:
    """Each configuration's D_J (env steps, on the seed-mean isotonic curve), the gradient
    updates it had taken by then (read off its rows, interpolated), its compute as the law
    counts it (sigma x D_J updates; times 10 N B FLOPs with a model size) and each seed's own
    crossing."""
    out = []
    for m in members:
        data = sf.crossing(m.steps, m.returns, target) if m.steps.size else None
        per_seed = [
            sf.crossing(m.steps, m.returns[i], target) if np.any(~np.isnan(m.returns[i])) else None
            for i in range(len(m.seeds))
        ]
        compute = None
        if data is not None:
            compute = m.sigma * data
            if model_size is not None:
                compute *= sf.FLOPS_PER_PARAM_SAMPLE * model_size * m.batch_size
        out.append(
            {
                "utd": m.sigma,
                "batch_size": m.batch_size,
                "lr": m.lr,
                "folder": m.folder,
                "env_steps": data,
                "updates": None if data is None else float(np.interp(data, m.steps, m.updates)),
                "compute": compute,
                "seeds": list(m.seeds),
                "seed_env_steps": per_seed,
                "evaluations": int(m.steps.size),
                # Reached by the first evaluation: D_J is at most this, not measured.
                "at_first_evaluation": data is not None and data == float(m.steps[0]),
                "last_env_steps": float(m.steps[-1]) if m.steps.size else 0.0,
                "finished": m.finished,
                "failed": m.failed,
            }
        )
    return out


def _laws_of(row: dict[str, float], model_size: float | None) -> sf.ScalingLaws:
    return sf.ScalingLaws(
        data=sf.DataLaw(row["d_min"], row["beta"], row["alpha"]),
        batch=sf.PowerLaw(row["batch_coef"], row["batch_exp"]),
        lr=sf.PowerLaw(row["lr_coef"], row["lr_exp"]),
        model_size=model_size,
    )


def _interval(values: list[float]) -> list[float] | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None
    tail = 50.0 * (1.0 - LEVEL)
    return [float(v) for v in np.percentile(values, [tail, 100.0 - tail])]


PREDICTED = ("utd", "batch_size", "lr", "env_steps", "compute")


def _predict(laws: sf.ScalingLaws, budget: Budget) -> sf.Prediction:
    """sf.predict, with an answer that is not finite everywhere (a law extrapolated to a sigma
    far off the grid: a batch size or learning rate of 0 or infinity) as a ValueError."""
    try:
        point = sf.predict(laws, **budget.kwargs())
    except (OverflowError, ZeroDivisionError) as error:
        raise ValueError(f"the laws give no answer for this budget ({error})") from None
    values = (point.sigma, point.batch_size, point.lr, point.data, point.compute)
    if not all(v is not None and math.isfinite(v) and v > 0 for v in values):
        raise ValueError(
            f"the laws give no finite answer for this budget (UTD {point.sigma:.3g}, batch "
            f"{point.batch_size:.3g}, lr {point.lr:.3g})"
        )
    return point


def prediction(
    laws: sf.ScalingLaws,
    boot: sf.Bootstrap | None,
    budget: Budget,
    num_envs: int | None,
    grid_utds: Sequence[float] = (),
) -> dict:
    """The laws' answer for one budget, with percentile intervals over the bootstrap's refits
    (those whose laws cannot meet the budget are counted, not used), whether it extrapolates
    beyond the grid's UTD ratios, and the nearest settings jaxrl can train: updates_per_step a
    whole number per iteration of num_envs envs, the batch size a whole number."""
    result: dict[str, Any] = {"budget": {budget.kind: budget.value}}
    try:
        point = _predict(laws, budget)
    except ValueError as error:
        return {**result, "error": str(error)}
    keys = ("sigma", "batch_size", "lr", "data", "compute")
    result.update({name: getattr(point, key) for name, key in zip(PREDICTED, keys, strict=True)})
    if point.budget is not None:
        result["total_cost"] = point.budget
    if grid_utds:
        result["extrapolated"] = not min(grid_utds) <= point.sigma <= max(grid_utds)
    if boot is not None:
        draws: dict[str, list[float]] = {name: [] for name in PREDICTED}
        unmet = 0
        n = len(next(iter(boot.samples.values()))) if boot.samples else 0
        for k in range(n):
            row = {name: float(values[k]) for name, values in boot.samples.items()}
            try:
                one = _predict(_laws_of(row, laws.model_size), budget)
            except ValueError:
                unmet += 1
                continue
            for name, key in zip(PREDICTED, keys, strict=True):
                draws[name].append(getattr(one, key))
        result["interval"] = {name: _interval(values) for name, values in draws.items()}
        result["bootstrap_unmet"] = unmet
    if num_envs:
        per_step = max(1, round(point.sigma * num_envs))
        result["train_with"] = {
            "updates_per_step": per_step,
            "num_envs": num_envs,
            "utd": per_step / num_envs,
            "batch_size": max(1, round(point.batch_size)),
            "lr": float(f"{point.lr:.3g}"),
        }
    return result


def fit_report(
    members: Sequence[Member],
    target: float,
    *,
    bootstrap: int = 200,
    model_size: float | None = None,
    budgets: Sequence[Budget] = (),
    num_envs: int | None = None,
    seed: int = 0,
) -> dict:
    """Crossings, the best configuration per UTD ratio, the fitted laws with bootstrap intervals
    and the predictions: the content of scale.json (without the grid's description). Where the
    laws cannot be fitted (fewer than 3 UTD ratios reached J), "fit" is None and "fit_error"
    says why; the crossings are still there. Members of a grid with a width axis are fitted
    width by width (`fit_by_width`)."""
    widths = sorted({m.width for m in members if m.width is not None})
    if widths:
        return fit_by_width(
            members, target, bootstrap=bootstrap, budgets=budgets, num_envs=num_envs, seed=seed
        )
    rows = crossings(members, target, model_size)
    found = {(r["utd"], r["batch_size"], r["lr"]): r["env_steps"] for r in rows}
    best = sf.best_per_sigma(found)
    report: dict[str, Any] = {
        "target": target,
        "compute_unit": FLOPS_UNIT if model_size else "gradient updates",
        "model_size": model_size,
        "runs": rows,
        "best": [dataclasses.asdict(b) for b in best],
        "fit": None,
        "predictions": [],
    }
    report["warnings"] = _warnings(rows, best)
    runs = [m.as_run() for m in members if m.steps.size]
    try:
        laws = sf.fit_scaling(runs, target, model_size)
    except ValueError as error:
        reached = sorted({b.sigma for b in best})
        report["fit_error"] = (
            f"{error}; UTD ratios that reached J={target:g}: "
            f"{', '.join(f'{s:g}' for s in reached) or 'none'}. Lower --target, train longer "
            "(--steps) or add UTD ratios."
        )
        return report
    boot = sf.bootstrap(runs, target, n=bootstrap, seed=seed, model_size=model_size)
    point = dict(zip(sf.PARAMETERS, sf._flatten(laws), strict=True))
    fit: dict[str, Any] = {"bootstrap": {"resamples": bootstrap, "failed": boot.failed}}
    for name in sf.PARAMETERS:
        values = boot.samples[name]
        fit[name] = {"value": point[name], "interval": _interval(list(values))}
    report["fit"] = fit
    utds = sorted({m.sigma for m in members})
    report["predictions"] = [prediction(laws, boot, b, num_envs, utds) for b in budgets]
    report["_laws"] = laws  # for the figure; dropped from the JSON
    report["_bootstrap"] = boot
    return report


def fit_by_width(
    members: Sequence[Member],
    target: float,
    *,
    bootstrap: int = 200,
    budgets: Sequence[Budget] = (),
    num_envs: int | None = None,
    seed: int = 0,
) -> dict:
    """A grid with a width axis (the model-size question of Fu et al. 2025): each critic width's
    members fitted on their own (`fit_report`, compute in FLOPs from that width's critic
    parameter count N, so frontiers of different widths compare), under "by_width"; the runs of
    every width together under "runs"; and across widths, `batch_by_width`: each width's best
    batch size per UTD ratio, and the TD-overfitting check (`td_overfitting`)."""
    widths = sorted({m.width for m in members})
    by_width, rows, warnings = {}, [], []
    for width in widths:
        own = [dataclasses.replace(m, width=None) for m in members if m.width == width]
        sub = fit_report(
            own,
            target,
            bootstrap=bootstrap,
            model_size=own[0].critic_params,
            budgets=budgets,
            num_envs=num_envs,
            seed=seed,
        )
        by_width[str(width)] = sub
        rows += [{**r, "width": width, "critic_params": own[0].critic_params} for r in sub["runs"]]
        warnings += [f"width {width}: {w}" for w in sub["warnings"]]
        if sub["fit"] is None:
            warnings.append(f"width {width}: no fit: {sub['fit_error']}")
    batches = batch_by_width(rows)
    return {
        "target": target,
        "compute_unit": FLOPS_UNIT,
        "model_size": None,
        "widths": widths,
        "runs": rows,
        "by_width": by_width,
        "batch_by_width": batches,
        "td_overfitting": td_overfitting(batches),
        "best": [],
        "fit": None,
        "predictions": [],
        "warnings": warnings,
    }


def batch_by_width(rows: Sequence[dict]) -> list[dict]:
    """Per critic width and UTD ratio: each batch size's D_J at its best learning rate (None:
    no learning rate reached J; `censored`, the env steps trained, which D_J exceeds), and the
    observed best batch size."""
    out = []
    for width in sorted({r["width"] for r in rows}):
        own = [r for r in rows if r["width"] == width]
        per_sigma = []
        for sigma in sorted({r["utd"] for r in own}):
            data, censored = {}, {}
            for batch in sorted({r["batch_size"] for r in own if r["utd"] == sigma}):
                runs = [r for r in own if r["utd"] == sigma and r["batch_size"] == batch]
                reached = [r["env_steps"] for r in runs if r["env_steps"] is not None]
                data[batch] = min(reached) if reached else None
                censored[batch] = max(r["last_env_steps"] for r in runs)
            done = {b: d for b, d in data.items() if d is not None}
            best = min(done, key=done.get) if done else None
            per_sigma.append({"utd": sigma, "best_batch": best, "data": data, "censored": censored})
        out.append({"width": width, "critic_params": own[0]["critic_params"], "utd": per_sigma})
    return out


def td_overfitting(batches: Sequence[dict]) -> dict:
    """The TD-overfitting effect of Fu et al. (2025): large batches hurt small critics, not
    large ones. For each width, the penalty of the grid's largest batch size: the median over
    UTD ratios of its D_J over the best batch size's D_J at that ratio (1: the largest batch is
    the best; a largest batch that never reached J counts at the env steps it trained, a lower
    bound of its D_J, so its penalty is a lower bound too). Seen where the smallest width's
    penalty is above 1 and above the largest width's."""
    sizes = sorted({b for w in batches for s in w["utd"] for b in s["data"]})
    if len(batches) < 2 or len(sizes) < 2:
        return {"seen": None, "why": "needs at least 2 widths and 2 batch sizes"}
    largest = sizes[-1]
    penalties = {}
    for w in batches:
        ratios = []
        for s in w["utd"]:
            if s["best_batch"] is None or largest not in s["data"]:
                continue
            mine = s["data"][largest]
            mine = s["censored"][largest] if mine is None else mine
            ratios.append(mine / s["data"][s["best_batch"]])
        penalties[w["width"]] = float(np.median(ratios)) if ratios else None
    small, large = penalties[batches[0]["width"]], penalties[batches[-1]["width"]]
    result = {"largest_batch": largest, "penalty": {str(k): v for k, v in penalties.items()}}
    if small is None or large is None:
        return {**result, "seen": None, "why": "a width has no UTD ratio where J was reached"}
    return {**result, "seen": bool(small > 1.0 and small > large)}


def _warnings(rows: list[dict], best: Sequence[sf.Best]) -> list[str]:
    """What makes the fit less trustworthy than its intervals say: best configurations that
    reached J at their first evaluation (D_J censored); a best D_J that rises from one UTD ratio
    to the next (the law cannot); a best batch size or learning rate at the edge of the grid
    (the best one may lie outside it)."""
    out = []
    first = [
        b.sigma
        for b in best
        if any(
            r["at_first_evaluation"]
            and (r["utd"], r["batch_size"], r["lr"]) == (b.sigma, b.batch_size, b.lr)
            for r in rows
        )
    ]
    if first:
        out.append(
            f"UTD {', '.join(f'{s:g}' for s in first)}: the best run reached J at its first "
            "evaluation, so its D_J is only an upper bound; evaluate more often (--eval-every) "
            "or raise --target"
        )
    ordered = sorted(best, key=lambda b: b.sigma)
    rises = [
        (low.sigma, high.sigma)
        for low, high in zip(ordered, ordered[1:], strict=False)
        if high.data > low.data
    ]
    if rises:  # the law D_min + (beta/sigma)^alpha can only fall (or stay flat) as sigma grows
        pairs = ", ".join(f"{a:g} -> {b:g}" for a, b in rises)
        out.append(
            f"the data to J rises with the UTD ratio between the best runs of UTD {pairs}: the "
            "law, which can only fall, is then fitted to noise or to a range where more "
            "updates do not help; its parameters and predictions are not to be trusted (more "
            "seeds, or UTD ratios further apart)"
        )
    for name, key in (("batch size", "batch_size"), ("learning rate", "lr")):
        values = sorted({r[key] for r in rows})
        if len(values) < 3:  # of two values, one is always the best
            continue
        edge = [b.sigma for b in best if getattr(b, key) in (values[0], values[-1])]
        if edge:
            out.append(
                f"UTD {', '.join(f'{s:g}' for s in edge)}: the best {name} is at the edge of the "
                f"grid ({values[0]:g} .. {values[-1]:g}); the best one may lie outside it"
            )
    return out


# ---------------------------------------------------------------- scale.json and scale.png


def write_report(
    report: dict, folder: pathlib.Path, name: str = "scale"
) -> tuple[pathlib.Path, ...]:
    """NAME.json (the report without its in-memory laws) and NAME.png, written atomically; of a
    grid with a width axis, NAME.png compares the widths and NAME-width=W.png is each width's
    own figure."""
    path = folder / f"{name}.json"
    write_atomically(path, json.dumps(_public(report), indent=2, default=_json_default) + "\n")
    figure = folder / f"{name}.png"
    if "by_width" not in report:
        draw(report, figure)
        return path, figure
    draw_widths(report, figure)
    figures = [figure]
    for width, sub in report["by_width"].items():
        figures.append(folder / f"{name}-width={width}.png")
        draw({**sub, "title": f"{report.get('title', '')}, critic width {width}"}, figures[-1])
    return (path, *figures)


def _public(value: Any) -> Any:
    """The report without its in-memory laws (keys starting with _), at every level."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not str(k).startswith("_")}
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def iso_deltas(laws: sf.ScalingLaws, sigmas: Sequence[float]) -> list[tuple[float, float]]:
    """(sigma, delta) for each sigma where the frontier's slope gives a positive delta: the
    cost of an env step for which that sigma is the budget-optimal one (C'(sigma) = -delta
    D'(sigma)), so each iso-budget line touches the frontier at one of the grid's sigmas."""
    out = []
    for s in sigmas:
        h = 1e-4 * s
        dc = (laws.compute(s + h) - laws.compute(s - h)) / (2 * h)
        dd = (sf.predict_data(laws.data, s + h) - sf.predict_data(laws.data, s - h)) / (2 * h)
        if dd < 0 and dc > 0:
            out.append((float(s), float(-dc / dd)))
    return out


def draw(report: dict, out: pathlib.Path) -> None:
    """Two panels: D_J against sigma (the runs, each sigma's best, the fitted law and its
    bootstrap band) and the data-compute frontier (the fitted curve, the runs' points, the
    iso-budget lines C + delta D = const through the grid's sigmas, the predictions)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["runs"] if r["env_steps"] is not None]
    laws = report.get("_laws")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    sigmas = sorted({r["utd"] for r in report["runs"]}) or [1.0]
    colors = {s: f"C{i % 10}" for i, s in enumerate(sigmas)}
    for r in rows:
        left.scatter(r["utd"], r["env_steps"], s=18, color="0.6", zorder=2)
        right.scatter(r["env_steps"], r["compute"], s=18, color=colors[r["utd"]], alpha=0.5)
    for b in report["best"]:
        label = f"σ={b['sigma']:g}: B={b['batch_size']:g}, lr={b['lr']:.2g}"
        left.scatter(b["sigma"], b["data"], s=50, color=colors[b["sigma"]], label=label, zorder=3)
        compute = next(
            r["compute"]
            for r in rows
            if (r["utd"], r["batch_size"], r["lr"])
            == tuple(b[k] for k in ("sigma", "batch_size", "lr"))
        )
        right.scatter(b["data"], compute, s=60, color=colors[b["sigma"]], edgecolor="k", zorder=3)
    if laws is not None:
        grid = np.geomspace(min(sigmas) / 2, max(sigmas) * 2, 200)
        data, compute = sf.frontier(laws, grid)
        left.plot(grid, data, "k-", label=_law_label(laws.data))
        boot = report.get("_bootstrap")
        if boot is not None and boot.samples["alpha"].size:
            curves = np.array(
                [
                    sf.predict_data(sf.DataLaw(d, b, a), grid)
                    for d, b, a in zip(
                        boot.samples["d_min"],
                        boot.samples["beta"],
                        boot.samples["alpha"],
                        strict=True,
                    )
                ]
            )
            low, high = np.percentile(curves, [2.5, 97.5], axis=0)
            left.fill_between(
                grid, low, high, color="k", alpha=0.12, linewidth=0, label="95% bootstrap"
            )
        # D_min where it is on the scale of the runs: a fit that drives it to about 0 (1e-6)
        # would stretch the log axis over twelve decades and flatten every point on it.
        if laws.data.d_min >= 0.01 * min(data):
            left.axhline(laws.data.d_min, color="k", ls=":", lw=1)
        right.plot(data, compute, "k-", label="fitted frontier")
        # The axes hold the frontier and every run's point (a run's batch, not the law's, sets
        # its FLOPs, so points may lie far from the fitted curve).
        seen_data = [*data, *(r["env_steps"] for r in rows)]
        seen_compute = [*compute, *(r["compute"] for r in rows)]
        x = np.geomspace(min(seen_data) / 1.5, max(seen_data) * 1.5, 200)
        for s, delta in iso_deltas(laws, sigmas):
            level = float(sf.budget(laws, s, delta))
            y = level - delta * x
            keep = y > 0
            right.plot(
                x[keep],
                y[keep],
                color=colors[s],
                ls="--",
                lw=0.8,
                label=f"δ={delta:.3g} (σ*={s:g})",
            )
        for p in report.get("predictions", []):
            if "error" not in p:
                right.scatter(
                    p["env_steps"],
                    p["compute"],
                    marker="*",
                    s=150,
                    color="gold",
                    edgecolor="k",
                    zorder=4,
                )
        right.set_ylim(min(seen_compute) / 2, max(seen_compute) * 2)
        right.set_xlim(x[0], x[-1])
    left.set(
        xscale="log",
        yscale="log",
        xlabel="UTD ratio σ",
        ylabel=f"env steps to J={report['target']:g}",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="data D_J (env steps)",
        ylabel=f"compute C_J ({report['compute_unit']})",
    )
    _finish_figure(fig, left, right, sigmas, [f"{s:g}" for s in sigmas], report, out)


def _finish_figure(fig, left, right, ticks, labels, report: dict, out: pathlib.Path) -> None:
    """The end both scale figures share: the left panel's x ticks at `ticks` and no labelled
    minor ticks on either panel (they overlapped on log axes), grids, legends, the report's
    title; saved as PNG and closed."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    left.set_xticks(ticks, labels)
    for ax in (left, right):
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(report.get("title", ""))
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=100, format="png")
    finally:
        plt.close(fig)


def draw_widths(report: dict, out: pathlib.Path) -> None:
    """Two panels across critic widths: D_J at the best learning rate against the batch size,
    a line per (width, UTD ratio) (TD overfitting: small critics' lines rise at large batches);
    and each width's fitted data-compute frontier (FLOPs) with its best runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    styles = ("-", "--", ":", "-.")
    sigmas = sorted({r["utd"] for r in report["runs"]})
    for i, w in enumerate(report["batch_by_width"]):
        color = f"C{i % 10}"
        for s in w["utd"]:
            points = sorted((b, d) for b, d in s["data"].items() if d is not None)
            if points:
                style = styles[sigmas.index(s["utd"]) % len(styles)]
                left.plot(*zip(*points, strict=True), style, marker="o", color=color,
                          label=f"width {w['width']}, σ={s['utd']:g}")  # fmt: skip
        sub = report["by_width"][str(w["width"])]
        laws = sub.get("_laws")
        if laws is not None:
            grid = np.geomspace(min(sigmas) / 2, max(sigmas) * 2, 200)
            data, compute = sf.frontier(laws, grid)
            right.plot(
                data, compute, color=color, label=f"width {w['width']} (N={laws.model_size:,.0f})"
            )
        for b in sub["best"]:
            row = next(
                r
                for r in sub["runs"]
                if (r["utd"], r["batch_size"], r["lr"]) == (b["sigma"], b["batch_size"], b["lr"])
            )
            right.scatter(row["env_steps"], row["compute"], color=color, edgecolor="k", zorder=3)
    left.set(xscale="log", yscale="log", xlabel="batch size",
             ylabel=f"env steps to J={report['target']:g} (best lr)")  # fmt: skip
    right.set(xscale="log", yscale="log", xlabel="data D_J (env steps)",
              ylabel=f"compute C_J ({report['compute_unit']})")  # fmt: skip
    batches = sorted({r["batch_size"] for r in report["runs"]})
    _finish_figure(fig, left, right, batches, [str(b) for b in batches], report, out)


def _law_label(law: sf.DataLaw) -> str:
    return f"D = {law.d_min:.3g} + ({law.beta:.3g}/σ)^{law.alpha:.2f}"
