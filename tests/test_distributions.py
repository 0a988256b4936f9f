import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import distributions


def test_tanh_gaussian_log_prob_matches_numerical_density():
    """The density of a = tanh(u) integrates the Gaussian over a bin: check against a histogram
    reference built by change of variables computed numerically (finite differences)."""
    mean, log_std = jnp.array([0.3]), jnp.array([-0.5])
    actions = jnp.linspace(-0.95, 0.95, 39)[:, None]
    log_prob = distributions.tanh_gaussian_log_prob(actions, mean, log_std)
    # Numerical reference: p(a) = N(atanh a) * |d atanh(a) / da|, derivative by central difference.
    h = 1e-4
    u = np.arctanh(np.asarray(actions[:, 0], np.float64))
    du = (np.arctanh(np.asarray(actions[:, 0]) + h) - np.arctanh(np.asarray(actions[:, 0]) - h)) / (
        2 * h
    )
    std = math.exp(-0.5)
    normal = np.exp(-0.5 * ((u - 0.3) / std) ** 2) / (std * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(np.exp(log_prob), normal * du, rtol=2e-3)


def test_density_integrates_to_one():
    mean, log_std = jnp.array([-0.7]), jnp.array([0.2])
    grid = jnp.linspace(-1 + 1e-6, 1 - 1e-6, 200_001)[:, None]
    density = jnp.exp(distributions.tanh_gaussian_log_prob(grid, mean, log_std))
    integral = float(jnp.sum(density) * (grid[1, 0] - grid[0, 0]))
    assert abs(integral - 1.0) < 2e-3


def test_sample_log_prob_agrees_with_log_prob_of_sample_and_is_stable():
    key = jax.random.PRNGKey(3)
    mean, log_std = jnp.zeros((1000, 2)), jnp.full((1000, 2), -1.0)
    action, log_prob = distributions.tanh_gaussian_sample(key, mean, log_std)
    assert action.shape == (1000, 2) and log_prob.shape == (1000,)
    np.testing.assert_allclose(
        log_prob, distributions.tanh_gaussian_log_prob(action, mean, log_std), rtol=1e-3, atol=1e-3
    )
    # Far in the tail tanh saturates; the pre-tanh form stays finite.
    far = distributions.tanh_gaussian_log_prob_pre_tanh(
        jnp.array([[30.0]]), jnp.zeros((1, 1)), jnp.zeros((1, 1))
    )
    assert np.isfinite(far).all()
