"""Running observation statistics against numpy over the concatenated batches."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import normalization


def test_running_statistics_equal_numpy_over_all_batches():
    rng = np.random.default_rng(0)
    sizes = (1, 7, 64, 3)
    batches = [rng.normal(loc=[5.0, -2.0, 0.0], scale=[0.1, 3.0, 50.0], size=(n, 3)) for n in sizes]
    stats = normalization.init(3)
    update = jax.jit(normalization.update)
    for batch in batches:
        stats = update(stats, jnp.asarray(batch, jnp.float32))
    seen = np.concatenate(batches)
    assert float(stats.count) == len(seen)
    np.testing.assert_allclose(stats.mean, seen.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.var, seen.var(0), rtol=1e-4)
    # normalize: (x - mean) / sqrt(var + 1e-8), clipped to +-10.
    x = np.array([[5.0, -2.0, 0.0], [5.5, 1.0, 1e4]])
    expected = np.clip((x - seen.mean(0)) / np.sqrt(seen.var(0) + 1e-8), -10, 10)
    np.testing.assert_allclose(normalization.normalize(stats, jnp.asarray(x)), expected, rtol=1e-4)
    assert float(normalization.normalize(stats, jnp.asarray(x))[1, 2]) == 10.0
    # clip 0: not clipped (Brax's trainers).
    unclipped = (x - seen.mean(0)) / np.sqrt(seen.var(0) + 1e-8)
    np.testing.assert_allclose(
        normalization.normalize(stats, jnp.asarray(x), 0.0), unclipped, rtol=1e-4
    )


def test_fresh_statistics_leave_observations_unchanged():
    x = jnp.array([[1.0, -3.0]])
    np.testing.assert_allclose(normalization.normalize(normalization.init(2), x), x, rtol=1e-6)
