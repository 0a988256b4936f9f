"""The off-policy training loop as one compiled program (see docs/DESIGN.md).

`make_train(config, agent)` composes an env and an agent into pure functions:

- `init(key) -> OffPolicyState`: agent, envs, empty replay buffer, observation statistics;
- `chunk(state) -> (state, metrics)`: `iterations_per_chunk` loop iterations in one `lax.scan`
  (act, step all envs, insert, `updates_per_step` gradient updates), then one deterministic
  evaluation, all inside the same program;
- `train(key) -> (state, metrics)`: the whole run, `num_chunks` chunks in one more scan, so
  `jax.vmap(train)` trains several seeds at once.

The host driver (`jaxrl.run.driver`) jits `chunk` once, donates its state, and only logs,
checkpoints and checks for NaNs between chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import normalization, replay, sharding
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
from jaxrl.types import Batch, Transition


@flax.struct.dataclass
class OffPolicyState:
    agent: Any
    env_state: Any
    buffer: replay.ReplayBuffer
    obs_stats: normalization.RunningStats
    key: jax.Array
    iteration: jax.Array  # int32 loop iterations done (env steps = iteration * num_envs)
    noise_scale: jax.Array  # [N] per-env exploration noise scale
    acting_agent: Any  # the agent state used to act: lags `agent` when config.acting_lag > 0
    # The run config's continuous settings (TrainConfig.ARRAY_FIELDS: gamma, the exploration
    # noise range) as arrays, so a settings grid varies them under vmap.
    hp: dict


class Parts(NamedTuple):
    """The pieces of an off-policy iteration, over one data axis: `jaxrl.loops.split` runs
    `collect` on the actor's devices and `learn` on the learners' from these same functions."""

    init: Callable[..., OffPolicyState]
    collect: Callable
    """collect(acting, env_state, obs_stats, noise_scale, iteration, key, hp) -> (env_state,
    transition [N], obs_stats, noise_scale, metrics): act (warm-up actions until
    learning_starts), step every env, update the observation statistics, redraw the noise
    scales of envs whose episode ended ("uniform")."""
    learn: Callable
    """learn(agent_state, buffer, obs_stats, key, gamma, ready=None, training=None) ->
    (agent_state, metrics): one iteration's `updates_per_step` updates from one gather of the
    buffer; each only where `ready` (and `training`) hold, where given (`make_learn`)."""
    ready: Callable[[replay.ReplayBuffer], jax.Array]
    """Whether the buffer holds enough rows to learn from (learning_starts, a batch, n-step)."""


def make_parts(config: TrainConfig, agent: Agent, env: Any, view, data) -> Parts:
    """The iteration's pieces for `env` (training envs, auto-reset) split over `data`."""
    learn_after = max(config.learning_starts, config.batch_size, config.n_step * config.num_envs)
    return Parts(
        make_init(config, agent, env, view, data),
        make_collect(config, agent, env, view, data),
        make_learn(config, agent, data),
        lambda buffer: buffer.rows >= learn_after,
    )


def noise_scales(config: TrainConfig, key: jax.Array, hp: dict) -> jax.Array:
    """Each env's exploration noise scale in [noise_scale_min, noise_scale_max]: spread evenly
    ("linspace"), drawn ("uniform"), or 1."""
    num_envs = config.num_envs
    low, high = hp["noise_scale_min"], hp["noise_scale_max"]
    if config.exploration == "linspace":
        return jnp.linspace(low, high, num_envs)
    if config.exploration == "uniform":
        return jax.random.uniform(key, (num_envs,), minval=low, maxval=high)
    return jnp.ones(num_envs)


# init(key) splits its key into (the state's key, the agent's, the envs' reset's, the noise
# scales'); `loops.base.make_reset` resets the envs with the third part.
KEY_SPLITS = 4


