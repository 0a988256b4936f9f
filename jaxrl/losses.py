"""Loss pieces shared by the value-based agents. Shapes: Q [E, B] (ensemble, batch), rest [B]."""

from __future__ import annotations

import jax


def bootstrap_target(
    reward: jax.Array, terminated: jax.Array, discount: jax.Array, next_value: jax.Array
) -> jax.Array:
    """y = r + discount (1 - terminated) V(s'). `discount` is gamma, or gamma^k for a k-step
    return. A time-limit truncation is not a termination, so it keeps the bootstrap."""
    return reward + discount * (1.0 - terminated) * next_value


def critic_mse(q: jax.Array, target: jax.Array) -> jax.Array:
    """Sum over critics of 0.5 * mean squared TD error; the target carries no gradient."""
    td = q - jax.lax.stop_gradient(target)[None]
    return 0.5 * (td**2).mean(axis=-1).sum()
