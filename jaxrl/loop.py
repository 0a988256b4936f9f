"""The off-policy training loop as one compiled program (see docs/DESIGN.md).

`make_train(config, agent)` composes an env and an agent into pure functions:

- `init(key) -> LoopState`: agent, envs, empty replay buffer, observation statistics;
- `chunk(state) -> (state, metrics)`: `iterations_per_chunk` loop iterations in one `lax.scan`
  (act, step all envs, insert, `updates_per_step` gradient updates), then one deterministic
  evaluation, all inside the same program;
- `train(key) -> (state, metrics)`: the whole run, `num_chunks` chunks in one more scan, so
  `jax.vmap(train)` trains several seeds at once.

The host driver (`jaxrl.driver`) jits `chunk` once, donates its state, and only logs,
checkpoints and checks for NaNs between chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import envs, normalization, observations, replay, sharding
from jaxrl.agents.base import Agent, hyperparameters
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.observations import ObservationView, actor_part, split_critic
from jaxrl.types import Batch, Transition


@flax.struct.dataclass
class LoopState:
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


class Trainer(NamedTuple):
    config: TrainConfig
    agent: Agent
    env: Any
    eval_env: Any
    init: Callable[..., LoopState]
    """`init(key, member=None) -> LoopState`; `member`: (agent, config) of one setting of a
    grid (`jaxrl.grid`), differing from this trainer's only in ARRAY_FIELDS: the state that
    setting starts from, of the same structure, so the states stack under vmap."""
    chunk: Callable[[LoopState], tuple[LoopState, dict]]
    evaluate: Callable[[Any, normalization.RunningStats, jax.Array], dict]
    train: Callable[[jax.Array], tuple[LoopState, dict]]
    policy: Callable[[Any, normalization.RunningStats, jax.Array], jax.Array]
    """`policy(agent_state, obs_stats, obs) -> action`: greedy, with the run's observation
    normalisation applied to raw observations (one [obs_size] or a batch [..., obs_size], or
    the env's dict observation, read at the run's actor entry)."""
    observation: ObservationView
    """Which of the env's observations actor and critic read, and their sizes."""
    data: sharding.DataAxis = sharding.UNSHARDED
    """The devices the run's envs, replay buffer and batches are split over (`--devices`)."""


def make_envs(
    config: TrainConfig, base: Any = None, randomization_fn: Any = None
) -> tuple[Any, Any]:
    """The training envs (auto-reset) and the evaluation envs, over one base env: `base` when
    given (any object with Brax's reset/step/observation_size/action_size), else the registry's
    `config.env` (after importing `config.env_imports`, which may register it).

    Domain randomization (`randomization_fn(model, rng) -> (models, in_axes)`, else the one
    `config.randomize` names): each training env gets its own physics, drawn from the seed;
    evaluation envs other draws where `config.randomize_eval`, else the nominal physics."""
    if base is None:
        envs.import_modules(config.env_imports)
        base = envs.make(config.env, **config.env_options)
    else:
        base = envs.adapt(base)
    if randomization_fn is None and config.randomize:
        from jaxrl.envs import randomization

        randomization_fn = randomization.named(
            config.randomize, config.randomize_scale, config.env, base
        )
    train_dr = eval_dr = None
    if randomization_fn is not None:
        # Its own stream of the seed's keys: the same physics on resume, none of the run's
        # other randomness moved.
        key = jax.random.fold_in(jax.random.PRNGKey(config.seed), RANDOMIZATION_STREAM)
        train_key, eval_key = jax.random.split(key)
        train_dr = (randomization_fn, train_key)
        eval_dr = (randomization_fn, eval_key) if config.randomize_eval else None
    if config.joint_limit_actions:  # checked here, to name the task in the error
        from jaxrl.envs import robots

        robots.joint_limit_bounds(base, config.env)
    sizes = dict(
        episode_length=config.episode_length,
        action_repeat=config.action_repeat,
        joint_limit_actions=config.joint_limit_actions,
    )
    env = envs.wrap(base, config.num_envs, randomization=train_dr, **sizes)
    eval_env = envs.wrap(base, config.eval_envs, auto_reset=False, randomization=eval_dr, **sizes)
    return env, eval_env


RANDOMIZATION_STREAM = 0xD0  # folded into the seed's key for the physics draws


def observation_view(config: TrainConfig, env: Any) -> ObservationView:
    """What actor and critic read of `env`'s observations under `config.actor_obs` /
    `config.critic_obs` (ConfigError where the env has no such entry)."""
    return observations.view(
        env.observation_size, config.actor_obs, config.critic_obs, label=config.env
    )