def make_init(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """`Parts.init`: `init(key, member=None) -> OffPolicyState`, with the agent and run config
    of one member of a settings grid where given (their agent state and `hp`)."""
    num_envs, action_size = config.num_envs, env.action_size
    reset = make_reset(config, env, data, KEY_SPLITS)
    capacity = config.replay_capacity // num_envs if config.total_steps else 1

    def init(
        key: jax.Array, member: tuple[Agent, TrainConfig] | None = None, env_state: Any = None
    ) -> OffPolicyState:
        member_agent, member_config = member or (agent, config)
        if env_state is None:  # else `reset(key)`'s: the same states
            env_state = reset(key)
        key, agent_key, _, noise_key = jax.random.split(key, KEY_SPLITS)
        first_obs = jax.tree.map(lambda x: x[0], view(env_state.obs))
        stored_obs = jax.tree.map(lambda x: x.astype(config.replay_obs_dtype), first_obs)
        example = Transition(
            obs=stored_obs,
            action=jnp.zeros((action_size,), jnp.float32),
            reward=env_state.reward[0],
            next_obs=stored_obs,
            terminated=env_state.reward[0],
            done=env_state.reward[0],
        )
        # Identity until the first update: the reset states are far narrower than those the
        # policy visits, and seeding the statistics with them slowed PPO (as Brax, not seeded).
        stats = normalization.init(view.sizes)
        agent_state = init_agent(member_agent, agent_key, view, action_size)
        hp = hyperparameters(member_config, TrainConfig.ARRAY_FIELDS)
        return OffPolicyState(
            agent=agent_state,
            env_state=env_state,
            # An offline run never steps its training envs: one slot, never written.
            buffer=replay.init(example, capacity, num_envs),
            obs_stats=stats,
            key=key,
            iteration=jnp.zeros((), jnp.int32),
            noise_scale=noise_scales(config, noise_key, hp),
            acting_agent=agent_state if config.acting_lag else None,
            hp=hp,
        )

    return init


def sample(
    config: TrainConfig,
    data,
    buffer,
    key,
    gamma,
    rows: int | None = None,
    next_action: bool = False,
) -> Batch:
    """[updates_per_step, rows (batch_size)] rows, each update's batch split over the
    devices; `next_action` (1-step returns): with `Batch.next_action` and its mask."""
    batch_shape = (config.updates_per_step, rows or config.batch_size)
    if config.n_step == 1:
        following = known = None
        if next_action:
            rows, following, known = replay.sample_with_next_action(
                buffer, key, batch_shape, data.size
            )
        else:
            rows = replay.sample(buffer, key, batch_shape, data.size)
        return Batch(
            rows.obs,
            rows.action,
            rows.reward,
            rows.next_obs,
            rows.terminated,
            jnp.full_like(rows.reward, gamma),
            truncated=rows.done - rows.terminated,
            next_action=following,
            next_action_known=known,
        )
    if next_action:  # TrainConfig checks refuse it first (`check_agent`)
        raise ValueError("next actions are drawn with 1-step returns only")
    return replay.sample_n_step(buffer, key, batch_shape, config.n_step, gamma, data.size)


def mixed_sample(
    config: TrainConfig, data, buffer, dataset, key, gamma, next_action: bool = False
) -> Batch:
    """`sample`'s rows, `offline_ratio` of each batch (rounded) drawn from `dataset` (a
    dataset's rows as a replay buffer, `jaxrl.loops.offline`) and the rest from `buffer`, the
    online rows first; `sample` itself where there is no dataset or no row to draw from it."""
    draw = functools.partial(sample, config, data, next_action=next_action)
    from_dataset = round(config.offline_ratio * config.batch_size) if dataset is not None else 0
    if not from_dataset:
        return draw(buffer, key, gamma)
    if from_dataset == config.batch_size:
        return draw(dataset, key, gamma)
    online_key, offline_key = jax.random.split(key)
    online = draw(buffer, online_key, gamma, config.batch_size - from_dataset)
    offline = draw(dataset, offline_key, gamma, from_dataset)
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=1), online, offline)


def make_learn(config: TrainConfig, agent: Agent, data) -> Callable:
    """`Parts.learn`: one gather of the buffer, normalised with the statistics given, then
    `updates_per_step` agent updates in a scan; their metrics averaged. With `ready` (and
    `training`), each update runs where they hold (`learn_if`), else leaves the state as it
    is with zero metrics: the condition inside each update, not around the loop of updates.
    XLA:GPU copied every leaf of the agent's state on every update when that loop sat inside
    a conditional inside the chunk's loop (kernel counts:
    benchmarks/notes/2026-12-06-code-figures.md). The gather then runs where no update does
    (the warm-up's iterations, a shared evaluation's trips): one gather of the rows the
    iteration's updates would take. `training` (the shared chunk's; the same for every member
    of a grid) stays a real conditional under vmap where a batched `ready` turns into a
    select, so an evaluation trip never runs the updates. `dataset` (a run that mixes one
    into its online batches): `mixed_sample`'s rows."""
    observe = make_observe(config)

    def learn(agent_state, buffer, stats, key, gamma, ready=None, training=None, dataset=None):
        sample_key, update_key = jax.random.split(key)
        # One gather for all updates of this iteration, sliced per update inside the scan.
        rows = mixed_sample(
            config, data, buffer, dataset, sample_key, gamma, agent.reads_next_action
        )
        batches = data.split(rows, axis=1)
        batches = batches._replace(
            obs=observe(stats, as_float32(batches.obs)),
            next_obs=observe(stats, as_float32(batches.next_obs)),
        )
        batches = split_critic(batches)  # the critic's own observations into critic_obs
        keys = jax.random.split(update_key, config.updates_per_step)

        def one_update(agent_state, xs):
            return agent.update(agent_state, *xs)

        if ready is not None:
            one_update = functools.partial(learn_if, ready, one_update)
        if training is not None:
            one_update = functools.partial(learn_if, training, one_update)
        agent_state, metrics = jax.lax.scan(
            one_update, agent_state, (batches, keys), unroll=config.unroll_updates
        )
        return agent_state, jax.tree.map(jnp.mean, metrics)

    return learn


