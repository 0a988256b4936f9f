import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import agents, checkpoint, sac
from jaxrl.config import ConfigError
from jaxrl.loops import make_train
from jaxrl.run import driver
from jaxrl.run.health import NonFiniteError
from tests import tiny


def test_vmap_over_seeds_matches_runs_one_by_one():
    trainer = make_train(tiny.off_policy(), sac.make(tiny.SAC))
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    _, together = jax.jit(jax.vmap(trainer.train))(keys)
    train = jax.jit(trainer.train)
    for i in range(2):
        _, alone = train(keys[i])
        chex.assert_trees_all_close(
            jax.tree.map(lambda x, i=i: x[i], together), alone, rtol=1e-4, atol=1e-4
        )
    assert not np.allclose(together["critic_loss"][0], together["critic_loss"][1])


def test_chunk_counts_steps_updates_and_episodes():
    # 200 iterations per chunk, 2 chunks.
    config = tiny.off_policy(total_steps=1600, eval_every=800)
    trainer = make_train(config, sac.make(tiny.SAC))
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    chunk = jax.jit(trainer.chunk)
    state, first = chunk(state)
    state, second = chunk(state)
    assert int(second["iteration"]) * config.num_envs == 1600
    # Updates start once 64 rows (learning_starts) are stored: after iteration 16 of 200.
    assert int(first["updates"]) == (200 - 15) * 2
    assert int(second["updates"]) == 200 * 2
    # Pendulum episodes are 200 steps: each env finishes one episode per chunk.
    assert int(first["episodes"]) == 4 and int(second["episodes"]) == 4
    assert int(state.buffer.rows) == 512 and int(state.agent.step) == (185 + 200) * 2


def test_replay_holds_true_next_obs_and_termination_flags():
    # Pendulum only truncates; inverted pendulum terminates when the pole passes 0.2 rad.
    for env, expect_terminal in (("classic/pendulum", False), ("brax/inverted_pendulum", True)):
        config = tiny.off_policy(env=env, total_steps=400, eval_every=400, learning_starts=399)
        trainer = make_train(config, sac.make(tiny.SAC))
        state, _ = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
        rows = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731  [slots, envs] as rows
        data = jax.tree.map(rows, jax.device_get(state.buffer.data))
        if expect_terminal:
            fallen = np.abs(data.next_obs[:, 1]) > 0.2
            assert fallen.any()
            np.testing.assert_array_equal(data.terminated, fallen.astype(np.float32))
        else:
            np.testing.assert_array_equal(data.terminated, 0.0)
        # Transitions chain within each env: obs of step t+1 is next_obs of step t unless the
        # episode ended in between (then it is a fresh reset).
        obs = data.obs.reshape(-1, 4, data.obs.shape[-1])
        nxt = data.next_obs.reshape(-1, 4, data.obs.shape[-1])
        same = np.isclose(obs[1:], nxt[:-1], atol=1e-6).all(-1)
        assert same.mean() > 0.5


def test_normalised_observations_are_tracked():
    config = tiny.off_policy(normalize_observations=True, total_steps=512, eval_every=512)
    trainer = make_train(config, sac.make(tiny.SAC))
    state, metrics = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    assert float(state.obs_stats.count) == 512  # every reached observation, no reset ones
    obs = np.asarray(state.buffer.data.next_obs).reshape(-1, 3)
    np.testing.assert_allclose(state.obs_stats.mean, obs.mean(0), rtol=1e-4, atol=1e-5)
    assert np.isfinite(float(metrics["critic_loss"]))


def test_same_seed_same_metrics(tmp_path):
    config = tiny.off_policy(total_steps=512)
    first = driver.train(config, tiny.SAC, tmp_path / "a", progress=None)
    second = driver.train(config, tiny.SAC, tmp_path / "b", progress=None)
    strip = lambda rows: [{k: v for k, v in r.items() if "second" not in k} for r in rows]
    assert strip(first.history) == strip(second.history)
    third = driver.train(tiny.off_policy(total_steps=512, seed=1), tiny.SAC, None, progress=None)
    assert strip(third.history) != strip(first.history)


