"""The simulator once per program (issue 39): with `eval_simulator="shared"` a chunk steps its
evaluation through the training envs' own step, so the program traces the env's step and reset
once each (twice each with "own"), and trains and evaluates exactly as with its own eval envs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brax.envs.base import State

from jaxrl import agents, envs, make_train
from jaxrl.config import ConfigError
from jaxrl.loops import base
from tests import codegen, tiny


class CountedReach:
    """A point on a line pushed towards 0, whose episode ends when it leaves [-1.2, 1.2] or
    after a length drawn at reset (5 to 19 steps, under the time limit of 25): training envs
    restart mid-chunk and evaluation episodes end at different steps. Counts how often its
    step and reset are traced."""

    observation_size, action_size, episode_length = 2, 1, 25

    def __init__(self, longest: int = 20):
        self.traced = {"step": 0, "reset": 0}
        self.longest = longest  # beyond episode_length: episodes the time limit cuts

    def reset(self, key):
        self.traced["reset"] += 1
        x_key, end_key = jax.random.split(key)
        x = jax.random.uniform(x_key, (), minval=-1.0, maxval=1.0)
        end = jax.random.randint(end_key, (), 5, self.longest).astype(jnp.float32)
        zero = jnp.zeros(())
        return State(jnp.stack([x, zero, end]), jnp.stack([x, x * x]), zero, zero, {}, {})

    def step(self, state, action):
        self.traced["step"] += 1
        x, t, end = state.pipeline_state
        x, t = x + 0.3 * jnp.clip(action[0], -1.0, 1.0), t + 1
        done = ((jnp.abs(x) > 1.2) | (t >= end)).astype(jnp.float32)
        return state.replace(
            pipeline_state=jnp.stack([x, t, end]),
            obs=jnp.stack([x, x * x]),
            reward=-jnp.abs(x),
            done=done,
        )


# 8 training envs, 3 evaluated; chunks of 96 iterations (warm-up for the first 12).
SETTINGS = dict(num_envs=8, eval_envs=3, eval_every=768, total_steps=1536, learning_starts=96)


def trainer_for(mode: str, algo: str = "sac", env=None, **overrides):
    env = env or CountedReach()
    config = tiny.run(algo, env="own/reach", eval_simulator=mode, **{**SETTINGS, **overrides})
    return make_train(config, agents.get(algo).make(tiny.agent(algo)), env=env), env


@pytest.mark.parametrize("algo", ["sac", "ppo"])
@pytest.mark.parametrize("mode, copies", [("own", 2), ("shared", 1)])
def test_a_shared_chunk_holds_the_step_and_reset_once(algo, mode, copies):
    trainer, env = trainer_for(mode, algo)
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
    jax.clear_caches()  # the chunk's own traces, none taken from the init's (below)
    env.traced.update(step=0, reset=0)
    jax.jit(trainer.chunk).trace(state)
    assert env.traced == {"step": copies, "reset": copies}


@pytest.mark.parametrize("mode, resets", [("own", 1), ("shared", 0)])
def test_the_chunk_reuses_the_initial_states_trace_of_the_training_envs_reset(mode, resets):
    """`envs.wrappers.VmapWrapper` jits its batched reset and step once, so jit's cache keeps
    their traces: the chunk's auto-reset (and the shared evaluation's restarts) reuse the trace
    the initial state's program made; only the own evaluation envs' reset is traced anew."""
    trainer, env = trainer_for(mode)
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
    env.traced.update(step=0, reset=0)
    jax.jit(trainer.chunk).trace(state)
    assert env.traced == {"step": 2 if mode == "own" else 1, "reset": resets}


def test_auto_keeps_the_own_eval_envs_on_a_cpu():
    assert jax.default_backend() == "cpu"
    trainer, env = trainer_for("auto")
    jax.clear_caches()
    env.traced.update(step=0, reset=0)
    jax.jit(trainer.chunk).trace(jax.eval_shape(trainer.init, jax.random.PRNGKey(0)))
    assert env.traced["step"] == 2


def run_chunks(trainer, chunks=2):
    """`chunks` chunks from seed 7, compiled by XLA's own code generator: the suite's faster
    one rounds the two modes' programs differently (tests/codegen.py)."""
    state = jax.jit(trainer.init)(jax.random.PRNGKey(7))
    chunk = jax.jit(trainer.chunk).lower(state).compile(compiler_options=codegen.users())
    rows = []
    for _ in range(chunks):
        state, metrics = chunk(state)
        rows.append(jax.device_get(metrics))
    return jax.device_get(state), rows


