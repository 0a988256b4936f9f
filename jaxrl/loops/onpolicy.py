"""The on-policy training loop (PPO), the twin of `jaxrl.loops.offpolicy`: one compiled
program per chunk.

One iteration: a rollout of `unroll_length` steps of all `num_envs` envs in `lax.scan` (the
agent's `explore` picks each action and returns what its update needs), then one
`agent.update(state, rollout, key)` (GAE, epochs of minibatch updates: the agent's business),
then the observation statistics absorb the rollout. A chunk is `iterations_per_chunk`
iterations and one deterministic evaluation, like the off-policy loop's, so the host driver,
metrics, checkpoints and `jax.vmap(train)` over seeds are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import normalization, sharding
from jaxrl.agents.base import Agent, hyperparameters
from jaxrl.config import TrainConfig
from jaxrl.loops.base import (
    Trainer,
    episode_metrics,
    init_agent,
    make_envs,
    make_evaluate,
    make_observe,
    make_policy,
    nonfinite,
    observation_view,
    summarize_chunk,
)
from jaxrl.observations import actor_part, split_critic
from jaxrl.types import Rollout


@flax.struct.dataclass
class OnPolicyState:
    agent: Any
    env_state: Any
    obs_stats: normalization.RunningStats
    key: jax.Array
    iteration: jax.Array  # int32 rollouts done (env steps = iteration * unroll_length * num_envs)
    # The run config's continuous settings (TrainConfig.ARRAY_FIELDS) as arrays (`--vmap`).
    hp: dict


def make_train(
    config: TrainConfig, agent: Agent, env: Any = None, randomization_fn: Any = None
) -> Trainer:
    """The on-policy program (`jaxrl.loops.make_train` picks it for agents with `explore`);
    `config` resolved (`jaxrl.loops.base.resolve_config`)."""
    env, eval_env = make_envs(config, env, randomization_fn)
    view = observation_view(config, env)
    data = sharding.data_axis(config.devices, config.num_envs)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=data)
    init = make_init(config, agent, env, view, data)
    iteration = make_iteration(config, agent, env, view, data)

    def chunk(state: OnPolicyState) -> tuple[OnPolicyState, dict]:
        state, metrics = jax.lax.scan(iteration, state, None, config.iterations_per_chunk)
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        # Gradient steps, where the agent counts them (PPO: epochs x minibatches per rollout).
        gradient_steps = metrics.pop("gradient_steps", None)
        summary = summarize_chunk(metrics, 1, state.iteration, agent_state=state.agent)
        if gradient_steps is not None:
            summary["updates"] = gradient_steps.sum()
        summary.update(evaluate(state.agent, state.obs_stats, eval_key))
        return state, summary

    def train(key: jax.Array) -> tuple[OnPolicyState, dict]:
        return jax.lax.scan(lambda s, _: chunk(s), init(key), None, config.num_chunks)

    policy = make_policy(config, agent)
    return Trainer(config, agent, env, eval_env, init, chunk, evaluate, train, policy, view, data)


def make_init(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """`Trainer.init`: `init(key, member=None) -> OnPolicyState`, with the agent and run config
    of one member of a settings grid where given (their agent state and `hp`)."""

    def init(key: jax.Array, member: tuple[Agent, TrainConfig] | None = None) -> OnPolicyState:
        member_agent, member_config = member or (agent, config)  # see loops.base.Trainer.init
        key, agent_key, env_key = jax.random.split(key, 3)
        env_state = data.split(env.reset(env_key), size=config.num_envs)
        # Identity until the first update: the reset states are far narrower than those the
        # policy visits, and seeding the statistics with them slowed PPO (as Brax, not seeded).
        stats = normalization.init(view.sizes)
        return OnPolicyState(
            agent=init_agent(member_agent, agent_key, view, env.action_size),
            env_state=env_state,
            obs_stats=stats,
            key=key,
            iteration=jnp.zeros((), jnp.int32),
            hp=hyperparameters(member_config, TrainConfig.ARRAY_FIELDS),
        )

    return init


def make_rollout(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """`rollout(state, key) -> (env_state, batch, obs_stats, episode sums)`: unroll_length
    steps of all envs under the current policy and statistics, the statistics updated with
    them, and the `Rollout` the update reads, normalised (see `renormalize_rollout`)."""
    observe = make_observe(config)
    total_iterations = config.iterations_per_chunk * config.num_chunks

    def rollout(state: OnPolicyState, key: jax.Array):
        """unroll_length steps of all envs under the current policy and statistics."""

        def step(env_state, key):
            raw_obs = view(env_state.obs)
            actor_obs = observe(actor_part(state.obs_stats), actor_part(raw_obs))
            action, extras = agent.explore(state.agent, actor_obs, key)
            env_state = data.split(env.step(env_state, action), size=config.num_envs)
            info = env_state.info
            terminated = env_state.done * (1.0 - info["truncation"])
            final_obs = view(info["final_obs"])
            record = (raw_obs, env_state.reward, final_obs, terminated, env_state.done)
            step_metrics = {
                **episode_metrics(env_state),
                **nonfinite(observation=(raw_obs, final_obs), reward=env_state.reward),
            }
            return env_state, (record, extras, step_metrics)

        keys = jax.random.split(key, config.unroll_length)
        env_state, (steps, extras, episodes) = jax.lax.scan(step, state.env_state, keys)
        raw_obs, reward, final_obs, terminated, done = steps
        # Brax's order (renormalize_rollout): the statistics take in this rollout first, and
        # the update reads it normalised with them, as the next rollout will act.
        stats = state.obs_stats
        if config.normalize_observations:
            # Brax's order takes in the observations acted on; else those the steps reached.
            seen_obs = raw_obs if config.renormalize_rollout else final_obs
            flat = jax.tree.map(lambda x: x.reshape(-1, x.shape[-1]), seen_obs)
            stats = normalization.update(stats, flat)
        seen = stats if config.renormalize_rollout else state.obs_stats
        batch = Rollout(
            obs=observe(seen, raw_obs),
            reward=reward,
            next_obs=observe(seen, final_obs),
            terminated=terminated,
            done=done,
            discount=jnp.full_like(reward, state.hp["gamma"]),
            extras=extras,
            progress=state.iteration / total_iterations,
        )
        batch = split_critic(batch)  # the critic's own observations into critic_obs
        return env_state, batch, stats, jax.tree.map(jnp.sum, episodes)

    return rollout


def make_iteration(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """One loop iteration, a `lax.scan` body: a rollout, one `agent.update` on it, and every
    `reset_every` iterations a hard reset of the training envs."""
    rollout = make_rollout(config, agent, env, view, data)

    def hard_reset(env_state, iteration, key):
        """Every training env from a fresh random state, every reset_every iterations."""
        due = iteration % config.reset_every == 0
        fresh = lambda: data.split(env.reset(key), size=config.num_envs)
        return jax.lax.cond(due, fresh, lambda: env_state)

    def iteration(state: OnPolicyState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        env_state, batch, stats, episodes = rollout(state, rollout_key)
        agent_state, update_metrics = agent.update(state.agent, batch, update_key)
        if config.reset_every:  # its own key, so runs without it keep their numbers
            key, reset_key = jax.random.split(key)
            env_state = hard_reset(env_state, state.iteration + 1, reset_key)
        new_state = state.replace(
            agent=agent_state,
            env_state=env_state,
            obs_stats=stats,
            key=key,
            iteration=state.iteration + 1,
        )
        return new_state, {**update_metrics, "updated": jnp.ones(()), **episodes}

    return iteration
