"""The fitting core of `jaxrl scale` (issue 40): pure numerics over finished runs, no training.

What the papers and their released code specify
-----------------------------------------------
Sources: Rybkin et al., "Value-Based Deep RL Scales Predictably" (ICML 2025, arXiv 2502.04327),
its sequel Fu, Rybkin et al., "Compute-Optimal Scaling for Value-Based Deep RL" (arXiv
2508.14881), the blog https://value-scaling.github.io, and the authors' analysis code
(github.com/prestonfu/qscaled for the first paper, github.com/prestonfu/model_scaling for the
sequel), read because the searchable copies of the papers stopped short of their method sections;
section and equation numbers are therefore not given here, the forms below are checked against
that code.

* Data to threshold D_J: the env steps at which a configuration's return first exceeds J.
  Smoothing: the return curve is averaged over seeds, then fitted by *isotonic regression*
  (non-decreasing least squares, sklearn's IsotonicRegression in qscaled/core/preprocessing.py),
  and D_J is the first evaluation step where the isotonic fit exceeds J. A single high
  evaluation therefore does not count as a crossing: it is pooled with the lower evaluations
  after it and their mean has to reach J.
* Uncertainty: bootstrap over seeds -- resample a configuration's seeds with replacement, average,
  refit the isotonic curve, recompute the crossing (100 resamples in qscaled).
* Data law (first paper): D_J(sigma) ~= D_min + (beta / sigma)^alpha, sigma the UTD ratio. The
  sequel writes D_min * (1 + (beta / sigma)^alpha): the same family, with that beta times
  D_min^(1/alpha) in the place of this one.
* Hyperparameters: best batch size B*(sigma) and learning rate eta*(sigma) are power laws in
  sigma, fitted as straight lines in log-log space (ordinary least squares).
* Compute: C_J(sigma) = 10 * N * B*(sigma) * sigma * D_J(sigma) FLOPs, N the model's parameter
  count (qscaled/core/fitted/data_efficiency.py); sigma * D_J is the number of gradient updates.
* Budget: F = C + delta * D, delta the cost of one env step in compute units; the optimal sigma
  for a delta minimises F along the fitted frontier (qscaled takes the argmin over a dense sigma
  grid; qscaled/core/fitted/budget.py).

Where this module chooses for itself
------------------------------------
* Crossing: the first point where the smoothed curve reaches J (>=), interpolated linearly between
  the two evaluations around it, not the authors' first evaluation strictly above J. Interpolation
  removes the evaluation-interval quantisation the brief asks to avoid; at an evaluation that
  equals J both give that evaluation's step.
* The data law is fitted by least squares on log residuals (noise in D_J is multiplicative: a
  seed's crossing scatters by a fraction of D), from several starting points; the authors minimise
  squared error on per-task median-normalised D (a brute-force grid, then L-BFGS-B).
  Normalisation across tasks (their appendix on averaging environments) is left out: one task.
* Best (B, eta) per sigma: the grid point with the least D_J, jointly over both. The authors also
  report an "uncertainty-corrected" best (the mean over bootstrap resamples, and over the other
  hyperparameter's values), which this module does not do.
* Without a model size, compute is counted in gradient updates (sigma * D_J); with one, in FLOPs
  as above (the factor 10 is the authors').
* Optimal sigma: a dense log-spaced grid, then a bounded scalar refinement around the best grid
  point (F has no closed-form minimiser once B*(sigma) enters the cost).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from scipy import optimize

FLOPS_PER_PARAM_SAMPLE = 10.0  # the authors' C = 10 * N * B * sigma * D
SIGMA_BOUNDS = (1e-3, 1e4)  # search range for optimal_sigma and predict


# ---------------------------------------------------------------- smoothing and crossings


def _pava(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) least squares by pool-adjacent-violators.

    Written here because no dependency of ours offers isotonic regression (sklearn, which the
    authors use, is not one of them, and scipy gained it only in 1.12)."""
    means: list[float] = []
    weights: list[float] = []
    counts: list[int] = []
    for value, weight in zip(y.tolist(), w.tolist(), strict=True):
        means.append(value)
        weights.append(weight)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            total = weights[-2] + weights[-1]
            means[-2] = (means[-2] * weights[-2] + means[-1] * weights[-1]) / total
            weights[-2] = total
            counts[-2] += counts[-1]
            del means[-1], weights[-1], counts[-1]
    return np.repeat(means, counts)