def test_checkpoint_restore_reads_the_file(tmp_path):
    config = tiny.off_policy(normalize_observations=True)
    result = driver.train(config, tiny.SAC, tmp_path / "run", progress=None)
    saved = result.state
    # Restore into a fresh state made from another key: nothing can come from the template.
    trainer = make_train(config, sac.make(tiny.SAC))
    fresh = jax.jit(trainer.init)(jax.random.PRNGKey(99))
    assert not np.allclose(fresh.obs_stats.mean, saved.obs_stats.mean)
    restored = checkpoint.restore_state(tmp_path / "run" / "checkpoints", 256, fresh)
    chex.assert_trees_all_equal(restored.agent, saved.agent)
    chex.assert_trees_all_equal(restored.obs_stats, saved.obs_stats)
    chex.assert_trees_all_equal(restored, saved)  # buffer, env states, key, counters too
    assert int(restored.iteration) == int(saved.iteration) == 64
    key = jax.random.PRNGKey(3)
    evaluate = jax.jit(trainer.evaluate)
    chex.assert_trees_all_equal(
        evaluate(restored.agent, restored.obs_stats, key),
        evaluate(saved.agent, saved.obs_stats, key),
    )


def test_non_finite_training_stops_with_a_clear_error(tmp_path):
    config = tiny.off_policy(env_options={"max_speed": float("nan")})
    with pytest.raises(NonFiniteError, match="non-finite .*chunk 0"):
        driver.train(config, tiny.SAC, tmp_path / "nan", progress=None)


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"num_envs": 0}, "num_envs must be a positive integer"),
        ({"batch_size": 1024}, "batch_size 1024 is larger than the replay buffer"),
        ({"num_envs": 1024}, "num_envs 1024 exceeds buffer_size"),
        ({"learning_starts": 256}, "no gradient update would ever run"),
        ({"episode_length": 0}, "episode_length must be a positive integer"),
        ({"num_envs": True}, "num_envs must be a positive integer, got True"),
        ({"learning_starts": 1.5}, "learning_starts must be an integer >= 0, got 1.5"),
        ({"eval_envs": "4", "eval_simulator": "shared"}, "eval_envs must be a positive integer"),
    ],
)
def test_inconsistent_sizes_fail_before_compilation(overrides, message):
    # Named as SAC, the config refuses them itself; left unnamed, the replay's sizes are
    # checked once the agent names the algorithm (make_train), still before compiling.
    with pytest.raises(ConfigError, match=message):
        tiny.off_policy(algo="sac", **overrides)
    with pytest.raises(ConfigError, match=message):
        make_train(tiny.off_policy(**overrides), sac.make(tiny.SAC))


def test_per_env_noise_scales():
    linspace = make_train(
        tiny.off_policy(exploration="linspace", noise_scale_min=0.05, noise_scale_max=0.8),
        sac.make(tiny.SAC),
    )
    state = jax.jit(linspace.init)(jax.random.PRNGKey(0))
    chex.assert_trees_all_close(state.noise_scale, jnp.array([0.05, 0.3, 0.55, 0.8]), atol=1e-6)
    # Uniform scales are redrawn when an episode ends (pendulum: every 10 steps here).
    config = tiny.off_policy(
        exploration="uniform",
        noise_scale_min=0.001,
        noise_scale_max=0.4,
        episode_length=10,
        total_steps=40,
        eval_every=40,
        learning_starts=0,
    )
    uniform = make_train(config, sac.make(tiny.SAC))
    state = jax.jit(uniform.init)(jax.random.PRNGKey(0))
    first = np.asarray(state.noise_scale)
    assert ((first >= 0.001) & (first <= 0.4)).all() and np.unique(first).size == 4
    state, _ = jax.jit(uniform.chunk)(state)  # exactly one episode per env
    assert not np.isin(np.asarray(state.noise_scale), first).any()


def test_acting_parameters_lag_the_learners():
    # 12 iterations.
    config = tiny.off_policy(acting_lag=5, learning_starts=16, total_steps=48, eval_every=48)
    trainer = make_train(config, sac.make(tiny.SAC))
    state, _ = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    # Updates ran from the 4th iteration on (16 rows stored): 9 iterations x 2 updates. The
    # acting copy was last refreshed after the 10th iteration, 7 iterations of updates in.
    assert int(state.agent.step) == 18 and int(state.acting_agent.step) == 14


