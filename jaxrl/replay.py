"""Device-resident replay ring buffer as pure functions: init / add / sample / sample_n_step.

Written here rather than taken from Brax (`brax.training.replay_buffers`) because Brax's
UniformSamplingQueue flattens every transition into one float row, rolls the whole buffer when it
overflows (O(capacity) per insert) and keeps sampling keys outside the state; this one writes the
N new rows in place (O(N) dynamic update at a wrapping slot), keeps pytree structure and dtypes,
and samples only written slots. Donate the carry that holds it (the training loop does) and XLA
updates it in place.

Layout: every leaf is [capacity, num_envs, ...], one time slot per loop iteration holding one
row per env, so a row's next step is the same env's one slot later (n-step returns follow
it). Over several devices (`jaxrl.sharding`) the env axis is split: with `shards` S, each
device keeps the rows of its num_envs / S envs and draws its share of every batch from them
alone, as a gather batched over the S shards, which XLA partitions without communication.
One shard (S = 1) is the plain uniform buffer.
"""

from __future__ import annotations

import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import Batch


@flax.struct.dataclass
class ReplayBuffer:
    data: Any  # pytree of arrays with leading axes [capacity, num_envs]
    position: jax.Array  # int32, next time slot to write
    size: jax.Array  # int32, number of written time slots (<= capacity)

    @property
    def capacity(self) -> int:
        """Time slots (loop iterations) held; rows = capacity * num_envs."""
        return jax.tree.leaves(self.data)[0].shape[0]

    @property
    def num_envs(self) -> int:
        return jax.tree.leaves(self.data)[0].shape[1]

    @property
    def rows(self) -> jax.Array:
        """Written rows (transitions), all envs together."""
        return self.size * self.num_envs


def init(example: Any, capacity: int, num_envs: int) -> ReplayBuffer:
    """An empty buffer shaped like `example` (one row, no leading axis) for `capacity` time
    slots of `num_envs` rows each."""
    if capacity < 1 or num_envs < 1:
        raise ValueError(f"replay capacity and num_envs must be >= 1, got {capacity}, {num_envs}")
    data = jax.tree.map(
        lambda x: jnp.zeros((capacity, num_envs) + jnp.shape(x), jnp.asarray(x).dtype), example
    )
    zero = jnp.zeros((), jnp.int32)
    return ReplayBuffer(data=data, position=zero, size=zero)


def bytes_per_transition(buffer: ReplayBuffer) -> int:
    """Bytes one stored transition (one env's row) takes, all fields together."""
    return sum(x.dtype.itemsize * math.prod(x.shape[2:]) for x in jax.tree.leaves(buffer.data))


def add(buffer: ReplayBuffer, rows: Any, write: jax.Array | None = None) -> ReplayBuffer:
    """Writes one row per env (leading axis [num_envs]) at the write slot, wrapping around.
    `write` (a bool, traced): where false, the buffer stays as it is (its slot rewritten with
    the rows it holds: in place, where a `lax.cond` around `add` could copy the buffer)."""
    count = jax.tree.leaves(rows)[0].shape[0]
    if count != buffer.num_envs:
        raise ValueError(f"add takes one row per env ({buffer.num_envs}), got {count} rows")

    def one(store, new):
        new = new.astype(store.dtype)
        if write is not None:
            new = jnp.where(write, new, store[buffer.position])
        return store.at[buffer.position].set(new)

    step = 1 if write is None else write.astype(buffer.position.dtype)
    return buffer.replace(
        data=jax.tree.map(one, buffer.data, rows),
        position=(buffer.position + step) % buffer.capacity,
        size=jnp.minimum(buffer.size + step, buffer.capacity),
    )


