"""The fitting core of `jaxrl scale` (experiments/scale_fit.py): smoothing and crossings on
hand-made curves, the laws recovered from synthetic data drawn from known laws, the seed
bootstrap, the optimal UTD ratio against brute force, and predict(). Pure numpy/scipy, no JAX."""

import math

import numpy as np
import pytest
from scipy import optimize

from experiments import scale_fit as sf

STEPS = np.arange(13) * 1000.0

# ---------------------------------------------------------------- smoothing


def test_isotonic_smoothing_is_the_least_squares_monotone_fit():
    """PAVA against the constrained least-squares problem solved directly: y = c0 + cumsum(x),
    increments x >= 0 (scipy's lsq_linear)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 12))
        y = rng.normal(size=n).cumsum() + rng.normal(size=n)
        ours = sf.smooth_returns(np.arange(n), y)
        a = np.tril(np.ones((n, n)))
        lo = np.r_[-np.inf, np.zeros(n - 1)]
        ref = a @ optimize.lsq_linear(a, y, bounds=(lo, np.inf), tol=1e-12).x
        np.testing.assert_allclose(ours, ref, atol=1e-6)
        assert np.all(np.diff(ours) >= -1e-12)


def test_smoothing_averages_seeds_first_and_skips_missing_evaluations():
    returns = np.array([[0.0, 10.0, 20.0], [0.0, 30.0, np.nan]])
    np.testing.assert_allclose(sf.smooth_returns([0, 1, 2], returns), [0.0, 20.0, 20.0])


def test_smoothing_rejects_mismatched_or_unsorted_steps():
    with pytest.raises(ValueError):
        sf.smooth_returns([0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        sf.smooth_returns([0, 2, 1], [1.0, 2.0, 3.0])


# ---------------------------------------------------------------- crossings


def test_crossing_of_a_monotone_curve_interpolates_between_evaluations():
    returns = STEPS / 100.0  # 0, 10, ..., 120
    assert sf.crossing(STEPS, returns, 45.0) == pytest.approx(4500.0)
    assert sf.crossing(STEPS, returns, 0.0) == 0.0  # the first evaluation already reaches it


def test_crossing_exactly_at_an_evaluation_is_that_evaluation():
    returns = STEPS / 100.0
    assert sf.crossing(STEPS, returns, 70.0) == 7000.0


def test_crossing_never_reached_is_none():
    assert sf.crossing(STEPS, STEPS / 100.0, 121.0) is None
    assert sf.crossing(STEPS, np.full(13, np.nan), 1.0) is None


def test_one_noisy_spike_is_not_a_crossing():
    """The papers' isotonic fit pools a single high evaluation with the lower ones after it:
    (95, 30, 40, 50) -> 53.75 each, so the curve first reaches 90 at 10000 steps, where the raw
    curve would say 3000."""
    returns = np.array([0, 10, 20, 95, 30, 40, 50, 60, 70, 80, 90, 100, 110], float)
    assert np.argmax(returns >= 90) == 3  # the raw curve's premature crossing
    np.testing.assert_allclose(sf.smooth_returns(STEPS, returns)[3:7], 53.75)
    assert sf.crossing(STEPS, returns, 90.0) == 10000.0


def test_a_dip_after_reaching_the_threshold_delays_the_crossing():
    """A dip pulls the evaluation before it down: (100, 70) pools to 85, so the monotone curve
    reaches 90 between 4000 (85) and 5000 (100), not at the raw 3000."""
    steps = np.arange(7) * 1000.0
    returns = np.array([0, 40, 80, 100, 70, 100, 110], float)
    assert sf.crossing(steps, returns, 90.0) == pytest.approx(4000.0 + 1000.0 / 3.0)


def test_crossing_of_several_seeds_is_the_crossing_of_their_mean():
    returns = np.stack([STEPS / 100.0, STEPS / 50.0])  # mean slope 0.015 per step
    assert sf.crossing(STEPS, returns, 60.0) == pytest.approx(4000.0)


# ---------------------------------------------------------------- the laws

TRUE_LAW = sf.DataLaw(d_min=2e5, beta=3e5 ** (1 / 0.8), alpha=0.8)  # term 3e5 at sigma = 1
SIGMAS = np.array([0.25, 0.5, 1, 2, 4, 8, 16, 32])


def test_data_law_without_noise_is_recovered_exactly():
    fit = sf.fit_data_law(SIGMAS, TRUE_LAW(SIGMAS))
    assert fit.d_min == pytest.approx(TRUE_LAW.d_min, rel=1e-6)
    assert fit.alpha == pytest.approx(TRUE_LAW.alpha, rel=1e-6)
    assert fit.beta == pytest.approx(TRUE_LAW.beta, rel=1e-5)


def test_data_law_with_multiplicative_noise_is_recovered_within_tolerance():
    """3 points per sigma, 3% log-normal noise (fixed seed). Tolerances: D_min and alpha within
    10%, D_J(sigma) within 3% over the fitted range; beta only within a factor e, because the data
    pin beta^alpha and an alpha off by a few percent moves beta = (beta^alpha)^(1/alpha) a lot
    when beta is far from the sigmas (here beta ~ 7e6)."""
    rng = np.random.default_rng(0)
    sigmas = np.repeat(SIGMAS, 3)
    data = TRUE_LAW(sigmas) * np.exp(rng.normal(0.0, 0.03, sigmas.size))
    fit = sf.fit_data_law(sigmas, data)
    assert fit.d_min == pytest.approx(TRUE_LAW.d_min, rel=0.10)
    assert fit.alpha == pytest.approx(TRUE_LAW.alpha, rel=0.10)
    assert abs(math.log(fit.beta / TRUE_LAW.beta)) < 1.0
    np.testing.assert_allclose(fit(SIGMAS), TRUE_LAW(SIGMAS), rtol=0.03)


def test_data_law_needs_three_utd_ratios():
    with pytest.raises(ValueError):
        sf.fit_data_law([1, 1, 2, 2], [5.0, 5.0, 3.0, 3.0])


def test_power_law_with_multiplicative_noise_is_recovered():
    rng = np.random.default_rng(1)
    x = np.repeat([0.5, 1, 2, 4, 8, 16], 4)
    y = 300.0 * x**-0.4 * np.exp(rng.normal(0.0, 0.05, x.size))
    law = sf.fit_power_law(x, y)
    assert law.exponent == pytest.approx(-0.4, abs=0.03)
    assert law.coef == pytest.approx(300.0, rel=0.05)
    flat = sf.fit_power_law([2, 2], [5.0, 5.0])
    assert flat.exponent == 0.0 and flat.coef == pytest.approx(5.0)


# ---------------------------------------------------------------- a synthetic grid

GRID_SIGMAS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def true_batch(sigma):
    return 1024.0 / sigma


def true_lr(sigma):
    return 1e-3 * sigma**-0.5


def make_grid(seed=0, seeds=8, seed_noise=0.1, eval_noise=0.02):
    """At each sigma a 3 x 3 grid around B*(sigma), eta*(sigma): batch sizes x(1/2, 1, 2),
    learning rates x(1/sqrt 2, 1, sqrt 2), as a sweep centred on earlier fits would be. A
    configuration's D is D_J(sigma) x 1.3 per step away in either; each seed's return rises
    linearly to reach J = 1 at D x lognormal(seed_noise), plus Gaussian evaluation noise."""
    rng = np.random.default_rng(seed)
    steps = np.linspace(0.0, 1.5e6, 61)
    runs = []
    for sigma in GRID_SIGMAS:
        for i in (-1, 0, 1):
            for j in (-1, 0, 1):
                d = TRUE_LAW(sigma) * (1 + 0.3 * i * i) * (1 + 0.3 * j * j)
                d_seed = d * np.exp(rng.normal(0.0, seed_noise, seeds))
                returns = steps[None] / d_seed[:, None]
                returns = returns + rng.normal(0.0, eval_noise, returns.shape)
                batch, lr = true_batch(sigma) * 2.0**i, true_lr(sigma) * 2.0 ** (j / 2)
                runs.append(sf.Run(sigma, batch, lr, steps, returns))
    return runs


def test_grid_fit_recovers_the_best_hyperparameters_and_the_data_law():
    runs = make_grid()
    best = sf.best_per_sigma(sf.run_crossings(runs, 1.0))
    assert [b.sigma for b in best] == GRID_SIGMAS
    assert [b.batch_size for b in best] == [true_batch(s) for s in GRID_SIGMAS]
    np.testing.assert_allclose([b.lr for b in best], [true_lr(s) for s in GRID_SIGMAS])
    laws = sf.fit_scaling(runs, 1.0)
    assert laws.batch.exponent == pytest.approx(-1.0)
    assert laws.batch.coef == pytest.approx(1024.0)
    assert laws.lr.exponent == pytest.approx(-0.5)
    assert laws.lr.coef == pytest.approx(1e-3)
    assert laws.data.d_min == pytest.approx(TRUE_LAW.d_min, rel=0.10)
    assert laws.data.alpha == pytest.approx(TRUE_LAW.alpha, rel=0.10)


def test_best_per_sigma_skips_configurations_and_sigmas_that_never_cross():
    crossings = {(1.0, 64, 1e-3): None, (1.0, 128, 1e-3): 5.0, (2.0, 64, 1e-3): None}
    assert sf.best_per_sigma(crossings) == [sf.Best(1.0, 128, 1e-3, 5.0)]


def test_bootstrap_intervals_contain_the_true_values_and_are_deterministic():
    runs = make_grid()
    boot = sf.bootstrap(runs, 1.0, n=100, seed=0)
    assert boot.failed == 0
    assert boot.samples["alpha"].shape == (100,)
    truth = {
        "d_min": TRUE_LAW.d_min,
        "alpha": TRUE_LAW.alpha,
        "beta": TRUE_LAW.beta,
        "batch_exp": -1.0,
        "lr_exp": -0.5,
    }
    for name, value in truth.items():
        lo, hi = boot.interval(name)
        assert lo - 1e-9 <= value <= hi + 1e-9, (name, lo, value, hi)
    again = sf.bootstrap(runs, 1.0, n=100, seed=0)
    np.testing.assert_array_equal(again.samples["alpha"], boot.samples["alpha"])
    other = sf.bootstrap(runs, 1.0, n=20, seed=1)
    assert not np.array_equal(other.samples["alpha"], boot.samples["alpha"][:20])


# ---------------------------------------------------------------- frontier, budgets, predict

# B* falls more slowly than 1/sigma, so compute per env step still grows with sigma
LAWS = sf.ScalingLaws(
    data=TRUE_LAW, batch=sf.PowerLaw(256.0, -0.3), lr=sf.PowerLaw(1e-3, -0.5), model_size=1e6
)


def test_frontier_trades_data_for_compute():
    sigmas = np.array([0.5, 1, 2, 4, 8])
    d, c = sf.frontier(LAWS, sigmas)
    assert np.all(np.diff(d) < 0) and np.all(np.diff(c) > 0)
    np.testing.assert_allclose(c, 10 * 1e6 * 256.0 * sigmas**-0.3 * sigmas * d)
    d_updates, c_updates = sf.frontier(TRUE_LAW, sigmas)
    np.testing.assert_allclose(d_updates, d)
    np.testing.assert_allclose(c_updates, sigmas * d)


@pytest.mark.parametrize("laws", [sf.ScalingLaws(TRUE_LAW), LAWS], ids=["updates", "flops"])
def test_optimal_sigma_matches_brute_force(laws):
    sigmas = np.exp(np.linspace(math.log(1e-3), math.log(1e4), 400_001))
    for delta in [1.0, 10.0, 100.0] if laws.model_size is None else [1e9, 1e10, 1e11]:
        values = sf.budget(laws, sigmas, delta)
        brute = sigmas[np.argmin(values)]
        ours = sf.optimal_sigma(laws, delta)
        assert 1e-3 < ours < 1e4  # an interior optimum, not a bound
        assert ours == pytest.approx(brute, rel=1e-3)
        assert sf.budget(laws, ours, delta) <= values.min() * (1 + 1e-9)


def test_predict_for_a_data_budget_returns_the_sigma_that_needs_exactly_that_data():
    for d0 in [2.5e5, 4e5, 1e6]:
        p = sf.predict(LAWS, data_budget=d0)
        assert p.data == pytest.approx(d0, rel=1e-9)
        assert sf.predict_data(TRUE_LAW, p.sigma) == pytest.approx(d0, rel=1e-9)
        assert p.batch_size == pytest.approx(256.0 * p.sigma**-0.3)
        assert p.lr == pytest.approx(1e-3 / math.sqrt(p.sigma))
        assert p.compute == pytest.approx(LAWS.compute(p.sigma))
    with pytest.raises(ValueError, match="D_min"):
        sf.predict(LAWS, data_budget=TRUE_LAW.d_min)


def test_predict_for_a_compute_budget_and_for_delta():
    c0 = float(sf.ScalingLaws(TRUE_LAW).compute(3.0))
    p = sf.predict(TRUE_LAW, compute_budget=c0)
    assert p.sigma == pytest.approx(3.0, rel=1e-6)
    assert p.compute == pytest.approx(c0, rel=1e-9)
    assert p.batch_size is None and p.lr is None
    q = sf.predict(LAWS, delta=1e10)
    assert q.sigma == pytest.approx(sf.optimal_sigma(LAWS, 1e10))
    assert q.budget == pytest.approx(q.compute + 1e10 * q.data)
    with pytest.raises(ValueError, match="exactly one"):
        sf.predict(LAWS, data_budget=3e5, delta=1.0)
    with pytest.raises(ValueError):
        sf.predict(LAWS)