def make_collect(config: TrainConfig, agent: Agent, env: Any, view, data) -> Callable:
    """`Parts.collect`: one step of every env (see `Parts`), as `make_act`, `env.step` and
    `make_after_step`."""
    act, after_step = make_act(config, agent, view), make_after_step(config, view, data)

    def collect(acting, env_state, stats, noise_scale, iteration, key, hp):
        obs, action, noise_key = act(acting, env_state, stats, noise_scale, iteration, key)
        stepped = env.step(env_state, action)
        return after_step(stepped, obs, action, stats, noise_scale, noise_key, hp)

    return collect


def make_act(config: TrainConfig, agent: Agent, view) -> Callable:
    """`act(acting, env_state, stats, noise_scale, iteration, key) -> (obs, action,
    noise_key)`: the training envs' actions (warm-up actions until learning_starts)."""
    num_envs = config.num_envs
    observe = make_observe(config)

    def act(acting, env_state, stats, noise_scale, iteration, key):
        act_key, random_key, noise_key = jax.random.split(key, 3)
        obs = view(env_state.obs)
        actor_obs = observe(actor_part(stats), actor_part(obs))
        policy_action = agent.act(acting, actor_obs, act_key, noise_scale)
        if config.warmup_actions == "uniform" and not config.pretrained:
            # (an agent trained before, offline or in another run, acts from the first step)
            random_action = jax.random.uniform(
                random_key, (num_envs, policy_action.shape[-1]), minval=-1, maxval=1
            )
            warming_up = iteration * num_envs < config.learning_starts
            action = jnp.where(warming_up, random_action, policy_action)
        else:  # "policy": the (untrained, during warm-up) policy acts from the first step
            action = policy_action
        return obs, action, noise_key

    return act


def make_after_step(config: TrainConfig, view, data) -> Callable:
    """`after_step(stepped, obs, action, stats, noise_scale, noise_key, hp) -> (env_state,
    transition [N], stats, noise_scale, metrics)`: the transition of the step from `obs` by
    `action` to `stepped`, the observation statistics updated, the noise scales of envs whose
    episode ended redrawn ("uniform")."""
    num_envs = config.num_envs

    def after_step(stepped, obs, action, stats, noise_scale, noise_key, hp):
        env_state = data.split(stepped, size=num_envs)
        info = env_state.info
        terminated = env_state.done * (1.0 - info["truncation"])
        next_obs = view(info["final_obs"])
        transition = Transition(obs, action, env_state.reward, next_obs, terminated, env_state.done)
        if config.normalize_observations:  # Brax's SAC: the observations acted on
            seen = obs if config.renormalize_rollout else next_obs
            stats = normalization.update(stats, seen, config.obs_stats_until)
        if config.exploration == "uniform":  # redrawn for envs whose episode just ended
            fresh = noise_scales(config, noise_key, hp)
            noise_scale = jnp.where(env_state.done > 0, fresh, noise_scale)
        step_metrics = {
            **episode_metrics(env_state),
            **nonfinite(observation=(obs, next_obs), reward=env_state.reward),
        }
        return env_state, data.split(transition), stats, noise_scale, step_metrics

    return after_step


def as_float32(obs: Any) -> Any:
    """Replayed observations as float32 (stored as `TrainConfig.replay_obs_dtype`)."""
    return jax.tree.map(lambda x: x.astype(jnp.float32), obs)