def test_n_step_loop_trains():
    config = tiny.off_policy(n_step=3, total_steps=512)
    trainer = make_train(config, sac.make(tiny.SAC))
    _, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    assert np.isfinite(np.asarray(metrics["critic_loss"])).all()
    assert float(metrics["updates"].sum()) > 0


def test_fast_td3_without_a_preset_explores_as_fast_td3(tmp_path):
    from jaxrl.agents.fast_td3 import FastTD3Config

    config = tiny.off_policy(algo="fast_td3", total_steps=128, eval_every=128)
    agent = FastTD3Config(actor_hidden=(8,), critic_hidden=(8,), num_atoms=11)
    result = driver.train(config, agent, tmp_path / "run", progress=None)
    scales = np.asarray(result.state.noise_scale)
    assert ((scales >= 0.001) & (scales <= 0.4)).all() and np.unique(scales).size == 4
    written = json.loads((tmp_path / "run" / "config.json").read_text())["train"]
    assert written["exploration"] == "uniform" and written["noise_scale_max"] == 0.4
    assert written["normalize_observations"] is True and written["n_step"] == 1


def test_replay_stores_observations_in_half_precision_and_learns_from_them():
    runs = {}
    for dtype in ("float32", "bfloat16"):
        trainer = make_train(tiny.off_policy(replay_obs_dtype=dtype), sac.make(tiny.SAC))
        runs[dtype] = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    (full, _), (half, metrics) = runs["float32"], runs["bfloat16"]
    assert half.buffer.data.obs.dtype == half.buffer.data.next_obs.dtype == jnp.bfloat16
    assert half.buffer.data.action.dtype == half.buffer.data.reward.dtype == jnp.float32
    # Rows written before the first update (the same warm-up actions): the float32 run's,
    # rounded to bfloat16.
    warm = 64 // 4
    for field in ("obs", "next_obs"):
        np.testing.assert_array_equal(
            getattr(half.buffer.data, field)[:warm],
            getattr(full.buffer.data, field)[:warm].astype(jnp.bfloat16),
        )
    assert float(metrics["updates"]) > 0 and np.isfinite(float(metrics["critic_loss"]))


def test_learn_if_traces_the_update_once_and_skips_it_with_zero_metrics():
    """`loops.base.learn_if` (offpolicy's import): the update where the buffer is ready, the
    state as it is with zero metrics where not, from one compiled program that traced the
    update once."""
    from jaxrl.loops import offpolicy

    traces = []

    def learn(state, x):
        traces.append(1)
        return state + x, {"loss": 2.0 * x, "count": jnp.sum(x).astype(jnp.int32)}

    program = jax.jit(lambda ready, s, x: offpolicy.learn_if(ready, learn, s, x))
    state, x = jnp.ones(3), jnp.arange(3.0)
    learned, metrics = program(jnp.bool_(True), state, x)
    np.testing.assert_array_equal(learned, state + x)
    np.testing.assert_array_equal(metrics["loss"], 2.0 * x)
    assert int(metrics["count"]) == 3
    held, zeros = program(jnp.bool_(False), state, x)
    np.testing.assert_array_equal(held, state)
    np.testing.assert_array_equal(zeros["loss"], np.zeros(3))
    assert zeros["count"].dtype == jnp.int32 and int(zeros["count"]) == 0
    assert len(traces) == 1


