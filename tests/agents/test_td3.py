import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import heads
from jaxrl.agents import td3
from jaxrl.types import Batch


def test_smoothed_target_action_is_clipped_twice():
    key = jax.random.PRNGKey(0)
    next_action = jnp.array([[0.9, -0.2, 0.0]] * 4000)
    smoothed = td3.smoothed_target_action(key, next_action, noise=10.0, noise_clip=0.5)
    # Huge noise is clipped to +-0.5 around the action, then into [-1, 1].
    np.testing.assert_allclose(smoothed.min(0), [0.4, -0.7, -0.5], atol=1e-6)
    np.testing.assert_allclose(smoothed.max(0), [1.0, 0.3, 0.5], atol=1e-6)
    chex.assert_trees_all_close(td3.smoothed_target_action(key, next_action, 0.0, 0.5), next_action)


def test_critic_target_by_hand():
    # TD3's clipped double Q: the scalar head's target with no bonus.
    target = heads.Scalar().target(
        key=None,
        next_out=jnp.array([[3.0, 7.0], [5.0, 1.0]]),  # min over critics: [3, 1]
        reward=jnp.array([1.0, 2.0]),
        terminated=jnp.array([0.0, 1.0]),
        discount=jnp.array([0.9, 0.9]),
        bonus=jnp.zeros(2),
        hp={},
    )
    chex.assert_trees_all_close(target, jnp.array([1.0 + 0.9 * 3.0, 2.0]))


def test_actor_loss_follows_the_first_critic():
    assert float(td3.actor_loss(jnp.array([[1.0, 3.0], [-9.0, -9.0]]))) == pytest.approx(-2.0)


def _batch(key, size=16):
    k1, k2, k3 = jax.random.split(key, 3)
    return Batch(
        obs=jax.random.normal(k1, (size, 3)),
        action=jax.random.uniform(k2, (size, 2), minval=-1, maxval=1),
        reward=jax.random.normal(k3, (size,)),
        next_obs=jax.random.normal(k1, (size, 3)),
        terminated=jnp.zeros(size),
        discount=jnp.full(size, 0.99),
    )


def test_policy_delay_updates_actor_and_targets_every_second_step():
    config = td3.TD3Config(actor_hidden=(8,), critic_hidden=(8,), policy_delay=2)
    agent = td3.make(config)
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    update = jax.jit(agent.update)
    batch = _batch(jax.random.PRNGKey(1))
    after_one, _ = update(state, batch, jax.random.PRNGKey(2))  # step 0: actor update is due
    after_two, _ = update(after_one, batch, jax.random.PRNGKey(3))  # step 1: critic only
    changed = lambda a, b: not all(jax.tree.leaves(jax.tree.map(jnp.array_equal, a, b)))
    assert changed(state.actor.params, after_one.actor.params)
    assert changed(state.target_critic_params, after_one.target_critic_params)
    assert not changed(after_one.actor.params, after_two.actor.params)
    assert not changed(after_one.target_actor_params, after_two.target_actor_params)
    assert not changed(after_one.target_critic_params, after_two.target_critic_params)
    assert changed(after_one.critic.params, after_two.critic.params)


def test_act_noise_scales_per_env_and_zero_is_deterministic():
    agent = td3.make(td3.TD3Config(actor_hidden=(8,), critic_hidden=(8,), exploration_noise=0.3))
    state = agent.init(jax.random.PRNGKey(0), 3, 1)
    obs = jnp.zeros((3000, 3))
    greedy = agent.act(state, obs, jax.random.PRNGKey(1), 0.0)
    scales = jnp.repeat(jnp.array([0.0, 1.0, 2.0]), 1000)
    noisy = agent.act(state, obs, jax.random.PRNGKey(1), scales)
    chex.assert_shape(noisy, (3000, 1))
    deviation = np.asarray(noisy - greedy)[:, 0].reshape(3, 1000)
    assert np.all(deviation[0] == 0.0)
    assert abs(deviation[1].std() - 0.3) < 0.03  # std = exploration_noise * scale (before clip)
    assert deviation[2].std() > deviation[1].std()