def init_agent(agent: Agent, key: jax.Array, view: ObservationView, action_size: int) -> Any:
    """The agent's initial state; the critic's own observation size is passed only where it
    reads one (asymmetric), so an agent whose init takes three arguments still works."""
    if view.asymmetric:
        return agent.init(key, view.actor_size, action_size, view.critic_size)
    return agent.init(key, view.actor_size, action_size)


def make_observe(config: TrainConfig) -> Callable:
    def observe(stats, obs):
        if not config.normalize_observations:
            return obs
        return normalization.normalize(stats, obs, config.obs_clip)

    return observe


def make_policy(config: TrainConfig, agent: Agent) -> Callable:
    """The greedy action of raw observations: normalised as in training, then `agent.act` with
    no noise. `config` must be resolved (its `normalize_observations` set). A dict observation
    (the env's own) is read at the actor's entry, `config.actor_obs` (default "state")."""
    observe = make_observe(config)
    key = jax.random.PRNGKey(0)  # unused by a greedy action; act's signature takes one

    def policy(agent_state, obs_stats, obs):
        if isinstance(obs, dict):
            obs = obs[config.actor_obs or observations.DEFAULT_KEY]
        obs = jnp.asarray(obs, jnp.float32)
        single = obs.ndim == 1
        batch = obs[None] if single else obs.reshape(-1, obs.shape[-1])
        action = agent.act(agent_state, observe(actor_part(obs_stats), batch), key, 0.0)
        return action[0] if single else action.reshape(obs.shape[:-1] + action.shape[-1:])

    return policy


def make_evaluate(
    config: TrainConfig,
    agent: Agent,
    eval_env: Any,
    per_episode: bool = False,
    view: ObservationView | None = None,
    data: sharding.DataAxis = sharding.UNSHARDED,
) -> Callable:
    """evaluate(agent_state, obs_stats, key) -> mean undiscounted return (and its spread and
    episode length) of `eval_envs` deterministic episodes, without auto-reset; with
    `per_episode`, also each episode's return ("eval_returns"). The actor reads the env's
    observations through `view` (default: `observation_view(config, eval_env)`); the eval
    envs are split over `data`'s devices where they divide evenly."""
    observe = make_observe(config)
    view = view or observation_view(config, eval_env)

    def evaluate(agent_state, stats, key: jax.Array) -> dict:
        env_key, act_key = jax.random.split(key)
        start = eval_env.reset(env_key)
        if config.eval_envs % data.size == 0:
            start = data.split(start, size=config.eval_envs)
        zeros = jnp.zeros(config.eval_envs)

        def cond(carry):
            alive, t = carry[2], carry[4]
            return jnp.any(alive > 0) & (t < eval_env.episode_length)

        def body(carry):
            env_state, episode_return, alive, length, t = carry
            obs = actor_part(view(env_state.obs))
            action = agent.act(agent_state, observe(actor_part(stats), obs), act_key, 0.0)
            env_state = eval_env.step(env_state, action)
            # where, not multiply: a finished env may step into NaN physics.
            episode_return = episode_return + jnp.where(alive > 0, env_state.reward, 0.0)
            length = length + alive
            alive = alive * (1.0 - env_state.done)
            return env_state, episode_return, alive, length, t + 1

        carry = (start, zeros, zeros + 1, zeros, 0)
        _, episode_return, _, length, _ = jax.lax.while_loop(cond, body, carry)
        result = {
            "eval_return": episode_return.mean(),
            "eval_return_std": episode_return.std(),
            "eval_length": length.mean(),
        }
        if per_episode:
            result["eval_returns"] = episode_return
        return result

    return evaluate


def episode_metrics(env_state) -> dict:
    """Sums over the envs whose episode ended at this step (auto-reset's finished stats)."""
    done, info = env_state.done, env_state.info
    return {
        "episodes": done.sum(),
        "episode_return_sum": (done * info["finished_return"]).sum(),
        "episode_length_sum": (done * info["finished_length"]).sum(),
    }


