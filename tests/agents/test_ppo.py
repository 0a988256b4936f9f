"""PPO: GAE, the clipped objective, the value loss and minibatching, by hand; the agent's shapes."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.agents import ppo, sac
from jaxrl.types import Rollout
from tests.jaxprs import equations


@pytest.mark.parametrize("scan", ["sequential", "associative"])
def test_gae_by_hand_with_a_termination_and_a_truncation(scan):
    # One env, 5 steps, gamma 0.9, lambda 0.5. Step 1 terminates (no bootstrap); step 3 is
    # truncated by the time limit: it bootstraps from V(final obs) = 3.0, but no advantage
    # flows back into it from step 4, which belongs to the next episode.
    col = lambda *v: jnp.array(v)[:, None]
    advantage, target = ppo.gae(
        reward=col(1.0, 0.0, 1.0, 2.0, 1.0),
        value=col(0.5, 1.0, 0.2, 0.4, 0.6),
        next_value=col(1.0, 2.0, 0.4, 3.0, 0.8),
        terminated=col(0.0, 1.0, 0.0, 0.0, 0.0),
        done=col(0.0, 1.0, 0.0, 1.0, 0.0),
        discount=col(0.9, 0.9, 0.9, 0.9, 0.9),
        lam=0.5,
        scan=scan,
    )
    # deltas: 1 + .9 - .5 = 1.4; 0 - 1 = -1; 1 + .36 - .2 = 1.16; 2 + 2.7 - .4 = 4.3;
    #         1 + .72 - .6 = 1.12
    # A4 = 1.12; A3 = 4.3 (episode ended); A2 = 1.16 + .45 * 4.3 = 3.095;
    # A1 = -1 (episode ended); A0 = 1.4 + .45 * -1 = 0.95
    chex.assert_trees_all_close(advantage, col(0.95, -1.0, 3.095, 4.3, 1.12), atol=1e-6)
    chex.assert_trees_all_close(target, col(1.45, 0.0, 3.295, 4.7, 1.72), atol=1e-6)


def _gae_program(steps: int) -> str:
    x = jnp.linspace(0.1, 1.0, steps * 3).reshape(steps, 3)
    ends = (jnp.arange(steps * 3).reshape(steps, 3) % 7 == 0).astype(jnp.float32)
    args = (x, x * 0.5, x * 0.3, ends * 0.0, ends, jnp.full_like(x, 0.9))
    return jax.jit(lambda *a: ppo.gae(*a, lam=0.95)).lower(*args).as_text()


def test_gae_over_an_unroll_has_no_loop_and_is_the_loops_result_bit_for_bit():
    """With the advantage in the loss, GAE runs in every gradient step (512 times an update at
    Playground's settings): over an unroll of up to GAE_UNROLL_MAX steps its recursion is
    written out, with no while loop for a GPU to step through trip by trip, and gives the
    loop's numbers exactly. A whole rollout's (once per update) keeps its loop."""
    assert "while" not in _gae_program(30)
    assert "while" in _gae_program(ppo.GAE_UNROLL_MAX + 1)
    steps, envs = 30, 5
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    value = jax.random.normal(keys[0], (steps, envs))
    done = (jax.random.uniform(keys[1], (steps, envs)) < 0.2).astype(jnp.float32)
    terminated = done * (jax.random.uniform(keys[2], (steps, envs)) < 0.5)
    args = (jax.random.normal(keys[3], (steps, envs)), value, value * 0.7 + 0.1, terminated, done)
    discount = jnp.full((steps, envs), 0.99)
    got = jax.jit(lambda *a: ppo.gae(*a, discount, 0.95))(*args)
    looped = ppo.GAE_UNROLL_MAX
    try:
        ppo.GAE_UNROLL_MAX = 0
        want = jax.jit(lambda *a: ppo.gae(*a, discount, 0.95))(*args)
    finally:
        ppo.GAE_UNROLL_MAX = looped
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def _gae_by_numpy(reward, value, next_value, terminated, done, discount, lam, horizon):
    """GAE step by step in float64, with the horizon's restarts (an independent reference)."""
    reward, value, next_value, terminated, done, discount = (
        np.asarray(a, np.float64) for a in (reward, value, next_value, terminated, done, discount)
    )
    advantage = np.zeros_like(reward)
    following = np.zeros_like(reward[0])
    for t in reversed(range(len(reward))):
        cut = np.maximum(done[t], float(horizon and (t + 1) % horizon == 0))
        delta = reward[t] + discount[t] * (1 - terminated[t]) * next_value[t] - value[t]
        following = delta + discount[t] * lam * (1 - cut) * following
        advantage[t] = following
    return advantage, advantage + value


@pytest.mark.parametrize("steps,horizon", [(30, 0), (30, 10), (480, 30)])
def test_the_associative_scan_is_gae_by_numpy_to_float_tolerance(steps, horizon):
    """The parallel scan's advantages and targets over rows that terminate, are truncated and
    neither, with and without the horizon's restarts, long rollouts too, against a float64
    loop; and the sequential recursion's to float32 tolerance."""
    envs = 64
    keys = jax.random.split(jax.random.PRNGKey(7), 5)
    value = jax.random.normal(keys[0], (steps, envs))
    done = (jax.random.uniform(keys[1], (steps, envs)) < 0.05).astype(jnp.float32)
    terminated = done * (jax.random.uniform(keys[2], (steps, envs)) < 0.5)
    reward = jax.random.normal(keys[3], (steps, envs))
    next_value = value * 0.7 + jax.random.normal(keys[4], (steps, envs))
    discount = jnp.full((steps, envs), 0.995)
    args = (reward, value, next_value, terminated, done, discount, 0.95)
    gae = functools.partial(ppo.gae, horizon=horizon)
    parallel = jax.jit(lambda *a: gae(*a, scan="associative"))(*args)
    sequential = jax.jit(gae)(*args)
    want = _gae_by_numpy(*args, horizon)
    assert min(float(terminated.sum()), float((done - terminated).sum())) > 0
    for got, seq, ref in zip(parallel, sequential, want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got, seq, rtol=1e-5, atol=1e-4)
    if horizon:  # nothing flows back across a horizon boundary
        a = np.asarray(parallel[0])
        delta = np.asarray(reward + discount * (1 - terminated) * next_value - value)
        np.testing.assert_allclose(a[horizon - 1], delta[horizon - 1], rtol=1e-6, atol=1e-6)


def test_clipped_surrogate_by_hand():
    ratio = jnp.array([0.5, 1.5, 0.5, 1.5])
    advantage = jnp.array([1.0, 1.0, -1.0, -1.0])
    # min(rA, clip(r, .8, 1.2) A) = [0.5, 1.2, -0.8, -1.5]; loss = -mean = 0.15
    loss = ppo.clipped_surrogate(ratio, advantage, 0.2)
    assert float(loss) == pytest.approx(0.15, abs=1e-6)
    # Where the clipped term is the minimum (samples 1 and 2) the ratio gets no gradient.
    grad = jax.grad(ppo.clipped_surrogate)(ratio, advantage, 0.2)
    chex.assert_trees_all_close(grad, jnp.array([-0.25, 0.0, 0.0, 0.25]))


def test_value_loss_by_hand_with_and_without_clipping():
    value, target, old = jnp.array([1.0, 0.0]), jnp.array([2.0, 0.6]), jnp.array([0.5, 1.0])
    # Unclipped: 0.5 * mean(1, 0.36) = 0.34.
    assert float(ppo.value_loss(value, target, old, None)) == pytest.approx(0.34, abs=1e-6)
    # Clipped to old +- 0.2: [0.7, 0.8] -> errors [1.69, 0.04]; max with [1, 0.36] ->
    # 0.5 * mean(1.69, 0.36) = 0.5125.
    assert float(ppo.value_loss(value, target, old, 0.2)) == pytest.approx(0.5125, abs=1e-6)


def test_minibatches_cover_every_sample_exactly_once_per_epoch():
    for seed in range(3):
        rows = ppo.minibatch_indices(jax.random.PRNGKey(seed), 96, 8)
        chex.assert_shape(rows, (8, 12))
        np.testing.assert_array_equal(np.sort(np.asarray(rows).ravel()), np.arange(96))
    first, second = (ppo.minibatch_indices(jax.random.PRNGKey(s), 96, 8) for s in (0, 1))
    assert not np.array_equal(first, second)  # reshuffled every epoch


def _rollout(key, steps=8, envs=4, obs_size=3, action_size=2):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return Rollout(
        obs=jax.random.normal(k1, (steps, envs, obs_size)),
        reward=jax.random.normal(k2, (steps, envs)),
        next_obs=jax.random.normal(k3, (steps, envs, obs_size)),
        terminated=jnp.zeros((steps, envs)),
        done=jnp.zeros((steps, envs)),
        discount=jnp.full((steps, envs), 0.99),
        extras={
            "raw_action": jax.random.normal(k4, (steps, envs, action_size)),
            "log_prob": jnp.zeros((steps, envs)),
        },
        progress=jnp.zeros(()),
    )


def test_explore_act_update_shapes_and_log_probs():
    config = ppo.PPOConfig(actor_hidden=(8,), critic_hidden=(8,), num_minibatches=4)
    agent = ppo.make(config)
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    obs = jax.random.normal(jax.random.PRNGKey(1), (4, 3))
    action, extras = agent.explore(state, obs, jax.random.PRNGKey(2))
    chex.assert_shape([action, extras["raw_action"]], (4, 2))
    chex.assert_shape(extras["log_prob"], (4,))
    chex.assert_trees_all_close(action, jnp.tanh(extras["raw_action"]))
    # The stored log-prob is the policy's at the stored action: the first ratio is 1.
    actor = ppo.GaussianActor(2, (8,), softplus_std=True)
    mean, log_std = actor.apply(state.params["policy"], obs)
    want = jaxrl.distributions.tanh_gaussian_log_prob_pre_tanh(extras["raw_action"], mean, log_std)
    chex.assert_trees_all_close(extras["log_prob"], want, rtol=1e-6)
    chex.assert_trees_all_close(agent.act(state, obs, jax.random.PRNGKey(3), 0.0), jnp.tanh(mean))

    rollout = _rollout(jax.random.PRNGKey(4))
    new_state, metrics = jax.jit(agent.update)(state, rollout, jax.random.PRNGKey(5))
    assert float(metrics["gradient_steps"]) == config.num_epochs * config.num_minibatches
    assert int(new_state.step) == 1
    chex.assert_tree_all_finite(metrics)
    chex.assert_trees_all_equal_shapes_and_dtypes(new_state.params, state.params)
    moved = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), new_state.params, state.params)
    assert all(jax.tree.leaves(moved))


