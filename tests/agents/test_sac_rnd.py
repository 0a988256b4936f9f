"""SAC-RND's update against a numpy reference, in both of its phases: the RND pretraining
(the predictor's loss over standardised states and actions, the inputs' and errors' running
moments, its first Adam step; SAC untouched) and SAC with the RND frozen (the actor's penalty
at its own actions, the temperature's alpha-form loss, the critics' target penalised at the new
actor's a' with the temperature the update started from, each learner's first Adam step from
finite-difference gradients, the Polyak targets)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import normalization
from jaxrl.agents import sac_family, sac_rnd
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
CONFIG = sac_rnd.SACRNDConfig(
    actor_hidden=(8,),
    critic_hidden=(8, 8),
    tau=0.1,
    init_alpha=0.5,
    actor_beta=0.7,
    critic_beta=0.4,
    rnd_hidden=8,
    rnd_embedding=4,
    rnd_pretrain_updates=3,
    reward_scale=2.0,
)


def numpy_predictor(params, s, a):
    p = params["params"]
    x = np.zeros((s.shape[0], CONFIG.rnd_hidden))
    for k in range(CONFIG.rnd_hidden):  # a^T W_k s + b_k, entry by entry
        x[:, k] = ((a[:, :, None] * p["bilinear_kernel"][k][None]) * s[:, None, :]).sum((1, 2))
    x = ref.relu(x + p["bilinear_bias"])
    return ref.mlp({f"Dense_{i}": p[f"Dense_{i}"] for i in range(3)}, x)


def numpy_target(params, s, a):
    p = params["params"]

    def dense(i, x):
        return x @ p[f"Dense_{i}"]["kernel"] + p[f"Dense_{i}"]["bias"]

    gamma, beta = np.split(dense(0, s), 2, axis=-1)
    x = ref.relu(dense(2, ref.relu(dense(1, a))))
    return dense(4, ref.relu(gamma * dense(3, x) + beta))


def numpy_errors(rnd, predictor_params, obs, action, fixed_action=None):
    """The RND's errors; `fixed_action`: the action the fixed network reads, held constant
    where a gradient is taken (the reference's stop_gradient on that network's output)."""
    s = (obs - rnd.obs_moments.mean) / np.sqrt(rnd.obs_moments.var + 1e-8)

    def scaled(action):
        return (action - rnd.action_moments.mean) / np.sqrt(rnd.action_moments.var + 1e-8)

    fixed = scaled(action if fixed_action is None else fixed_action)
    diff = numpy_predictor(predictor_params, s, scaled(action)) - numpy_target(
        rnd.target_params, s, fixed
    )
    return (diff**2).sum(-1)


def _setup():
    agent = sac_rnd.make(CONFIG)
    k_init, k_target, k_batch = jax.random.split(jax.random.PRNGKey(3), 3)
    state = agent.init(k_init, OBS, ACT)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_target, 0.2)
    )
    return agent, state, ref.mixed_batch(k_batch, B, OBS, ACT)


def test_moments_combine_batches_as_the_whole_rows_give():
    rows = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (30, 3)), np.float64) * 2 + 1
    moments = sac_rnd.fresh_moments((3,))
    for part in (rows[:7], rows[7:19], rows[19:]):
        moments = normalization.update(moments, jnp.asarray(part, jnp.float32))
    np.testing.assert_allclose(moments.mean, rows.mean(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(moments.var, rows.var(0), rtol=1e-3)
    np.testing.assert_allclose(moments.count, 30.0, rtol=1e-5)


def test_pretraining_trains_the_rnd_alone():
    agent, state, batch = _setup()
    new, metrics = jax.jit(agent.update)(state, batch, jax.random.PRNGKey(5))
    p, n, b = ref.to64(state), ref.to64(new), ref.to64(batch)
    # The input moments take the batch's rows (from the empty count 1e-4).
    np.testing.assert_allclose(n.rnd.obs_moments.mean, b.obs.mean(0), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(n.rnd.action_moments.var, b.action.var(0), rtol=1e-3)

    def loss(params):
        return numpy_errors(n.rnd, params, b.obs, b.action).mean()  # the new moments

    np.testing.assert_allclose(metrics["rnd_loss"], loss(p.rnd.predictor.params), rtol=1e-4)
    errors = numpy_errors(n.rnd, p.rnd.predictor.params, b.obs, b.action)
    np.testing.assert_allclose(n.rnd.error_moments.mean, errors.mean(), rtol=1e-3)
    np.testing.assert_allclose(n.rnd.error_moments.var, errors.var(), rtol=1e-3)
    grad = ref.finite_difference_grad(loss, p.rnd.predictor.params)
    ref.assert_adam_first_step(
        state.rnd.predictor.params, new.rnd.predictor.params, grad, CONFIG.rnd_lr
    )
    ref.assert_trees_close(new.rnd.target_params, state.rnd.target_params, 0, 0)
    for name in ("actor", "critic", "log_alpha", "target_critic_params"):
        ref.assert_trees_close(getattr(new, name), getattr(state, name), 0, 0)
    assert int(new.step) == 1


@pytest.mark.parametrize("beta_scale", [1.0, 0.0])
def test_the_sac_phase_matches_numpy_with_the_rnd_frozen(beta_scale):
    """After pretraining (step = rnd_pretrain_updates): the whole SAC update. beta 0 checks
    that the penalties are what moves the numbers (the same update without them)."""
    agent, state, batch = _setup()
    update = jax.jit(agent.update)
    for i in range(CONFIG.rnd_pretrain_updates):  # real moments and predictor
        state, _ = update(state, batch, jax.random.PRNGKey(10 + i))
    state = state.replace(
        hp={**state.hp, "actor_beta": state.hp["actor_beta"] * beta_scale,
            "critic_beta": state.hp["critic_beta"] * beta_scale}
    )  # fmt: skip
    key = jax.random.PRNGKey(7)
    new, metrics = update(state, batch, key)
    p, n, b = ref.to64(state), ref.to64(new), ref.to64(batch)
    keys = sac_family.UpdateKeys(*jax.random.split(key, 8))
    actor_beta, critic_beta = CONFIG.actor_beta * beta_scale, CONFIG.critic_beta * beta_scale
    std = np.sqrt(p.rnd.error_moments.var)

    def bonus(obs, action, fixed_action=None):
        return numpy_errors(p.rnd, p.rnd.predictor.params, obs, action, fixed_action) / std

    def policy(params, obs, key):
        mean, log_std = ref.gaussian_actor(params, obs, log_std_clip=True)
        u = mean + np.exp(log_std) * ref.normal(key, mean.shape)
        return np.tanh(u), ref.tanh_gaussian_log_prob(u, mean, log_std)

    def q(params, obs, action):
        return ref.q_ensemble(params, obs, action, layer_norm_=True, after_relu=True)[..., 0]

    alpha = np.exp(p.log_alpha.params)  # the temperature the update started from

    # 1. The actor, penalised at its own actions, against the critics it started from; the
    # bonus's gradient through the predictor alone (the fixed network's output a constant).
    start_action = policy(p.actor.params, b.obs, keys.policy_action)[0]

    def actor_loss(params):
        action, log_prob = policy(params, b.obs, keys.policy_action)
        penalty = actor_beta * bonus(b.obs, action, start_action)
        return (alpha * log_prob + penalty - q(p.critic.params, b.obs, action).min(0)).mean()

    np.testing.assert_allclose(metrics["actor_loss"], actor_loss(p.actor.params), rtol=1e-4)
    actor_grad = ref.finite_difference_grad(actor_loss, p.actor.params)
    ref.assert_adam_first_step(state.actor.params, new.actor.params, actor_grad, CONFIG.actor_lr)
    action, log_prob = policy(p.actor.params, b.obs, keys.policy_action)
    np.testing.assert_allclose(metrics["rnd_bonus_policy"], bonus(b.obs, action).mean(), 1e-4)

    # 2. The temperature: alpha (H - target), from the actor's log-probs.
    gap = log_prob - ACT  # log pi + target entropy (-ACT)
    np.testing.assert_allclose(metrics["alpha_loss"], (alpha * -gap).mean(), rtol=1e-4)
    np.testing.assert_allclose(
        n.log_alpha.params - p.log_alpha.params,
        -CONFIG.alpha_lr * np.sign((alpha * -gap).mean()),
        rtol=1e-3,
    )

    # 3. The critics: a' from the new actor, the old temperature, the penalty at (s', a').
    next_action, next_log_prob = policy(n.actor.params, b.next_obs, keys.next_action)
    soft = (
        q(p.target_critic_params, b.next_obs, next_action).min(0)
        - alpha * next_log_prob
        - critic_beta * bonus(b.next_obs, next_action)
    )
    y = CONFIG.reward_scale * b.reward + b.discount * (1 - b.terminated) * soft

    def critic_loss(params):
        return 0.5 * ((q(params, b.obs, b.action) - y) ** 2).mean(-1).sum()

    np.testing.assert_allclose(metrics["critic_loss"], critic_loss(p.critic.params), rtol=1e-4)
    critic_grad = ref.finite_difference_grad(critic_loss, p.critic.params)
    ref.assert_adam_first_step(
        state.critic.params, new.critic.params, critic_grad, CONFIG.critic_lr, residue_moves=True
    )
    ref.assert_polyak(new.target_critic_params, state.target_critic_params, new.critic.params, 0.1)
    ref.assert_trees_close(new.rnd, state.rnd, 0, 0)  # frozen
    assert int(new.step) == CONFIG.rnd_pretrain_updates + 1
