"""Pytrees shared across the library."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


def _critic_inputs(batch) -> tuple[jax.Array, jax.Array]:
    """(observation, next observation) as a critic (PPO: the value function) reads them: its
    own where the batch has them (asymmetric actor-critic), else the actor's."""
    if batch.critic_obs is None:
        return batch.obs, batch.next_obs
    return batch.critic_obs, batch.next_critic_obs


class Transition(NamedTuple):
    """One env step per row, as stored in replay. Leading axes: [N] envs when collected.

    `terminated` zeroes the bootstrap; a time-limit truncation does not: `next_obs` is the
    observation the step truly reached, even where the env was reset after it. `done` (ended
    by termination or truncation) stops n-step returns at episode boundaries.
    """

    obs: jax.Array  # [..., obs_size]
    action: jax.Array  # [..., action_size]
    reward: jax.Array  # [...]
    next_obs: jax.Array  # [..., obs_size]
    terminated: jax.Array  # [...], 1.0 where the episode ended in a terminal state
    done: jax.Array  # [...], 1.0 where the episode ended (terminated or truncated)


class Batch(NamedTuple):
    """What an agent learns from, [B] rows: the target is
    reward + discount * (1 - terminated) * V(next_obs).

    For 1-step returns `discount` is gamma; for n-step returns `reward` is the discounted sum of
    up to n rewards (stopping where the episode ended) and `discount` is gamma ** (steps taken).
    """

    obs: jax.Array  # [B, obs_size]
    action: jax.Array  # [B, action_size]
    reward: jax.Array  # [B]
    next_obs: jax.Array  # [B, obs_size]
    terminated: jax.Array  # [B]
    discount: jax.Array  # [B]
    # Asymmetric actor-critic (`jaxrl.observations`): the critic's own observations, [B, C];
    # None: the critic reads obs / next_obs as the actor does.
    critic_obs: jax.Array | None = None
    next_critic_obs: jax.Array | None = None
    # [B], 1.0 where the row's last step ended its episode at the time limit (the replay
    # program fills it; None: no row is truncated). Read only by Brax's masking of truncated
    # rows out of the critic loss (SACConfig.truncation "mask").
    truncated: jax.Array | None = None
    # [B, action_size], the action the row's env took at its next step, and [B] where that is
    # known (1.0; 0 where the row ended its episode or its next step is not stored yet). The
    # loop fills them for an agent that reads them (`Agent.reads_next_action`: ReBRAC's
    # critic penalty); None otherwise.
    next_action: jax.Array | None = None
    next_action_known: jax.Array | None = None

    critic_inputs = property(_critic_inputs)


class Rollout(NamedTuple):
    """What an on-policy agent learns from: T steps of N envs, [T, N] leading axes.

    `next_obs` is the observation each step truly reached (before any auto-reset), so GAE
    bootstraps truncated episodes from V(next_obs) and stops only at terminations. Observations
    are stored as the policy saw them (normalised with the statistics it acted under).
    """

    obs: jax.Array  # [T, N, obs_size]
    reward: jax.Array  # [T, N]
    next_obs: jax.Array  # [T, N, obs_size]
    terminated: jax.Array  # [T, N]
    done: jax.Array  # [T, N], terminated or truncated: advantages do not flow across it
    discount: jax.Array  # [T, N], gamma
    extras: dict  # what the agent's explore() returned besides the action, [T, N, ...]
    progress: jax.Array  # scalar in [0, 1]: fraction of the run done (learning-rate schedules)
    # Asymmetric actor-critic: what the value function reads, [T, N, C]; None: obs / next_obs.
    critic_obs: jax.Array | None = None
    next_critic_obs: jax.Array | None = None

    critic_inputs = property(_critic_inputs)


def random_batch(key, size=32, obs_size=3, action_size=2, discount=0.99) -> Batch:
    """A well-formed random replay batch of `size` rows (agent tests, profiling updates)."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return Batch(
        obs=jax.random.normal(k1, (size, obs_size)),
        action=jax.random.uniform(k2, (size, action_size), minval=-1, maxval=1),
        reward=jax.random.normal(k3, (size,)),
        next_obs=jax.random.normal(k4, (size, obs_size)),
        terminated=jnp.zeros(size),
        discount=jnp.full(size, discount),
    )