def make_train(
    config: TrainConfig, agent: Agent, env: Any = None, randomization_fn: Any = None
) -> Trainer:
    """The replay program (`jaxrl.loops.make_train` picks it for agents without `explore`);
    `config` resolved (`jaxrl.loops.base.resolve_config`)."""
    given = env
    env, eval_env = make_envs(config, env, randomization_fn)
    view = observation_view(config, env)
    data = sharding.data_axis(config.devices, config.num_envs, config.batch_size)
    parts = make_parts(config, agent, env, view, data)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=data)
    randomized = randomization_fn is not None or bool(config.randomize)
    if shares_simulator(config, randomized, env=given):
        chunk = make_shared_chunk(config, agent, env, view, data, parts)
    else:
        chunk = make_chunk(config, agent, parts, evaluate)

    def train(key: jax.Array) -> tuple[OffPolicyState, dict]:
        return jax.lax.scan(lambda s, _: chunk(s), parts.init(key), None, config.num_chunks)

    policy = make_policy(config, agent)
    offline_chunk = None
    if config.offline_updates:
        from jaxrl.loops.offline import make_offline_chunk

        offline_chunk = make_offline_chunk(config, parts.learn, evaluate)
    return Trainer(
        config, agent, env, eval_env, parts.init, chunk, evaluate, train, policy, view, data,
        reset=make_reset(config, env, data, KEY_SPLITS), offline_chunk=offline_chunk,
        prefill=make_prefill(config, parts),
    )  # fmt: skip


def _learned(
    config, parts: Parts, state: OffPolicyState, collected, learn_key, training=None, dataset=None
):
    """The state after an iteration that collected `collected` (`Parts.collect`'s output):
    its transition stored, the updates where the buffer is ready, the acting agent refreshed;
    with the iteration's metrics. The new state keeps `state`'s key and iteration. `training`
    (a bool, traced; `make_shared_chunk`): where false, the state as it was. `dataset`: rows
    mixed into the batches (`mixed_sample`)."""
    env_state, transition, stats, noise_scale, episodes = collected
    buffer = replay.add(state.buffer, transition, training)
    args = (state.agent, buffer, stats, learn_key, state.hp["gamma"])
    ready = parts.ready(buffer)
    # `training` comes from the trip's index, the same for every seed under vmap, so the
    # evaluation's trips skip the update for real (a batched `ready` turns learn_if's switch
    # into a select, which would run it on every trip)
    agent_state, update_metrics = parts.learn(
        *args, ready=ready, training=training, dataset=dataset
    )
    if training is not None:
        ready = training & ready
    metrics = {**update_metrics, "updated": ready.astype(jnp.float32), **episodes}
    acting_agent = state.acting_agent
    if config.acting_lag:
        refresh = (state.iteration + 1) % config.acting_lag == 0
        refresh = refresh if training is None else refresh & training
        acting_agent = jax.lax.cond(refresh, lambda: agent_state, lambda: acting_agent)
    if training is not None:

        def pick(new, old):
            return jax.tree.map(lambda a, b: jnp.where(training, a, b), new, old)

        env_state, stats = pick(env_state, state.env_state), pick(stats, state.obs_stats)
        noise_scale = pick(noise_scale, state.noise_scale)
    new_state = state.replace(
        agent=agent_state,
        env_state=env_state,
        buffer=buffer,
        obs_stats=stats,
        noise_scale=noise_scale,
        acting_agent=acting_agent,
    )
    return new_state, metrics


def _collect(config: TrainConfig, parts: Parts, state: OffPolicyState, act_key: jax.Array):
    """`Parts.collect` of one iteration from `state`, acting with `act_key`."""
    acting = state.agent if config.acting_lag == 0 else state.acting_agent
    args = (state.env_state, state.obs_stats, state.noise_scale, state.iteration)
    return parts.collect(acting, *args, act_key, state.hp)


def make_prefill(config: TrainConfig, parts: Parts) -> Callable:
    """`Trainer.prefill`: iterations of `make_chunk`'s scan without the updates, drawing their
    keys as it does, so a prefill of P iterations and chunks after it train exactly as chunks
    whose first P iterations stored rows short of learning_starts (for an agent without
    `begin_online`, which a chunk applies before its iterations). Its own program, small: no
    update and no evaluation in it."""

    def iteration(state: OffPolicyState, _):
        key, act_key, _ = jax.random.split(state.key, 3)
        env_state, transition, stats, noise_scale, _ = _collect(config, parts, state, act_key)
        new_state = state.replace(
            env_state=env_state,
            buffer=replay.add(state.buffer, transition),
            obs_stats=stats,
            noise_scale=noise_scale,
            key=key,
            iteration=state.iteration + 1,
        )
        return new_state, None

    def prefill(state: OffPolicyState, iterations: int) -> OffPolicyState:
        return jax.lax.scan(iteration, state, None, iterations)[0]

    return prefill


