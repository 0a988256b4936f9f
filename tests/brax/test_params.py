"""jaxrl's PPO parameters and statistics in Brax's layouts: the trees Brax's own
`make_ppo_networks` builds, Brax's own `make_inference_fn` and value network giving jaxrl's
greedy actions and values on them, and the round trip back."""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.training.acme import running_statistics
from brax.training.agents.ppo import networks as ppo_networks

from jaxrl import normalization
from jaxrl.agents import ppo
from jaxrl.brax import params as brax_params
from jaxrl.errors import ConfigError

OBS, ACT = 5, 3
CONFIG = ppo.PPOConfig(activation="swish", kernel_init="lecun_uniform")


def _trained_like():
    """A PPO state with moved parameters and statistics of observations far from N(0, 1)."""
    state = ppo.make(CONFIG).init(jax.random.PRNGKey(0), OBS, ACT)
    params = jax.tree.map(
        lambda x: x + 0.3 * jax.random.normal(jax.random.PRNGKey(1), x.shape), state.params
    )
    obs = 3.0 * jax.random.normal(jax.random.PRNGKey(2), (300, OBS)) + jnp.arange(OBS)
    stats = normalization.update(normalization.init(OBS), obs)
    return state.replace(params=params), stats


def _brax_networks():
    # Brax's defaults: swish, LeCun-uniform kernels, the tanh-normal head of 2 x ACT outputs
    return ppo_networks.make_ppo_networks(
        OBS, ACT, preprocess_observations_fn=running_statistics.normalize, activation=nn.swish
    )


def test_the_trees_are_those_brax_builds():
    state, stats = _trained_like()
    normalizer, policy, value = brax_params.ppo_to_brax(state.params, stats)
    nets = _brax_networks()
    key = jax.random.PRNGKey(3)
    shapes = functools.partial(jax.tree.map, lambda x: x.shape)
    assert shapes(policy) == shapes(nets.policy_network.init(key))
    assert shapes(value) == shapes(nets.value_network.init(key))
    fresh = running_statistics.init_state(jnp.zeros(OBS))
    assert jax.tree.structure(normalizer) == jax.tree.structure(fresh)
    assert int(normalizer.count) == 300


def test_brax_s_inference_and_value_networks_give_jaxrl_s_actions_and_values():
    state, stats = _trained_like()
    triple = brax_params.ppo_to_brax(state.params, stats)
    nets = _brax_networks()
    obs = 3.0 * jax.random.normal(jax.random.PRNGKey(4), (16, OBS)) + jnp.arange(OBS)
    key = jax.random.PRNGKey(5)
    theirs, _ = ppo_networks.make_inference_fn(nets)(triple, deterministic=True)(obs, key)
    agent = ppo.make(CONFIG)
    normalized = normalization.normalize(stats, obs, clip=0.0)
    ours = agent.act(state, normalized, key, 0.0)
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-5)
    their_value = nets.value_network.apply(triple[0], triple[2], obs)
    ours_value = ppo.networks(CONFIG).value(state.params, normalized)
    np.testing.assert_allclose(their_value, ours_value, rtol=1e-5, atol=1e-5)


def test_the_round_trip_gives_back_the_parameters_and_statistics():
    state, stats = _trained_like()
    params, back = brax_params.ppo_from_brax(brax_params.ppo_to_brax(state.params, stats))
    assert jax.tree.structure(params) == jax.tree.structure(state.params)
    jax.tree.map(np.testing.assert_array_equal, params, state.params)
    np.testing.assert_allclose(back.mean, stats.mean)
    np.testing.assert_allclose(back.var, stats.var, rtol=1e-6)
    assert float(back.count) == 300.0
    fresh = brax_params.normalizer_from_brax(running_statistics.init_state(jnp.zeros(OBS)))
    np.testing.assert_array_equal(fresh.var, np.ones(OBS))  # jaxrl's fresh statistics


def test_a_network_without_a_brax_counterpart_is_refused_by_its_layer():
    state, stats = _trained_like()
    odd = jax.tree.map(lambda x: x, state.params)
    odd["value"]["params"]["LayerNorm_0"] = {"scale": jnp.ones(3)}
    with pytest.raises(ConfigError, match="'LayerNorm_0'"):
        brax_params.ppo_to_brax(odd, stats)


@pytest.mark.parametrize("mode,until", [("welford", None), ("ema", None), ("ema", 150)])
def test_the_statistics_learn_as_brax_s_in_either_mode(mode, until):
    """Brax's `running_statistics.update` in its "welford" and "ema" modes (with
    `until_count`, which only "ema" applies) against jaxrl's `normalization.update` over the
    same batches: the same moments and the same normalised observations with `std_eps`; and
    Brax's update goes on from the state jaxrl's checkpoint holds (`normalizer_to_brax` in
    that mode) as from its own."""
    std_eps = 0.01
    batches = [
        2.0 * jax.random.normal(jax.random.PRNGKey(i), (n, OBS)) + jnp.arange(OBS) * (i + 1)
        for i, n in enumerate((64, 40, 100, 64))
    ]
    theirs = running_statistics.init_state(jnp.zeros(OBS), std_eps=std_eps, mode=mode)
    ours = normalization.init(OBS)
    applied = until if mode == "ema" else None  # Brax ignores until_count when Welford's
    for batch in batches:
        theirs = running_statistics.update(theirs, batch, until_count=until)
        ours = normalization.update(ours, batch, applied or 0)
        assert int(theirs.count) == int(ours.count)
        mirrored = brax_params.normalizer_to_brax(ours, std_eps, mode)
        np.testing.assert_allclose(mirrored.mean, theirs.mean, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mirrored.summed_variance, theirs.summed_variance, rtol=1e-4)
        np.testing.assert_allclose(mirrored.std, theirs.std, rtol=1e-5)
        obs = batches[0][:8]
        np.testing.assert_allclose(
            normalization.normalize(ours, obs, clip=0.0, std_eps=std_eps),
            running_statistics.normalize(obs, theirs),
            rtol=1e-4,
            atol=1e-5,
        )
    if until is not None and mode == "ema":  # frozen after the first two batches' 104
        seen = jnp.concatenate(batches[:2])
        np.testing.assert_allclose(ours.mean, seen.mean(0), rtol=1e-5, atol=1e-5)
    # A Brax run resuming from jaxrl's checkpoint learns on as from its own state.
    more = jax.random.normal(jax.random.PRNGKey(9), (32, OBS))
    resumed = running_statistics.update(mirrored, more, until_count=until)
    own = running_statistics.update(theirs, more, until_count=until)
    np.testing.assert_allclose(resumed.mean, own.mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(resumed.std, own.std, rtol=1e-4)
    back = brax_params.normalizer_from_brax(mirrored)
    np.testing.assert_allclose(back.var, ours.var, rtol=1e-5)
    assert float(back.count) == float(ours.count)
