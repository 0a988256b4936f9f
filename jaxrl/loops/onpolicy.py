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
from jaxrl.envs.wrappers import Restart
from jaxrl.loops.base import (
    Trainer,
    episode_metrics,
    init_agent,
    learn_if,
    make_envs,
    make_evaluate,
    make_observe,
    make_policy,
    make_reset,
    make_shared_evaluation,
    nonfinite,
    observation_view,
    shares_simulator,
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


# The per-env arrays [unroll_length, num_envs] an iteration hands `on_iteration`: which envs'
# episodes ended at each step, and those episodes' returns, lengths (in env steps) and sums of
# the env's own metrics.
FINISHED = "finished"


def make_train(
    config: TrainConfig,
    agent: Agent,
    env: Any = None,
    randomization_fn: Any = None,
    on_iteration: Callable[[dict, dict], Any] | None = None,
) -> Trainer:
    """The on-policy program (`jaxrl.loops.make_train` picks it for agents with `explore`);
    `config` resolved (`jaxrl.loops.base.resolve_config`). `on_iteration(finished, metrics)`:
    a host callback after every iteration's update, from inside the compiled chunk (Brax's
    `log_training_metrics`), with the rollout's ended episodes (`finished`: "done",
    "return", "length", each [unroll_length, num_envs], and "metrics", the env's own metrics
    each summed over its episode) and the update's metrics."""
    given = env
    env, eval_env = make_envs(config, env, randomization_fn, metric_sums=on_iteration is not None)
    view = observation_view(config, env)
    data = sharding.data_axis(config.devices, config.num_envs)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=data)
    init = make_init(config, agent, env, view, data)
    randomized = randomization_fn is not None or bool(config.randomize)
    if shares_simulator(config, randomized, env=given):
        chunk = make_shared_chunk(config, agent, env, view, data, on_iteration)
    else:
        chunk = make_chunk(config, agent, env, view, data, evaluate, on_iteration)

    def train(key: jax.Array) -> tuple[OnPolicyState, dict]:
        return jax.lax.scan(lambda s, _: chunk(s), init(key), None, config.num_chunks)

    policy = make_policy(config, agent)
    return Trainer(
        config, agent, env, eval_env, init, chunk, evaluate, train, policy, view, data,
        reset=make_reset(config, env, data, KEY_SPLITS),
    )  # fmt: skip


def _summary(config: TrainConfig, state: OnPolicyState, metrics: dict) -> dict:
    """The chunk's row from its per-iteration metrics, gradient steps counted where the agent
    counts them (PPO: epochs x minibatches per rollout)."""
    gradient_steps = metrics.pop("gradient_steps", None)
    summary = summarize_chunk(metrics, 1, state.iteration, agent_state=state.agent)
    if gradient_steps is not None:
        summary["updates"] = gradient_steps.sum()
    return summary


def make_chunk(
    config: TrainConfig, agent: Agent, env: Any, view, data, evaluate, on_iteration=None
) -> Callable:
    """The chunk with an evaluation of its own envs after the iterations' scan."""
    iteration = make_iteration(config, agent, env, view, data, on_iteration)

    def chunk(state: OnPolicyState) -> tuple[OnPolicyState, dict]:
        state, metrics = jax.lax.scan(iteration, state, None, config.iterations_per_chunk)
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        summary = _summary(config, state, metrics)
        summary.update(evaluate(state.agent, state.obs_stats, eval_key))
        return state, summary

    return chunk


# init(key) splits its key into (the state's key, the agent's, the envs' reset's);
# `loops.base.make_reset` resets the envs with the third part.
KEY_SPLITS = 3


