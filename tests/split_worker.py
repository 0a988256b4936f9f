"""Checks of PQL's actor/learner split (`jaxrl.loops.split`), run by tests/loops/test_split.py in a
fresh process whose CPU is split into 4 devices (the XLA flag must be set before JAX starts).
`python -m tests.split_worker CASE [ARGS]`; exits 0 when every assertion held."""

from __future__ import annotations

import dataclasses
import pathlib
import shutil
import sys

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

import jaxrl
from jaxrl.agents import pql
from jaxrl.agents.base import Agent
from jaxrl.config import ConfigError
from jaxrl.loops import make_train
from jaxrl.run import driver
from jaxrl.run.rows import learning_metrics

SCALE = 1000.0  # the probe's version goes out as an action version / SCALE, inside [-1, 1]


@flax.struct.dataclass
class Probe:
    """An agent whose parameters are a version: the number of updates it has made."""

    updates: jax.Array
    action_size: int = flax.struct.field(pytree_node=False)


def probe_agent() -> Agent:
    def init(key, obs_size, action_size, critic_obs_size=None):
        return Probe(jnp.zeros((), jnp.int32), action_size)

    def act(state, obs, key, noise_scale):
        version = state.updates.astype(jnp.float32) / SCALE
        return jnp.broadcast_to(version, (obs.shape[0], state.action_size))

    def update(state, batch, key):
        metrics = {"seen": batch.action.max() * SCALE, "obs": batch.obs.mean()}
        return state.replace(updates=state.updates + 1), metrics

    return Agent(init, act, update)


class Offset:
    """A point on a line, pushed by the action, observed far from zero: [100 + x, 100 - x].
    Normalised by the right statistics its observations are near 0; read with none (the
    identity) they are 100, clipped to obs_clip."""

    observation_size = 2
    action_size = 1

    def reset(self, key):
        from brax.envs.base import State

        x = jax.random.uniform(key, (), minval=-1.0, maxval=1.0)
        zero = jnp.zeros(())
        return State(x, jnp.stack([100 + x, 100 - x]), zero, zero, {}, {})

    def step(self, state, action):
        x = (
            state.pipeline_state
            + 0.25 * jnp.clip(action[0], -1.0, 1.0)
            + 0.1 * jnp.sin(10 * state.pipeline_state)
        )
        done = (jnp.abs(x) > 2.0).astype(jnp.float32)
        obs = jnp.stack([100 + x, 100 - x])
        return state.replace(pipeline_state=x, obs=obs, reward=-jnp.abs(x), done=done)


