"""SAC's whole `update` (and REDQ's and DroQ's, which are SAC with other defaults) against an
independent numpy reference: target critics that differ from the online ones, terminated rows,
truncated rows and n-step discounts in one batch; targets, losses, metrics, the Adam step of
every learner (from finite-difference gradients) and the Polyak target update."""

import jax
import numpy as np
import pytest

from jaxrl.agents import droq, redq, sac, sac_family
from tests import reference as ref

OBS, ACT, B = 3, 2, 8


def _setup(config, key=0, step=0, asymmetric=False):
    """Agent, state (targets perturbed away from the online critics) and a mixed batch; with
    `asymmetric`, critics of the critic's own observations (of another size) in the batch."""
    agent = sac.make(config)
    k_init, k_target, k_batch, k_critic = jax.random.split(jax.random.PRNGKey(key), 4)
    critic_size = ref.CRITIC_OBS if asymmetric else None
    state = agent.init(k_init, OBS, ACT, critic_size)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_target, 0.2),
        step=state.step + step,
    )
    batch = ref.mixed_batch(k_batch, B, OBS, ACT)
    return agent, state, ref.with_critic_obs(batch, k_critic) if asymmetric else batch


def _reference(config, state, batch, key):
    """(target y [B], the numpy critic loss, actor terms (loss, log-probs [B]) and temperature
    loss, the target entropy, and the log-probs the temperature reads given the actor's), all in
    float64."""
    p, b = ref.to64(state), ref.to64(batch)
    critic_obs, next_critic_obs = ref.critic_inputs(b)  # the actor reads b.obs / b.next_obs
    ln = config.critic_layer_norm, config.critic_norm_after_relu
    keys = sac_family.UpdateKeys(*jax.random.split(key, 8))  # independent of sac_family.update_keys
    alpha = np.exp(p.log_alpha.params)
    target_entropy = -config.target_entropy_scale * ACT

    mean, log_std = ref.gaussian_actor(p.actor.params, b.next_obs, config.softplus_std)
    u = mean + np.exp(log_std) * ref.normal(keys.next_action, mean.shape)
    next_log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
    next_q = ref.q_ensemble(p.target_critic_params, next_critic_obs, np.tanh(u), *ln)[..., 0]
    if config.num_target_critics is not None:
        subset = jax.random.choice(
            keys.target_subset, config.num_critics, (config.num_target_critics,), replace=False
        )
        full_min = next_q.min(0)
        next_q = next_q[np.asarray(subset)]
        assert (next_q.min(0) != full_min).any(), "the subset must matter for this batch"
    soft_value = next_q.min(0) - alpha * next_log_prob
    y = config.reward_scale * b.reward + b.discount * (1 - b.terminated) * soft_value

    def critic_loss(params):
        q = ref.q_ensemble(params, critic_obs, b.action, *ln)[..., 0]
        return 0.5 * ((q - y) ** 2).mean(-1).sum()

    eps = ref.normal(keys.policy_action, (B, ACT))

    def actor_terms(params, critic_params):
        mean, log_std = ref.gaussian_actor(params, b.obs, config.softplus_std)
        u = mean + np.exp(log_std) * eps
        log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
        q = ref.q_ensemble(critic_params, critic_obs, np.tanh(u), *ln)[..., 0]
        q = q.min(0) if config.actor_q == "min" else q.mean(0)
        return (alpha * log_prob - q).mean(), log_prob

    def temperature_log_prob(actor_log_prob):
        if config.temperature_draw == "actor":
            return actor_log_prob
        # Brax's: a second draw from the policy the step started from, with its own key.
        mean, log_std = ref.gaussian_actor(p.actor.params, b.obs, config.softplus_std)
        u = mean + np.exp(log_std) * ref.normal(keys.temperature_action, mean.shape)
        return ref.tanh_gaussian_log_prob(u, mean, log_std)

    def alpha_loss(log_prob):
        if config.temperature_loss == "alpha":  # Brax's: alpha E[-log pi - H]
            return (alpha * -(log_prob + target_entropy)).mean()
        return -(p.log_alpha.params * (log_prob + target_entropy)).mean()

    return y, critic_loss, actor_terms, alpha_loss, target_entropy, temperature_log_prob


