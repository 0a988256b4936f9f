"""CrossQ's whole `update` against an independent numpy reference with Batch Renormalisation:
one training-mode critic pass over [(s, a); (s', a')] whose batch statistics cover both halves,
the stop-gradient of its second half as the target (no target network), the actor's critic
pass in evaluation mode on the updated critic's parameters and running statistics, the actor's
own statistics updated in training mode, SAC's temperature, Adam with b1 = 0.5 and the policy
delay. Run during BatchRenorm's warm-up (r = 1, d = 0) and after it, from running statistics
arranged away from the batch's so that r != 1 and d != 0 (some of them clipped); with scalar
critics (the paper's) and with C51 critics through the same heads as SAC's."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.agents import crossq
from tests import reference as ref

OBS, ACT, B = 3, 2, 8
KEY = jax.random.PRNGKey(7)  # the update's key: split into (next-action draw, actor draw)
SEED = 3  # of the starting state: neither critic is the lower one on every row

CASES = {
    # Still warming up (steps 0 < 100k): plain batch norm in training mode.
    "warmup": (
        crossq.CrossQConfig(
            actor_hidden=(8,), critic_hidden=(8,), init_alpha=0.5, reward_scale=2.0
        ),
        0,
    ),
    # Exactly at the end of the warm-up (steps == warmup): renormalisation is on.
    "renorm": (
        crossq.CrossQConfig(
            actor_hidden=(8,),
            critic_hidden=(8,),
            init_alpha=0.5,
            reward_scale=2.0,
            bn_warmup_steps=5,
        ),
        5,
    ),
}
# Asymmetric actor-critic after the warm-up: the critics read observations of their own.
CASES["renorm_asymmetric"] = CASES["renorm"]
# The authors' order of each hidden layer, Dense -> ReLU -> BatchRenorm (`bn_after_relu`).
CASES["renorm_norm_after_relu"] = (
    dataclasses.replace(CASES["renorm"][0], bn_after_relu=True),
    5,
)
# The squashed log-std head, smooth into [-5, 2] (`log_std_clip=False`).
CASES["renorm_log_std_squashed"] = (
    dataclasses.replace(CASES["renorm"][0], log_std_clip=False),
    5,
)
# C51 critics over a support narrow enough that targets clip at both ends.
CASES["c51_renorm"] = (
    dataclasses.replace(CASES["renorm"][0], critic="c51", num_atoms=9, v_min=-1.0, v_max=1.0),
    5,
)


def _arranged(stats, key, steps):
    """Running statistics away from any batch's: means ~ N(0, 0.8^2), variances in
    [0.05, 5], and the layers' step counters at `steps`."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(stats)
    keys = jax.random.split(key, len(paths))
    leaves = []
    for (path, x), k in zip(paths, keys, strict=True):
        name = path[-1].key
        if name == "mean":
            leaves.append(0.8 * jax.random.normal(k, x.shape, x.dtype))
        elif name == "var":
            leaves.append(
                jnp.exp(jax.random.uniform(k, x.shape, x.dtype, np.log(0.05), np.log(5.0)))
            )
        else:
            leaves.append(jnp.full_like(x, steps))
    return jax.tree_util.tree_unflatten(treedef, leaves)


@functools.cache
def _agent(case):
    """One case's jitted update and act and its starting state, built once (compiling dominates
    the runtime)."""
    config, steps = CASES[case]
    agent = crossq.make(config)
    keys = jax.random.split(jax.random.PRNGKey(SEED), 5)
    asymmetric = case.endswith("_asymmetric")
    state = agent.init(keys[0], OBS, ACT, ref.CRITIC_OBS if asymmetric else None)
    # Parameters off their initial values (BatchRenorm's scale 1 and bias 0 included), running
    # statistics off the batch's.
    state = state.replace(
        actor=state.actor.replace(params=ref.perturbed(state.actor.params, keys[1], 0.1)),
        critic=state.critic.replace(params=ref.perturbed(state.critic.params, keys[2], 0.1)),
        actor_stats=_arranged(state.actor_stats, keys[3], steps),
        critic_stats=_arranged(state.critic_stats, keys[4], steps),
    )
    return state, jax.jit(agent.update), jax.jit(agent.act)


