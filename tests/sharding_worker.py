"""Checks of several devices, run by tests/test_sharding.py in a fresh process whose CPU is split
into 4 devices (XLA_FLAGS=--xla_force_host_platform_device_count=4 must be set before JAX
starts, which pytest's own process has already done). `python -m tests.sharding_worker CASE
[ARGS]`; exits 0 when every assertion held."""

from __future__ import annotations

import dataclasses
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

import jaxrl
from jaxrl import agents
from jaxrl.loops import make_train
from jaxrl.run import driver, resources
from jaxrl.run import state as run_state
from jaxrl.types import Batch

DEVICES = 4


def _config(algo="sac", **overrides):
    train = dict(
        env="classic/pendulum",
        algo=algo,
        num_envs=8,
        batch_size=32,
        updates_per_step=2,
        total_steps=1024,
        eval_every=512,
        learning_starts=256,
        buffer_size=2048,
        eval_envs=4,
    )
    if algo == "ppo":
        train.update(unroll_length=8, total_steps=1024)
    train.update(overrides)
    spec = agents.get(algo)
    agent = spec.config_cls(num_minibatches=4) if algo == "ppo" else spec.config_cls()
    if algo != "ppo":
        agent = dataclasses.replace(agent, actor_hidden=(16, 16), critic_hidden=(16, 16))
    return jaxrl.TrainConfig(**train), agent


def _trainer(algo="sac", **overrides):
    config, agent_config = _config(algo, **overrides)
    return make_train(config, agents.get(algo).make(agent_config))


def _spec(array) -> PartitionSpec:
    assert isinstance(array.sharding, NamedSharding), array.sharding
    return tuple(array.sharding.spec)


