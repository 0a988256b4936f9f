"""PPO's whole `update` against an independent numpy reference, on a hand-built Rollout [T=5,
N=3] with terminated rows, truncated rows (their next_obs the true final observation, not the
next row's) and plain ones, and actions drawn by an older policy (ratios != 1): values, GAE by a
plain loop, value targets, reward scaling, the minibatch permutation, the clipped surrogate
with per-minibatch normalised advantages, the value loss, the entropy estimate, approx_kl and
clip_fraction, the Adam step of every parameter (from finite-difference gradients of the total
numpy loss), the reported gradient norm under clipping, the linear learning-rate schedule and
Brax's softplus std head."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from optax import ScaleByAdamState

from jaxrl.agents import ppo
from jaxrl.types import Rollout
from tests import reference as ref

T, N, OBS, ACT = 5, 3, 3, 2
GAMMA = 0.9
# Episode ends per [t, n]: "T" terminated, "R" truncated (time limit), "." neither. Every env
# has an ending before its last step, so the GAE recursion has something to stop at.
ENDS = [
    [".", "R", "."],
    ["T", ".", "."],
    [".", ".", "R"],
    ["R", "T", "."],
    [".", ".", "T"],
]

BASE = dict(
    actor_hidden=(8,),
    critic_hidden=(8,),
    learning_rate=1e-3,
    num_epochs=1,
    num_minibatches=1,
    clip_epsilon=0.2,
    value_coef=0.7,
    entropy_coef=0.1,
    max_grad_norm=0.0,
    gae_lambda=0.8,
    reward_scale=2.0,
)
CASES = {
    # Squashed log-std head, constant learning rate, no gradient clipping.
    "constant": dict(config=ppo.PPOConfig(**BASE, softplus_std=False), progress=0.4),
    # Brax's softplus std head and a linearly decaying learning rate: lr (1 - progress).
    "linear_softplus": dict(
        config=ppo.PPOConfig(**{**BASE, "lr_schedule": "linear"}, softplus_std=True),
        progress=0.25,
    ),
    # Global-norm clipping active (the norm is far above 0.01): the first Adam step is the
    # same, and the reported grad_norm is the unclipped gradient's.
    # Brax's advantages: per unroll of 2 steps (the recursion restarts at t = 2 and 4,
    # bootstrapping from V there) and r + gamma v_{t+1} - V(s_t) with v the lambda-return;
    # Brax's swish networks.
    "brax_advantage_swish": dict(
        config=ppo.PPOConfig(
            **BASE,
            softplus_std=True,
            gae_horizon=2,
            advantage_estimator="vtrace",
            activation="swish",
        ),
        progress=0.4,
    ),
    "clipped": dict(
        config=ppo.PPOConfig(**{**BASE, "max_grad_norm": 0.01}, softplus_std=True),
        progress=0.4,
    ),
    # Asymmetric actor-critic: the value function reads observations of its own (another
    # size), in GAE and in the minibatch's value loss alike.
    "asymmetric": dict(
        config=ppo.PPOConfig(**BASE, softplus_std=True), progress=0.4, asymmetric=True
    ),
}


@functools.cache
def _agent(config, asymmetric=False):
    """The agent, its jitted update, a fresh state and a rollout whose actions and log-probs
    come from an older (perturbed) policy, built once per config; with `asymmetric`, the
    value function's own observations in the rollout."""
    agent = ppo.make(config)
    k_init, k_old, k_obs, k_final, k_reward, k_act = jax.random.split(jax.random.PRNGKey(0), 6)
    state = agent.init(k_init, OBS, ACT, ref.CRITIC_OBS if asymmetric else None)

    ends = np.array(ENDS)
    terminated = (ends == "T").astype(np.float32)
    done = (ends != ".").astype(np.float32)
    # obs[t + 1] follows obs[t] inside an episode; after an ending the env resets, so the next
    # row's obs is a fresh one and next_obs[t] is the final observation, a different one.
    states = np.asarray(jax.random.normal(k_obs, (T + 1, N, OBS)), np.float32)
    finals = np.asarray(jax.random.normal(k_final, (T, N, OBS)) + 1.0, np.float32)
    obs = states[:T]
    next_obs = np.where(done[..., None] > 0, finals, states[1:])

    old = state.replace(
        params={**state.params, "policy": ref.perturbed(state.params["policy"], k_old, 0.3)}
    )
    _, extras = agent.explore(old, jnp.asarray(obs), k_act)
    rollout = Rollout(
        obs=jnp.asarray(obs),
        reward=jax.random.normal(k_reward, (T, N)),
        next_obs=jnp.asarray(next_obs),
        terminated=jnp.asarray(terminated),
        done=jnp.asarray(done),
        discount=jnp.full((T, N), GAMMA, jnp.float32),
        extras=extras,
        progress=jnp.asarray(0.0, jnp.float32),
    )
    if asymmetric:  # the same episode structure: a fresh critic observation after an ending
        k_critic, k_critic_final = jax.random.split(jax.random.PRNGKey(9))
        c_states = np.asarray(jax.random.normal(k_critic, (T + 1, N, ref.CRITIC_OBS)), np.float32)
        c_finals = jax.random.normal(k_critic_final, (T, N, ref.CRITIC_OBS)) - 1.0
        c_next = np.where(done[..., None] > 0, np.asarray(c_finals, np.float32), c_states[1:])
        rollout = rollout._replace(
            critic_obs=jnp.asarray(c_states[:T]), next_critic_obs=jnp.asarray(c_next)
        )
    return jax.jit(agent.update), state, rollout