CONFIGS = {
    "sac": sac.SACConfig(
        actor_hidden=(8,), critic_hidden=(8, 8), init_alpha=0.5, reward_scale=2.0, tau=0.1
    ),
    # Brax's policy head (std = softplus(raw) + 0.001), as the parity runs compare.
    "sac_softplus_std": sac.SACConfig(
        actor_hidden=(8,), critic_hidden=(8,), softplus_std=True, target_entropy_scale=0.5
    ),
    # All of Brax's SAC choices: softplus std, LayerNorm after the ReLU, and the actor updated
    # against the critics the step started from (not the ones it just updated).
    "sac_brax": sac.SACConfig(
        actor_hidden=(8,),
        critic_hidden=(8, 8),
        softplus_std=True,
        target_entropy_scale=0.5,
        critic_layer_norm=True,
        critic_norm_after_relu=True,
        actor_uses_updated_critic=False,
        critic_lr=0.01,  # a critic step large enough that reading the updated one shows
        init_alpha=0.5,
        tau=0.1,
        temperature_loss="alpha",  # its gradient carries a factor alpha (0.5 here)
        temperature_draw="own",  # the temperature's loss reads a second action draw
    ),
    # Asymmetric actor-critic: the critics read observations of their own (another size).
    "sac_asymmetric": sac.SACConfig(
        actor_hidden=(8,), critic_hidden=(8, 8), init_alpha=0.5, reward_scale=2.0, tau=0.1
    ),
    "redq": redq.REDQConfig(
        actor_hidden=(8,), critic_hidden=(8,), num_critics=4, policy_delay=1, tau=0.1
    ),
    # DroQ's dropout draws come from flax's own key folding, which a reference cannot replay:
    # the whole update is pinned here with dropout off (LayerNorm on, its delay kept), and
    # test_droq_update_uses_dropout below checks dropout is active in the update.
    "droq": droq.DroQConfig(actor_hidden=(8,), critic_hidden=(8,), critic_dropout=0.0, tau=0.1),
}