def summarize_chunk(metrics: dict, updates_per_iteration: int, iteration: jax.Array) -> dict:
    """One row from a chunk's per-iteration metrics: losses averaged over the iterations that
    ran updates (flag "updated"), episode statistics and update counts summed."""
    updated = metrics.pop("updated")
    summary = {
        k: (v * updated).sum() / jnp.maximum(updated.sum(), 1.0)
        for k, v in metrics.items()
        if not k.startswith("episode")
    }
    summary.update(
        updates=updated.sum() * updates_per_iteration,
        episodes=metrics["episodes"].sum(),
        episode_return_sum=metrics["episode_return_sum"].sum(),
        episode_length_sum=metrics["episode_length_sum"].sum(),
        iteration=iteration,
    )
    return summary


def resolve_config(config: TrainConfig, agent: Agent) -> TrainConfig:
    """`config` with the agent's own loop defaults filled in, after checking that it describes
    this agent: a config naming another algorithm (above all, an off-policy one for an
    on-policy agent, whose chunks would then hold no rollout) is an error."""
    if agent.name and config.algo != agent.name:
        raise ConfigError(
            f"TrainConfig.algo is {config.algo!r} but the agent is {agent.name!r}; build the "
            f"config with algo={agent.name!r} (its loop defaults and chunk sizes depend on it)."
        )
    if config.on_policy != agent.on_policy:
        kind = "an on-policy" if agent.on_policy else "an off-policy"
        raise ConfigError(
            f"TrainConfig.algo {config.algo!r} does not match {kind} agent; pass the agent's "
            "algorithm name as algo."
        )
    return config.resolved(agent.loop_defaults)


