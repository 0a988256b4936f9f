import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import replay
from jaxrl.types import Transition


def _rows(step, num_envs=3):
    """One row per env of loop iteration `step`: obs (step, -env), step * 10 + env."""
    env = jnp.arange(num_envs, dtype=jnp.float32)
    step_id = (10 * step + env).astype(jnp.int32)
    return {"obs": jnp.stack([jnp.full(num_envs, float(step)), -env], axis=1), "step": step_id}


def _empty(capacity, num_envs=3):
    example = {"obs": jnp.zeros(2), "step": jnp.zeros((), jnp.int32)}
    return replay.init(example, capacity, num_envs)


def test_init_shapes_and_dtypes():
    buffer = _empty(10)
    chex.assert_shape(buffer.data["obs"], (10, 3, 2))  # [time slots, envs, ...]
    chex.assert_type(buffer.data["obs"], jnp.float32)
    chex.assert_type(buffer.data["step"], jnp.int32)
    assert buffer.capacity == 10 and buffer.num_envs == 3 and int(buffer.size) == 0


def test_add_wraps_around_and_overwrites_oldest():
    buffer = _empty(3)
    for step in range(4):  # slots 0, 1, 2, then 0 again
        buffer = replay.add(buffer, _rows(step))
    np.testing.assert_array_equal(buffer.data["step"], [[30, 31, 32], [10, 11, 12], [20, 21, 22]])
    np.testing.assert_array_equal(buffer.data["obs"][:, :, 0], [[3] * 3, [1] * 3, [2] * 3])
    assert int(buffer.position) == 1 and int(buffer.size) == 3 and int(buffer.rows) == 9


def test_sample_draws_only_written_slots():
    buffer = replay.add(replay.add(_empty(1000), _rows(7)), _rows(8))  # slots 0 and 1 only
    batch = replay.sample(buffer, jax.random.PRNGKey(0), 4096)
    chex.assert_shape(batch["obs"], (4096, 2))
    assert set(np.asarray(batch["step"]).tolist()) == {70, 71, 72, 80, 81, 82}
    shaped = replay.sample(buffer, jax.random.PRNGKey(0), (4, 1024))  # [updates, batch]
    chex.assert_shape(shaped["obs"], (4, 1024, 2))
    np.testing.assert_array_equal(shaped["step"].reshape(-1), batch["step"])


def test_sharded_sampling_reads_each_shards_own_envs_only():
    # 4 envs in 2 shards: envs 0, 1 and envs 2, 3. Each half of every batch row of the
    # [updates, batch] draw comes from one shard's envs, uniformly over its written rows.
    buffer = _empty(8, num_envs=4)
    for step in range(3):
        buffer = replay.add(buffer, _rows(step, num_envs=4))
    batch = replay.sample(buffer, jax.random.PRNGKey(1), (3, 2000), shards=2)
    env = np.asarray(batch["step"]) % 10
    assert set(env[:, :1000].ravel().tolist()) == {0, 1}
    assert set(env[:, 1000:].ravel().tolist()) == {2, 3}
    counts = np.bincount(np.asarray(batch["step"]).ravel(), minlength=33)
    written = [10 * t + e for t in range(3) for e in range(4)]
    assert counts[written].min() > 350  # 500 expected per row
    assert counts.sum() == counts[written].sum()
    with pytest.raises(ValueError, match="does not split over 2 shards"):
        replay.sample(buffer, jax.random.PRNGKey(1), (3, 7), shards=2)


def test_add_is_in_place_when_donated():
    buffer = replay.add(_empty(64), _rows(0))
    add = jax.jit(replay.add, donate_argnums=0)
    before = buffer.data["obs"].unsafe_buffer_pointer()
    buffer = add(buffer, _rows(1))
    assert buffer.data["obs"].unsafe_buffer_pointer() == before
    np.testing.assert_array_equal(buffer.data["step"][:2], [[0, 1, 2], [10, 11, 12]])