def test_in_loss_minibatches_reach_the_loss_time_first_with_no_transpose_inside():
    """With the advantage in the loss the update lays each epoch's shuffled unrolls out time
    first, [minibatches, H, B], where it gathers them: the loss (`Losses.unroll_time_major`)
    then transposes nothing in its gradient steps. Swapped inside the loss instead, XLA:GPU
    transposed the value network's activations to and from the data's order, some 20 copies of
    31 MB per gradient step at Playground's settings (benchmarks/gpu_kernels.py)."""
    horizon, minibatches, steps, envs = 4, 2, 8, 6  # 12 unrolls of 4 steps, 6 per minibatch
    config = ppo.PPOConfig(
        actor_hidden=(8,), critic_hidden=(8,), num_minibatches=minibatches,
        advantage_in_loss=True, gae_horizon=horizon, truncation="mask",
    )  # fmt: skip
    agent = ppo.make(config)
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    rollout = _rollout(jax.random.PRNGKey(1), steps=steps, envs=envs)
    jaxpr = jax.make_jaxpr(agent.update)(state, rollout, jax.random.PRNGKey(2)).jaxpr
    (step,) = [
        eqn
        for eqn in equations(jaxpr)
        if eqn.primitive.name == "scan" and eqn.params["length"] == minibatches
    ]
    unrolls = steps // horizon * envs // minibatches
    xs = step.invars[step.params["num_consts"] + step.params["num_carry"] :]
    xs = [v.aval.shape for v in xs]
    assert (minibatches, horizon, unrolls, 3) in xs  # obs [M, H, B, obs]
    assert (minibatches, unrolls, 3) in xs  # bootstrap_obs [M, B, obs]
    transposed = [
        eqn.invars[0].aval.shape
        for eqn in equations(step.params["jaxpr"].jaxpr)
        if eqn.primitive.name == "transpose"
    ]
    assert not any(shape[:2] in ((horizon, unrolls), (unrolls, horizon)) for shape in transposed)
    # The same loss as the [B, H] entry's (`Losses.unroll`, Brax's layout).
    losses = ppo.losses(config)
    batch = {
        "obs": jax.random.normal(jax.random.PRNGKey(3), (unrolls, horizon, 3)),
        "raw_action": jax.random.normal(jax.random.PRNGKey(4), (unrolls, horizon, 2)),
        "log_prob": jnp.zeros((unrolls, horizon)),
        "reward": jax.random.normal(jax.random.PRNGKey(5), (unrolls, horizon)),
        "terminated": jnp.zeros((unrolls, horizon)),
        "done": jnp.zeros((unrolls, horizon)).at[1, 2].set(1.0),
        "discount": jnp.full((unrolls, horizon), 0.99),
        "bootstrap_obs": jax.random.normal(jax.random.PRNGKey(6), (unrolls, 3)),
    }
    args = (jax.random.PRNGKey(7), state.hp, 2)
    chex.assert_trees_all_equal(
        losses.unroll(state.params, batch, *args),
        losses.unroll_time_major(state.params, ppo.time_major(batch), *args),
    )


