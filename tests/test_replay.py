import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import replay


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
