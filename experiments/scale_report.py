"""The fitting and reporting half of `jaxrl scale` (issue 40): a scale folder's members (read by
`scale_folder`) taken to their crossings of the target return J, the best configuration per UTD
ratio, the fitted laws with bootstrap intervals (through `scale_fit`), predictions for a budget,
and of a grid with a width axis, the fit width by width and the TD-overfitting check: the
report that `scale_figures` writes as scale.json and scale.png. No training and no files here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxrl.experiments import scale_fit as sf
from jaxrl.experiments.scale_folder import Member, ScaleError

FLOPS_UNIT = "FLOPs (10 N B per update)"  # compute with a model size N, B the batch size
LEVEL = 0.95  # bootstrap interval level


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


def interval(values: list[float]) -> list[float] | None:
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
        result["interval"] = {name: interval(values) for name, values in draws.items()}
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
    point = dict(zip(sf.PARAMETERS, sf.flatten(laws), strict=True))
    fit: dict[str, Any] = {"bootstrap": {"resamples": bootstrap, "failed": boot.failed}}
    for name in sf.PARAMETERS:
        values = boot.samples[name]
        fit[name] = {"value": point[name], "interval": interval(list(values))}
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