def test_linear_schedule_stops_at_the_end_of_the_run():
    agent = ppo.make(ppo.PPOConfig(actor_hidden=(8,), critic_hidden=(8,), lr_schedule="linear"))
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    rollout = _rollout(jax.random.PRNGKey(1))._replace(progress=jnp.ones(()))
    new_state, _ = agent.update(state, rollout, jax.random.PRNGKey(2))
    chex.assert_trees_all_equal(new_state.params, state.params)  # learning rate 0


def test_minibatch_sizes_are_checked_before_compiling():
    with pytest.raises(jaxrl.ConfigError, match="num_minibatches=5"):
        ppo.PPOConfig(num_minibatches=5).check_train(
            jaxrl.TrainConfig(algo="ppo", num_envs=4, unroll_length=8)
        )
    with pytest.raises(ValueError, match="lr_schedule"):
        ppo.PPOConfig(lr_schedule="cosine")


def test_rollout_values_take_one_steps_memory_not_the_whole_rollouts():
    """Computed all at once, the value net's hidden layers over every sample of the rollout
    stay live (5 GB for Playground's CartpoleBalance settings); one step at a time they do not.
    Here a rollout of 64 steps x 512 envs, 5 layers of 256: 34 MB per layer at once."""
    config = ppo.PPOConfig(actor_hidden=(8,), critic_hidden=(256,) * 5, num_minibatches=32)
    agent = ppo.make(config)
    state = agent.init(jax.random.PRNGKey(0), 3, 2)
    rollout = jax.eval_shape(lambda k: _rollout(k, steps=64, envs=512), jax.random.PRNGKey(1))
    key = jax.random.PRNGKey(2)
    memory = jax.jit(agent.update).lower(state, rollout, key).compile().memory_analysis()
    assert memory.temp_size_in_bytes < 16 * 2**20


