"""TD3's whole `update` and `act` (and PQL's and FastTD3's, which are TD3 with other configs)
against an independent numpy reference: target critics and target actors that differ from the
online ones, terminated rows, truncated rows and n-step discounts in one batch, target policy
smoothing with noise that the clip bites on; for FastTD3 a C51 critic whose projected targets
partly fall outside the support. Checked: the losses and metrics, the (W) Adam step and first
moment of critic and actor (from finite-difference gradients of the numpy losses), the Polyak
target updates and the policy delay."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import fast_td3, pql, td3
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
KEY = jax.random.PRNGKey(7)  # the update's key: it feeds the target-smoothing draw directly

CONFIGS = {
    "td3": td3.TD3Config(
        actor_hidden=(8,),
        critic_hidden=(8, 8),
        tau=0.1,
        reward_scale=2.0,
        target_noise=0.3,
        target_noise_clip=0.4,
        exploration_noise=0.3,
    ),
    # No target actor: the bootstrap action is the online actor's.
    "pql": pql.PQLConfig(
        actor_hidden=(8,), critic_hidden=(8,), target_noise=0.3, target_noise_clip=0.4
    ),
    # C51 twin critic on a narrow support (the batch's targets partly exceed it), AdamW.
    "fast_td3": fast_td3.FastTD3Config(
        actor_hidden=(8,),
        critic_hidden=(8,),
        num_atoms=11,
        v_min=-2.0,
        v_max=2.0,
        target_noise=0.3,
        target_noise_clip=0.4,
    ),
}
# PQL-D: PQL with FastTD3's categorical critic, its actor climbing the lower expected value.
CONFIGS["pql_d"] = pql.PQLConfig(
    actor_hidden=(8,),
    critic_hidden=(8,),
    critic="c51",
    actor_q="min",
    num_atoms=11,
    v_min=-2.0,
    v_max=2.0,
    target_noise=0.3,
    target_noise_clip=0.4,
)
# FastTD3's code: no target actor, the target critics moved at every critic update.
CONFIGS["fast_td3_code"] = dataclasses.replace(
    CONFIGS["fast_td3"], target_actor=False, critic_target_every_update=True
)
# Asymmetric actor-critic: TD3's settings, the critics reading observations of their own.
CONFIGS["td3_asymmetric"] = CONFIGS["td3"]


def _c51(config) -> bool:
    return isinstance(config, fast_td3.FastTD3Config) or getattr(config, "critic", "") == "c51"


@functools.cache
def _agent(name):
    """One config's agent, jitted update and act, and starting state (built once: compiling
    dominates the runtime)."""
    agent = td3.make(CONFIGS[name])
    # Seed 4: neither critic is the lower one on every row, for the target's min and the actor's.
    k_init, k_critic, k_actor = jax.random.split(jax.random.PRNGKey(4), 3)
    asymmetric = name.endswith("_asymmetric")
    state = agent.init(k_init, OBS, ACT, ref.CRITIC_OBS if asymmetric else None)
    state = state.replace(
        target_critic_params=ref.perturbed(state.target_critic_params, k_critic, 0.2),
        target_actor_params=ref.perturbed(state.target_actor_params, k_actor, 0.3),
    )
    return state, jax.jit(agent.update), jax.jit(agent.act)


def _setup(name, step=0):
    state, update, act = _agent(name)
    state = state.replace(step=jnp.asarray(step, state.step.dtype))
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    if name.endswith("_asymmetric"):
        batch = ref.with_critic_obs(batch, jax.random.PRNGKey(2))
    return update, act, state, batch


def _reference(config, state, batch, key):
    """The numpy critic loss and actor loss as functions of parameters (the critic's target
    held fixed, as a stop-gradient), the target itself and the smoothing noise."""
    p, b = ref.to64(state), ref.to64(batch)
    critic_obs, next_critic_obs = ref.critic_inputs(b)  # the actor reads b.obs / b.next_obs
    c51 = _c51(config)
    atoms = np.linspace(config.v_min, config.v_max, config.num_atoms) if c51 else np.zeros(1)

    # Target policy smoothing on the target actor's action (PQL: the online actor's).
    bootstrap_actor = p.target_actor_params if config.target_actor else p.actor.params
    raw_noise = config.target_noise * ref.normal(key, (B, ACT))
    noise = np.clip(raw_noise, -config.target_noise_clip, config.target_noise_clip)
    next_action = np.clip(ref.deterministic_actor(bootstrap_actor, b.next_obs) + noise, -1, 1)
    next_out = ref.q_ensemble(p.target_critic_params, next_critic_obs, next_action)  # [E,B,K|1]
    reward = config.reward_scale * b.reward
    bootstrap = b.discount * (1.0 - b.terminated)

    if c51:
        next_probs = ref.softmax(next_out)
        lowest = (next_probs * atoms).sum(-1).argmin(0)  # per sample, [B]
        target = ref.categorical_projection(
            next_probs[lowest, np.arange(B)], reward, bootstrap, atoms
        )

        def q_values(out):
            return (ref.softmax(out) * atoms).sum(-1)

        def critic_loss(params):
            logits = ref.q_ensemble(params, critic_obs, b.action)
            return -(target * ref.log_softmax(logits)).sum(-1).mean(-1).sum()

    else:
        target = reward + bootstrap * next_out[..., 0].min(0)

        def q_values(out):
            return out[..., 0]

        def critic_loss(params):
            q = ref.q_ensemble(params, critic_obs, b.action)[..., 0]
            return 0.5 * ((q - target) ** 2).mean(-1).sum()

    def actor_q(actor_params, critic_params):
        action = ref.deterministic_actor(actor_params, b.obs)
        return q_values(ref.q_ensemble(critic_params, critic_obs, action))  # [E, B]

    def actor_loss(actor_params, critic_params):
        q = actor_q(actor_params, critic_params)
        # FastTD3 (and PQL-D here) follow the lower expected value; TD3 the first critic.
        return -q.min(0).mean() if config.actor_q == "min" else -q[0].mean()

    def q_mean(params):
        return q_values(ref.q_ensemble(params, critic_obs, b.action)).mean()

    return {
        "critic_loss": critic_loss,
        "actor_loss": actor_loss,
        "q_mean": q_mean,
        "target": target,
        "raw_noise": raw_noise,
        "shifted": reward[:, None] + bootstrap[:, None] * atoms[None],
        "target_pick": q_values(next_out).argmin(0),  # the critic each target bootstraps from
        "actor_q": actor_q,
    }


def _check_critic_step(config, state, new, metrics, r):
    p = ref.to64(state)
    np.testing.assert_allclose(metrics["critic_loss"], r["critic_loss"](p.critic.params), rtol=1e-4)
    np.testing.assert_allclose(
        metrics["q_mean"], r["q_mean"](p.critic.params), rtol=1e-4, atol=1e-5
    )
    grad = ref.finite_difference_grad(r["critic_loss"], p.critic.params)
    ref.assert_adam_first_step(
        state.critic.params, new.critic.params, grad, config.critic_lr, config.weight_decay
    )
    ref.assert_adam_first_moment(new.critic.opt_state, grad)
    # A step on the loss measured against this target lowers it: the target is the update's.
    n = ref.to64(new)
    assert r["critic_loss"](n.critic.params) < r["critic_loss"](p.critic.params)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_update_matches_numpy_reference(name):
    config = CONFIGS[name]
    update, _, state, batch = _setup(name)
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)

    # The batch exercises the smoothing clip and (C51) the support's clip, both partly.
    clipped = np.abs(r["raw_noise"]) > config.target_noise_clip
    assert clipped.any() and not clipped.all()
    # Neither critic is the lower one everywhere: in the target and under the actor's action.
    assert set(r["target_pick"]) == {0, 1}
    assert set(r["actor_q"](p.actor.params, n.critic.params).argmin(0)) == {0, 1}
    if _c51(config):
        outside = (r["shifted"] < config.v_min) | (r["shifted"] > config.v_max)
        assert outside.any() and not outside.all()
        np.testing.assert_allclose(r["target"].sum(-1), 1.0, rtol=1e-12)

    _check_critic_step(config, state, new, metrics, r)

    # The actor, against the UPDATED critic (step 0: the delay lets it through).
    np.testing.assert_allclose(
        metrics["actor_loss"],
        r["actor_loss"](p.actor.params, n.critic.params),
        rtol=1e-4,
        atol=1e-6,
    )
    actor_grad = ref.finite_difference_grad(
        lambda a: r["actor_loss"](a, n.critic.params), p.actor.params
    )
    ref.assert_adam_first_step(
        state.actor.params, new.actor.params, actor_grad, config.actor_lr, config.weight_decay
    )
    ref.assert_adam_first_moment(new.actor.opt_state, actor_grad)

    # Targets move by tau towards the updated networks.
    ref.assert_polyak(
        new.target_critic_params, state.target_critic_params, new.critic.params, config.tau
    )
    if config.target_actor:
        ref.assert_polyak(
            new.target_actor_params, state.target_actor_params, new.actor.params, config.tau
        )
    assert int(new.step) == 1


@pytest.mark.parametrize("name", list(CONFIGS))
def test_actor_and_targets_wait_for_the_policy_delay(name):
    config = CONFIGS[name]
    assert config.policy_delay == 2
    update, _, state, batch = _setup(name, step=1)  # step 1: not a multiple of the delay
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)
    held = ["actor", "target_actor_params"]
    if config.critic_target_every_update:  # the target critics move at every critic update
        ref.assert_polyak(
            new.target_critic_params, state.target_critic_params, new.critic.params, config.tau
        )
    else:
        held.append("target_critic_params")
    for name in held:
        jax.tree.map(np.testing.assert_array_equal, getattr(new, name), getattr(state, name))
    # The critic still learns, and the reported actor loss is the held actor's on the new critic.
    _check_critic_step(config, state, new, metrics, r)
    np.testing.assert_allclose(
        metrics["actor_loss"],
        r["actor_loss"](p.actor.params, n.critic.params),
        rtol=1e-4,
        atol=1e-6,
    )
    assert int(new.step) == 2


@pytest.mark.parametrize("name", list(CONFIGS))
def test_act_adds_per_env_scaled_noise_and_clips(name):
    config = CONFIGS[name]
    _, act, state, _ = _setup(name)
    obs = jax.random.normal(jax.random.PRNGKey(3), (6, OBS))
    key = jax.random.PRNGKey(11)
    greedy = ref.deterministic_actor(ref.to64(state.actor.params), np.asarray(obs, np.float64))
    eps = ref.normal(key, (6, ACT))
    scales = np.array([0.0, 0.05, 0.3, 1.0, 2.0, 6.0], np.float32)
    expected = np.clip(greedy + config.exploration_noise * scales[:, None] * eps, -1, 1)
    assert (np.abs(expected) == 1).any()  # the clip bites on the large scales
    np.testing.assert_allclose(act(state, obs, key, jnp.asarray(scales)), expected, atol=1e-5)
    # A scalar scale scales every row; 0 is the deterministic action.
    expected = np.clip(greedy + config.exploration_noise * 0.5 * eps, -1, 1)
    np.testing.assert_allclose(act(state, obs, key, 0.5), expected, atol=1e-5)
    np.testing.assert_allclose(act(state, obs, key, 0.0), greedy, atol=1e-5)