def smooth_returns(steps: Sequence[float], returns: np.ndarray) -> np.ndarray:
    """The papers' smoothing: the mean over seeds, then isotonic (non-decreasing) regression.

    `returns` is (evals,) or (seeds, evals); a NaN evaluation (a seed that had not logged yet) is
    left out of that evaluation's mean. Returns the smoothed curve, one value per step."""
    steps = np.asarray(steps, float)
    returns = np.asarray(returns, float)
    if returns.ndim == 1:
        returns = returns[None]
    if returns.ndim != 2 or returns.shape[1] != steps.shape[0]:
        raise ValueError(f"returns {returns.shape} do not match {steps.shape[0]} steps")
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    counts = np.sum(~np.isnan(returns), axis=0)
    keep = counts > 0
    mean = np.nansum(returns[:, keep], axis=0) / counts[keep]
    out = np.full(steps.shape, np.nan)
    out[keep] = _pava(mean, np.ones_like(mean))
    return out


def _crossing_of(steps: np.ndarray, curve: np.ndarray, threshold: float) -> float | None:
    ok = ~np.isnan(curve)
    steps, curve = steps[ok], curve[ok]
    hits = np.nonzero(curve >= threshold)[0]
    if hits.size == 0:
        return None
    i = int(hits[0])
    if i == 0 or curve[i] == threshold:
        return float(steps[i])
    x0, x1, y0, y1 = steps[i - 1], steps[i], curve[i - 1], curve[i]
    return float(x0 + (threshold - y0) * (x1 - x0) / (y1 - y0))


def crossing(steps: Sequence[float], returns: np.ndarray, threshold: float) -> float | None:
    """D_J: the first env step at which the smoothed curve (`smooth_returns`) reaches
    `threshold`, interpolated linearly between the evaluations around it; the first step when the
    first evaluation already reaches it; None when it never does."""
    steps = np.asarray(steps, float)
    return _crossing_of(steps, smooth_returns(steps, returns), threshold)


# ---------------------------------------------------------------- the laws


@dataclasses.dataclass(frozen=True)
class DataLaw:
    """D_J(sigma) = d_min + (beta / sigma)^alpha."""

    d_min: float
    beta: float
    alpha: float

    def __call__(self, sigma: float | np.ndarray) -> float | np.ndarray:
        return predict_data(self, sigma)


def predict_data(law: DataLaw, sigma: float | np.ndarray) -> float | np.ndarray:
    """D_J at UTD ratio `sigma` under the fitted law."""
    sigma = np.asarray(sigma, float)
    out = law.d_min + (law.beta / sigma) ** law.alpha
    return float(out) if out.ndim == 0 else out


def fit_data_law(sigmas: Sequence[float], data: Sequence[float]) -> DataLaw:
    """Least-squares fit of D_J(sigma) = d_min + (beta/sigma)^alpha on log residuals.

    Several points may share a sigma (seeds, or resamples). Internally D is scaled by its median
    and sigma by its geometric mean, and the law is written d_min + K sigma^-alpha (K =
    beta^alpha), which the optimiser handles better; alpha is kept in (0.01, 20) and d_min >= 0.
    The start comes from a grid over alpha (see below), so the fit needs no initial guess.
    """
    sigmas = np.asarray(sigmas, float)
    data = np.asarray(data, float)
    if sigmas.shape != data.shape or sigmas.ndim != 1:
        raise ValueError("sigmas and data must be 1-D arrays of the same length")
    if np.unique(sigmas).size < 3:
        raise ValueError("fitting D_J(sigma) needs at least 3 distinct UTD ratios")
    if np.any(data <= 0) or np.any(sigmas <= 0):
        raise ValueError("UTD ratios and data must be positive")
    d_scale = float(np.median(data))
    s_scale = float(np.exp(np.mean(np.log(sigmas))))
    u = np.log(sigmas / s_scale)
    y = np.log(data / d_scale)

    def residuals(x: np.ndarray) -> np.ndarray:
        log_dmin, log_k, alpha = x
        model = np.logaddexp(log_dmin, log_k - alpha * u)
        return model - y

    lo = np.array([-30.0, -30.0, 0.01])
    hi = np.array([float(np.max(y)) + 1.0, 30.0, 20.0])
    # Starting point: for each alpha on a grid the law is linear in (d_min, K); solve that by
    # non-negative least squares on relative residuals (close to log residuals), keep the best
    # alpha, then refine all three on log residuals.
    d = np.exp(y)
    start = None
    for alpha0 in np.geomspace(0.02, 19.0, 48):
        a = np.column_stack([np.ones_like(u), np.exp(-alpha0 * u)]) / d[:, None]
        coef, rnorm = optimize.nnls(a, np.ones_like(d))
        if start is None or rnorm < start[0]:
            start = (rnorm, coef, alpha0)
    assert start is not None
    _, (dmin0, k0), alpha0 = start
    tiny = 1e-6 * float(np.min(d))
    x0 = np.array([math.log(max(dmin0, tiny)), math.log(max(k0, tiny)), alpha0])
    best = optimize.least_squares(residuals, np.clip(x0, lo + 1e-9, hi - 1e-9), bounds=(lo, hi))
    log_dmin, log_k, alpha = best.x
    d_min = d_scale * math.exp(log_dmin)
    k = d_scale * math.exp(log_k) * s_scale**alpha  # K sigma^-alpha in the original units
    return DataLaw(d_min=float(d_min), beta=float(k ** (1.0 / alpha)), alpha=float(alpha))


