"""DSAC-T's whole `update` (SAC with critic="gaussian") against an independent numpy reference:
target critics that differ from the online ones, terminated rows, truncated rows and n-step
discounts in one batch; the twin targets from the target critic with the lower mean, the
clipped return sample, the running mean of each critic's std (first batch and EMA), the
critic's surrogate loss and its Adam step (from finite-difference gradients of a numpy
function whose stop-gradient coefficients are frozen), the actor and temperature against the
updated critics' means, the policy delay and the Polyak target update."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import dsac_t, sac_family
from tests import reference as ref

OBS, ACT, B = 3, 2, 16

# Tiny nets; learning rates large enough that one step moves the critics visibly (so an actor
# trained against the old critics gives other numbers), std_tau large enough that the EMA's
# two sides differ clearly.
BASE = dict(
    actor_hidden=(8,),
    critic_hidden=(8,),
    actor_lr=1e-3,
    critic_lr=1e-2,
    alpha_lr=1e-3,
    init_alpha=0.5,
    reward_scale=1.5,
    tau=0.1,
    std_tau=0.3,
)
# Update key 59: its noise draw (keys.head_target) has 3.42 on row 13, which bootstraps, so a
# missing clip of the noise to [-3, 3] changes y_z there (the test asserts it matters).
KEY = 59
CASES = {
    # Step 0: the running std is set from the batch, whatever the state held.
    "first_step": dict(config=dsac_t.DSACTConfig(**BASE), step=0, mean_std=(5.0, 7.0)),
    # Step 2 (due: delay 2): EMA from a preset running std; a small td_bound makes the clip of
    # y_z around Q active on some entries and inactive on others.
    "later_step": dict(
        config=dsac_t.DSACTConfig(**BASE, td_bound=0.5), step=2, mean_std=(0.3, 1.6)
    ),
    # Asymmetric actor-critic: the Gaussian critics read observations of their own.
    "later_step_asymmetric": dict(
        config=dsac_t.DSACTConfig(**BASE, td_bound=0.5),
        step=2,
        mean_std=(0.3, 1.6),
        asymmetric=True,
    ),
}


@functools.cache
def _agent(config, asymmetric=False):
    """The agent, its jitted update, a fresh state with perturbed target critics and the
    batch (with `asymmetric`, the critics' own observations in it), built once per config
    (compiling is most of these tests' time)."""
    agent = dsac_t.make(config)
    # Seed 1: the perturbed target critics' means cross (each is the lower on some rows).
    k_init, k_target, k_batch = jax.random.split(jax.random.PRNGKey(1), 3)
    state = agent.init(k_init, OBS, ACT, ref.CRITIC_OBS if asymmetric else None)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_target, 0.2)
    )
    batch = ref.mixed_batch(k_batch, B, OBS, ACT)
    if asymmetric:
        batch = ref.with_critic_obs(batch, jax.random.PRNGKey(2))
    return jax.jit(agent.update), state, batch


def _setup(config, step, mean_std, asymmetric=False):
    update, state, batch = _agent(config, asymmetric)
    state = state.replace(step=state.step + step, head_state=jnp.asarray(mean_std, jnp.float32))
    return update, state, batch