# Update keys: for REDQ, one whose random subset of 2 of the 4 target critics misses the row
# minimum on some rows (asserted below), so a target over all critics gives other numbers.
UPDATE_KEYS = {
    "sac": 7,
    "sac_softplus_std": 7,
    "sac_brax": 7,
    "sac_asymmetric": 7,
    "redq": 1,
    "droq": 7,
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_update_matches_numpy_reference(name):
    config = CONFIGS[name]
    agent, state, batch = _setup(config, asymmetric=name.endswith("asymmetric"))
    key = jax.random.PRNGKey(UPDATE_KEYS[name])
    new, metrics = jax.jit(agent.update)(state, batch, key)
    y, critic_loss, actor_terms, alpha_loss, target_entropy, temperature_log_prob = _reference(
        config, state, batch, key
    )
    p, n = ref.to64(state), ref.to64(new)

    # Critic: the loss on the update's own target, one Adam step along its gradient.
    np.testing.assert_allclose(metrics["critic_loss"], critic_loss(p.critic.params), rtol=1e-4)
    q = ref.q_ensemble(
        p.critic.params,
        ref.critic_inputs(ref.to64(batch))[0],
        ref.to64(batch.action),
        config.critic_layer_norm,
        config.critic_norm_after_relu,
    )
    np.testing.assert_allclose(metrics["q_mean"], q.mean(), rtol=1e-4, atol=1e-5)
    critic_grad = ref.finite_difference_grad(critic_loss, p.critic.params)
    ref.assert_adam_first_step(
        state.critic.params, new.critic.params, critic_grad, config.critic_lr
    )

    # Actor and temperature, against the updated critics (step 0: the delay lets them through),
    # or the ones the step started from (Brax's order).
    actor_critic = n.critic.params if config.actor_uses_updated_critic else p.critic.params
    actor_loss, actor_log_prob = actor_terms(p.actor.params, actor_critic)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    log_prob = temperature_log_prob(actor_log_prob)  # the metrics' entropy reads it too
    if config.temperature_draw == "own":
        assert np.abs(log_prob - actor_log_prob).min() > 1e-3  # the two draws differ
    np.testing.assert_allclose(metrics["entropy"], -log_prob.mean(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(metrics["alpha_loss"], alpha_loss(log_prob), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["alpha"], np.exp(p.log_alpha.params), rtol=1e-6)
    actor_grad = ref.finite_difference_grad(
        lambda a: actor_terms(a, actor_critic)[0], p.actor.params
    )
    ref.assert_adam_first_step(state.actor.params, new.actor.params, actor_grad, config.actor_lr)
    alpha_grad = -(log_prob + target_entropy).mean()
    if config.temperature_loss == "alpha":
        alpha_grad = alpha_grad * np.exp(p.log_alpha.params)
    np.testing.assert_allclose(
        n.log_alpha.params - p.log_alpha.params, -config.alpha_lr * np.sign(alpha_grad), rtol=1e-3
    )
    # Adam's first moment pins the gradient's scale, which tells the two forms apart.
    ref.assert_adam_first_moment(new.log_alpha.opt_state, np.asarray(alpha_grad))

    # Targets move by tau towards the updated critics.
    expected = jax.tree.map(
        lambda t, o: (1 - config.tau) * t + config.tau * o,
        p.target_critic_params,
        n.critic.params,
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        n.target_critic_params,
        expected,
    )
    assert int(new.step) == 1
    # The critic's target really is y: a step on (q - y)^2 lowers the loss measured against y.
    assert critic_loss(n.critic.params) < critic_loss(p.critic.params)
    assert np.isfinite(y).all()


@pytest.mark.parametrize("name", ["sac", "droq"])
def test_actor_and_temperature_wait_for_the_policy_delay(name):
    config = CONFIGS[name]
    if config.policy_delay == 1:
        config = sac.SACConfig(**{**vars(config), "policy_delay": 3})
    agent, state, batch = _setup(config, step=1)  # step 1: not a multiple of the delay
    key = jax.random.PRNGKey(7)
    new, metrics = jax.jit(agent.update)(state, batch, key)
    _, critic_loss, actor_terms, alpha_loss, *_ = _reference(config, state, batch, key)
    p, n = ref.to64(state), ref.to64(new)
    jax.tree.map(np.testing.assert_array_equal, new.actor.params, state.actor.params)
    np.testing.assert_array_equal(new.log_alpha.params, state.log_alpha.params)
    # The critic still learns, and the reported actor loss is the held actor's.
    np.testing.assert_allclose(metrics["critic_loss"], critic_loss(p.critic.params), rtol=1e-4)
    actor_loss, log_prob = actor_terms(p.actor.params, n.critic.params)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(metrics["alpha_loss"], alpha_loss(log_prob), rtol=1e-4, atol=1e-6)
    assert int(new.step) == 2


def test_droq_update_uses_dropout():
    """With dropout on, the critic loss differs from the dropout-free reference for the same
    parameters, batch and key; with it off, it matches (the test above)."""
    config = droq.DroQConfig(actor_hidden=(8,), critic_hidden=(8,), critic_dropout=0.3, tau=0.1)
    agent, state, batch = _setup(config)
    key = jax.random.PRNGKey(7)
    _, metrics = jax.jit(agent.update)(state, batch, key)
    _, critic_loss, *_ = _reference(config, state, batch, key)
    assert abs(float(metrics["critic_loss"]) - critic_loss(ref.to64(state).critic.params)) > 1e-3
    # Acting does not depend on the dropout key (the critic is not used to act).
    obs = batch.obs
    a1 = agent.act(state, obs, jax.random.PRNGKey(1), 0.0)
    a2 = agent.act(state, obs, jax.random.PRNGKey(2), 0.0)
    np.testing.assert_array_equal(a1, a2)
