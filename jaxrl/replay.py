"""Device-resident replay ring buffer as pure functions: init / add / sample.

Written here rather than taken from Brax (`brax.training.replay_buffers`) because Brax's
UniformSamplingQueue flattens every transition into one float row, rolls the whole buffer when it
overflows (O(capacity) per insert) and keeps sampling keys outside the state; this one writes the
N new rows in place (O(N) scatter at a wrapping position), keeps pytree structure and dtypes, and
samples only written slots. Donate the carry that holds it (the training loop does) and XLA
updates it in place.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl.types import Batch, Transition


@flax.struct.dataclass
class ReplayBuffer:
    data: Any  # pytree of arrays with leading axis [capacity]
    position: jax.Array  # int32, next slot to write
    size: jax.Array  # int32, number of written slots (<= capacity)

    @property
    def capacity(self) -> int:
        return jax.tree.leaves(self.data)[0].shape[0]


def init(example: Any, capacity: int) -> ReplayBuffer:
    """An empty buffer shaped like `example` (one row, no leading axis) times `capacity`."""
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    data = jax.tree.map(
        lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype), example
    )
    zero = jnp.zeros((), jnp.int32)
    return ReplayBuffer(data=data, position=zero, size=zero)


def add(buffer: ReplayBuffer, rows: Any) -> ReplayBuffer:
    """Writes rows (leading axis [N], N <= capacity) at the write position, wrapping around."""
    capacity = buffer.capacity
    count = jax.tree.leaves(rows)[0].shape[0]
    if count > capacity:
        raise ValueError(f"cannot add {count} rows to a buffer of capacity {capacity}")
    index = (buffer.position + jnp.arange(count)) % capacity
    data = jax.tree.map(
        lambda store, new: store.at[index].set(new.astype(store.dtype)), buffer.data, rows
    )
    return buffer.replace(
        data=data,
        position=(buffer.position + count) % capacity,
        size=jnp.minimum(buffer.size + count, capacity),
    )


def sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
    """Draws `batch_size` rows uniformly, with replacement, from the written slots only."""
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda store: store[index], buffer.data)


def sample_n_step(
    buffer: ReplayBuffer, key: jax.Array, batch_size: int, n_step: int, stride: int, gamma: float
) -> Batch:
    """Draws `batch_size` n-step returns from a buffer of `Transition` rows written `stride` at a
    time (one row per env per loop iteration), so row i + stride is the same env's next step.
    The capacity must be a multiple of `stride`.

    Each return sums gamma^j r_j over up to `n_step` steps, stopping after the step that ended
    the episode; `next_obs`/`terminated` come from the last step summed and `discount` is
    gamma ** (steps summed). Starts are drawn only where all n_step steps are written.
    """
    capacity = buffer.capacity
    reach = (n_step - 1) * stride
    # Age 0 is the newest row; a start needs (n_step - 1) newer rows of the same env.
    age = jax.random.randint(key, (batch_size,), reach, jnp.maximum(buffer.size, reach + 1))
    start = (buffer.position - 1 - age) % capacity
    index = (start[:, None] + stride * jnp.arange(n_step)) % capacity  # [B, n]
    data: Transition = buffer.data
    reward, done = data.reward[index], data.done[index]
    # alive[:, j] = 1 while no earlier step of the n ended the episode.
    alive = jnp.cumprod(jnp.concatenate([jnp.ones_like(done[:, :1]), 1.0 - done[:, :-1]], 1), 1)
    steps = alive.sum(1).astype(jnp.int32)  # in [1, n_step]
    last = jnp.take_along_axis(index, (steps - 1)[:, None], 1)[:, 0]
    powers = gamma ** jnp.arange(n_step, dtype=jnp.float32)
    first = index[:, 0]
    return Batch(
        obs=jax.tree.map(lambda x: x[first], data.obs),
        action=data.action[first],
        reward=(alive * reward * powers).sum(1),
        next_obs=jax.tree.map(lambda x: x[last], data.next_obs),
        terminated=data.terminated[last],
        discount=gamma ** steps.astype(jnp.float32),
    )