def _reference(config, state, batch, key):
    """Everything the update should compute, in float64 numpy, as a dict; the critic's
    surrogate (coefficients frozen at the current parameters) and the actor's loss as numpy
    functions of the parameters."""
    p, b = ref.to64(state), ref.to64(batch)
    critic_obs, next_critic_obs = ref.critic_inputs(b)  # the actor reads b.obs / b.next_obs
    # split(key, 7): the update's first 7 keys are its (sac_family.update_keys); DSAC-T reads
    # no 8th.
    keys = sac_family.UpdateKeys(*jax.random.split(key, 7), temperature_action=None)
    alpha = np.exp(p.log_alpha.params)
    target_entropy = -config.target_entropy_scale * ACT
    cols = np.arange(B)

    # Next action from the online actor (keys.next_action); the target critic of lower mean.
    mean, log_std = ref.gaussian_actor(p.actor.params, b.next_obs)
    u = mean + np.exp(log_std) * ref.normal(keys.next_action, mean.shape)
    next_log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
    next_mean, next_std = ref.gaussian_q_ensemble(
        p.target_critic_params, next_critic_obs, np.tanh(u)
    )
    lower = np.where(next_mean[0] <= next_mean[1], 0, 1)
    q_next, std_next = next_mean[lower, cols], next_std[lower, cols]
    raw_noise = ref.normal(keys.head_target, (B,))
    noise = np.clip(raw_noise, -3.0, 3.0)
    reward = config.reward_scale * b.reward
    bootstrap = b.discount * (1.0 - b.terminated)
    y_q = reward + bootstrap * (q_next - alpha * next_log_prob)
    y_z = reward + bootstrap * (q_next + noise * std_next - alpha * next_log_prob)

    # Running std: the batch mean at step 0, else the EMA with rate std_tau.
    q, std = ref.gaussian_q_ensemble(p.critic.params, critic_obs, b.action)
    batch_std = std.mean(-1)
    if int(state.step) == 0:
        mean_std = batch_std
    else:
        mean_std = (1.0 - config.std_tau) * p.head_state + config.std_tau * batch_std

    # DSAC-T's gradient coefficients (no gradient flows through them).
    bound = config.td_bound * mean_std[:, None]
    y_z_clipped = q + np.clip(y_z[None] - q, -bound, bound)
    bias = config.std_bias
    mean_coef = (y_q[None] - q) / (std**2 + bias)
    std_coef = ((q - y_z_clipped) ** 2 - std**2) / (std**3 + bias)
    omega = mean_std**2 + bias

    def critic_surrogate(params):
        q_, std_ = ref.gaussian_q_ensemble(params, critic_obs, b.action)
        return float((omega * (-mean_coef * q_ - std_coef * std_).mean(-1)).sum())

    eps = ref.normal(keys.policy_action, (B, ACT))

    def actor_terms(params, critic_params):
        mean, log_std = ref.gaussian_actor(params, b.obs)
        u = mean + np.exp(log_std) * eps
        log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
        q_pi, _ = ref.gaussian_q_ensemble(critic_params, critic_obs, np.tanh(u))
        return (alpha * log_prob - q_pi.min(0)).mean(), log_prob

    def alpha_loss(log_prob):
        return -(p.log_alpha.params * (log_prob + target_entropy)).mean()

    return dict(
        y_q=y_q,
        y_z=y_z,
        raw_noise=raw_noise,
        lower=lower,
        bootstrap=bootstrap,
        q=q,
        bound=bound,
        mean_std=mean_std,
        critic_surrogate=critic_surrogate,
        actor_terms=actor_terms,
        alpha_loss=alpha_loss,
        target_entropy=target_entropy,
        alpha=alpha,
    )