def schedule() -> None:
    """Which parameters act and which data the learners see, exchange by exchange: actions
    record the version (update count) that chose them, so the buffer shows the schedule."""
    every, envs, per_step, batch = 4, 4, 2, 16
    config = jaxrl.TrainConfig(
        env="own/offset",
        episode_length=20,
        algo="pql",
        devices=2,
        split_every=every,
        num_envs=envs,
        batch_size=batch,
        updates_per_step=per_step,
        learning_starts=20,  # with the batch: learning waits for 20 rows, 2 exchanges' worth
        warmup_actions="policy",
        n_step=1,
        normalize_observations=True,  # by the statistics of the data the learners read
        exploration="fixed",
        total_steps=128,
        eval_every=64,  # 16 iterations, 4 exchanges per chunk
        buffer_size=512,
        eval_envs=2,
    )
    trainer = make_train(config, probe_agent(), env=Offset())
    assert trainer.config.split and trainer.compile_chunk is not None
    state = trainer.place(jax.jit(trainer.init)(jax.random.PRNGKey(0)))
    chunk = trainer.compile_chunk(state)
    rows = []
    for _ in range(2):
        state, metrics = chunk(state)
        rows.append(jax.device_get(metrics))
    exchanges = 8
    # Exchange r's learners read the buffer of exchanges before r: 16 r rows; they learn
    # once it holds 20 (r >= 2). The actor of exchange r acts with the version the
    # learners had at the end of exchange r - 1.
    ready = [r * every * envs >= 20 for r in range(exchanges)]
    version = [0]
    for r in range(1, exchanges):
        version.append(version[-1] + every * per_step * ready[r - 1])
    expected = np.repeat(version, every)  # per iteration
    actions = np.asarray(state.buffer.data.action)[: exchanges * every, :, 0]
    recorded = np.rint(actions * SCALE).astype(int)
    assert (recorded == expected[:, None]).all(), (recorded[:, 0], expected)
    final = version[-1] + every * per_step * ready[-1]
    assert int(state.agent.updates) == final, (int(state.agent.updates), final)
    assert int(state.buffer.rows) == exchanges * every * envs  # the last exchange's rows too
    assert int(state.iteration) == exchanges * every
    updates = [row["updates"] for row in rows]
    assert updates == [every * per_step * sum(ready[:4]), every * per_step * sum(ready[4:])]
    assert [int(row["iteration"]) for row in rows] == [16, 32]
    # The learners only ever see versions that acted before their exchange.
    assert 0 <= rows[1]["seen"] <= version[-1], rows[1]["seen"]
    # Their batches are normalised by statistics of the data they read (near 0), not the
    # identity that the statistics start as (100, clipped to 10).
    for row in rows:
        assert abs(row["obs"]) < 3, row["obs"]
    print("schedule ok", recorded[::every, 0].tolist())


def _pql(devices=2, **overrides):
    train = dict(
        env="classic/pendulum",
        algo="pql",
        devices=devices,
        num_envs=8,
        batch_size=32,
        updates_per_step=2,
        total_steps=1024,
        eval_every=256,  # 32 iterations: 4 exchanges of 8
        learning_starts=256,
        buffer_size=4096,
        eval_envs=4,
    )
    train.update(overrides)
    agent = pql.PQLConfig(actor_hidden=(16, 16), critic_hidden=(16, 16))
    return jaxrl.TrainConfig(**train), agent