@dataclasses.dataclass(frozen=True)
class PowerLaw:
    """y = coef * x^exponent."""

    coef: float
    exponent: float

    def __call__(self, x: float | np.ndarray) -> float | np.ndarray:
        out = self.coef * np.asarray(x, float) ** self.exponent
        return float(out) if np.ndim(out) == 0 else out


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> PowerLaw:
    """y = a x^b by ordinary least squares in log-log space (the papers' B*(sigma), eta*(sigma)
    fits). A single distinct x gives exponent 0."""
    x = np.log(np.asarray(x, float))
    y = np.log(np.asarray(y, float))
    if x.shape != y.shape or x.size == 0:
        raise ValueError("x and y must be non-empty and the same length")
    if np.ptp(x) == 0:
        return PowerLaw(coef=float(np.exp(np.mean(y))), exponent=0.0)
    slope, intercept = np.polyfit(x, y, 1)
    return PowerLaw(coef=float(np.exp(intercept)), exponent=float(slope))


# ---------------------------------------------------------------- the grid


@dataclasses.dataclass(frozen=True)
class Run:
    """One configuration of the grid: its UTD ratio, batch size, learning rate, the env steps of
    its evaluations and their returns, (seeds, evals)."""

    sigma: float
    batch_size: float
    lr: float
    steps: np.ndarray
    returns: np.ndarray

    @property
    def config(self) -> tuple[float, float, float]:
        return (self.sigma, self.batch_size, self.lr)


@dataclasses.dataclass(frozen=True)
class Best:
    """The configuration reaching J with the least data at one UTD ratio."""

    sigma: float
    batch_size: float
    lr: float
    data: float


def best_per_sigma(crossings: Mapping[tuple[float, float, float], float | None]) -> list[Best]:
    """Per UTD ratio, the (batch size, lr) with the least data to threshold; UTD ratios where no
    configuration reached it are left out. Ties go to the first configuration given."""
    best: dict[float, Best] = {}
    for (sigma, batch, lr), data in crossings.items():
        if data is None or not np.isfinite(data):
            continue
        if sigma not in best or data < best[sigma].data:
            best[sigma] = Best(sigma, batch, lr, float(data))
    return [best[s] for s in sorted(best)]


@dataclasses.dataclass(frozen=True)
class ScalingLaws:
    """The fitted laws for one threshold J: D_J(sigma), B*(sigma), eta*(sigma), and the model size
    that turns gradient updates into FLOPs (None: compute is counted in updates)."""

    data: DataLaw
    batch: PowerLaw | None = None
    lr: PowerLaw | None = None
    model_size: float | None = None

    def compute(self, sigma: float | np.ndarray) -> float | np.ndarray:
        """C_J(sigma) = sigma * D_J(sigma) updates, times 10 * N * B*(sigma) FLOPs per update when
        the model size is known."""
        sigma = np.asarray(sigma, float)
        out = sigma * predict_data(self.data, sigma)
        if self.model_size is not None:
            if self.batch is None:
                raise ValueError("compute in FLOPs needs the batch-size law")
            out = out * FLOPS_PER_PARAM_SAMPLE * self.model_size * self.batch(sigma)
        return float(out) if np.ndim(out) == 0 else out


