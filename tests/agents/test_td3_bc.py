"""TD3+BC's actor step against a numpy reference: -lambda Q1(s, pi(s)) + mean((pi(s) - a)^2),
lambda = alpha / mean|Q1| held constant in the gradient (the paper's normalisation), the
first Adam step along that gradient; its critics are TD3's (test_td3_update_reference.py)."""

import jax
import numpy as np

from jaxrl.agents import td3_bc
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
CONFIG = td3_bc.TD3BCConfig(actor_hidden=(8,), critic_hidden=(8, 8), bc_alpha=2.5, tau=0.1)


def _numpy_loss(critic_params, batch, alpha, scale=None):
    """The actor's loss as a function of its parameters; `scale` fixes lambda (the paper's
    gradient treats it as a constant), else it is recomputed from the parameters."""

    def loss(actor_params):
        policy_action = ref.deterministic_actor(actor_params, batch.obs)
        q = ref.q_ensemble(critic_params, batch.obs, policy_action)[0, :, 0]  # the first critic
        lam = alpha / np.abs(q).mean() if scale is None else scale
        return -lam * q.mean() + ((policy_action - batch.action) ** 2).mean()

    return loss


def test_actor_step_matches_numpy_reference():
    agent = td3_bc.make(CONFIG)
    k_init, k_batch = jax.random.split(jax.random.PRNGKey(0))
    state = agent.init(k_init, OBS, ACT)
    batch = ref.mixed_batch(k_batch, B, OBS, ACT)
    new, metrics = jax.jit(agent.update)(state, batch, jax.random.PRNGKey(7))
    n, b = ref.to64(new), ref.to64(batch)
    # The actor steps against the critics this update stepped (TD3's order), at step 0.
    critic = n.critic.params
    policy_action = ref.deterministic_actor(ref.to64(state.actor.params), b.obs)
    q = ref.q_ensemble(critic, b.obs, policy_action)[0, :, 0]
    scale = CONFIG.bc_alpha / np.abs(q).mean()
    loss = _numpy_loss(critic, b, CONFIG.bc_alpha, scale)
    np.testing.assert_allclose(metrics["actor_loss"], loss(ref.to64(state.actor.params)), 1e-4)
    grad = ref.finite_difference_grad(loss, ref.to64(state.actor.params))
    ref.assert_adam_first_step(state.actor.params, new.actor.params, grad, CONFIG.actor_lr)
    # Adam's first moment pins the gradient itself. lambda differentiated too would be
    # another: with every Q of one sign, mean(Q) / mean|Q| is constant, the Q term's gradient 0.
    ref.assert_adam_first_moment(new.actor.opt_state, grad)
    moving = ref.finite_difference_grad(
        _numpy_loss(critic, b, CONFIG.bc_alpha), ref.to64(state.actor.params)
    )
    gap = max(float(np.abs(a - c).max()) for a, c in zip(jax.tree.leaves(grad),
              jax.tree.leaves(moving), strict=True))  # fmt: skip
    assert gap > 0.1 * max(float(np.abs(a).max()) for a in jax.tree.leaves(grad))


def test_alpha_zero_is_behaviour_cloning():
    """alpha 0: the actor's loss is the mean squared error to the dataset's actions alone."""
    config = td3_bc.TD3BCConfig(actor_hidden=(8,), critic_hidden=(8,), bc_alpha=0.0)
    agent = td3_bc.make(config)
    state = agent.init(jax.random.PRNGKey(0), OBS, ACT)
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    _, metrics = jax.jit(agent.update)(state, batch, jax.random.PRNGKey(7))
    policy_action = ref.deterministic_actor(ref.to64(state.actor.params), ref.to64(batch.obs))
    bc = ((policy_action - ref.to64(batch.action)) ** 2).mean()
    np.testing.assert_allclose(metrics["actor_loss"], bc, rtol=1e-4)
