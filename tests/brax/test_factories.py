"""`jaxrl.brax.factories`' network injection pieces against Brax's own distributions: the
`Distribution` PPO acts, explores and learns with, made of a Brax `ParametricDistribution`
(`brax_distribution`), gives Brax's own samples, modes and log-probabilities."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training import distribution

from jaxrl.brax import factories

ACT = 3


def _parameters(kind: str, key):
    """A batch of 5 rows of the distribution's parameters: tanh_normal's logits [5, 2A], or
    normal's (loc, scale) pair, as Brax's policy networks output them."""
    a, b = jax.random.normal(key, (2, 5, ACT))
    if kind == "tanh_normal":
        return distribution.NormalTanhDistribution(ACT), jnp.concatenate([a, b], -1)
    return distribution.NormalDistribution(ACT), (a, jax.nn.softplus(b) + 0.1)


@pytest.mark.parametrize("kind", ["tanh_normal", "normal"])
def test_brax_distribution_acts_and_explores_as_brax_s_own(kind):
    dist, out = _parameters(kind, jax.random.PRNGKey(0))
    ours = factories.brax_distribution(dist)
    key = jax.random.PRNGKey(1)
    close = np.testing.assert_allclose
    action, raw, log_prob = ours.explore(key, out)
    close(raw, dist.sample_no_postprocessing(out, key))
    close(action, dist.postprocess(raw))
    close(log_prob, dist.log_prob(out, raw))
    close(ours.log_prob(out, raw), dist.log_prob(out, raw))
    close(ours.entropy(key, out), dist.entropy(out, key))
    close(ours.act(key, out, 0), dist.mode(out))  # greedy: the mode, no draw
    close(ours.act(key, out, 1.0), dist.sample(out, key), rtol=1e-6)  # Brax's own sample
    # Half the noise: halfway between the mode and the sample, before the postprocessing.
    mode = dist.create_dist(out).mode()
    half = dist.postprocess(mode + 0.5 * (dist.sample_no_postprocessing(out, key) - mode))
    close(ours.act(key, out, 0.5), half, rtol=1e-6)
    per_row = ours.act(key, out, jnp.array([0.0, 1.0, 0.5, 0.0, 1.0]))
    close(per_row[1], dist.sample(out, key)[1], rtol=1e-6)
    close(per_row[0], dist.mode(out)[0], rtol=1e-6)
    if kind == "tanh_normal":
        assert np.all(np.abs(action) < 1.0)
    else:  # no squashing: Brax's 'normal' policy hands the env its raw sample
        np.testing.assert_array_equal(action, raw)
