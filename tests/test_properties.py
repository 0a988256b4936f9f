"""Property tests (hypothesis): the replay buffer and the observation normaliser against plain
numpy records, over any sizes, sequences of adds and splits of the data.

- Replay: after any number of adds into any capacity (wrapping any number of times), the
  buffer holds exactly the newest `capacity` loop iterations in order; `sample` returns only
  written rows, each shard's block from its own envs; `sample_n_step` returns, for each drawn
  start, the n-step return of that env's next steps computed by hand (stopping after the
  step that ended the episode), its last step's next observation and termination, and the
  discount gamma ** steps; starts are only where all n steps are written.
- Normaliser: merging the same data in any split of batches gives numpy's mean and variance
  of all of it.

Rows carry ids (iteration * 100 + env), so a sampled row says where it came from.
"""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl import normalization, replay
from jaxrl.types import Transition

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)
# Compiled once per shape (hypothesis draws few distinct ones), not op by op.
add = jax.jit(replay.add)
sample = jax.jit(replay.sample, static_argnums=(2, 3))
sample_n_step = jax.jit(replay.sample_n_step, static_argnums=(2, 3, 5))
update = jax.jit(normalization.update)


def _record(adds: int, envs: int, seed: int, done_rate: float):
    """What the loop would have stored: per iteration and env an id, a reward, flags."""
    rng = np.random.default_rng(seed)
    ids = (100 * np.arange(adds)[:, None] + np.arange(envs)[None]).astype(np.float32)
    reward = rng.normal(size=(adds, envs)).astype(np.float32)
    done = (rng.uniform(size=(adds, envs)) < done_rate).astype(np.float32)
    terminated = done * (rng.uniform(size=(adds, envs)) < 0.5)
    return ids, reward, done, terminated


def _fill(capacity: int, envs: int, ids, reward, done, terminated) -> replay.ReplayBuffer:
    example = Transition(
        obs=jnp.zeros(1),
        action=jnp.zeros(1),
        reward=jnp.zeros(()),
        next_obs=jnp.zeros(1),
        terminated=jnp.zeros(()),
        done=jnp.zeros(()),
    )
    buffer = replay.init(example, capacity, envs)
    for t in range(len(ids)):
        buffer = add(
            buffer,
            Transition(
                obs=jnp.asarray(ids[t])[:, None],
                action=jnp.asarray(ids[t])[:, None],
                reward=jnp.asarray(reward[t]),
                next_obs=jnp.asarray(ids[t] + 0.5)[:, None],  # id + 0.5: this step's next obs
                terminated=jnp.asarray(terminated[t]),
                done=jnp.asarray(done[t]),
            ),
        )
    return buffer


sizes = st.tuples(
    st.sampled_from([1, 2, 3, 5]),  # capacity (loop iterations)
    st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2), (3, 3), (4, 4)]),  # (envs, shards)
    st.integers(0, 20),  # adds
    st.integers(0, 2**16),  # seed
)


@SETTINGS
@given(sizes)
def test_buffer_keeps_the_newest_iterations_in_order(case):
    capacity, (envs, _), adds, seed = case
    record = _record(adds, envs, seed, 0.2)
    buffer = _fill(capacity, envs, *record)
    held = min(adds, capacity)
    assert int(buffer.size) == held and int(buffer.rows) == held * envs
    assert int(buffer.position) == adds % capacity
    obs = np.asarray(buffer.data.obs)[..., 0]
    for age in range(held):  # slot of the iteration `age` steps before the newest
        slot = (adds - 1 - age) % capacity
        np.testing.assert_array_equal(obs[slot], record[0][adds - 1 - age])


@SETTINGS
@given(sizes, st.sampled_from([1, 3]), st.integers(0, 2**16))
def test_sample_returns_written_rows_each_shard_its_own_envs(case, blocks, key):
    capacity, (envs, shards), adds, seed = case
    if adds == 0:
        return
    record = _record(adds, envs, seed, 0.2)
    buffer = _fill(capacity, envs, *record)
    batch = blocks * shards
    rows = sample(buffer, jax.random.PRNGKey(key), (2, batch), shards)
    ids = np.asarray(rows.obs)[..., 0].astype(int)  # [2, batch]
    written = set(record[0][max(adds - capacity, 0) :].astype(int).ravel())
    assert set(ids.ravel()) <= written
    per_shard = envs // shards
    env_of = ids % 100
    for s in range(shards):  # block s of every batch: shard s's envs only
        block = env_of[:, s * blocks : (s + 1) * blocks]
        assert ((block // per_shard) == s).all(), (env_of, s)
    np.testing.assert_array_equal(np.asarray(rows.next_obs)[..., 0], ids + 0.5)


@SETTINGS
@given(
    sizes,
    st.integers(1, 4),  # n_step
    st.sampled_from([0.0, 0.3, 1.0]),  # done rate
    st.integers(0, 2**16),
)
def test_n_step_returns_match_a_hand_computed_walk(case, n_step, done_rate, key):
    capacity, (envs, shards), adds, seed = case
    if min(adds, capacity) < n_step:  # the loop samples only once n steps are written
        return
    gamma = 0.9
    ids, reward, done, terminated = _record(adds, envs, seed, done_rate)
    buffer = _fill(capacity, envs, ids, reward, done, terminated)
    batch = 2 * shards
    rows = sample_n_step(buffer, jax.random.PRNGKey(key), batch, n_step, gamma, shards)
    got = jax.tree.map(np.asarray, rows)
    for i, start in enumerate(got.obs[:, 0].astype(int)):
        t, env = divmod(start, 100)
        assert adds - capacity <= t <= adds - n_step, (t, adds, capacity, n_step)
        assert env // (envs // shards) == i // (batch // shards)  # its shard's env
        total, steps = 0.0, 0
        for j in range(n_step):
            total += gamma**j * reward[t + j, env]
            steps = j + 1
            if done[t + j, env]:
                break
        last = t + steps - 1
        np.testing.assert_allclose(got.reward[i], total, rtol=1e-5, atol=1e-5)
        assert got.next_obs[i, 0] == ids[last, env] + 0.5
        assert got.terminated[i] == terminated[last, env]
        np.testing.assert_allclose(got.discount[i], gamma**steps, rtol=1e-6)
        assert got.action[i, 0] == ids[t, env]


@SETTINGS
@given(
    st.integers(1, 4),  # observation size
    st.lists(st.sampled_from([1, 2, 7, 16]), min_size=1, max_size=6),  # batch sizes, in order
    st.integers(0, 2**16),
    st.sampled_from([1e-2, 1.0, 1e3]),  # scale
)
def test_normaliser_matches_numpy_on_any_split(size, splits, seed, scale):
    rng = np.random.default_rng(seed)
    data = (rng.normal(size=(sum(splits), size)) * scale + scale).astype(np.float32)
    stats = normalization.init(size)
    start = 0
    for n in splits:
        stats = update(stats, jnp.asarray(data[start : start + n]))
        start += n
    expected_mean = data.astype(np.float64).mean(0)
    expected_var = data.astype(np.float64).var(0)
    assert float(stats.count) == len(data)
    np.testing.assert_allclose(stats.mean, expected_mean, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_allclose(stats.var, expected_var, rtol=1e-3, atol=1e-5 * scale**2)