def _setup(case, step=0):
    state, update, act = _agent(case)
    state = state.replace(step=jnp.asarray(step, state.step.dtype))
    batch = ref.mixed_batch(jax.random.PRNGKey(1), B, OBS, ACT)
    if case.endswith("_asymmetric"):
        batch = ref.with_critic_obs(batch, jax.random.PRNGKey(3))
    return update, act, state, batch


def _reference(config, state, batch, key):
    """The numpy critic loss (target held fixed, r and d held at this step's values), the
    actor's terms as a function of actor and critic parameters and critic running statistics,
    the temperature loss, and the new running statistics of critic and actor."""
    p, b = ref.to64(state), ref.to64(batch)
    critic_obs, next_critic_obs = ref.critic_inputs(b)  # the actor reads b.obs / b.next_obs
    m, w = config.bn_momentum, config.bn_warmup_steps
    order = {"after_relu": config.bn_after_relu}
    actor_order = {**order, "log_std_clip": config.log_std_clip}
    next_key, actor_key = jax.random.split(key)
    alpha = np.exp(p.log_alpha.params)
    target_entropy = -config.target_entropy_scale * ACT

    # The next action from the actor in evaluation mode (running statistics).
    (mean, log_std), _, _ = ref.brn_gaussian_actor(
        p.actor.params, p.actor_stats, b.next_obs, False, m, w, **actor_order
    )
    u = mean + np.exp(log_std) * ref.normal(next_key, mean.shape)
    next_log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)

    # One training-mode pass over both halves; the target is its second half, held fixed.
    joint_obs = np.concatenate([critic_obs, next_critic_obs])
    joint_action = np.concatenate([b.action, np.tanh(u)])
    out_all, critic_stats, critic_rd = ref.brn_q_ensemble(
        p.critic.params, p.critic_stats, joint_obs, joint_action, True, m, w, **order
    )
    reward = config.reward_scale * b.reward
    bootstrap = b.discount * (1 - b.terminated)
    bonus = -alpha * next_log_prob
    if config.critic == "c51":
        atoms = np.linspace(config.v_min, config.v_max, config.num_atoms)

        def values(out):
            return (ref.softmax(out) * atoms).sum(-1)

        next_probs = ref.softmax(out_all[:, B:])
        pick = values(out_all[:, B:]).argmin(0)  # the lower expected value, per row
        # r + d (z + bonus): the bonus shifts the reward.
        y = ref.categorical_projection(
            next_probs[pick, np.arange(B)], reward + bootstrap * bonus, bootstrap, atoms
        )
        assert 0 < y[:, 0].max() and 0 < y[:, -1].max()  # clipped at both ends

        def loss_of(out):
            return -(y * ref.log_softmax(out)).sum(-1).mean(-1).sum()

    else:

        def values(out):
            return out

        y = reward + bootstrap * (out_all[:, B:].min(0) + bonus)

        def loss_of(out):
            return 0.5 * ((out - y) ** 2).mean(-1).sum()

    q_all = values(out_all)

    def critic_loss(params):
        # Gradients flow through the batch statistics, not through r and d.
        out = ref.brn_q_ensemble(
            params, p.critic_stats, joint_obs, joint_action, True, m, w, critic_rd, **order
        )[0][:, :B]
        return loss_of(out)

    eps = ref.normal(actor_key, (B, ACT))
    _, actor_stats, actor_rd = ref.brn_gaussian_actor(
        p.actor.params, p.actor_stats, b.obs, True, m, w, **actor_order
    )

    def actor_terms(params, critic_params, critic_running):
        (mean, log_std), _, _ = ref.brn_gaussian_actor(
            params, p.actor_stats, b.obs, True, m, w, actor_rd, **actor_order
        )
        u = mean + np.exp(log_std) * eps
        log_prob = ref.tanh_gaussian_log_prob(u, mean, log_std)
        out = ref.brn_q_ensemble(
            critic_params, critic_running, critic_obs, np.tanh(u), False, m, w, **order
        )[0]
        q = values(out)
        return (alpha * log_prob - q.min(0)).mean(), log_prob, q

    def alpha_loss(log_prob):
        return -(p.log_alpha.params * (log_prob + target_entropy)).mean()

    return {
        "critic_loss": critic_loss,
        "q": q_all[:, :B],
        "target_pick": q_all[:, B:].argmin(0),  # the critic each target bootstraps from
        "critic_stats": critic_stats,
        "critic_rd": critic_rd,
        "actor_terms": actor_terms,
        "actor_stats": actor_stats,
        "actor_rd": actor_rd,
        "alpha_loss": alpha_loss,
        "target_entropy": target_entropy,
    }