def test_the_loop_of_updates_sits_in_no_conditional_and_copies_no_state():
    """`make_learn`: the condition to learn (`ready`, and a shared chunk's `training`) is
    taken inside each update, not around the iteration's loop of updates. XLA:GPU copied
    every leaf of the agent's state on every update when that loop sat inside a conditional
    inside the chunk's loop (102 of the 228 kernels of `fast_td3_playground`'s update, compiled for
    an H100; benchmarks/notes/2026-11-28-update-loop-copies.md). So in both chunks' programs no scan
    of the updates has a cond around it; on this CPU the loop with its conditions copies less per
    update than with the condition around it, nearer the bare loop's count; an update that runs
    computes what the bare loop computes, and one that does not leaves the state as it
    was with zero metrics."""
    from jaxrl.benchmarks import speed
    from jaxrl.loops import offpolicy
    from jaxrl.loops.base import learn_if
    from jaxrl.run.chunks import CHUNK_OPTIONS
    from tests import jaxprs

    agent_config = tiny.agent("td3")
    assert agent_config.policy_delay == 2  # the update holds a cond of its own
    for mode in ("own", "shared"):
        config = tiny.run("td3", eval_simulator=mode, eval_envs=4)
        trainer = make_train(config, agents.get("td3").make(agent_config))
        state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
        jaxpr = jax.make_jaxpr(trainer.chunk)(state).jaxpr
        loops = [
            within
            for eqn, within in jaxprs.equations_within(jaxpr)
            if eqn.primitive.name == "scan" and eqn.params["length"] == config.updates_per_step
        ]
        assert loops and not any("cond" in within for within in loops), (mode, loops)

    trainer = make_train(tiny.run("td3"), agents.get("td3").make(agent_config))
    config = trainer.config
    learn = offpolicy.make_learn(config, trainer.agent, trainer.data)
    state, _ = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    args = (state.agent, state.buffer, state.obs_stats, jax.random.PRNGKey(1), state.hp["gamma"])

    def per_update(fn):
        lowered = jax.jit(fn).lower(jnp.bool_(True), *args)  # ready traced: a real cond
        compiled = lowered.compile(compiler_options=CHUNK_OPTIONS["cpu"])
        loops = speed.kernel_counts(compiled.as_text())["loops"]
        (loop,) = [loop for loop in loops if loop["trips"] == config.updates_per_step]
        return compiled, loop["copies_per_trip"]

    bare, copies = per_update(lambda ready, *a: learn(*a))
    conditioned, copies_conditioned = per_update(lambda ready, *a: learn(*a, ready=ready))
    _, copies_around = per_update(lambda ready, *a: learn_if(ready, learn, *a))
    assert " conditional(" in conditioned.as_text()
    # Per update here: 47 copies bare, 62 with the condition inside, 105 around the loop
    # (compiled for an H100, benchmarks/notes/2026-11-28-update-loop-copies.md: none
    # inside, 102 around).
    assert copies_conditioned - copies <= (copies_around - copies) // 2
    ours, theirs = conditioned(jnp.bool_(True), *args), bare(jnp.bool_(True), *args)
    chex.assert_trees_all_equal(jax.device_get(ours), jax.device_get(theirs))
    held, zeros = jax.device_get(conditioned(jnp.bool_(False), *args))
    chex.assert_trees_all_equal(held, jax.device_get(state.agent))
    assert zeros and all(not np.any(x) for x in jax.tree.leaves(zeros))


def test_updates_written_out_give_the_same_numbers_and_no_loop_over_them():
    """`unroll_updates`: an iteration's updates written out in the program (a speed choice for
    GPUs, where XLA copies the agent's state on every trip of their loop) compute the same
    updates: XLA fuses the written-out program its own way, so after 370 updates the state
    and metrics agree to float rounding (parameters within 4e-9 here), not bit for bit; and
    the learning step's scan over its updates is unrolled by that many."""

    def train(unroll: int):
        config = tiny.off_policy(total_steps=400, eval_every=400, unroll_updates=unroll)
        trainer = make_train(config, sac.make(tiny.SAC))
        state, metrics = jax.jit(trainer.chunk)(jax.jit(trainer.init)(jax.random.PRNGKey(3)))
        return config, jax.device_get((state.agent, metrics))

    config, looped = train(1)
    assert config.updates_per_step == 2 and int(looped[1]["updates"]) > 0
    _, written = train(2)
    chex.assert_trees_all_close(written, looped, rtol=1e-4, atol=1e-6)
    seen = []
    real_scan = jax.lax.scan

    def scan(*args, **kw):
        seen.append(kw.get("unroll", 1))
        return real_scan(*args, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jax.lax, "scan", scan)
        trainer = make_train(tiny.off_policy(unroll_updates=2), sac.make(tiny.SAC))
        jax.eval_shape(trainer.chunk, jax.eval_shape(trainer.init, jax.random.PRNGKey(0)))
    assert 2 in seen
