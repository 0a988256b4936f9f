"""DSAC-T: Gaussian distributional twin critics and their three refinements, by hand."""

import chex
import jax
import jax.numpy as jnp
import pytest

from jaxrl import heads
from jaxrl.agents import dsac_t
from jaxrl.networks import QEnsemble
from jaxrl.types import random_batch


def test_twin_targets_come_from_the_critic_with_the_lower_mean():
    y_q, y_z = heads.gaussian_targets(
        reward=jnp.array([1.0, 0.0]),
        bootstrap=jnp.array([0.9, 0.5]),
        next_mean=jnp.array([[1.0, 5.0], [2.0, 4.0]]),  # [E=2, B=2]: lower mean is 0, then 1
        next_std=jnp.array([[0.1, 0.2], [0.3, 0.4]]),
        bonus=-0.2 * jnp.array([0.5, 1.0]),  # SAC's -alpha log pi(a'|s')
        noise=jnp.array([1.0, -2.0]),
    )
    # y_q0 = 1 + 0.9 (1 - 0.1) = 1.81;        y_z0 = 1 + 0.9 (1 + 1 * 0.1 - 0.1) = 1.9
    # y_q1 = 0 + 0.5 (4 - 0.2) = 1.9;         y_z1 = 0.5 (4 - 2 * 0.4 - 0.2) = 1.5
    chex.assert_trees_all_close(y_q, jnp.array([1.81, 1.9]), atol=1e-6)
    chex.assert_trees_all_close(y_z, jnp.array([1.9, 1.5]), atol=1e-6)


def _loss_inputs():
    return dict(
        mean=jnp.array([[1.0, 2.0]]),  # [E=1, B=2]
        std=jnp.array([[0.5, 1.0]]),
        target_mean=jnp.array([1.5, 2.0]),
        target_sample=jnp.array([3.0, 10.0]),
        mean_std=jnp.array([1.0]),
    )


def test_critic_loss_value_and_gradients_by_hand():
    x = _loss_inputs()
    loss_fn = lambda m, s: heads.gaussian_critic_loss(
        m, s, x["target_mean"], x["target_sample"], x["mean_std"], td_bound=3.0, bias=0.1
    )
    # Clip: y_z within Q +- 3 * 1.0 -> [3.0 (unclipped), 2 + 3 = 5.0 (clipped from 10)].
    # mean coefs: (1.5 - 1) / (0.25 + 0.1) = 1.428571, (2 - 2) / 1.1 = 0
    # std coefs: ((1 - 3)^2 - 0.25) / (0.125 + 0.1) = 16.666667, ((2 - 5)^2 - 1) / 1.1 = 7.272727
    # omega = 1^2 + 0.1 = 1.1; loss = 1.1 * mean(-1.428571 - 16.666667 * 0.5, -7.272727 * 1)
    loss = loss_fn(x["mean"], x["std"])
    assert float(loss) == pytest.approx(1.1 * (-9.761905 - 7.272727) / 2, abs=1e-5)
    grad_mean, grad_std = jax.grad(loss_fn, argnums=(0, 1))(x["mean"], x["std"])
    # Expected value substitution: the mean's gradient uses y_q only, scaled by omega / B.
    chex.assert_trees_all_close(grad_mean, jnp.array([[-1.1 * 1.428571 / 2, 0.0]]), atol=1e-5)
    chex.assert_trees_all_close(
        grad_std, jnp.array([[-1.1 * 16.666667 / 2, -1.1 * 7.272727 / 2]]), atol=1e-5
    )


def test_critic_loss_gradient_is_scaled_gaussian_nll():
    # With a vanishing bias and no clipping, the gradient is omega times that of the Gaussian
    # negative log-likelihood: the mean fit to y_q, the std fit to the sample y_z.
    x = _loss_inputs()
    x["target_sample"] = jnp.array([2.0, 1.5])  # inside Q +- 3 * mean_std
    bias = 1e-9
    omega = x["mean_std"][0] ** 2 + bias

    def nll(m, s):
        mean_part = 0.5 * (x["target_mean"] - m) ** 2 / jax.lax.stop_gradient(s) ** 2
        std_part = jnp.log(s) + (x["target_sample"] - jax.lax.stop_gradient(m)) ** 2 / (2 * s**2)
        return omega * (mean_part + std_part).mean()

    loss_fn = lambda m, s: heads.gaussian_critic_loss(
        m, s, x["target_mean"], x["target_sample"], x["mean_std"], bias=bias
    )
    got = jax.grad(loss_fn, argnums=(0, 1))(x["mean"], x["std"])
    want = jax.grad(nll, argnums=(0, 1))(x["mean"], x["std"])
    chex.assert_trees_all_close(got, want, rtol=1e-5)


def test_variance_adjustment_scales_the_gradient_with_the_running_std():
    x = _loss_inputs()
    grads = []
    for mean_std in (1.0, 3.0):
        loss_fn = lambda m, ms=mean_std: heads.gaussian_critic_loss(
            m, x["std"], x["target_mean"], x["target_sample"], jnp.array([ms])
        )
        grads.append(jax.grad(loss_fn)(x["mean"]))
    # omega = mean_std^2 + 0.1: 1.1 -> 9.1.
    chex.assert_trees_all_close(grads[1], grads[0] * 9.1 / 1.1, rtol=1e-5)


def test_running_mean_std_starts_from_the_first_batch():
    std = jnp.array([[1.0, 3.0], [2.0, 2.0]])  # [E=2, B=2]: batch means 2, 2
    first = heads.update_mean_std(jnp.zeros(2), std, 0.1, jnp.array(True))
    chex.assert_trees_all_close(first, jnp.array([2.0, 2.0]))
    later = heads.update_mean_std(jnp.array([1.0, 4.0]), std, 0.1, jnp.array(False))
    chex.assert_trees_all_close(later, jnp.array([0.9 + 0.2, 3.6 + 0.2]))


def test_agent_state_shapes_and_first_update():
    config = dsac_t.DSACTConfig(actor_hidden=(8,), critic_hidden=(16, 16))
    agent = dsac_t.make(config)
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    # Two critics, each with a mean and a std output.
    out = state.critic.params["params"]["critics"]["MLP_0"]["Dense_2"]["kernel"]
    chex.assert_shape(out, (2, 16, 2))
    chex.assert_shape(state.head_state, (2,))
    batch = random_batch(jax.random.PRNGKey(1), size=16)
    new_state, metrics = jax.jit(agent.update)(state, batch, jax.random.PRNGKey(2))
    # The running std starts at the first batch's mean predicted std of each critic.
    critic = QEnsemble((16, 16), 2, outputs=2)
    raw = critic.apply(state.critic.params, batch.obs, batch.action)
    _, std = heads.gaussian_heads(raw)
    chex.assert_trees_all_close(new_state.head_state, std.mean(axis=-1), rtol=1e-5)
    assert float(metrics["q_std"]) == pytest.approx(float(std.mean()), rel=1e-5)
    chex.assert_tree_all_finite((new_state, metrics))
    # Policy delay 2: the actor moved on step 0, not on step 1.
    second, _ = jax.jit(agent.update)(new_state, batch, jax.random.PRNGKey(3))
    chex.assert_trees_all_equal(second.actor.params, new_state.actor.params)
    action = agent.act(state, batch.obs, jax.random.PRNGKey(4), 0.0)
    chex.assert_shape(action, (16, 2))


def test_gaussian_settings_are_checked():
    with pytest.raises(ValueError, match="td_bound"):
        dsac_t.DSACTConfig(td_bound=0.0)