def make_train(
    config: TrainConfig, agent: Agent, env: Any = None, randomization_fn: Any = None
) -> Trainer:
    """The training program of `agent` on `config.env` (or on the base env `env`, an object
    with Brax's reset/step/observation_size/action_size): the replay loop below for off-policy
    agents, `jaxrl.onpolicy` for on-policy ones (those with `explore`). Config fields left at
    None take the agent's loop defaults (`Trainer.config` holds the resolved config).
    `randomization_fn(model, rng) -> (models, in_axes)`: domain randomization, as Brax's and
    Playground's trainers take it (see `make_envs`)."""
    config = resolve_config(config, agent)
    if agent.on_policy:
        from jaxrl import onpolicy

        return onpolicy.make_train(config, agent, env, randomization_fn)
    env, eval_env = make_envs(config, env, randomization_fn)
    view = observation_view(config, env)
    num_envs, action_size = config.num_envs, env.action_size
    data = sharding.data_axis(config.devices, num_envs, config.batch_size)
    batch_shape = (config.updates_per_step, config.batch_size)
    learn_after = max(config.learning_starts, config.batch_size, config.n_step * num_envs)

    def noise_scales(key: jax.Array, hp: dict) -> jax.Array:
        low, high = hp["noise_scale_min"], hp["noise_scale_max"]
        if config.exploration == "linspace":
            return jnp.linspace(low, high, num_envs)
        if config.exploration == "uniform":
            return jax.random.uniform(key, (num_envs,), minval=low, maxval=high)
        return jnp.ones(num_envs)

    observe = make_observe(config)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=data)

    def init(key: jax.Array, member: tuple[Agent, TrainConfig] | None = None) -> LoopState:
        member_agent, member_config = member or (agent, config)
        key, agent_key, env_key, noise_key = jax.random.split(key, 4)
        env_state = data.split(env.reset(env_key), size=config.num_envs)
        first_obs = jax.tree.map(lambda x: x[0], view(env_state.obs))
        example = Transition(
            obs=first_obs,
            action=jnp.zeros((action_size,), jnp.float32),
            reward=env_state.reward[0],
            next_obs=first_obs,
            terminated=env_state.reward[0],
            done=env_state.reward[0],
        )
        # Identity until the first update: the reset states are far narrower than those the
        # policy visits, and seeding the statistics with them slowed PPO (as Brax, not seeded).
        stats = normalization.init(view.sizes)
        agent_state = init_agent(member_agent, agent_key, view, action_size)
        hp = hyperparameters(member_config, TrainConfig.ARRAY_FIELDS)
        return LoopState(
            agent=agent_state,
            env_state=env_state,
            buffer=replay.init(example, config.replay_capacity // num_envs, num_envs),
            obs_stats=stats,
            key=key,
            iteration=jnp.zeros((), jnp.int32),
            noise_scale=noise_scales(noise_key, hp),
            acting_agent=agent_state if config.acting_lag else None,
            hp=hp,
        )

    def sample(buffer, key, gamma) -> Batch:
        """[updates_per_step, batch_size] rows, each update's batch split over the devices."""
        if config.n_step == 1:
            rows = replay.sample(buffer, key, batch_shape, data.size)
            return Batch(
                rows.obs,
                rows.action,
                rows.reward,
                rows.next_obs,
                rows.terminated,
                jnp.full_like(rows.reward, gamma),
            )
        return replay.sample_n_step(buffer, key, batch_shape, config.n_step, gamma, data.size)

    def learn(agent_state, buffer, stats, key, gamma):
        sample_key, update_key = jax.random.split(key)
        # One gather for all updates of this iteration, sliced per update inside the scan.
        batches = data.split(sample(buffer, sample_key, gamma), axis=1)
        batches = batches._replace(
            obs=observe(stats, batches.obs), next_obs=observe(stats, batches.next_obs)
        )
        batches = split_critic(batches)  # the critic's own observations into critic_obs
        keys = jax.random.split(update_key, config.updates_per_step)

        def one_update(agent_state, xs):
            return agent.update(agent_state, *xs)

        agent_state, metrics = jax.lax.scan(one_update, agent_state, (batches, keys))
        return agent_state, jax.tree.map(jnp.mean, metrics)

    def iteration(state: LoopState, _):
        key, act_key, random_key, learn_key, noise_key = jax.random.split(state.key, 5)
        obs = view(state.env_state.obs)
        acting = state.agent if config.acting_lag == 0 else state.acting_agent
        actor_obs = observe(actor_part(state.obs_stats), actor_part(obs))
        policy_action = agent.act(acting, actor_obs, act_key, state.noise_scale)
        if config.warmup_actions == "uniform":
            random_action = jax.random.uniform(
                random_key, (num_envs, action_size), minval=-1, maxval=1
            )
            warming_up = state.iteration * num_envs < config.learning_starts
            action = jnp.where(warming_up, random_action, policy_action)
        else:  # "policy": the (untrained, during warm-up) policy acts from the first step
            action = policy_action

        env_state = data.split(env.step(state.env_state, action), size=num_envs)
        info = env_state.info
        terminated = env_state.done * (1.0 - info["truncation"])
        next_obs = view(info["final_obs"])
        transition = Transition(obs, action, env_state.reward, next_obs, terminated, env_state.done)
        buffer = replay.add(state.buffer, data.split(transition))
        stats = state.obs_stats
        if config.normalize_observations:
            stats = normalization.update(stats, next_obs)

        ready = buffer.rows >= learn_after
        gamma = state.hp["gamma"]
        metric_shapes = jax.eval_shape(
            lambda a: learn(a, buffer, stats, learn_key, gamma)[1], state.agent
        )
        skip = lambda agent_state: (
            agent_state,
            jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), metric_shapes),
        )
        agent_state, update_metrics = jax.lax.cond(
            ready, lambda a: learn(a, buffer, stats, learn_key, gamma), skip, state.agent
        )
        metrics = {
            **update_metrics,
            "updated": ready.astype(jnp.float32),
            **episode_metrics(env_state),
        }
        noise_scale = state.noise_scale
        if config.exploration == "uniform":  # redrawn for envs whose episode just ended
            fresh = noise_scales(noise_key, state.hp)
            noise_scale = jnp.where(env_state.done > 0, fresh, noise_scale)
        acting_agent = state.acting_agent
        if config.acting_lag:
            refresh = (state.iteration + 1) % config.acting_lag == 0
            acting_agent = jax.lax.cond(refresh, lambda: agent_state, lambda: acting_agent)
        new_state = state.replace(
            agent=agent_state,
            env_state=env_state,
            buffer=buffer,
            obs_stats=stats,
            key=key,
            iteration=state.iteration + 1,
            noise_scale=noise_scale,
            acting_agent=acting_agent,
        )
        return new_state, metrics

    def chunk(state: LoopState) -> tuple[LoopState, dict]:
        state, metrics = jax.lax.scan(iteration, state, None, config.iterations_per_chunk)
        key, eval_key = jax.random.split(state.key)
        state = state.replace(key=key)
        summary = summarize_chunk(metrics, config.updates_per_step, state.iteration)
        summary.update(evaluate(state.agent, state.obs_stats, eval_key))
        return state, summary

    def train(key: jax.Array) -> tuple[LoopState, dict]:
        return jax.lax.scan(lambda s, _: chunk(s), init(key), None, config.num_chunks)

    policy = make_policy(config, agent)
    return Trainer(config, agent, env, eval_env, init, chunk, evaluate, train, policy, view, data)