def _assert_stats(actual, expected):
    jax.tree.map(
        lambda a, e: np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5, atol=1e-6),
        actual,
        expected,
    )


def _pre_norm_biases(tree, keep: bool):
    """With BatchRenorm before the ReLU (`bn_after_relu=False`): the biases that only shift a
    BatchRenorm's input by a constant (keep=True), or the tree without them (keep=False):
    Dense_i's feeding BatchRenorm_{i+1}, and BatchRenorm_0's, which passes through Dense_0 into
    BatchRenorm_1. Normalisation subtracts them out: their gradient is exactly zero, in float32
    a rounding residue that Adam's first step (-lr g / (|g| + 1e-8)) blows up to anywhere in
    [-lr, lr], so they are checked apart. After the ReLU, every bias passes through a ReLU."""

    def shifts_a_norm(name, node):
        if name == "BatchRenorm_0":
            return "BatchRenorm_1" in node
        return name.startswith("Dense_") and f"BatchRenorm_{int(name[6:]) + 1}" in node

    def walk(node):
        out = {}
        for name, value in node.items():
            if shifts_a_norm(name, node):
                out[name] = {k: v for k, v in value.items() if (k == "bias") == keep}
            elif isinstance(value, dict):
                out[name] = walk(value)
            elif not keep:
                out[name] = value
        return out

    return walk(tree)


def _assert_adam_first_step(old, new, opt_state, grad, lr, b1, after_relu):
    if after_relu:
        # A unit whose ReLU passes every row makes its Dense bias a shift of the next
        # BatchRenorm's input: zero gradient but for float32's residue.
        ref.assert_adam_first_step(old, new, grad, lr, residue_moves=True)
        ref.assert_adam_first_moment(opt_state, grad, b1=b1)
        return
    rest = [_pre_norm_biases(tree, False) for tree in (old, new, grad)]
    ref.assert_adam_first_step(*rest, lr)
    ref.assert_adam_first_moment(opt_state, grad, b1=b1)
    scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(grad))
    shifts = [jax.tree.leaves(_pre_norm_biases(ref.to64(t), True)) for t in (old, new, grad)]
    assert shifts[0], "no bias feeds a BatchRenorm"
    for p0, p1, g in zip(*shifts, strict=True):
        assert np.abs(g).max() < 1e-7 * scale
        assert np.abs(p1 - p0).max() <= lr * 1.001