def layout(algo: str) -> None:
    """After a chunk of the driver's program: per-env arrays split over the 4 devices (each
    holding a quarter), replay rows kept on their env's device, everything learned
    replicated; the compiled chunk averages gradients and never gathers the replay buffer."""
    assert len(jax.devices()) == DEVICES
    trainer = _trainer(algo, devices=DEVICES)
    state = run_state.initial_state(trainer, None)
    shardings = resources.run_shardings(trainer, state)
    program = jax.jit(
        trainer.chunk, donate_argnums=0, out_shardings=(shardings, trainer.data.sharding())
    )
    hlo = program.lower(state).compile().as_text()
    state, metrics = program(state)
    num_envs = trainer.config.num_envs
    for leaf in jax.tree.leaves(state.env_state):
        if leaf.ndim and leaf.shape[0] == num_envs:
            assert _spec(leaf) == ("data",), leaf.sharding
            shards = {s.data.shape[0] for s in leaf.addressable_shards}
            assert shards == {num_envs // DEVICES}, shards
    for leaf in jax.tree.leaves(state.agent):
        assert leaf.sharding.is_fully_replicated, leaf.sharding
    for leaf in jax.tree.leaves(state.obs_stats) + [state.key, state.iteration]:
        assert leaf.sharding.is_fully_replicated
    collectives = re.findall(r" (all-gather|all-reduce|all-to-all)(?:-start)?\(", hlo)
    if getattr(state, "buffer", None) is not None:  # off-policy
        for leaf in jax.tree.leaves(state.buffer.data):
            assert _spec(leaf) == (None, "data"), leaf.sharding
            assert {s.data.shape[1] for s in leaf.addressable_shards} == {num_envs // DEVICES}
        # Sampling is local: nothing of the buffer's size ([slots, ...]) crosses devices.
        # (CrossQ's joint pass does gather its batch: it concatenates (s, a) and (s', a').)
        slots = str(state.buffer.capacity)
        for line in hlo.splitlines():
            match = re.search(r"= (.*?) (all-gather|all-to-all)(?:-start)?\(", line)
            if match:
                dims = re.findall(r"\[([\d,]*)\]", match.group(1))
                assert all(slots not in d.split(",") for d in dims), line
    # Gradients (and losses, statistics) are reduced across the devices.
    assert "all-reduce" in collectives
    for name, value in metrics.items():
        assert np.isfinite(np.asarray(value)).all(), name
    print("layout ok", algo, sorted(set(collectives)))


def one_device_is_unsharded(algo: str) -> None:
    """devices=1 (a mesh of one device) gives exactly the numbers of devices=0 (no mesh)."""
    results = []
    for devices in (0, 1):
        trainer = _trainer(algo, devices=devices)
        state = run_state.initial_state(trainer, None)
        chunk = jax.jit(trainer.chunk)
        rows = []
        for _ in range(2):
            state, metrics = chunk(state)
            rows.append(jax.device_get(metrics))
        results.append((rows, jax.device_get(state.agent)))
    (rows0, agent0), (rows1, agent1) = results
    for a, b in zip(rows0, rows1, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    jax.tree.map(np.testing.assert_array_equal, agent0, agent1)
    print("one device ok", algo)


def update_matches(algo: str) -> None:
    """One update on a batch split over the 4 devices (parameters replicated) equals the same
    update on one device: gradients averaged over the whole batch, CrossQ's BatchRenorm
    statistics those of the whole batch, to float precision."""
    trainer = _trainer(algo, devices=DEVICES)
    agent = trainer.agent
    rng = np.random.default_rng(0)
    key = jax.random.PRNGKey(3)
    state = jax.jit(trainer.init)(key)
    rows = 64
    batch = Batch(
        obs=jnp.asarray(rng.normal(size=(rows, 3)), jnp.float32),
        action=jnp.asarray(rng.uniform(-1, 1, size=(rows, 1)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=rows), jnp.float32),
        next_obs=jnp.asarray(rng.normal(size=(rows, 3)), jnp.float32),
        terminated=jnp.asarray(rng.uniform(size=rows) < 0.2, jnp.float32),
        discount=jnp.full(rows, 0.99, jnp.float32),
    )
    update = jax.jit(agent.update)
    alone = jax.device_get(update(state.agent, batch, key))
    data = trainer.data
    split = jax.device_put(batch, data.sharding(PartitionSpec("data")))
    placed = jax.device_put(state.agent, data.sharding())
    assert {s.data.shape[0] for s in split.obs.addressable_shards} == {rows // DEVICES}
    shared = update(placed, split, key)
    for leaf in jax.tree.leaves(shared[0]):
        assert leaf.sharding.is_fully_replicated

    def close(path, a, b):
        name = jax.tree_util.keystr(path)
        if algo == "crossq" and ".params" in name:
            # A bias that BatchRenorm then normalises away has a zero gradient up to float
            # noise, which Adam's first step turns into a full +-lr step of either sign; the
            # gradients themselves are compared through Adam's first moments (opt_state).
            return
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        tolerance = 1e-3 * np.abs(a).max(initial=0.0) + 1e-6
        assert np.abs(a - b).max(initial=0.0) <= tolerance, (name, a, b)

    jax.tree_util.tree_map_with_path(close, alone, jax.device_get(shared))
    print("update ok", algo)


def grid_and_resume(run_dir: str) -> None:
    """Seeds under vmap over 4 devices; the checkpoint resumes on one device and on two."""
    config, agent_config = _config("sac", devices=DEVICES, total_steps=1536)
    result = jaxrl.train(config, agent_config, run_dir, seeds=2, progress=None, checkpoint_every=1)
    assert len(result.history[-1]["eval_returns"]) == 2
    env_obs = result.state.env_state.obs
    assert _spec(env_obs) == (None, "data"), env_obs.sharding  # [seeds, envs, ...]
    # A run of 4 devices goes on on 2 (the state does not depend on the count).
    resumed = driver.resume(run_dir, total_steps=2048, devices=2, progress=None)
    assert resumed.history[-1]["env_steps"] == 2048
    assert _spec(resumed.state.env_state.obs) == (None, "data")
    assert resumed.state.env_state.obs.sharding.mesh.size == 2
    print("grid and resume ok")


def distributed(process_id: str, port: str, run_dir: str) -> None:
    """One of two processes (2 CPU devices each) training one SAC run over all 4 devices; prints
    a digest of its parameters, which the test compares between the processes."""
    import hashlib

    from jaxrl import sharding

    assert sharding.initialize_distributed(f"localhost:{port}", 2, int(process_id))
    assert jax.process_count() == 2 and len(jax.devices()) == 4, jax.devices()
    assert len(jax.local_devices()) == 2
    config, agent_config = _config("sac", devices="all")
    result = jaxrl.train(config, agent_config, run_dir, progress=None, checkpoint_every=1)
    assert result.state.env_state.obs.sharding.mesh.size == 4
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(result.state.agent):
        assert leaf.is_fully_replicated
        digest.update(np.asarray(leaf.addressable_data(0)).tobytes())
    rows = [(r["env_steps"], r["eval_return"]) for r in result.history]
    print("process", process_id, "digest", digest.hexdigest(), "rows", rows)


def main(argv: list[str]) -> int:
    """CASE ARG...: the case once per argument (an algorithm, or the run folder)."""
    case, *args = argv
    if case == "programs":  # one process for the program checks (each start costs seconds)
        for algo in ("sac", "crossq", "ppo"):
            layout(algo)
        for algo in ("sac", "crossq"):
            update_matches(algo)
        one_device_is_unsharded("sac")
        return 0
    check = {
        "layout": layout,
        "one_device": one_device_is_unsharded,
        "update": update_matches,
        "grid_resume": grid_and_resume,
    }.get(case)
    if check is None:  # one call with every argument
        {"distributed": distributed}[case](*args)
        return 0
    for arg in args:
        check(arg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