def _setup(config, progress, asymmetric=False):
    update, state, rollout = _agent(config, asymmetric)
    return update, state, rollout._replace(progress=jnp.asarray(progress, jnp.float32))


def _gae(config, params, rollout):
    """Values, advantages and value targets [T, N] by a plain loop over t."""
    r = ref.to64(rollout)
    value_obs, next_value_obs = ref.critic_inputs(r)  # the policy reads r.obs
    value = ref.value_mlp(params["value"], value_obs, config.activation)
    next_value = ref.value_mlp(params["value"], next_value_obs, config.activation)
    reward = config.reward_scale * r.reward
    horizon, lam = config.gae_horizon, config.gae_lambda
    advantage, target = np.zeros((T, N)), np.zeros((T, N))
    running = np.zeros(N)
    for t in reversed(range(T)):
        # A terminated step does not bootstrap; a truncated one does, from its final obs.
        delta = reward[t] + r.discount[t] * (1.0 - r.terminated[t]) * next_value[t] - value[t]
        # Nothing flows back across any episode end, nor across an unroll's end.
        last = r.done[t] + (horizon > 0 and (t + 1) % horizon == 0) > 0
        running = delta + r.discount[t] * lam * (1.0 - last) * running
        advantage[t] = running
    if config.advantage_estimator == "vtrace":
        # Brax's formula, from lambda-returns G (G_t = r_t + gamma ((1 - lam) V(s'_t) +
        # lam G_{t+1}) inside an unroll and episode, r_t + gamma V(s'_t) at its end):
        # A_t = r_t + gamma G_{t+1} - V(s_t), with V(s'_t) in place of G_{t+1} at an end.
        alive = 1.0 - r.terminated
        g_next = np.zeros(N)
        for t in reversed(range(T)):
            # An episode's, an unroll's or the rollout's last step bootstraps from V(s'_t).
            last = r.done[t] + (horizon > 0 and (t + 1) % horizon == 0) + (t == T - 1) > 0
            follow = np.where(last, next_value[t], g_next)
            blend = np.where(last, next_value[t], (1 - lam) * next_value[t] + lam * g_next)
            advantage[t] = reward[t] + r.discount[t] * alive[t] * follow - value[t]
            target[t] = reward[t] + r.discount[t] * alive[t] * blend
            g_next = target[t]
        return value, advantage, target
    return value, advantage, advantage + value


def _minibatches(config, key):
    """[(rows, entropy noise key)] in the update's order: per epoch key (split of the update
    key), split into a permutation key and a step key; the step key split per minibatch."""
    out = []
    samples = T * N
    for epoch_key in jax.random.split(key, config.num_epochs):
        perm_key, step_key = jax.random.split(epoch_key)
        perm = np.asarray(jax.random.permutation(perm_key, samples))
        step_keys = jax.random.split(step_key, config.num_minibatches)
        size = samples // config.num_minibatches
        for m in range(config.num_minibatches):
            out.append((perm[m * size : (m + 1) * size], step_keys[m]))
    return out


def _loss_fn(config, params, rollout):
    """The numpy loss of one minibatch: loss(params, rows, step_key) -> (total, pieces)."""
    r = ref.to64(rollout)
    _, advantage, target = _gae(config, params, rollout)
    flat = lambda x: x.reshape((T * N,) + x.shape[2:])
    obs, raw = flat(r.obs), flat(r.extras["raw_action"])
    value_obs = flat(ref.critic_inputs(r)[0])
    old_log_prob, advantage, target = flat(r.extras["log_prob"]), flat(advantage), flat(target)
    eps_clip = config.clip_epsilon

    def loss(params, rows, step_key):
        mean, log_std = ref.gaussian_actor(
            params["policy"], obs[rows], config.softplus_std, config.activation
        )
        log_ratio = ref.tanh_gaussian_log_prob(raw[rows], mean, log_std) - old_log_prob[rows]
        ratio = np.exp(log_ratio)
        a = advantage[rows]
        if config.normalize_advantages:  # per minibatch
            a = (a - a.mean()) / (a.std() + 1e-8)
        policy_loss = -np.minimum(ratio * a, np.clip(ratio, 1 - eps_clip, 1 + eps_clip) * a).mean()
        value = ref.value_mlp(params["value"], value_obs[rows], config.activation)
        value_loss = 0.5 * ((value - target[rows]) ** 2).mean()
        eps = ref.normal(step_key, (rows.size, ACT))
        entropy = ref.tanh_gaussian_entropy_estimate(eps, mean, log_std).mean()
        total = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
        pieces = {
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
            "clip_fraction": (np.abs(ratio - 1.0) > eps_clip).mean(),
        }
        return total, pieces

    return loss