def _ppo_params(kernel_init):
    config = ppo.PPOConfig(actor_hidden=(256,), critic_hidden=(256, 256), kernel_init=kernel_init)
    return ppo.make(config).init(jax.random.PRNGKey(0), 64, 4).params


def _sac_params(kernel_init):
    config = sac.SACConfig(actor_hidden=(256,), critic_hidden=(256, 256), kernel_init=kernel_init)
    state = sac.make(config).init(jax.random.PRNGKey(0), 64, 4)
    return state.actor.params, state.critic.params


@pytest.mark.parametrize("params_of", [_ppo_params, _sac_params], ids=["ppo", "sac"])
def test_kernel_init_lecun_uniform_is_brax_s_distribution(params_of):
    """kernel_init="lecun_uniform" (Brax's networks, PPO's and SAC's): every kernel uniform on
    [-sqrt(3 / fan_in), sqrt(3 / fan_in)], biases 0; the default (flax's truncated normal of
    the same variance) reaches beyond that bound. For SAC the critics' stacked kernels
    [critics, fan_in, fan_out] too."""

    def kernels(kernel_init):
        leaves = jax.tree_util.tree_leaves_with_path(params_of(kernel_init))
        return [(np.asarray(x), jax.tree_util.keystr(path)) for path, x in leaves]

    for name, beyond in (("lecun_uniform", False), ("lecun_normal", True)):
        big = []
        for x, path in kernels(name):
            if "bias" in path:
                np.testing.assert_array_equal(x, 0.0)
                continue
            if "scale" in path:  # LayerNorm
                continue
            fan_in = x.shape[-2]
            bound = np.sqrt(3.0 / fan_in)
            big.append(np.abs(x).max() > bound)
            if x.size >= 64 * 256:  # enough draws for the moments
                np.testing.assert_allclose(x.var() * fan_in, 1.0, rtol=0.05)
                if not beyond:  # uniform: E|x| = bound / 2
                    np.testing.assert_allclose(np.abs(x).mean(), bound / 2, rtol=0.02)
        assert any(big) == beyond, name


