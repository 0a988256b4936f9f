import math

import chex
import jax
import jax.numpy as jnp
import pytest

from jaxrl import heads
from jaxrl.agents import sac, sac_family
from jaxrl.types import random_batch


def soft_target(reward, terminated, next_q, next_log_prob, alpha, discount):
    """SAC's target as its update builds it: the scalar head's clipped double Q with the soft
    bonus -alpha log pi(a'|s')."""
    bonus = -alpha * next_log_prob
    return heads.Scalar().target(None, next_q, reward, terminated, discount, bonus, {})


def test_critic_target_by_hand():
    # Two transitions: the second terminated, so it must not bootstrap.
    target = soft_target(
        reward=jnp.array([1.0, 0.0]),
        terminated=jnp.array([0.0, 1.0]),
        next_q=jnp.array([[2.0, 3.0], [1.0, 5.0]]),  # [E=2, B=2]: min over critics = [1, 3]
        next_log_prob=jnp.array([0.5, -1.0]),
        alpha=0.2,
        discount=0.9,
    )
    # y0 = 1 + 0.9 * (1 - 0.2 * 0.5) = 1.81; y1 = 0 (terminated).
    chex.assert_trees_all_close(target, jnp.array([1.81, 0.0]), atol=1e-6)


def test_truncated_step_still_bootstraps():
    # A time-limit truncation is stored with terminated = 0: the target keeps gamma * V(s').
    target = soft_target(
        jnp.array([0.0]), jnp.array([0.0]), jnp.array([[4.0], [6.0]]), jnp.array([0.0]), 1.0, 0.5
    )
    chex.assert_trees_all_close(target, jnp.array([2.0]))


def test_critic_loss_by_hand():
    q = jnp.array([[1.0, 0.0], [2.0, 1.0]])  # [E, B]
    loss = heads.critic_mse(q, jnp.array([1.81, 0.0]))
    # 0.5 * (mean(0.81^2, 0) + mean(0.19^2, 1^2)) = 0.5 * (0.32805 + 0.51805)
    assert float(loss) == pytest.approx(0.42305, abs=1e-6)


def test_critic_loss_has_no_gradient_through_target():
    grad = jax.grad(lambda t: heads.critic_mse(jnp.ones((2, 3)), t))(jnp.zeros(3))
    chex.assert_trees_all_close(grad, jnp.zeros(3))


def test_actor_loss_by_hand():
    loss = sac_family.actor_loss(jnp.array([[1.0, 2.0], [3.0, 0.0]]), jnp.array([0.5, -1.0]), 0.2)
    # min over critics [1, 0]; mean(0.2*0.5 - 1, 0.2*-1 - 0) = mean(-0.9, -0.2)
    assert float(loss) == pytest.approx(-0.55, abs=1e-6)


def test_alpha_loss_by_hand_and_direction():
    log_alpha = jnp.log(0.2)
    log_prob, target_entropy = jnp.array([0.5, -1.0]), -1.0
    loss = sac_family.alpha_loss(log_alpha, log_prob, target_entropy)
    assert float(loss) == pytest.approx(1.25 * math.log(0.2), abs=1e-6)
    # Entropy 0.25 is above the target -1: the gradient step must lower alpha.
    assert float(jax.grad(sac_family.alpha_loss)(log_alpha, log_prob, target_entropy)) > 0


def test_init_act_update_shapes_and_determinism():
    agent = sac.make(sac.SACConfig(actor_hidden=(16,), critic_hidden=(16, 16), num_critics=3))
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    chex.assert_shape(
        state.critic.params["params"]["critics"]["MLP_0"]["Dense_0"]["kernel"], (3, 5, 16)
    )
    obs = jnp.zeros((7, 3))
    explore = agent.act(state, obs, jax.random.PRNGKey(1), 1.0)
    greedy = agent.act(state, obs, jax.random.PRNGKey(1), 0.0)
    chex.assert_shape([explore, greedy], (7, 2))
    assert float(jnp.abs(explore).max()) <= 1.0
    update = jax.jit(agent.update)
    batch = random_batch(jax.random.PRNGKey(2))
    new_state, metrics = update(state, batch, jax.random.PRNGKey(3))
    again, metrics_again = update(state, batch, jax.random.PRNGKey(3))
    chex.assert_trees_all_equal(metrics, metrics_again)
    assert int(new_state.step) == 1
    assert set(metrics) == {"critic_loss", "actor_loss", "alpha_loss", "alpha", "q_mean", "entropy"}
    # Targets moved by tau towards the updated critics, not onto them.
    tau = sac.SACConfig().tau
    expected = jax.tree.map(
        lambda t, o: (1 - tau) * t + tau * o, state.target_critic_params, new_state.critic.params
    )
    chex.assert_trees_all_close(new_state.target_critic_params, expected, atol=1e-6)


def test_repeated_updates_fit_a_fixed_batch():
    agent = sac.make(sac.SACConfig(actor_hidden=(32, 32), critic_hidden=(32, 32), critic_lr=1e-3))
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    batch = random_batch(jax.random.PRNGKey(1))._replace(terminated=jnp.ones(32))  # pure regression
    step = jax.jit(agent.update)
    _, first = step(state, batch, jax.random.PRNGKey(2))
    for i in range(300):
        state, metrics = step(state, batch, jax.random.PRNGKey(i))
    assert float(metrics["critic_loss"]) < 0.2 * float(first["critic_loss"])


@pytest.mark.parametrize(
    "bad",
    [{"num_critics": 0}, {"critic_lr": 0.0}, {"actor_hidden": ()}, {"tau": 0.0}],
)
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        sac.SACConfig(**bad)
