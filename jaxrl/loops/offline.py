"""Offline training in the off-policy loop (docs/OFFLINE.md): chunks whose iterations draw
their batches from a dataset on the device instead of stepping the training envs, then
evaluate in the eval envs, inside one program.

The dataset is the offline chunk's second argument, a full replay buffer of its rows ([R, 1],
one column: `replay.sample` and `sample_n_step` read it as they read replay, `done` marking
every episode's end): put on the device once by the driver, never donated, never part of the
state, so checkpoints do not carry it and a grid's members share one copy. The chunk reads it
through the same `learn` (gather, normalise, `updates_per_step` updates) as the online loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl import normalization, replay
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.loops.base import summarize_chunk


def dataset_buffer(data: Any) -> replay.ReplayBuffer:
    """A `jaxrl.data.minari_format.OfflineData` as a full replay buffer [R, 1] on the device."""
    rows = jax.tree.map(lambda x: x[:, None], data.transitions())
    count = jnp.asarray(data.rows, jnp.int32)
    return replay.ReplayBuffer(data=rows, position=jnp.zeros((), jnp.int32), size=count)


def check_dataset(config: TrainConfig, data: Any, view: Any, action_size: int) -> None:
    """ConfigError, naming the flag, where `data` does not fit the run: its sizes against the
    env's, its rows against a batch, or a run this offline loop does not take yet."""
    where = f"--dataset {config.dataset}"
    if view.asymmetric:
        raise ConfigError(
            f"{where} with --critic-obs {config.critic_obs}: a dataset holds the actor's "
            "observations alone; leave --critic-obs unset"
        )
    if data.obs_size != view.actor_size or data.action_size != action_size:
        raise ConfigError(
            f"{where}: observations of size {data.obs_size} and actions of size "
            f"{data.action_size}, but {config.env} has {view.actor_size} and {action_size}"
        )
    if data.rows < config.batch_size or data.rows < (config.n_step or 1):
        raise ConfigError(f"{where}: {data.rows} rows, fewer than a batch ({config.batch_size})")
    if config.devices not in (0, 1):
        raise ConfigError(f"{where} with --devices {config.devices}: offline runs use one device")


def make_offline_chunk(config: TrainConfig, learn: Callable, evaluate: Callable) -> Callable:
    """`chunk(state, dataset) -> (state, metrics)`: `offline_iterations_per_chunk` iterations,
    each one gather of `updates_per_step` batches from `dataset` and as many updates
    (`learn`), then an evaluation. The observation statistics, where the run normalises, are
    the dataset's (the same in every chunk); the envs, replay and env step count stay."""
    iterations = config.offline_iterations_per_chunk

    def chunk(state, dataset: replay.ReplayBuffer):
        stats = state.obs_stats
        if config.normalize_observations:
            obs = dataset.data.obs[:, 0]
            stats = normalization.update(normalization.init(obs.shape[-1]), obs)

        def iteration(carry, _):
            agent_state, key = carry
            key, learn_key = jax.random.split(key)
            agent_state, metrics = learn(agent_state, dataset, stats, learn_key, state.hp["gamma"])
            return (agent_state, key), metrics

        (agent_state, key), metrics = jax.lax.scan(
            iteration, (state.agent, state.key), None, iterations
        )
        key, eval_key = jax.random.split(key)
        state = state.replace(agent=agent_state, key=key, obs_stats=stats)
        zeros = jnp.zeros(iterations)
        metrics = {
            **metrics,
            "updated": jnp.ones(iterations),
            "episodes": zeros,
            "episode_return_sum": zeros,
            "episode_length_sum": zeros,
        }
        summary = summarize_chunk(
            metrics, config.updates_per_step, state.iteration, agent_state=agent_state
        )
        summary.update(evaluate(agent_state, stats, eval_key))
        return state, summary

    return chunk