def _check_pieces(metrics, pieces):
    for name, value in pieces.items():
        np.testing.assert_allclose(metrics[name], value, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", list(CASES))
def test_update_matches_numpy_reference(case):
    config, progress = CASES[case]["config"], CASES[case]["progress"]
    update, state, rollout = _setup(config, progress, CASES[case].get("asymmetric", False))
    key = jax.random.PRNGKey(3)
    new, metrics = update(state, rollout, key)

    params = ref.to64(state.params)
    value, advantage, target = _gae(config, params, rollout)
    ((rows, step_key),) = _minibatches(config, key)
    assert sorted(rows) == list(range(T * N))
    loss = _loss_fn(config, params, rollout)
    total, pieces = loss(params, rows, step_key)
    # The rollout exercises both sides of the ratio clip.
    assert 0.0 < pieces["clip_fraction"] < 1.0
    _check_pieces(metrics, pieces)
    np.testing.assert_allclose(metrics["value_mean"], value.mean(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics["gradient_steps"], 1.0)

    grad = ref.finite_difference_grad(lambda q: loss(q, rows, step_key)[0], params)
    grad_norm = np.sqrt(sum((g**2).sum() for g in jax.tree.leaves(grad)))
    np.testing.assert_allclose(metrics["grad_norm"], grad_norm, rtol=1e-4)
    clip = 1.0
    if config.max_grad_norm > 0:
        assert grad_norm > 10 * config.max_grad_norm  # clipping is active
        clip = config.max_grad_norm / grad_norm
    # Adam's first moment after its first step is (1 - b1) times the gradient it was given: the
    # reference gradient, scaled to max_grad_norm where clipping is on. (Adam's first step,
    # -lr sign(g), cannot show a clip, which scales every entry alike.)
    (adam,) = [
        s
        for s in jax.tree.leaves(new.opt_state, is_leaf=lambda x: isinstance(x, ScaleByAdamState))
        if isinstance(s, ScaleByAdamState)
    ]
    scale = 0.1 * clip * max(float(np.abs(g).max()) for g in jax.tree.leaves(grad))
    for mu, g in zip(jax.tree.leaves(ref.to64(adam.mu)), jax.tree.leaves(grad), strict=True):
        np.testing.assert_allclose(mu, 0.1 * clip * g, rtol=1e-3, atol=1e-4 * scale)
    lr = config.learning_rate * ((1.0 - progress) if config.lr_schedule == "linear" else 1.0)
    # Every parameter, policy and value, takes Adam's first step along the reference gradient.
    ref.assert_adam_first_step(state.params, new.params, grad, lr)
    for part in ("policy", "value"):
        new_leaves = jax.tree.leaves(ref.to64(new.params[part]))
        old_leaves = jax.tree.leaves(params[part])
        moved = max(np.abs(a - b).max() for a, b in zip(new_leaves, old_leaves, strict=True))
        np.testing.assert_allclose(moved, lr, rtol=1e-3)
    assert int(new.step) == int(state.step) + 1


def test_epochs_of_minibatches_follow_the_update_keys():
    """num_epochs=2, num_minibatches=3: six gradient steps over fresh permutations that cover
    every sample once per epoch. At the end of a linear schedule (progress 1) the learning rate
    is 0, so every step sees the initial parameters and each reported metric is the average of
    the six minibatches' reference values (advantages normalised per minibatch, each
    minibatch's entropy draw from its own step key)."""
    config = dataclasses.replace(
        CASES["linear_softplus"]["config"], num_epochs=2, num_minibatches=3
    )
    update, state, rollout = _setup(config, 1.0)
    key = jax.random.PRNGKey(5)
    new, metrics = update(state, rollout, key)
    np.testing.assert_allclose(metrics["gradient_steps"], 6.0)
    ref.assert_trees_close(new.params, state.params, rtol=0, atol=0)

    batches = _minibatches(config, key)
    assert len(batches) == 6
    for epoch, epoch_key in enumerate(jax.random.split(key, config.num_epochs)):
        perm_key, _ = jax.random.split(epoch_key)
        indices = np.asarray(ppo.minibatch_indices(perm_key, T * N, config.num_minibatches))
        assert indices.shape == (3, 5)
        np.testing.assert_array_equal(np.sort(indices.ravel()), np.arange(T * N))
        np.testing.assert_array_equal(
            indices, np.stack([rows for rows, _ in batches[3 * epoch : 3 * epoch + 3]])
        )

    params = ref.to64(state.params)
    loss = _loss_fn(config, params, rollout)
    pieces = [loss(params, rows, step_key)[1] for rows, step_key in batches]
    _check_pieces(metrics, {name: np.mean([p[name] for p in pieces]) for name in pieces[0]})
    norms = []
    for rows, step_key in batches:
        grad = ref.finite_difference_grad(lambda q, r=rows, k=step_key: loss(q, r, k)[0], params)
        norms.append(np.sqrt(sum((g**2).sum() for g in jax.tree.leaves(grad))))
    np.testing.assert_allclose(metrics["grad_norm"], np.mean(norms), rtol=1e-4)