def test_jaxrl_s_own_networks_are_one_more_factory(tmp_path):
    """Network injection: a run handed `ppo.networks(config)` (what `make` builds without
    networks) gives the numbers of the run without, to the bit. Networks of the caller's are
    refused for an algorithm that takes none, and with a run folder (resume, eval and
    load_policy build jaxrl's own)."""
    from jaxrl.errors import ConfigError
    from tests import tiny

    config = tiny.on_policy(total_steps=256)
    plain = jaxrl.train(config, tiny.PPO, progress=None)
    injected = jaxrl.train(config, tiny.PPO, progress=None, networks=ppo.networks(tiny.PPO))
    jax.tree.map(
        np.testing.assert_array_equal, plain.state.agent.params, injected.state.agent.params
    )
    assert plain.history[-1]["eval_return"] == injected.history[-1]["eval_return"]
    with pytest.raises(ConfigError, match="networks: td3 takes no networks"):
        jaxrl.train(tiny.run("td3"), tiny.agent("td3"), networks=ppo.networks(tiny.PPO))
    with pytest.raises(ConfigError, match="sac takes a jaxrl.agents.sac_family.Networks, not"):
        jaxrl.train(tiny.off_policy(), tiny.SAC, networks=ppo.networks(tiny.PPO))
    with pytest.raises(ConfigError, match="out_dir"):
        jaxrl.train(config, tiny.PPO, tmp_path / "run", networks=ppo.networks(tiny.PPO))
    assert not (tmp_path / "run").exists()