def _check_critic(config, state, new, metrics, r):
    p = ref.to64(state)
    # The running std of each critic, and its mean reported as q_std.
    np.testing.assert_allclose(new.head_state, r["mean_std"], rtol=1e-5)
    np.testing.assert_allclose(metrics["q_std"], r["mean_std"].mean(), rtol=1e-5)
    # The surrogate's value and the mean heads' mean.
    np.testing.assert_allclose(
        metrics["critic_loss"], r["critic_surrogate"](p.critic.params), rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(metrics["q_mean"], r["q"].mean(), rtol=1e-4, atol=1e-6)
    # One Adam step along the DSAC-T gradient.
    grad = ref.finite_difference_grad(r["critic_surrogate"], p.critic.params)
    ref.assert_adam_first_step(state.critic.params, new.critic.params, grad, config.critic_lr)
    # Targets move by tau towards the updated critics.
    expected = jax.tree.map(
        lambda t, o: (1 - config.tau) * t + config.tau * o,
        p.target_critic_params,
        ref.to64(new.critic.params),
    )
    ref.assert_trees_close(new.target_critic_params, expected, rtol=1e-5, atol=1e-6)


def _check_discriminating(r, case):
    """The batch and key exercise every branch the reference distinguishes."""
    # Both target critics supply targets somewhere.
    assert 0 < r["lower"].sum() < B
    # Some noise draw beyond 3 on a bootstrapping row reaches an unclipped y_z, so the noise
    # clip changes the loss.
    rows = np.where((np.abs(r["raw_noise"]) > 3.0) & (r["bootstrap"] > 0))[0]
    assert rows.size > 0
    inside = np.abs(r["y_z"][None, rows] - r["q"][:, rows]) < r["bound"][:, :1]
    if case == "first_step":
        assert inside.any()
    # The later case clips y_z around Q on some entries and not on others.
    clipped = np.abs(r["y_z"][None] - r["q"]) > r["bound"]
    if case.startswith("later_step"):
        assert 0 < clipped.sum() < clipped.size


@pytest.mark.parametrize("case", list(CASES))
def test_update_matches_numpy_reference(case):
    c = CASES[case]
    config = c["config"]
    update, state, batch = _setup(config, c["step"], c["mean_std"], c.get("asymmetric", False))
    key = jax.random.PRNGKey(KEY)
    new, metrics = update(state, batch, key)
    r = _reference(config, state, batch, key)
    _check_discriminating(r, case)
    p, n = ref.to64(state), ref.to64(new)

    _check_critic(config, state, new, metrics, r)

    # Actor and temperature, against the updated critics' mean heads (the step is due).
    actor_loss, log_prob = r["actor_terms"](p.actor.params, n.critic.params)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(metrics["entropy"], -log_prob.mean(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        metrics["alpha_loss"], r["alpha_loss"](log_prob), rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(metrics["alpha"], r["alpha"], rtol=1e-6)
    actor_grad = ref.finite_difference_grad(
        lambda a: r["actor_terms"](a, n.critic.params)[0], p.actor.params
    )
    ref.assert_adam_first_step(state.actor.params, new.actor.params, actor_grad, config.actor_lr)
    alpha_grad = -(log_prob + r["target_entropy"]).mean()
    np.testing.assert_allclose(
        n.log_alpha.params - p.log_alpha.params, -config.alpha_lr * np.sign(alpha_grad), rtol=1e-3
    )
    assert int(new.step) == c["step"] + 1
    # The mean heads learn towards y_q: the step lowers their squared error.
    critic_obs = ref.critic_inputs(ref.to64(batch))[0]
    q_new, _ = ref.gaussian_q_ensemble(n.critic.params, critic_obs, ref.to64(batch.action))
    assert ((q_new - r["y_q"]) ** 2).sum() < ((r["q"] - r["y_q"]) ** 2).sum()


def test_actor_and_temperature_wait_for_the_policy_delay():
    """Step 1 with delay 2: the critic learns (EMA of the std from a preset running mean), the
    actor and temperature hold, and the reported actor loss is the held actor's against the
    updated critics."""
    config = CASES["later_step"]["config"]
    assert config.policy_delay == 2
    update, state, batch = _setup(config, 1, (0.3, 1.6))
    key = jax.random.PRNGKey(KEY)
    new, metrics = update(state, batch, key)
    r = _reference(config, state, batch, key)
    p, n = ref.to64(state), ref.to64(new)
    jax.tree.map(np.testing.assert_array_equal, new.actor.params, state.actor.params)
    np.testing.assert_array_equal(new.log_alpha.params, state.log_alpha.params)
    _check_critic(config, state, new, metrics, r)
    actor_loss, log_prob = r["actor_terms"](p.actor.params, n.critic.params)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        metrics["alpha_loss"], r["alpha_loss"](log_prob), rtol=1e-4, atol=1e-6
    )
    assert int(new.step) == 2