def fit_hparam_laws(best: Sequence[Best]) -> tuple[PowerLaw, PowerLaw]:
    """B*(sigma) and eta*(sigma) as power laws through the per-sigma best configurations."""
    sigmas = [b.sigma for b in best]
    return (
        fit_power_law(sigmas, [b.batch_size for b in best]),
        fit_power_law(sigmas, [b.lr for b in best]),
    )


def run_crossings(
    runs: Iterable[Run], threshold: float
) -> dict[tuple[float, float, float], float | None]:
    """D_J of every configuration, from its seed-mean smoothed curve."""
    return {run.config: crossing(run.steps, run.returns, threshold) for run in runs}


def fit_scaling(
    runs: Sequence[Run], threshold: float, model_size: float | None = None
) -> ScalingLaws:
    """All the laws at threshold J from a (sigma, batch, lr) grid of runs: crossings, the best
    configuration per sigma, D_J(sigma) through those bests' data, B*(sigma) and eta*(sigma)."""
    return _fit_from_crossings(run_crossings(runs, threshold), model_size)


def _fit_from_crossings(
    crossings: Mapping[tuple[float, float, float], float | None], model_size: float | None
) -> ScalingLaws:
    best = best_per_sigma(crossings)
    data = fit_data_law([b.sigma for b in best], [b.data for b in best])
    batch, lr = fit_hparam_laws(best)
    return ScalingLaws(data=data, batch=batch, lr=lr, model_size=model_size)


# ---------------------------------------------------------------- bootstrap


PARAMETERS = ("d_min", "beta", "alpha", "batch_coef", "batch_exp", "lr_coef", "lr_exp")


def flatten(laws: ScalingLaws) -> tuple[float, ...]:
    assert laws.batch is not None and laws.lr is not None
    return (
        laws.data.d_min,
        laws.data.beta,
        laws.data.alpha,
        laws.batch.coef,
        laws.batch.exponent,
        laws.lr.coef,
        laws.lr.exponent,
    )


@dataclasses.dataclass(frozen=True)
class Bootstrap:
    """The fitted parameters over seed resamples: samples[name] has one value per successful
    resample (PARAMETERS names them); `failed` counts resamples where fewer than 3 UTD ratios
    reached the threshold, or the fit failed."""

    point: ScalingLaws
    samples: dict[str, np.ndarray]
    failed: int

    def interval(self, name: str, level: float = 0.95) -> tuple[float, float]:
        """The percentile interval of one parameter."""
        values = self.samples[name]
        if values.size == 0:
            raise ValueError("no successful bootstrap resample")
        tail = 50.0 * (1.0 - level)
        lo, hi = np.percentile(values, [tail, 100.0 - tail])
        return float(lo), float(hi)

    def intervals(self, level: float = 0.95) -> dict[str, tuple[float, float]]:
        return {name: self.interval(name, level) for name in PARAMETERS}


def bootstrap(
    runs: Sequence[Run],
    threshold: float,
    n: int = 200,
    seed: int = 0,
    model_size: float | None = None,
) -> Bootstrap:
    """Percentile bootstrap of the fitted parameters: each resample draws every configuration's
    seeds with replacement (independently per configuration, as the authors do), recomputes the
    crossings from the resampled seed mean, picks the best configurations again and refits.
    Deterministic given `seed` (numpy's default_rng)."""
    rng = np.random.default_rng(seed)
    point = fit_scaling(runs, threshold, model_size)
    # Draw every resample's seed picks first, configuration by configuration, then smooth each
    # resampled mean curve (the same draws as a loop over resamples would use, in another order).
    per_config = []
    for run in runs:
        steps = np.asarray(run.steps, float)
        returns = np.asarray(run.returns, float)
        returns = returns[None] if returns.ndim == 1 else returns
        picks = rng.integers(0, returns.shape[0], size=(n, returns.shape[0]))
        values = []
        for pick in picks:
            values.append(crossing(steps, returns[pick], threshold))
        per_config.append((run.config, values))
    rows: list[tuple[float, ...]] = []
    failed = 0
    for k in range(n):
        crossings = {config: values[k] for config, values in per_config}
        try:
            rows.append(flatten(_fit_from_crossings(crossings, model_size)))
        except (ValueError, np.linalg.LinAlgError):
            failed += 1
    table = np.array(rows, float).reshape(len(rows), len(PARAMETERS))
    samples = {name: table[:, i] for i, name in enumerate(PARAMETERS)}
    return Bootstrap(point=point, samples=samples, failed=failed)


# ---------------------------------------------------------------- frontier and budgets


