"""FastSAC's whole `update` against an independent numpy reference: target critics that differ
from the online ones, terminated rows, truncated rows and n-step discounts in one batch, a C51
support that part of the targets fall outside of. Written from FastSAC's mechanisms (the public
implementation's `_update_main` and `_update_pol`, docs/ALGORITHMS.md), not from jaxrl's code:
- each critic learns the projection of ITS OWN target critic's next distribution (no clipped
  double Q), shifted by r - discount alpha log pi(a'|s'), a' ~ pi(s');
- LayerNorm and SiLU in the critics and the policy, the log-std squashed into [-5, 0];
- the temperature steps at every update on -alpha E[log pi(a'|s') + H], the log-probs of the
  bootstrap actions, before the actor;
- every policy_delay updates the actor steps on E[alpha' log pi(a|s) - mean_i Q_i(s, a)], with
  the updated critics and the updated temperature alpha';
- AdamW (beta2 0.95) for all three, and the Polyak target update at every update.
Checked: losses and metrics, each learner's AdamW step (from finite-difference gradients of
the numpy losses) and its first and second moments, the Polyak step, the policy delay."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import fast_sac, sac_family
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
KEY = jax.random.PRNGKey(7)  # the update's key
SEED = 4  # the starting state: each target critic the lower one on some rows, in every case

# Tiny nets; a narrow support that some shifted atoms fall outside of; a temperature step
# large enough (alpha_lr 0.05) that an actor on the old temperature gives other numbers; a
# nonzero target entropy (FastSAC's is 0), so that its sign shows; weight decays that move
# parameters visibly.
BASE = fast_sac.FastSACConfig(
    actor_hidden=(8,),
    critic_hidden=(8, 8),
    num_atoms=11,
    v_min=-2.0,
    v_max=2.0,
    init_alpha=0.5,
    alpha_lr=0.05,
    critic_lr=1e-2,
    reward_scale=1.5,
    target_entropy_scale=0.5,
    weight_decay=0.1,
)
CASES = {
    "fast_sac": BASE,
    # Asymmetric actor-critic: the critics read observations of their own (another size).
    "fast_sac_asymmetric": BASE,
    # FastSAC's own defaults but the network sizes and the support: target entropy 0, alpha
    # 0.001, tau 0.125, lr 3e-4, weight decays 0.001 and 0.01.
    "fast_sac_defaults": fast_sac.FastSACConfig(
        actor_hidden=(8,), critic_hidden=(8, 8), num_atoms=11, v_min=-2.0, v_max=2.0
    ),
    # SAC's option, kept by FastSAC: the actor reads the critics this step started from.
    "fast_sac_old_critics": dataclasses.replace(BASE, actor_uses_updated_critic=False),
}


@functools.cache
def _agent(name):
    """One case's jitted update and starting state: target critics perturbed away from the
    online ones, and the policy's zero head perturbed too (from exactly zero, its hidden
    layers would get no gradient and its mean no dependence on the state)."""
    config = CASES[name]
    agent = fast_sac.make(config)
    k_init, k_target, k_actor = jax.random.split(jax.random.PRNGKey(SEED), 3)
    asymmetric = name.endswith("_asymmetric")
    state = agent.init(k_init, OBS, ACT, ref.CRITIC_OBS if asymmetric else None)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_target, 0.3),
        actor=state.actor.replace(params=ref.perturbed(state.actor.params, k_actor, 0.5)),
    )
    return jax.jit(agent.update), state


def _batch(name):
    """`ref.mixed_batch` (rows 0 and 4 terminated; 1-, 2- and 3-step discounts) with rows 1
    and 5 marked truncated: they keep terminated = 0, so they bootstrap."""
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    truncated = np.zeros(B, np.float32)
    truncated[[1, 5]] = 1.0
    batch = batch._replace(truncated=jnp.asarray(truncated))
    if name.endswith("_asymmetric"):
        batch = ref.with_critic_obs(batch, jax.random.PRNGKey(2))
    return batch


def _setup(name, step=0):
    update, state = _agent(name)
    return update, state.replace(step=jnp.asarray(step, state.step.dtype)), _batch(name)


def _critics(params, obs, action):
    """The critics' logits [E, B, K]: LayerNorm before each SiLU."""
    return ref.q_ensemble(params, obs, action, True, activation="swish")