def _check_critic_step(config, state, new, metrics, r):
    p = ref.to64(state)
    np.testing.assert_allclose(metrics["critic_loss"], r["critic_loss"](p.critic.params), rtol=1e-4)
    np.testing.assert_allclose(metrics["q_mean"], r["q"].mean(), rtol=1e-4, atol=1e-5)
    _assert_stats(new.critic_stats, r["critic_stats"])
    grad = ref.finite_difference_grad(r["critic_loss"], p.critic.params)
    _assert_adam_first_step(
        state.critic.params,
        new.critic.params,
        new.critic.opt_state,
        grad,
        config.critic_lr,
        config.adam_b1,
        config.bn_after_relu,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_update_matches_numpy_reference(case):
    config, steps = CASES[case]
    update, _, state, batch = _setup(case)
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)

    # r and d: trivial while warming up, neither trivial (some clipped) after.
    rd = [v for critic in r["critic_rd"] for v in critic.values()] + list(r["actor_rd"].values())
    r_all = np.concatenate([x[0] for x in rd])
    d_all = np.concatenate([x[1] for x in rd])
    if steps < config.bn_warmup_steps:
        assert (r_all == 1).all() and (d_all == 0).all()
    else:
        assert np.abs(r_all - 1).min() > 1e-3 and np.abs(d_all).min() > 1e-3
        assert (r_all == 3.0).any() or (r_all == 1 / 3).any()

    _check_critic_step(config, state, new, metrics, r)

    # Actor: training mode on its own statistics, the updated critic in evaluation mode.
    critic_params, critic_running = n.critic.params, r["critic_stats"]
    actor_loss, log_prob, q_pi = r["actor_terms"](p.actor.params, critic_params, critic_running)
    # Neither critic is the lower one everywhere: in the target and under the actor's action.
    assert set(r["target_pick"]) == {0, 1} and set(q_pi.argmin(0)) == {0, 1}
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(metrics["entropy"], -log_prob.mean(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        metrics["alpha_loss"], r["alpha_loss"](log_prob), rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(metrics["alpha"], np.exp(p.log_alpha.params), rtol=1e-6)
    _assert_stats(new.actor_stats, r["actor_stats"])
    actor_grad = ref.finite_difference_grad(
        lambda a: r["actor_terms"](a, critic_params, critic_running)[0], p.actor.params
    )
    _assert_adam_first_step(
        state.actor.params,
        new.actor.params,
        new.actor.opt_state,
        actor_grad,
        config.actor_lr,
        config.adam_b1,
        config.bn_after_relu,
    )

    alpha_grad = -(log_prob + r["target_entropy"]).mean()
    np.testing.assert_allclose(
        n.log_alpha.params - p.log_alpha.params, -config.alpha_lr * np.sign(alpha_grad), rtol=1e-3
    )
    ref.assert_adam_first_moment(new.log_alpha.opt_state, np.asarray(alpha_grad), b1=config.adam_b1)
    assert int(new.step) == 1


@pytest.mark.parametrize("case", list(CASES))
def test_actor_and_temperature_wait_for_the_policy_delay(case):
    config, _ = CASES[case]
    assert config.policy_delay == 3
    update, _, state, batch = _setup(case, step=1)  # step 1: not a multiple of the delay
    new, metrics = update(state, batch, KEY)
    r = _reference(config, state, batch, KEY)
    p, n = ref.to64(state), ref.to64(new)
    for held in ("actor", "actor_stats", "log_alpha"):
        jax.tree.map(np.testing.assert_array_equal, getattr(new, held), getattr(state, held))
    # The critic and its statistics still learn; the reported losses are the held actor's.
    _check_critic_step(config, state, new, metrics, r)
    actor_loss, log_prob, _ = r["actor_terms"](p.actor.params, n.critic.params, r["critic_stats"])
    np.testing.assert_allclose(metrics["actor_loss"], actor_loss, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        metrics["alpha_loss"], r["alpha_loss"](log_prob), rtol=1e-4, atol=1e-6
    )
    assert int(new.step) == 2


def test_act_uses_running_statistics():
    config, _ = CASES["renorm"]
    _, act, state, _ = _setup("renorm")
    p = ref.to64(state)
    obs = jax.random.normal(jax.random.PRNGKey(3), (6, OBS))
    key = jax.random.PRNGKey(11)
    (mean, log_std), _, _ = ref.brn_gaussian_actor(
        p.actor.params,
        p.actor_stats,
        np.asarray(obs, np.float64),
        False,
        config.bn_momentum,
        config.bn_warmup_steps,
        after_relu=config.bn_after_relu,
        log_std_clip=config.log_std_clip,
    )
    scales = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 4.0], np.float32)
    expected = np.tanh(mean + scales[:, None] * np.exp(log_std) * ref.normal(key, mean.shape))
    np.testing.assert_allclose(act(state, obs, key, jnp.asarray(scales)), expected, atol=1e-5)