def test_add_rejects_rows_not_one_per_env():
    with pytest.raises(ValueError, match="one row per env \\(3\\), got 4"):
        replay.add(_empty(2), _rows(0, num_envs=4))


def _write_iterations(capacity, rewards, dones):
    """len(rewards[0]) envs, one row per env per iteration (`capacity` iterations kept);
    obs = (iteration, env), next_obs = (iteration + 1, env)."""
    num_envs = len(rewards[0])
    example = Transition(jnp.zeros(2), jnp.zeros(1), 0.0, jnp.zeros(2), 0.0, 0.0)
    buffer = replay.init(jax.tree.map(jnp.asarray, example), capacity, num_envs)
    for t, (reward, done) in enumerate(zip(rewards, dones, strict=True)):
        env = jnp.arange(float(num_envs))
        buffer = replay.add(
            buffer,
            Transition(
                obs=jnp.stack([jnp.full(num_envs, t), env], 1),
                action=jnp.zeros((num_envs, 1)),
                reward=jnp.asarray(reward, jnp.float32),
                next_obs=jnp.stack([jnp.full(num_envs, t + 1), env], 1),
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
        4, [[1, 10], [2, 20], [3, 30], [4, 40]], [[0, 0], [0, 1], [0, 0], [0, 0]]
    )
    batch = replay.sample_n_step(buffer, jax.random.PRNGKey(0), 512, n_step=3, gamma=0.5)
    got = _by_start(batch)
    assert set(got) == {(0, 0), (0, 1), (1, 0), (1, 1)}  # starts with 2 newer steps written
    assert got[(0, 0)] == (1 + 0.5 * 2 + 0.25 * 3, (3, 0), 0.0, 0.125)
    assert got[(1, 0)] == (2 + 0.5 * 3 + 0.25 * 4, (4, 0), 0.0, 0.125)
    assert got[(0, 1)] == (10 + 0.5 * 20, (2, 1), 1.0, 0.25)  # stops at the termination
    assert got[(1, 1)] == (20.0, (2, 1), 1.0, 0.5)


def test_n_step_follows_each_env_across_the_wrap():
    rewards = [[100 * t, 100 * t + 1] for t in range(6)]
    buffer = _write_iterations(4, rewards, [[0, 0]] * 6)  # iterations 4 and 5 overwrote 0 and 1
    got = _by_start(replay.sample_n_step(buffer, jax.random.PRNGKey(1), 512, 3, 1.0))
    assert set(got) == {(2, 0), (2, 1), (3, 0), (3, 1)}
    for (t, env), (reward, next_obs, _, discount) in got.items():
        assert reward == sum(100 * k + env for k in (t, t + 1, t + 2))
        assert next_obs == (t + 3, env) and discount == 1.0


def test_sampling_after_the_wrap_reaches_every_slot_and_only_live_rows():
    buffer = _empty(4)
    for step in range(6):  # slots 0 and 1 overwritten by steps 4 and 5: steps 2..5 live
        buffer = replay.add(buffer, _rows(step))
    assert int(buffer.size) == 4 and int(buffer.position) == 2
    steps = np.asarray(replay.sample(buffer, jax.random.PRNGKey(3), 6000)["step"])
    live = [10 * t + e for t in range(2, 6) for e in range(3)]
    assert set(steps.tolist()) == set(live)
    assert np.bincount(steps, minlength=60)[live].min() > 380  # uniform: 500 expected per row
    # n-step starts after the wrap: every start with 2 newer steps of its env is drawn.
    rewards = [[10 * t, 10 * t + 1] for t in range(7)]
    buffer = _write_iterations(4, rewards, [[0, 0]] * 7)  # 4 iterations kept: t = 3..6
    got = _by_start(replay.sample_n_step(buffer, jax.random.PRNGKey(4), 512, 3, 1.0))
    assert set(got) == {(3, 0), (3, 1), (4, 0), (4, 1)}


def test_sharded_n_step_returns_by_hand_and_each_shards_own_envs():
    # 4 envs in 2 shards, 5 iterations in 4 slots (iteration 0 overwritten); env e rewards
    # 100 t + e at iteration t, and env 2 ends its episode at iteration 2.
    rewards = [[100 * t + e for e in range(4)] for t in range(5)]
    dones = [[0, 0, 1 if t == 2 else 0, 0] for t in range(5)]
    buffer = _write_iterations(4, rewards, dones)
    batch = replay.sample_n_step(buffer, jax.random.PRNGKey(5), (2, 600), 3, 0.5, shards=2)
    env = np.asarray(batch.obs[..., 1])
    assert set(env[:, :300].ravel().tolist()) == {0, 1}
    assert set(env[:, 300:].ravel().tolist()) == {2, 3}
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
    got = _by_start(flat)
    assert set(got) == {(t, e) for t in (1, 2) for e in range(4)}
    for (t, e), (reward, next_obs, terminated, discount) in got.items():
        if (t, e) == (1, 2):  # iterations 1 and 2, stopped at the end of the episode
            assert (reward, next_obs, terminated, discount) == (102 + 0.5 * 202, (3, 2), 1, 0.25)
        elif (t, e) == (2, 2):
            assert (reward, next_obs, terminated, discount) == (202, (3, 2), 1, 0.5)
        else:
            expected = sum(0.5**k * (100 * (t + k) + e) for k in range(3))
            assert (reward, next_obs, terminated, discount) == (expected, (t + 3, e), 0, 0.125)


def test_bytes_per_transition_counts_every_field_of_one_row():
    example = {"obs": jnp.zeros((3,)), "next_obs": jnp.zeros((3,)), "action": jnp.zeros((1,))}
    example |= {"reward": jnp.zeros(()), "terminated": jnp.zeros(()), "done": jnp.zeros(())}
    assert replay.bytes_per_transition(replay.init(example, 10, 4)) == 4 * (3 + 3 + 1 + 3)
    half = example | {k: example[k].astype(jnp.bfloat16) for k in ("obs", "next_obs")}
    assert replay.bytes_per_transition(replay.init(half, 10, 4)) == 2 * 6 + 4 * 4


@pytest.mark.parametrize("shards", [1, 2])
def test_next_actions_follow_each_env_and_are_unknown_at_episode_ends_and_the_newest_slot(
    shards,
):
    """ReBRAC's draw: every row with the action its env took one iteration later, across the
    ring's wrap, known except where the row ended its episode or is the newest write (whose
    next slot holds the oldest rows); the rows themselves are `sample`'s for the same key."""
    envs, capacity = 4, 5

    def rows(step):
        env = jnp.arange(envs, dtype=jnp.float32)
        ident = 10.0 * step + env  # the action names its (step, env)
        done = jnp.where((step == 3) & (env == 1), 1.0, 0.0)
        zeros = jnp.zeros(envs)
        return Transition(
            obs=ident[:, None], action=ident[:, None], reward=ident, next_obs=ident[:, None],
            terminated=zeros, done=done,
        )  # fmt: skip

    buffer = replay.init(jax.tree.map(lambda x: x[0], rows(0)), capacity, envs)
    for step in range(7):  # slots hold steps 5, 6, 2, 3, 4; position 2
        buffer = replay.add(buffer, rows(step))
    key = jax.random.PRNGKey(3)
    drawn, following, known = replay.sample_with_next_action(buffer, key, (2, 400), shards)
    plain = replay.sample(buffer, key, (2, 400), shards)
    jax.tree.map(np.testing.assert_array_equal, drawn, plain)
    ident = np.asarray(drawn.action[..., 0]).ravel()
    step, env = ident // 10, ident % 10
    known, following = np.asarray(known).ravel(), np.asarray(following[..., 0]).ravel()
    expected_known = ~(((step == 3) & (env == 1)) | (step == 6))
    np.testing.assert_array_equal(known, expected_known.astype(np.float32))
    np.testing.assert_array_equal(following[expected_known], ident[expected_known] + 10)
    assert set(step.tolist()) == {2, 3, 4, 5, 6} and not expected_known.all()