def _policy(params, obs):
    """The policy's (mean, log_std): LayerNorm and SiLU, log-std squashed into [-5, 0]."""
    return ref.gaussian_actor(params, obs, activation="swish", layer_norm_=True, log_std_max=0.0)


def _reference(config, state, batch, key):
    """Everything the update should compute, in float64 numpy."""
    p, b = ref.to64(state), ref.to64(batch)
    critic_obs, next_critic_obs = ref.critic_inputs(b)  # the policy reads b.obs / b.next_obs
    keys = sac_family.UpdateKeys(*jax.random.split(key, 8))  # independent of sac_family.update_keys
    atoms = np.linspace(config.v_min, config.v_max, config.num_atoms)
    alpha = np.exp(p.log_alpha.params)
    target_entropy = -config.target_entropy_scale * ACT

    # The bootstrap action a' ~ pi(s') (keys.next_action) and each target critic's own distribution.
    mean, log_std = _policy(p.actor.params, b.next_obs)
    u = mean + np.exp(log_std) * ref.normal(keys.next_action, mean.shape)
    next_log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
    next_probs = ref.softmax(_critics(p.target_critic_params, next_critic_obs, np.tanh(u)))
    bootstrap = b.discount * (1.0 - b.terminated)  # truncated rows bootstrap
    reward = config.reward_scale * b.reward - bootstrap * alpha * next_log_prob
    targets = np.stack(
        [ref.categorical_projection(q, reward, bootstrap, atoms) for q in next_probs]
    )

    def critic_loss(params, targets=targets):
        logits = _critics(params, critic_obs, b.action)
        return -(targets * ref.log_softmax(logits)).sum(-1).mean(-1).sum()

    def expected(logits):
        return (ref.softmax(logits) * atoms).sum(-1)

    # The temperature's loss and its AdamW step (alpha form: its gradient carries alpha).
    gap = next_log_prob + target_entropy
    alpha_grad = -alpha * gap.mean()
    log_alpha = p.log_alpha.params * (1.0 - config.alpha_lr * config.alpha_weight_decay)
    new_alpha = np.exp(log_alpha - config.alpha_lr * np.sign(alpha_grad))

    eps = ref.normal(keys.policy_action, (B, ACT))

    def actor_terms(params, critic_params, alpha_=new_alpha):
        mean, log_std = _policy(params, b.obs)
        u = mean + np.exp(log_std) * eps
        log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
        q = expected(_critics(critic_params, critic_obs, np.tanh(u))).mean(0)
        return (alpha_ * log_prob - q).mean(), log_prob

    # What clipped double Q would have learned from: the lower target critic's projection.
    lowest = (next_probs * atoms).sum(-1).argmin(0)
    clipped = ref.categorical_projection(next_probs[lowest, np.arange(B)], reward, bootstrap, atoms)
    return dict(
        targets=targets,
        clipped_target=clipped,
        lowest=lowest,
        shifted=reward[:, None] + bootstrap[:, None] * atoms[None],
        critic_loss=critic_loss,
        q=lambda params: expected(_critics(params, critic_obs, b.action)),
        alpha=alpha,
        alpha_loss=(alpha * -gap).mean(),
        alpha_grad=alpha_grad,
        new_alpha=new_alpha,
        next_log_prob=next_log_prob,
        actor_terms=actor_terms,
    )


def _check_discriminating(config, r):
    """The batch and parameters exercise what the reference distinguishes."""
    # Each target critic is the lower one on some rows: clipped double Q would differ.
    assert set(r["lowest"]) == {0, 1}
    assert np.abs(r["targets"] - r["clipped_target"][None]).max() > 1e-2
    # Some shifted atoms fall outside the support, some inside; mass is conserved.
    outside = (r["shifted"] < config.v_min) | (r["shifted"] > config.v_max)
    assert outside.any() and not outside.all()
    np.testing.assert_allclose(r["targets"].sum(-1), 1.0, rtol=1e-12)