def begin_online(agent: Agent, state: OffPolicyState) -> OffPolicyState:
    """`state` with `agent.begin_online` applied to its agent (where the agent has one): an
    online chunk's first step."""
    if agent.begin_online is None:
        return state
    return state.replace(agent=agent.begin_online(state.agent))


def make_chunk(config: TrainConfig, agent: Agent, parts: Parts, evaluate: Callable) -> Callable:
    """The chunk with an evaluation of its own envs after the iterations' scan:
    `chunk(state, dataset=None)`, `dataset` where the run mixes one into its batches."""

    def iteration(state: OffPolicyState, dataset):
        key, act_key, learn_key = jax.random.split(state.key, 3)
        collected = _collect(config, parts, state, act_key)
        new_state, metrics = _learned(config, parts, state, collected, learn_key, dataset=dataset)
        return new_state.replace(key=key, iteration=state.iteration + 1), metrics

    def chunk(state: OffPolicyState, dataset=None) -> tuple[OffPolicyState, dict]:
        state = begin_online(agent, state)
        state, metrics = jax.lax.scan(
            lambda s, _: iteration(s, dataset), state, None, config.iterations_per_chunk
        )
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        summary = summarize_chunk(
            metrics, config.updates_per_step, state.iteration, agent_state=state.agent
        )
        summary.update(evaluate(state.agent, state.obs_stats, eval_key))
        return state, summary

    return chunk


def make_shared_chunk(config: TrainConfig, agent: Agent, env, view, data, parts: Parts):
    """The chunk with its evaluation in the same scan as its iterations, through one env step
    (`jaxrl.loops.base.SharedEvaluation`): the same training and the same returns as
    `make_chunk`'s, with the simulator compiled once."""
    act, after_step = make_act(config, agent, view), make_after_step(config, view, data)
    shared = make_shared_evaluation(config, agent, env, view, data)
    iterations = config.iterations_per_chunk

    def trip(carry, i, dataset):
        state, evaluation = carry
        training, restarting, evaluating = i < iterations, i == iterations, i > iterations
        key, act_key, learn_key = jax.random.split(state.key, 3)
        acting = state.agent if config.acting_lag == 0 else state.acting_agent
        args = (state.env_state, state.obs_stats, state.noise_scale, state.iteration, act_key)
        obs, action, noise_key = act(acting, *args)
        # The evaluation's keys, from the key after the last iteration (make_chunk's split).
        chunk_key, eval_key = jax.random.split(state.key)
        restart_keys, eval_act_key = shared.restart(eval_key)
        eval_action = shared.action(evaluation, state.agent, state.obs_stats)

        def pick(new, old):
            return jax.tree.map(lambda a, b: jnp.where(training, a, b), new, old)

        env_in = pick(state.env_state, evaluation.env_state)
        restart = Restart(restarting, training, restart_keys)
        stepped = jax.lax.cond(
            training | restarting | shared.running(evaluation),
            lambda: env.step(env_in, jnp.where(training, action, eval_action), restart),
            lambda: env_in,
        )
        collected = after_step(
            stepped, obs, action, state.obs_stats, state.noise_scale, noise_key, state.hp
        )
        learned, metrics = _learned(config, parts, state, collected, learn_key, training, dataset)
        learned = learned.replace(
            key=jnp.where(training, key, jnp.where(restarting, chunk_key, state.key)),
            iteration=state.iteration + training.astype(state.iteration.dtype),
        )
        evaluation = shared.record(evaluation, stepped, eval_act_key, restarting, evaluating)
        return (learned, evaluation), metrics

    def chunk(state: OffPolicyState, dataset=None) -> tuple[OffPolicyState, dict]:
        state = begin_online(agent, state)
        trips = jnp.arange(iterations + 1 + shared.steps)
        carry = (state, shared.initial(state.env_state))
        (state, evaluation), metrics = jax.lax.scan(lambda c, i: trip(c, i, dataset), carry, trips)
        metrics = jax.tree.map(lambda m: m[:iterations], metrics)
        summary = summarize_chunk(
            metrics, config.updates_per_step, state.iteration, agent_state=state.agent
        )
        summary.update(shared.result(evaluation))
        return state, summary

    return chunk
