"""ReBRAC's whole update against a numpy reference: the critics' target with its penalty on
the target action's distance to the dataset's next action (absent where that action is
unknown), LayerNorm after each critic ReLU, the actor's loss over the critics' minimum with
its summed behaviour-cloning term and lambda = 1 / mean|Q| held constant; the first Adam step
and moment of both from finite-difference gradients of the numpy losses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import rebrac
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
KEY = jax.random.PRNGKey(7)
CONFIG = rebrac.ReBRACConfig(
    actor_hidden=(8,),
    critic_hidden=(8, 8),
    tau=0.1,
    actor_bc_coef=0.7,
    critic_bc_coef=0.4,
    target_noise=0.3,
    target_noise_clip=0.4,
)


def _batch():
    """`ref.mixed_batch` with next actions, unknown on rows 1 and 6 (row 1 a truncated row,
    which bootstraps: its penalty must be absent, not zeroed by the termination)."""
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    known = np.ones(B, np.float32)
    known[[1, 6]] = 0.0
    return batch._replace(
        next_action=jax.random.uniform(jax.random.PRNGKey(2), (B, ACT), minval=-1, maxval=1),
        next_action_known=jnp.asarray(known),
    )


def _state():
    agent = rebrac.make(CONFIG)
    k_init, k_critic, k_actor = jax.random.split(jax.random.PRNGKey(4), 3)
    state = agent.init(k_init, OBS, ACT)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_critic, 0.2),
        target_actor_params=ref.perturbed(state.target_actor_params, k_actor, 0.3),
    )
    return agent, state


def _q(params, obs, action):
    return ref.q_ensemble(params, obs, action, layer_norm_=True, after_relu=True)[..., 0]


def _reference(state, batch, key, critic_coef=CONFIG.critic_bc_coef):
    p, b = ref.to64(state), ref.to64(batch)
    noise = np.clip(
        CONFIG.target_noise * ref.normal(key, (B, ACT)),
        -CONFIG.target_noise_clip,
        CONFIG.target_noise_clip,
    )
    target_action = np.clip(
        ref.deterministic_actor(p.target_actor_params, b.next_obs) + noise, -1, 1
    )
    penalty = critic_coef * b.next_action_known * ((target_action - b.next_action) ** 2).sum(-1)
    next_value = _q(p.target_critic_params, b.next_obs, target_action).min(0) - penalty
    target = b.reward + b.discount * (1.0 - b.terminated) * next_value

    def critic_loss(params):
        return 0.5 * ((_q(params, b.obs, b.action) - target) ** 2).mean(-1).sum()

    def actor_loss(actor_params, critic_params, scale=None):
        action = ref.deterministic_actor(actor_params, b.obs)
        q = _q(critic_params, b.obs, action).min(0)
        lam = 1.0 / np.abs(q).mean() if scale is None else scale
        bc = ((action - b.action) ** 2).sum(-1)
        return (CONFIG.actor_bc_coef * bc - lam * q).mean()

    return critic_loss, actor_loss, penalty


def test_update_matches_numpy_reference():
    agent, state = _state()
    batch = _batch()
    new, metrics = jax.jit(agent.update)(state, batch, KEY)
    critic_loss, actor_loss, penalty = _reference(state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)
    # The penalty bites on the known rows that bootstrap, and is absent on the unknown ones.
    assert penalty[[1, 6]].tolist() == [0.0, 0.0] and (penalty[[2, 3, 5, 7]] > 0.01).all()

    np.testing.assert_allclose(metrics["critic_loss"], critic_loss(p.critic.params), rtol=1e-4)
    grad = ref.finite_difference_grad(critic_loss, p.critic.params)
    ref.assert_adam_first_step(state.critic.params, new.critic.params, grad, CONFIG.critic_lr)
    ref.assert_adam_first_moment(new.critic.opt_state, grad)

    # The actor (step 0) against the critics this update stepped; lambda held constant.
    obs = ref.to64(batch).obs
    q = _q(n.critic.params, obs, ref.deterministic_actor(p.actor.params, obs)).min(0)
    scale = 1.0 / np.abs(q).mean()
    loss = lambda a: actor_loss(a, n.critic.params, scale)  # noqa: E731
    np.testing.assert_allclose(metrics["actor_loss"], loss(p.actor.params), rtol=1e-4, atol=1e-6)
    actor_grad = ref.finite_difference_grad(loss, p.actor.params)
    ref.assert_adam_first_step(state.actor.params, new.actor.params, actor_grad, CONFIG.actor_lr)
    ref.assert_adam_first_moment(new.actor.opt_state, actor_grad)
    ref.assert_polyak(
        new.target_critic_params, state.target_critic_params, new.critic.params, CONFIG.tau
    )


def test_the_critic_penalty_is_what_separates_it_from_a_plain_target():
    """critic_bc_coef 0 (data in the state: a grid varies it) gives the TD3 target of the
    same networks; the penalty is the only difference, and it changes the loss."""
    agent, state = _state()
    batch = _batch()
    update = jax.jit(agent.update)
    _, with_penalty = update(state, batch, KEY)
    plain = state.replace(hp={**state.hp, "critic_bc_coef": jnp.zeros((), jnp.float32)})
    _, without = update(plain, batch, KEY)
    critic_loss, _, _ = _reference(state, batch, KEY, critic_coef=0.0)
    np.testing.assert_allclose(
        without["critic_loss"], critic_loss(ref.to64(state).critic.params), rtol=1e-4
    )
    assert abs(float(with_penalty["critic_loss"]) - float(without["critic_loss"])) > 1e-3


def test_a_batch_without_next_actions_is_refused_by_name():
    agent, state = _state()
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    with pytest.raises(ValueError, match="next_action"):
        agent.update(state, batch, KEY)
