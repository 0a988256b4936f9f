"""A random replay batch for the agents' update tests (importable: pytest puts this folder on
sys.path for the tests beside it)."""

import jax
import jax.numpy as jnp

from jaxrl.types import Batch


def random_batch(key, size=32, obs_size=3, action_size=2, discount=0.99) -> Batch:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return Batch(
        obs=jax.random.normal(k1, (size, obs_size)),
        action=jax.random.uniform(k2, (size, action_size), minval=-1, maxval=1),
        reward=jax.random.normal(k3, (size,)),
        next_obs=jax.random.normal(k4, (size, obs_size)),
        terminated=jnp.zeros(size),
        discount=jnp.full(size, discount),
    )
