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
