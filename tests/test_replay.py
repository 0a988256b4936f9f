import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import replay
from jaxrl.types import Transition


def _rows(start, count):
    values = jnp.arange(start, start + count, dtype=jnp.float32)
    return {"obs": jnp.stack([values, -values], axis=1), "step": values.astype(jnp.int32)}


def _empty(capacity):
    return replay.init({"obs": jnp.zeros(2), "step": jnp.zeros((), jnp.int32)}, capacity)


def test_init_shapes_and_dtypes():
    buffer = _empty(10)
    chex.assert_shape(buffer.data["obs"], (10, 2))
    chex.assert_type(buffer.data["obs"], jnp.float32)
    chex.assert_type(buffer.data["step"], jnp.int32)
    assert buffer.capacity == 10 and int(buffer.size) == 0


def test_add_wraps_around_and_overwrites_oldest():
    buffer = _empty(5)
    buffer = replay.add(buffer, _rows(0, 3))  # slots 0..2
    buffer = replay.add(buffer, _rows(3, 3))  # slots 3, 4, then 0
    np.testing.assert_array_equal(buffer.data["step"], [5, 1, 2, 3, 4])
    np.testing.assert_array_equal(buffer.data["obs"][:, 1], [-5, -1, -2, -3, -4])
    assert int(buffer.position) == 1 and int(buffer.size) == 5


def test_sample_draws_only_written_slots():
    buffer = replay.add(_empty(1000), _rows(7, 3))  # only slots 0..2 hold data: steps 7, 8, 9
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 4096)
    chex.assert_shape(batch["obs"], (4096, 2))
    assert set(np.asarray(batch["step"]).tolist()) == {7, 8, 9}


def test_add_is_in_place_when_donated():
    buffer = replay.add(_empty(64), _rows(0, 4))
    add = jax.jit(replay.add, donate_argnums=0)
    before = buffer.data["obs"].unsafe_buffer_pointer()
    buffer = add(buffer, _rows(4, 4))
    assert buffer.data["obs"].unsafe_buffer_pointer() == before
    np.testing.assert_array_equal(buffer.data["step"][:8], np.arange(8))


def test_add_rejects_more_rows_than_capacity():
    with pytest.raises(ValueError, match="capacity 2"):
        replay.add(_empty(2), _rows(0, 3))


def _write_iterations(capacity, rewards, dones):
    """Two envs, one row per env per iteration; obs = (iteration, env), next_obs = (it + 1, env)."""
    example = Transition(jnp.zeros(2), jnp.zeros(1), 0.0, jnp.zeros(2), 0.0, 0.0)
    buffer = replay.init(jax.tree.map(jnp.asarray, example), capacity)
    for t, (reward, done) in enumerate(zip(rewards, dones, strict=True)):
        env = jnp.arange(2.0)
        buffer = replay.add(
            buffer,
            Transition(
                obs=jnp.stack([jnp.full(2, t), env], 1),
                action=jnp.zeros((2, 1)),
                reward=jnp.asarray(reward, jnp.float32),
                next_obs=jnp.stack([jnp.full(2, t + 1), env], 1),
                terminated=jnp.asarray(done, jnp.float32),
                done=jnp.asarray(done, jnp.float32),
            ),
        )
    return buffer


def _by_start(batch):
    out = {}
    for i in range(batch.obs.shape[0]):
        start = tuple(int(v) for v in batch.obs[i])
        out[start] = (
            float(batch.reward[i]),
            tuple(int(v) for v in batch.next_obs[i]),
            float(batch.terminated[i]),
            float(batch.discount[i]),
        )
    return out


def test_n_step_returns_by_hand_stop_at_episode_end():
    # env 0 rewards 1, 2, 3, 4; env 1 rewards 10, 20, 30, 40 and terminates at its 2nd step.
    buffer = _write_iterations(
        8, [[1, 10], [2, 20], [3, 30], [4, 40]], [[0, 0], [0, 1], [0, 0], [0, 0]]
    )
    batch = replay.sample_n_step(buffer, jax.random.PRNGKey(0), 512, n_step=3, stride=2, gamma=0.5)
    got = _by_start(batch)
    assert set(got) == {(0, 0), (0, 1), (1, 0), (1, 1)}  # starts with 2 newer steps written
    assert got[(0, 0)] == (1 + 0.5 * 2 + 0.25 * 3, (3, 0), 0.0, 0.125)
    assert got[(1, 0)] == (2 + 0.5 * 3 + 0.25 * 4, (4, 0), 0.0, 0.125)
    assert got[(0, 1)] == (10 + 0.5 * 20, (2, 1), 1.0, 0.25)  # stops at the termination
    assert got[(1, 1)] == (20.0, (2, 1), 1.0, 0.5)


def test_n_step_follows_each_env_across_the_wrap():
    rewards = [[100 * t, 100 * t + 1] for t in range(6)]
    buffer = _write_iterations(8, rewards, [[0, 0]] * 6)  # iterations 4 and 5 overwrote 0 and 1
    got = _by_start(replay.sample_n_step(buffer, jax.random.PRNGKey(1), 512, 3, 2, 1.0))
    assert set(got) == {(2, 0), (2, 1), (3, 0), (3, 1)}
    for (t, env), (reward, next_obs, _, discount) in got.items():
        assert reward == sum(100 * k + env for k in (t, t + 1, t + 2))
        assert next_obs == (t + 3, env) and discount == 1.0


def test_sampling_after_the_wrap_reaches_every_slot_and_only_live_rows():
    buffer = replay.add(_empty(10), _rows(0, 8))
    buffer = replay.add(buffer, _rows(8, 6))  # slots 8, 9, then 0..3 overwritten: steps 4..13
    assert int(buffer.size) == 10 and int(buffer.position) == 4
    steps = np.asarray(replay.sample(buffer, jax.random.PRNGKey(3), 4000)["step"])
    assert set(steps.tolist()) == set(range(4, 14))
    counts = np.bincount(steps - 4, minlength=10)
    assert counts.min() > 300  # uniform: 400 expected per slot
    # n-step starts after the wrap: every start with 2 newer steps of its env is drawn.
    rewards = [[10 * t, 10 * t + 1] for t in range(7)]
    buffer = _write_iterations(8, rewards, [[0, 0]] * 7)  # 4 iterations kept: t = 3..6
    got = _by_start(replay.sample_n_step(buffer, jax.random.PRNGKey(4), 512, 3, 2, 1.0))
    assert set(got) == {(3, 0), (3, 1), (4, 0), (4, 1)}