def make_init(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """`Trainer.init`: `init(key, member=None) -> OnPolicyState`, with the agent and run config
    of one member of a settings grid where given (their agent state and `hp`)."""
    reset = make_reset(config, env, data, KEY_SPLITS)

    def init(
        key: jax.Array, member: tuple[Agent, TrainConfig] | None = None, env_state: Any = None
    ) -> OnPolicyState:
        member_agent, member_config = member or (agent, config)  # see loops.base.Trainer.init
        if env_state is None:  # else `reset(key)`'s: the same states
            env_state = reset(key)
        key, agent_key, _ = jax.random.split(key, KEY_SPLITS)
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


def make_rollout(
    config: TrainConfig, agent: Agent, env: Any, view, data, finished: bool = False
) -> Callable:
    """`rollout(state, key) -> (env_state, batch, obs_stats, episode metrics)`: unroll_length
    steps of all envs under the current policy and statistics, the statistics updated with
    them, and the `Rollout` the update reads, normalised (see `renormalize_rollout`). The
    episode metrics are summed over the steps, but for `finished` (`make_after_step`)."""
    act = make_act(config, agent, view)
    after_step = make_after_step(config, view, data, finished)
    finish = make_finish(config)

    def rollout(state: OnPolicyState, key: jax.Array):
        """unroll_length steps of all envs under the current policy and statistics."""

        def step(env_state, key):
            raw_obs, action, extras = act(state, env_state, key)
            return after_step(env.step(env_state, action), raw_obs, extras)

        keys = jax.random.split(key, config.unroll_length)
        env_state, (steps, extras, episodes) = jax.lax.scan(step, state.env_state, keys)
        batch, stats = finish(state, steps, extras)
        return env_state, batch, stats, _summed(episodes)

    return rollout


def make_act(config: TrainConfig, agent: Agent, view) -> Callable:
    """`act(state, env_state, key) -> (raw_obs, action, extras)`: the agent's `explore` on
    the observations normalised with the current statistics."""
    observe = make_observe(config)

    def act(state: OnPolicyState, env_state, key):
        raw_obs = view(env_state.obs)
        actor_obs = observe(actor_part(state.obs_stats), actor_part(raw_obs))
        action, extras = agent.explore(state.agent, actor_obs, key)
        return raw_obs, action, extras

    return act


def make_after_step(config: TrainConfig, view, data, finished: bool = False) -> Callable:
    """`after_step(stepped, raw_obs, extras) -> (env_state, (record, extras, metrics))`: the
    step's record (observation acted on, reward, observation reached, terminated, done).
    With `finished`, the metrics also hold each env's ended episode (FINISHED)."""

    def after_step(stepped, raw_obs, extras):
        env_state = data.split(stepped, size=config.num_envs)
        info = env_state.info
        terminated = env_state.done * (1.0 - info["truncation"])
        final_obs = view(info["final_obs"])
        record = (raw_obs, env_state.reward, final_obs, terminated, env_state.done)
        step_metrics = {
            **episode_metrics(env_state),
            **nonfinite(observation=(raw_obs, final_obs), reward=env_state.reward),
        }
        if finished:
            step_metrics[FINISHED] = {
                "done": env_state.done,
                "return": info["finished_return"],
                "length": info["finished_length"],
                "metrics": info.get("finished_metrics", {}),
            }
        return env_state, (record, extras, step_metrics)

    return after_step


def make_finish(config: TrainConfig) -> Callable:
    """`finish(state, steps [T, N], extras) -> (batch, obs_stats)`: the rollout's records as
    the `Rollout` the update reads, and the statistics updated with them."""
    observe = make_observe(config)
    total_iterations = config.iterations_per_chunk * config.num_chunks

    def finish(state: OnPolicyState, steps, extras):
        raw_obs, reward, final_obs, terminated, done = steps
        # Brax's order (renormalize_rollout): the statistics take in this rollout first, and
        # the update reads it normalised with them, as the next rollout will act.
        stats = state.obs_stats
        if config.normalize_observations:
            # Brax's order takes in the observations acted on; else those the steps reached.
            seen_obs = raw_obs if config.renormalize_rollout else final_obs
            flat = jax.tree.map(lambda x: x.reshape(-1, x.shape[-1]), seen_obs)
            stats = normalization.update(stats, flat, config.obs_stats_until)
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
        return split_critic(batch), stats  # the critic's own observations into critic_obs

    return finish


def make_hard_reset(config: TrainConfig, env: Any, data) -> Callable:
    """`hard_reset(env_state, iteration, key)`: every training env from a fresh random state
    where `iteration` is a multiple of reset_every."""

    def hard_reset(env_state, iteration, key):
        due = iteration % config.reset_every == 0
        fresh = lambda: data.split(env.reset(key), size=config.num_envs)
        return jax.lax.cond(due, fresh, lambda: env_state)

    return hard_reset


def _summed(step_metrics: dict) -> dict:
    """An iteration's episode metrics: each summed over its steps, FINISHED kept per step."""
    kept = {FINISHED: step_metrics[FINISHED]} if FINISHED in step_metrics else {}
    rest = {k: v for k, v in step_metrics.items() if k != FINISHED}
    return {**jax.tree.map(jnp.sum, rest), **kept}


def _report_iteration(
    config: TrainConfig, on_iteration, episodes: dict, update_metrics: dict, training=True
) -> dict:
    """Hands the iteration's ended episodes and update metrics to `on_iteration` (a host
    callback) and returns the episode metrics without them. `training`: False for a shared
    chunk's evaluation phases, which the callback is not told of. On one device the calls are
    ordered effects; JAX has none over several, where they come, as Brax's do, in the order
    the device reaches them."""
    episodes = dict(episodes)
    finished = episodes.pop(FINISHED, None)
    if on_iteration is not None:

        def call(finished, metrics, training):
            if training:
                on_iteration(finished, metrics)

        ordered = sharding.device_count(config.devices) <= 1  # 0: one device, no mesh
        jax.debug.callback(call, finished, update_metrics, training, ordered=ordered)
    return episodes


def make_iteration(
    config: TrainConfig, agent: Agent, env: Any, view, data, on_iteration=None
) -> Callable:
    """One loop iteration, a `lax.scan` body: a rollout, one `agent.update` on it, and every
    `reset_every` iterations a hard reset of the training envs; `on_iteration` (`make_train`)
    then hears of it."""
    rollout = make_rollout(config, agent, env, view, data, on_iteration is not None)
    hard_reset = make_hard_reset(config, env, data)

    def iteration(state: OnPolicyState, _):
        key, rollout_key, update_key = jax.random.split(state.key, 3)
        env_state, batch, stats, episodes = rollout(state, rollout_key)
        agent_state, update_metrics = agent.update(state.agent, batch, update_key)
        episodes = _report_iteration(config, on_iteration, episodes, update_metrics)
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


def make_shared_chunk(
    config: TrainConfig, agent: Agent, env: Any, view, data, on_iteration=None
) -> Callable:
    """The chunk with its evaluation in the same scan as its rollouts' steps, through one env
    step (`jaxrl.loops.base.SharedEvaluation`): a scan of phases, each an inner scan of
    unroll_length trips of one env step each, then the update on that rollout (`learn_if`,
    the training phases only); the evaluation's trips fill the phases after the training ones,
    its last phase's spare trips skipping the step. The same training and returns as
    `make_chunk`'s, with the simulator compiled once (a hard reset, `reset_every`, keeps a reset
    of its own). The update sits outside the inner scan because its conditional is paid on
    every trip of the loop whose body holds it: inside, a chunk ran about 3x slower
    (benchmarks/notes/2026-12-06-code-figures.md)."""
    act = make_act(config, agent, view)
    after_step = make_after_step(config, view, data, on_iteration is not None)
    finish, hard_reset = make_finish(config), make_hard_reset(config, env, data)
    shared = make_shared_evaluation(config, agent, env, view, data)
    unroll, iterations = config.unroll_length, config.iterations_per_chunk
    steps = unroll * iterations
    eval_phases = -(-(1 + shared.steps) // unroll)  # the restart trip, then shared.steps

    def update(learner, state, steps_taken, extras, update_key):
        """(agent state, statistics) after the update on a whole rollout; `learner` is
        what `learn_if` keeps in the evaluation's phases."""
        batch, stats = finish(state, steps_taken, extras)
        agent_state, metrics = agent.update(learner[0], batch, update_key)
        return (agent_state, stats), metrics

    def trip(carry, trip_and_key):
        """One env step: of the training envs (j < steps, into the rollout, acting with
        `step_key`), or the evaluation's restart (j == steps) or its greedy steps."""
        j, step_key = trip_and_key
        state, rollout, evaluation = carry
        # The last phase's spare trips (past the restart and shared.steps) change nothing:
        # every evaluation episode has ended by then (`envs.wrap`'s time limit), so they skip
        # the step and count no reward.
        training, restarting, evaluating = j < steps, j == steps, j > steps
        t = j % unroll
        raw_obs, action, extras = act(state, state.env_state, step_key)
        chunk_key, eval_key = jax.random.split(state.key)
        restart_keys, eval_act_key = shared.restart(eval_key)
        eval_action = shared.action(evaluation, state.agent, state.obs_stats)
        env_in = _pick(training, state.env_state, evaluation.env_state)
        restart = Restart(restarting, training, restart_keys)
        stepped = jax.lax.cond(
            training | restarting | shared.running(evaluation),
            lambda: env.step(env_in, jnp.where(training, action, eval_action), restart),
            lambda: env_in,
        )
        env_state, (record, extras, step_metrics) = after_step(stepped, raw_obs, extras)
        env_state = _pick(training, env_state, state.env_state)
        rollout = jax.tree.map(lambda buf, x: buf.at[t].set(x), rollout, (record, extras))
        state = state.replace(env_state=env_state, key=jnp.where(restarting, chunk_key, state.key))
        evaluation = shared.record(evaluation, stepped, eval_act_key, restarting, evaluating)
        return (state, rollout, evaluation), step_metrics

    def phase(carry, p):
        """unroll_length trips, then (training phases) the update on the rollout they wrote,
        as make_iteration's; the evaluation's phases start at trip index `steps`."""
        training = p < iterations
        first = jnp.where(training, p * unroll, steps + (p - iterations) * unroll)
        # The iteration's keys, as make_iteration's: the trips of a training phase leave the
        # state's key alone (only the evaluation's restart trip sets it, where none is used).
        key, rollout_key, update_key = jax.random.split(carry[0].key, 3)
        trips = (first + jnp.arange(unroll), jax.random.split(rollout_key, unroll))
        carry, per_step = jax.lax.scan(trip, carry, trips)
        state, rollout, evaluation = carry
        learner = (state.agent, state.obs_stats)
        (agent_state, stats), update_metrics = learn_if(
            training, update, learner, state, *rollout, update_key
        )
        per_step = _report_iteration(config, on_iteration, per_step, update_metrics, training)
        env_state = state.env_state
        if config.reset_every:
            key, reset_key = jax.random.split(key)
            reset = lambda: hard_reset(env_state, state.iteration + 1, reset_key)  # noqa: E731
            env_state = jax.lax.cond(training, reset, lambda: env_state)
        state = state.replace(
            agent=agent_state,
            env_state=env_state,
            obs_stats=stats,
            key=jnp.where(training, key, state.key),
            iteration=state.iteration + training.astype(state.iteration.dtype),
        )
        return (state, rollout, evaluation), (update_metrics, per_step)

    def chunk(state: OnPolicyState) -> tuple[OnPolicyState, dict]:
        rollout = _empty_rollout(config, act, state)
        carry = (state, rollout, shared.initial(state.env_state))
        phases = jnp.arange(iterations + eval_phases)
        (state, _, evaluation), (updates, per_step) = jax.lax.scan(phase, carry, phases)
        # Per iteration: its update's metrics and the sums of its steps' episode counts, as
        # make_iteration's.
        updates = jax.tree.map(lambda m: m[:iterations], updates)
        per_step = jax.tree.map(lambda m: m[:iterations].sum(1), per_step)
        metrics = {**updates, "updated": jnp.ones(iterations), **per_step}
        summary = _summary(config, state, metrics)
        summary.update(shared.result(evaluation))
        return state, summary

    return chunk


def _pick(where: jax.Array, new, old):
    return jax.tree.map(lambda a, b: jnp.where(where, a, b), new, old)


def _empty_rollout(config: TrainConfig, act: Callable, state: OnPolicyState):
    """Zeros shaped as a rollout's records and extras, [unroll_length, N, ...]."""
    key = jax.random.PRNGKey(0)
    raw_obs, action, extras = jax.eval_shape(act, state, state.env_state, key)
    row = jax.ShapeDtypeStruct((config.num_envs,), jnp.float32)
    record = (raw_obs, row, raw_obs, row, row)
    return jax.tree.map(
        lambda s: jnp.zeros((config.unroll_length,) + s.shape, s.dtype), (record, extras)
    )
