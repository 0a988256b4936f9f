"""Pytrees shared across the library."""

from __future__ import annotations

from typing import NamedTuple

import jax


class Transition(NamedTuple):
    """One env step per row. Leading axes: [N] envs when collected, [B] in a batch.

    `terminated` zeroes the bootstrap; a time-limit truncation does not, so it is not stored:
    `next_obs` is the observation the step truly reached, even where the env was reset after.
    """

    obs: jax.Array  # [..., obs_size]
    action: jax.Array  # [..., action_size]
    reward: jax.Array  # [...]
    next_obs: jax.Array  # [..., obs_size]
    terminated: jax.Array  # [...], 1.0 where the episode ended in a terminal state


Batch = Transition