@pytest.mark.parametrize(
    "algo, overrides",
    [
        ("sac", {}),
        # per-env noise scales redrawn at episode ends, and an acting copy that lags
        ("td3", dict(exploration="uniform", noise_scale_min=0.1, noise_scale_max=0.8,
                     acting_lag=5)),
        # 6 rollouts of 16 steps per chunk
        ("ppo", {}),
        # Brax's options: renormalised rollouts, cached first states, hard resets
        ("ppo", dict(renormalize_rollout=True, autoreset="first", reset_every=4,
                     normalize_observations=True)),
    ],
)  # fmt: skip
def test_shared_trains_and_evaluates_exactly_as_own(algo, overrides):
    own_state, own_rows = run_chunks(trainer_for("own", algo, **overrides)[0])
    shared_state, shared_rows = run_chunks(trainer_for("shared", algo, **overrides)[0])
    # The states are the same bits; a metric may differ in its last bit (a mean or sum that XLA
    # reduces in another order in the other program).
    for own, shared in zip(own_rows, shared_rows, strict=True):
        assert own.keys() == shared.keys()
        for name in own:
            np.testing.assert_allclose(shared[name], own[name], rtol=1e-6, err_msg=name)
        for name in ("eval_return", "eval_length", "episodes", "updates", "iteration"):
            np.testing.assert_array_equal(shared[name], own[name], err_msg=name)
    leaves = jax.tree_util.tree_leaves_with_path
    for (path, own), (_, shared) in zip(leaves(own_state), leaves(shared_state), strict=True):
        np.testing.assert_array_equal(shared, own, err_msg=jax.tree_util.keystr(path))
    # The test sees what it claims to: episodes ended mid-chunk in training, and evaluation
    # episodes ended before the time limit, at different lengths.
    assert own_rows[1]["episodes"] > 8
    assert 1 <= own_rows[1]["eval_length"] < 25 and own_rows[1]["eval_return_std"] > 0


def test_shared_evaluation_ends_at_the_episode_length_as_own():
    """Evaluation episodes that outlast the env's episode_length end there, as the own
    evaluation's loop ends them: PPO's shared chunk rounds its evaluation trips up to whole
    phases of unroll_length (26 trips into 2 phases of 16), and its spare trips must neither
    step nor count."""
    rows = {}
    for mode in ("own", "shared"):
        trainer, _ = trainer_for(mode, "ppo", env=CountedReach(longest=200))
        rows[mode] = run_chunks(trainer)[1]
    for own, shared in zip(rows["own"], rows["shared"], strict=True):
        for name in ("eval_return", "eval_length"):
            np.testing.assert_array_equal(shared[name], own[name], err_msg=name)
    # Some evaluation episodes reached the limit of 25 steps; none went past it.
    assert all(15 < row["eval_length"] <= 25 for row in rows["own"]), rows["own"]


def test_shared_is_refused_where_it_cannot_share():
    with pytest.raises(ConfigError, match="fewer than eval_envs"):
        tiny.off_policy(num_envs=4, eval_envs=8, eval_simulator="shared")
    config = tiny.off_policy(eval_simulator="shared")
    with pytest.raises(ConfigError, match="randomized physics"):
        base.shares_simulator(config, randomized=True)
    with pytest.raises(ConfigError, match="actor/learner split"):
        base.shares_simulator(config, randomized=False, supported=False)
    separate = envs.WithEvalEnv(object(), object())  # Brax's eval_env: evaluated on its own
    with pytest.raises(ConfigError, match="separate evaluation env"):
        base.shares_simulator(config, randomized=False, env=separate)
    assert not base.shares_simulator(tiny.off_policy(eval_simulator="own"), randomized=False)


def test_seeds_under_vmap_update_as_often_shared_as_own(algo="sac"):
    """Under vmap a batched condition turns a `lax.cond` into a select that runs both branches:
    the shared chunk's evaluation trips must still skip the update (their trip index, not the
    seeds' state, decides), so it runs the update as often as the own chunk does. (PPO's
    update is gated by the trip index alone, which vmap leaves unbatched.)"""
    calls = {}

    def counted(mode):
        trainer, _ = trainer_for(mode, algo)
        update = trainer.agent.update

        def update_counted(state, batch, key):
            jax.debug.callback(lambda: calls.__setitem__(mode, calls.get(mode, 0) + 1))
            return update(state, batch, key)

        agent = trainer.agent._replace(update=update_counted)
        config = trainer.config
        return make_train(config, agent, env=CountedReach())

    for mode in ("own", "shared"):
        trainer = counted(mode)
        keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
        state = jax.jit(jax.vmap(trainer.init))(keys)
        jax.block_until_ready(jax.jit(jax.vmap(trainer.chunk))(state))
    assert calls["shared"] == calls["own"] > 0