def _gather(data: Any, slot: jax.Array, env: jax.Array, shards: int) -> Any:
    """Rows at (`slot`, `env`) [S, M] (`env` counted within each shard) as leaves [S, M, ...]:
    shard s reads only its own envs, a gather batched over the shard axis."""

    def one(store):
        capacity, num_envs = store.shape[:2]
        local = store.reshape((capacity, shards, num_envs // shards) + store.shape[2:])
        return jax.vmap(lambda part, t, e: part[t, e], in_axes=(1, 0, 0))(local, slot, env)

    return jax.tree.map(one, data)


def _split(rows: Any, batch_shape: tuple[int, ...], shards: int) -> Any:
    """[S, M, ...] rows as `batch_shape` [..., B]: the last axis made of the S shards' blocks,
    so every batch along it (one update's) spreads over all devices."""
    *lead, last = batch_shape

    def one(x):
        x = x.reshape((shards, *lead, last // shards) + x.shape[2:])
        return jnp.moveaxis(x, 0, len(lead)).reshape((*lead, last) + x.shape[len(lead) + 2 :])

    return jax.tree.map(one, rows)


def _draws(key: jax.Array, shards: int, batch_shape: tuple[int, ...], low, high) -> jax.Array:
    """Integers uniform in [low, high), [S, M] with M the per-shard share of the batch."""
    count = math.prod(batch_shape)
    if batch_shape[-1] % shards:
        raise ValueError(f"a batch of {batch_shape[-1]} rows does not split over {shards} shards")
    return jax.random.randint(key, (shards, count // shards), low, high)


def sample(
    buffer: ReplayBuffer, key: jax.Array, batch_shape: int | tuple[int, ...], shards: int = 1
) -> Any:
    """Draws rows uniformly, with replacement, from the written slots only: `batch_shape`
    (e.g. [updates, batch_size]); with `shards`, each shard's equal part of the last axis
    from that shard's envs."""
    batch_shape = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
    slot, env = _slots(buffer, key, batch_shape, shards)
    return _split(_gather(buffer.data, slot, env, shards), batch_shape, shards)


def _slots(buffer: ReplayBuffer, key, batch_shape: tuple[int, ...], shards: int):
    """Uniform draws over the written slots as (slot, env within its shard), each [S, M]."""
    per_shard = buffer.num_envs // shards
    index = _draws(key, shards, batch_shape, 0, jnp.maximum(buffer.size, 1) * per_shard)
    return index // per_shard, index % per_shard


def sample_with_next_action(
    buffer: ReplayBuffer, key: jax.Array, batch_shape: int | tuple[int, ...], shards: int = 1
) -> tuple[Any, jax.Array, jax.Array]:
    """`sample`'s rows (the same draws for the same key), with the action the same env took at
    its next step ([..., A], ReBRAC's critic penalty reads it) and where that action is known
    ([...], 1.0): not where the row ended its episode (the next slot holds another episode's
    action) nor at the newest slot (its next step is not written yet; in a full ring the slot
    after it is the oldest)."""
    batch_shape = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
    slot, env = _slots(buffer, key, batch_shape, shards)
    rows = _gather(buffer.data, slot, env, shards)
    next_action = _gather(buffer.data.action, (slot + 1) % buffer.capacity, env, shards)
    newest = (buffer.position - 1) % buffer.capacity
    known = (1.0 - rows.done) * (slot != newest)
    split = lambda x: _split(x, batch_shape, shards)  # noqa: E731
    return split(rows), split(next_action), split(known.astype(rows.done.dtype))


def sample_n_step(
    buffer: ReplayBuffer,
    key: jax.Array,
    batch_shape: int | tuple[int, ...],
    n_step: int,
    gamma: float,
    shards: int = 1,
) -> Batch:
    """Draws n-step returns from a buffer of `Transition` rows (`batch_shape` and `shards` as
    in `sample`). Each return sums gamma^j r_j over up to `n_step` steps of one env, stopping
    after the step that ended the episode; `next_obs`/`terminated` come from the last step
    summed and `discount` is gamma ** (steps summed). Starts are drawn only where all n_step
    steps are written.
    """
    batch_shape = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
    capacity, per_shard = buffer.capacity, buffer.num_envs // shards
    reach = (n_step - 1) * per_shard
    # Age 0 is the newest row of the shard; a start needs (n_step - 1) newer slots.
    written = jnp.maximum(buffer.size * per_shard, reach + 1)
    age = _draws(key, shards, batch_shape, reach, written)
    env = per_shard - 1 - age % per_shard
    first = (buffer.position - 1 - age // per_shard) % capacity  # [S, M]
    slots = (first[..., None] + jnp.arange(n_step)) % capacity  # [S, M, n]
    data = buffer.data
    steps_of = lambda leaf: _gather(leaf, slots, env[..., None], shards)  # noqa: E731
    reward, done = steps_of(data.reward), steps_of(data.done)
    # alive[..., j] = 1 while no earlier step of the n ended the episode.
    before = jnp.concatenate([jnp.ones_like(done[..., :1]), 1.0 - done[..., :-1]], -1)
    alive = jnp.cumprod(before, -1)
    steps = alive.sum(-1).astype(jnp.int32)  # in [1, n_step]
    last = (first + steps - 1) % capacity
    powers = gamma ** jnp.arange(n_step, dtype=jnp.float32)
    terminated = _gather(data.terminated, last, env, shards)
    rows = Batch(
        obs=_gather(data.obs, first, env, shards),
        action=_gather(data.action, first, env, shards),
        reward=(alive * reward * powers).sum(-1),
        next_obs=_gather(data.next_obs, last, env, shards),
        terminated=terminated,
        discount=gamma ** steps.astype(jnp.float32),
        truncated=_gather(data.done, last, env, shards) - terminated,
    )
    return _split(rows, batch_shape, shards)