def layout() -> None:
    """Over 3 devices: envs, acting and statistics on the first, the learners' parameters
    replicated on the other two and their replay buffer split between them by env; the same
    seed gives the same numbers whether the programs compile ahead or at their first call."""
    config, agent_config = _pql(devices=3)
    trainer = make_train(config, pql.make(agent_config))
    devices = jax.devices()
    results = []
    for ahead in (True, False):
        state = trainer.place(jax.jit(trainer.init)(jax.random.PRNGKey(1)))
        chunk = trainer.compile_chunk(state) if ahead else trainer.chunk
        rows = []
        for _ in range(2):
            state, metrics = chunk(state)
            rows.append(jax.device_get(metrics))
        results.append((rows, jax.device_get(state.agent)))
    actor_side = [state.env_state, state.obs_stats, state.key, state.iteration]
    assert state.acting_agent is None  # the actor's copy lives within a chunk
    for leaf in jax.tree.leaves(actor_side + [state.noise_scale]):
        assert leaf.sharding.device_set == {devices[0]}, leaf.sharding
    for leaf in jax.tree.leaves(state.agent):
        assert leaf.sharding.device_set == set(devices[1:3]), leaf.sharding
        assert leaf.sharding.is_fully_replicated
    for leaf in jax.tree.leaves(state.buffer.data):
        assert leaf.sharding.device_set == set(devices[1:3]), leaf.sharding
        assert {s.data.shape[1] for s in leaf.addressable_shards} == {config.num_envs // 2}
    assert int(state.buffer.rows) == 2 * trainer.config.env_steps_per_chunk
    (rows0, agent0), (rows1, agent1) = results
    for a, b in zip(rows0, rows1, strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    jax.tree.map(np.testing.assert_array_equal, agent0, agent1)
    assert rows0[-1]["updates"] > 0 and np.isfinite(rows0[-1]["critic_loss"])
    print("layout ok")


def resume(run_dir: str) -> None:
    """A split run checkpointed after 2 chunks and resumed to 4 equals the run made in one go
    (learning metrics and parameters, bit for bit); the same checkpoint goes on on one
    device (no split) as well."""
    config, agent_config = _pql()
    whole = jaxrl.train(config, agent_config, progress=None)
    half = dataclasses.replace(config, total_steps=512)
    jaxrl.train(half, agent_config, run_dir, progress=None, checkpoint_every=1)
    resumed = driver.resume(run_dir, total_steps=1024, progress=None)
    assert learning_metrics(resumed.history) == learning_metrics(whole.history)
    jax.tree.map(
        np.testing.assert_array_equal,
        jax.device_get(resumed.state.agent),
        jax.device_get(whole.state.agent),
    )
    assert whole.history[-1]["updates"] > 0
    print("resume ok")


def alone(run_dir: str) -> None:
    """The checkpoint of a split run goes on on one device, without the split."""
    config, agent_config = _pql(total_steps=512)
    jaxrl.train(config, agent_config, run_dir, progress=None, checkpoint_every=1)
    resumed = driver.resume(run_dir, total_steps=1024, devices=0, progress=None)
    assert resumed.history[-1]["env_steps"] == 1024
    assert np.isfinite(resumed.history[-1]["critic_loss"])
    # Stopped part-way with chunks rounded up to whole exchanges (25 iterations made 32), it
    # goes on on one device, without --steps, to its own evaluation points.
    config, agent_config = _pql(total_steps=800, eval_every=200)
    part = pathlib.Path(run_dir + "-part")
    jaxrl.train(config, agent_config, part, progress=None, checkpoint_every=1)
    (part / "summary.json").unlink()
    shutil.rmtree(part / "checkpoints" / "1024")
    shutil.rmtree(part / "checkpoints" / "768")
    resumed = driver.resume(part, devices=0, progress=None)
    assert [row["env_steps"] for row in resumed.history] == [256, 512, 768, 1024]
    # The other way, a one-device run's chunks of 25 iterations cannot be whole exchanges.
    one = pathlib.Path(run_dir + "-one")
    jaxrl.train(_pql(devices=1, total_steps=400, eval_every=200)[0], agent_config, one,
                progress=None, checkpoint_every=1)  # fmt: skip
    shutil.rmtree(one / "checkpoints" / "400")
    (one / "summary.json").unlink()
    try:
        driver.resume(one, devices=2, progress=None)
    except driver.ResumeError as error:
        assert "chunks are 200 env steps (25 iterations)" in str(error), error
        assert "whole exchanges of split_every 8" in str(error), error
    else:
        raise AssertionError("a one-device run resumed over a split")
    print("alone ok")


def refused() -> None:
    """Settings a split cannot take are refused by name, before compiling."""
    config, agent_config = _pql()
    cases = [
        (lambda: jaxrl.train(config, agent_config, seeds=2, progress=None), "--seeds / --vmap"),
        (
            lambda: make_train(dataclasses.replace(config, acting_lag=4), pql.make()),
            "acting_lag 4 with an actor/learner split",
        ),
        (
            lambda: make_train(dataclasses.replace(config, devices=3, num_envs=9), pql.make()),
            "num_envs 9 does not divide over 2 learner device",
        ),
    ]
    for call, message in cases:
        try:
            call()
        except ConfigError as error:
            assert message in str(error), (message, str(error))
        else:
            raise AssertionError(f"not refused: {message}")
    print("refused ok")


def main(argv: list[str]) -> int:
    case, *args = argv
    if case == "all":  # one process for every check (each start costs seconds)
        for check in (schedule, layout, refused):
            check()
        resume(args[0] + "-resume")
        alone(args[0] + "-alone")
        return 0
    cases = {"schedule": schedule, "layout": layout, "resume": resume, "alone": alone}
    cases["refused"] = refused
    cases[case](*args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