def _check_critic_and_temperature(config, state, new, metrics, r):
    p, n = ref.to64(state), ref.to64(new)
    np.testing.assert_allclose(metrics["critic_loss"], r["critic_loss"](p.critic.params), rtol=1e-4)
    np.testing.assert_allclose(metrics["q_mean"], r["q"](p.critic.params).mean(), rtol=1e-4)
    grad = ref.finite_difference_grad(r["critic_loss"], p.critic.params)
    ref.assert_adam_first_step(
        state.critic.params, new.critic.params, grad, config.critic_lr, config.weight_decay
    )
    ref.assert_adam_first_moment(new.critic.opt_state, grad)
    ref.assert_adam_second_moment(new.critic.opt_state, grad, config.adam_b2)
    # A step on the loss against these targets lowers it: the targets are the update's.
    assert r["critic_loss"](n.critic.params) < r["critic_loss"](p.critic.params)

    # The temperature: from the bootstrap actions' log-probs, AdamW with its own decay.
    np.testing.assert_allclose(metrics["alpha"], r["alpha"], rtol=1e-6)
    np.testing.assert_allclose(metrics["alpha_loss"], r["alpha_loss"], rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(np.exp(n.log_alpha.params), r["new_alpha"], rtol=1e-4)
    ref.assert_adam_first_moment(new.log_alpha.opt_state, np.asarray(r["alpha_grad"]))
    ref.assert_adam_second_moment(new.log_alpha.opt_state, np.asarray(r["alpha_grad"]), 0.95)

    # The targets move by tau towards the updated critics.
    ref.assert_polyak(new.target_critic_params, p.target_critic_params, n.critic.params, config.tau)


@pytest.mark.parametrize("name", list(CASES))
def test_update_matches_numpy_reference(name):
    config = CASES[name]
    update, state, batch = _setup(name)
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    _check_discriminating(config, r)
    p, n = ref.to64(state), ref.to64(new)
    _check_critic_and_temperature(config, state, new, metrics, r)

    # The actor (step 0: the delay lets it through), against the updated critics' mean value
    # (or the critics the step started from) and the updated temperature.
    critics = n.critic.params if config.actor_uses_updated_critic else p.critic.params
    actor_loss, log_prob = r["actor_terms"](p.actor.params, critics)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["entropy"], -log_prob.mean(), rtol=1e-4)
    if name != "fast_sac_defaults":  # alpha moves by 0.03% there: too little to tell apart
        old_alpha_loss, _ = r["actor_terms"](p.actor.params, critics, r["alpha"])
        assert abs(old_alpha_loss - actor_loss) > 1e-2 * abs(actor_loss)
        other = p.critic.params if config.actor_uses_updated_critic else n.critic.params
        assert abs(r["actor_terms"](p.actor.params, other)[0] - actor_loss) > 1e-3
    grad = ref.finite_difference_grad(lambda a: r["actor_terms"](a, critics)[0], p.actor.params)
    ref.assert_adam_first_step(
        state.actor.params, new.actor.params, grad, config.actor_lr, config.weight_decay
    )
    ref.assert_adam_second_moment(new.actor.opt_state, grad, config.adam_b2)
    assert int(new.step) == 1


def test_temperature_steps_while_the_actor_waits_for_the_policy_delay():
    """Step 1 of policy delay 4: the critics and the temperature step as at step 0, the actor
    holds, and the reported actor loss is the held actor's against the updated critics and
    temperature."""
    config = CASES["fast_sac"]
    assert config.policy_delay == 4
    update, state, batch = _setup("fast_sac", step=1)
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)
    jax.tree.map(np.testing.assert_array_equal, new.actor.params, state.actor.params)
    _check_critic_and_temperature(config, state, new, metrics, r)
    actor_loss, _ = r["actor_terms"](p.actor.params, n.critic.params)
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-6)
    assert int(new.step) == 2