def _as_laws(params: ScalingLaws | DataLaw) -> ScalingLaws:
    return params if isinstance(params, ScalingLaws) else ScalingLaws(data=params)


def frontier(
    params: ScalingLaws | DataLaw, sigmas: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The data-compute Pareto frontier: (D_J(sigma), C_J(sigma)) at each sigma."""
    laws = _as_laws(params)
    sigmas = np.asarray(sigmas, float)
    return np.asarray(predict_data(laws.data, sigmas)), np.asarray(laws.compute(sigmas))


def budget(params: ScalingLaws | DataLaw, sigma: float | np.ndarray, delta: float):
    """F = C_J(sigma) + delta * D_J(sigma)."""
    laws = _as_laws(params)
    return laws.compute(sigma) + delta * predict_data(laws.data, sigma)


def optimal_sigma(
    params: ScalingLaws | DataLaw,
    delta: float,
    bounds: tuple[float, float] = SIGMA_BOUNDS,
) -> float:
    """The sigma minimising F = C + delta * D within `bounds`: the best of a dense log grid, then
    a bounded scalar minimisation between its neighbours."""
    if delta < 0:
        raise ValueError("delta must be non-negative")
    laws = _as_laws(params)
    logs = np.linspace(math.log(bounds[0]), math.log(bounds[1]), 2001)
    values = np.asarray(budget(laws, np.exp(logs), delta))
    i = int(np.argmin(values))
    lo, hi = logs[max(i - 1, 0)], logs[min(i + 1, logs.size - 1)]
    res = optimize.minimize_scalar(
        lambda t: float(budget(laws, math.exp(t), delta)),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    best = res.x if res.fun <= values[i] else logs[i]
    return float(math.exp(best))


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The UTD ratio (and its batch size and learning rate, when fitted) with the data and compute
    the laws predict for reaching J, and the budget F when delta was given."""

    sigma: float
    batch_size: float | None
    lr: float | None
    data: float
    compute: float
    budget: float | None = None


def predict(
    params: ScalingLaws | DataLaw,
    *,
    data_budget: float | None = None,
    compute_budget: float | None = None,
    delta: float | None = None,
    bounds: tuple[float, float] = SIGMA_BOUNDS,
) -> Prediction:
    """Exactly one of:
    data_budget D0: the sigma with D_J(sigma) = D0 (the least compute that reaches J on D0 env
      steps, compute growing with sigma along the frontier); D0 <= d_min cannot reach J.
    compute_budget C0: the largest sigma within `bounds` with C_J(sigma) <= C0, hence the least
      data (D_J falls with sigma).
    delta: the sigma minimising C + delta * D."""
    given = [v is not None for v in (data_budget, compute_budget, delta)]
    if sum(given) != 1:
        raise ValueError("give exactly one of data_budget, compute_budget, delta")
    laws = _as_laws(params)
    law = laws.data
    if data_budget is not None:
        if data_budget <= law.d_min:
            raise ValueError(
                f"data budget {data_budget:.4g} is at or below D_min = {law.d_min:.4g}: "
                "no UTD ratio reaches J on it"
            )
        sigma = law.beta / (data_budget - law.d_min) ** (1.0 / law.alpha)
    elif compute_budget is not None:
        sigma = _largest_sigma_within(laws, compute_budget, bounds)
    else:
        assert delta is not None
        sigma = optimal_sigma(laws, delta, bounds)
    return Prediction(
        sigma=float(sigma),
        batch_size=None if laws.batch is None else float(laws.batch(sigma)),
        lr=None if laws.lr is None else float(laws.lr(sigma)),
        data=float(predict_data(law, sigma)),
        compute=float(laws.compute(sigma)),
        budget=None if delta is None else float(budget(laws, sigma, delta)),
    )


def _largest_sigma_within(laws: ScalingLaws, c0: float, bounds: tuple[float, float]) -> float:
    logs = np.linspace(math.log(bounds[0]), math.log(bounds[1]), 2001)
    compute = np.asarray(laws.compute(np.exp(logs)))
    ok = np.nonzero(compute <= c0)[0]
    if ok.size == 0:
        raise ValueError(f"compute budget {c0:.4g} is below C_J at every sigma in {bounds}")
    i = int(ok[-1])
    if i == logs.size - 1:
        return float(bounds[1])
    t = optimize.brentq(
        lambda x: float(laws.compute(math.exp(x))) - c0, logs[i], logs[i + 1], xtol=1e-12
    )
    return float(math.exp(t))
