"""What both training loops share: the envs, the observation view, the greedy policy, the
in-program evaluation, per-chunk summaries, the resolved config, and the `Trainer` they return.
`jaxrl.loops.offpolicy` and `jaxrl.loops.onpolicy` import this module; it imports neither."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl import envs, normalization, observations, sharding
from jaxrl.agents.base import Agent
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.observations import ObservationView, actor_part


class Trainer(NamedTuple):
    config: TrainConfig
    agent: Agent
    env: Any
    eval_env: Any
    init: Callable[..., Any]
    """`init(key, member=None) -> state` (OffPolicyState or OnPolicyState); `member`: (agent,
    config) of one setting of a grid (`jaxrl.grid`), differing from this trainer's only in
    ARRAY_FIELDS: the state that setting starts from, of the same structure, so the states
    stack under vmap."""
    chunk: Callable[[Any], tuple[Any, dict]]
    evaluate: Callable[[Any, normalization.RunningStats, jax.Array], dict]
    train: Callable[[jax.Array], tuple[Any, dict]]
    policy: Callable[[Any, normalization.RunningStats, jax.Array], jax.Array]
    """`policy(agent_state, obs_stats, obs) -> action`: greedy, with the run's observation
    normalisation applied to raw observations (one [obs_size] or a batch [..., obs_size], or
    the env's dict observation, read at the run's actor entry)."""
    observation: ObservationView
    """Which of the env's observations actor and critic read, and their sizes."""
    data: sharding.DataAxis = sharding.UNSHARDED
    """The devices the run's envs, replay buffer and batches are split over (`--devices`)."""
    compile_chunk: Callable[[Any], Callable[[Any], tuple[Any, dict]]] | None = None
    """Where a chunk is several programs on several devices (`jaxrl.loops.split`):
    `compile_chunk(state)` compiles them for that state and returns the chunk that runs them
    (`chunk` itself then runs on the host and cannot be jitted or vmapped). None: one
    program, `jax.jit(chunk)`."""
    place: Callable[[Any], Any] | None = None
    """`place(state)`: the state moved onto the devices its parts live on (split runs); None:
    the driver places it by `data` (`jaxrl.sharding.state_shardings`)."""
    reset: Callable[[jax.Array], Any] | None = None
    """`reset(key) -> env_state`: the part of `init(key)` that resets the training envs, free
    of the run's settings, so a program of its own can be reused by a re-run with other
    ones; `init(key, member, env_state)` takes its states and gives the state `init(key,
    member)` would. None: `init` is one program (an actor/learner split)."""
    offline_chunk: Callable[[Any, Any], tuple[Any, dict]] | None = None
    """`offline_chunk(state, dataset) -> (state, metrics)`: a chunk of updates on a dataset on
    the device (`jaxrl.loops.offline`), for the run's first `offline_chunks` chunks; None for
    a run without --offline-updates."""
    prefill: Callable[[Any, int], Any] | None = None
    """`prefill(state, iterations) -> state`: `iterations` loop iterations that act, step
    the envs, update the observation statistics and store, without an update or an
    evaluation (Brax SAC's replay prefill, `jaxrl.brax.sac`); `iterations` static. None for
    the on-policy loop."""


def make_envs(
    config: TrainConfig, base: Any = None, randomization_fn: Any = None, metric_sums: bool = False
) -> tuple[Any, Any]:
    """The training envs (auto-reset) and the evaluation envs, over one base env: `base` when
    given (any object with Brax's reset/step/observation_size/action_size), else the registry's
    `config.env` (after importing `config.env_imports`, which may register it). `metric_sums`:
    the training envs sum their own metrics over each episode (`envs.wrap`).

    Domain randomization (`randomization_fn(model, rng) -> (models, in_axes)`, else the one
    `config.randomize` names): each training env gets its own physics, drawn from the seed;
    evaluation envs other draws where `config.randomize_eval`, else the nominal physics."""
    base, eval_base, train_dr, eval_dr, sizes = _env_parts(config, base, randomization_fn)
    first = config.autoreset == "first"
    env = envs.wrap(base, config.num_envs, randomization=train_dr, reset_to_first=first,
                    metric_sums=metric_sums, **sizes)  # fmt: skip
    return env, _eval_envs(config, eval_base, eval_dr, sizes)


def make_eval_env(config: TrainConfig, base: Any = None, randomization_fn: Any = None) -> Any:
    """`make_envs`' evaluation envs alone, the same ones, without the training envs (whose
    physics, where randomized, are drawn for every one of `config.num_envs` envs): what `jaxrl
    eval` of a run's checkpoint needs."""
    _, eval_base, _, eval_dr, sizes = _env_parts(config, base, randomization_fn)
    return _eval_envs(config, eval_base, eval_dr, sizes)


def _eval_envs(config: TrainConfig, base: Any, eval_dr: Any, sizes: dict) -> Any:
    return envs.wrap(base, config.eval_envs, auto_reset=False, randomization=eval_dr, **sizes)


def _env_parts(config: TrainConfig, base: Any, randomization_fn: Any) -> tuple:
    """(base env, evaluation base env, training and evaluation randomization or None,
    `envs.wrap`'s sizes). The evaluation base is the training one unless `base` is an
    `envs.WithEvalEnv`."""
    eval_base = None
    if base is None:
        base = registry_env(config)
    else:
        base, eval_base = envs.split_eval_env(base)
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
    return base, base if eval_base is None else eval_base, train_dr, eval_dr, sizes


def registry_env(config: TrainConfig) -> Any:
    """The registry's base env `config.env` with its options, after importing
    `config.env_imports` (which may register it)."""
    envs.import_modules(config.env_imports)
    return envs.make(config.env, **config.env_options)


def make_reset(config: TrainConfig, env: Any, data: sharding.DataAxis, splits: int) -> Callable:
    """`Trainer.reset` of a loop whose `init(key)` splits its key `splits` ways and resets the
    training envs with the third part."""

    def reset(key: jax.Array) -> Any:
        return data.split(env.reset(jax.random.split(key, splits)[2]), size=config.num_envs)

    return reset


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
        return normalization.normalize(stats, obs, config.obs_clip, config.obs_std_eps)

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
    episode length) of `eval_envs` episodes (greedy, or `config.eval_actions` "sampled"),
    without auto-reset; with
    `per_episode`, also each episode's return ("eval_returns"). The actor reads the env's
    observations through `view` (default: `observation_view(config, eval_env)`); the eval
    envs are split over `data`'s devices where they divide evenly."""
    observe = make_observe(config)
    view = view or observation_view(config, eval_env)
    sampled = config.eval_actions == "sampled"
    with_metrics, repeat = config.eval_env_metrics, config.action_repeat or 1

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
            env_state, episode_return, alive, length, t, sums = carry
            obs = actor_part(view(env_state.obs))
            step_key, noise = act_key, 0.0
            if sampled:  # a fresh draw per step (a greedy action reads no key)
                step_key, noise = jax.random.fold_in(act_key, t), 1.0
            action = agent.act(agent_state, observe(actor_part(stats), obs), step_key, noise)
            env_state = eval_env.step(env_state, action)
            # where, not multiply: a finished env may step into NaN physics.
            episode_return = episode_return + jnp.where(alive > 0, env_state.reward, 0.0)
            if with_metrics:  # the env's own metrics, summed over each episode
                sums = {k: v + jnp.where(alive > 0, env_state.metrics[k], 0.0)
                        for k, v in sums.items()}  # fmt: skip
            length = length + alive
            alive = alive * (1.0 - env_state.done)
            return env_state, episode_return, alive, length, t + 1, sums

        sums = {k: zeros for k in start.metrics} if with_metrics else {}
        carry = (start, zeros, zeros + 1, zeros, 0, sums)
        _, episode_return, _, length, _, sums = jax.lax.while_loop(cond, body, carry)
        result = {
            "eval_return": episode_return.mean(),
            "eval_return_std": episode_return.std(),
            "eval_length": length.mean(),
        }
        if with_metrics:
            result["eval_length_std"] = length.std()
            for name, total in sums.items():  # Brax's Evaluator: "per_step" ones per step
                if name.endswith("per_step"):
                    total = total / jnp.maximum(length * repeat, 1.0)
                result[f"eval_episode/{name}"] = total.mean()
                result[f"eval_episode/{name}_std"] = total.std()
        if per_episode:
            result["eval_returns"] = episode_return
        return result

    return evaluate


# The step-0 evaluation's key: the state's own folded with this, so that it draws nothing from
# the key training goes on with, and a run trains the same with or without it.
START_EVALUATION = 0x5EED


def evaluate_start(evaluate: Callable) -> Callable:
    """`at_start(agent_state, obs_stats, key) -> evaluate's metrics`: the evaluation of a loop
    state's policy (`start_arguments`) before its first chunk, as Brax's trainers evaluate at
    step 0, with a key of its own (the state's, folded with `START_EVALUATION`). The run
    layer's (`RunOptions.eval_at_start`) and the Brax door's."""

    def at_start(agent_state, obs_stats, key: jax.Array) -> dict:
        return evaluate(agent_state, obs_stats, jax.random.fold_in(key, START_EVALUATION))

    return at_start


def start_arguments(state) -> tuple:
    """What `evaluate_start`'s evaluation reads of a loop's state: not its envs or buffer."""
    return state.agent, state.obs_stats, state.key


def shares_simulator(
    config: TrainConfig, randomized: bool, supported: bool = True, env: Any = None
) -> bool:
    """Whether the chunk's evaluation steps in the training envs (`config.eval_simulator`,
    `SharedEvaluation`): "auto" shares on a GPU or TPU where it can; "shared" where it cannot is
    a ConfigError. `randomized`: the training envs have physics of their own per env (domain
    randomization), which evaluation must not step in; `supported`: the loop can share; `env`:
    the env object the loop was given, an `envs.WithEvalEnv` evaluating in another env."""
    mode = config.eval_simulator
    if mode == "own":
        return False
    why = None
    if not supported:
        why = "the actor/learner split (split_every > 0) evaluates on envs of its own"
    elif isinstance(env, envs.WithEvalEnv):
        why = "a separate evaluation env (eval_env) is stepped on envs of its own"
    elif randomized:
        why = "the training envs have randomized physics (--randomize), evaluation must not"
    elif config.eval_actions == "sampled":
        why = "sampled evaluation actions (eval_actions 'sampled') run on envs of their own"
    elif config.eval_env_metrics:
        why = "the env's metrics (eval_env_metrics) are summed on envs of their own"
    elif config.eval_envs > config.num_envs:
        why = f"eval_envs ({config.eval_envs}) is above num_envs ({config.num_envs})"
    if mode == "shared" and why:
        raise ConfigError(f"eval_simulator 'shared' cannot be used here: {why}")
    return why is None and (mode == "shared" or jax.default_backend() != "cpu")


class EvalCarry(NamedTuple):
    """A shared-simulator evaluation in progress (`SharedEvaluation`)."""

    env_state: Any  # [N] states stepped by the training envs' step; the first eval_envs count
    act_key: jax.Array
    episode_return: jax.Array  # [eval_envs]
    alive: jax.Array  # [eval_envs] 1 until the episode ends
    length: jax.Array  # [eval_envs]


class SharedEvaluation(NamedTuple):
    """The chunk's evaluation inside the training loop's own scan, so the program holds one
    copy of the env's step and reset (issue 39: two copies of MJX's step and reset were most of
    an MJX chunk's compile). The loop runs its training trips, then one trip that restarts
    every env of the evaluation's [N] state (`envs.wrappers.Restart`, the first eval_envs from
    the keys `make_evaluate`'s reset would use), then `steps` trips that step them greedily; a
    trip whose env step is not needed skips it. The first eval_envs envs run the same episodes
    as `make_evaluate`'s, so the returns are the same (to float32 rounding where XLA compiles
    the physics differently in the two programs: `TrainConfig.eval_simulator`)."""

    steps: int
    initial: Callable[[Any], EvalCarry]
    """initial(env_state) -> EvalCarry, `env_state` (any [N] state) as a placeholder."""
    restart: Callable[[jax.Array], tuple[jax.Array, jax.Array]]
    """restart(key) -> (keys [N], act_key): the keys of the restart trip, from the key
    `make_evaluate` would be given."""
    action: Callable[[EvalCarry, Any, Any], jax.Array]
    """action(carry, agent_state, obs_stats) -> [N, A] greedy actions (zeros past eval_envs)."""
    record: Callable[..., EvalCarry]
    """record(carry, stepped, act_key, restarting, evaluating) -> the carry after a trip."""
    running: Callable[[EvalCarry], jax.Array]
    """Whether an episode of the evaluation is still running."""
    result: Callable[[EvalCarry], dict]
    """The metrics `make_evaluate`'s evaluate returns."""


def make_shared_evaluation(
    config: TrainConfig, agent: Agent, env: Any, view: ObservationView, data: sharding.DataAxis
) -> SharedEvaluation:
    """`SharedEvaluation` over the training envs `env` (an auto-reset batch of num_envs)."""
    observe = make_observe(config)
    count, num_envs = config.eval_envs, config.num_envs

    def initial(env_state) -> EvalCarry:
        zeros = jnp.zeros(count)
        return EvalCarry(env_state, jax.random.PRNGKey(0), zeros, zeros + 1, zeros)

    def restart(key):
        env_key, act_key = jax.random.split(key)
        keys = jax.random.split(env_key, count)  # VmapWrapper.reset's keys for the eval envs
        if num_envs > count:  # the envs past them: stepped, never counted
            spare = jax.random.split(jax.random.fold_in(env_key, 1), num_envs - count)
            keys = jnp.concatenate([keys, spare])
        return keys, act_key

    def first(tree):
        return jax.tree.map(lambda x: x[:count], tree)

    def action(carry, agent_state, stats):
        obs = first(actor_part(view(carry.env_state.obs)))
        act = agent.act(agent_state, observe(actor_part(stats), obs), carry.act_key, 0.0)
        return jnp.pad(act, ((0, num_envs - count),) + ((0, 0),) * (act.ndim - 1))

    def record(carry, stepped, act_key, restarting, evaluating):
        # Sums over the training trips too: the restart trip sets them back to zero.
        stepped = data.split(stepped, size=num_envs)
        reward, done = stepped.reward[:count], stepped.done[:count]
        episode_return = carry.episode_return + jnp.where(carry.alive > 0, reward, 0.0)
        length = carry.length + carry.alive
        alive = carry.alive * (1.0 - done)
        fresh = initial(stepped)
        moved = restarting | evaluating
        return EvalCarry(
            jax.tree.map(lambda new, old: jnp.where(moved, new, old), stepped, carry.env_state),
            jnp.where(restarting, act_key, carry.act_key),
            jnp.where(restarting, fresh.episode_return, episode_return),
            jnp.where(restarting, fresh.alive, alive),
            jnp.where(restarting, fresh.length, length),
        )

    def result(carry) -> dict:
        return {
            "eval_return": carry.episode_return.mean(),
            "eval_return_std": carry.episode_return.std(),
            "eval_length": carry.length.mean(),
        }

    return SharedEvaluation(
        env.episode_length,
        initial,
        restart,
        action,
        record,
        lambda carry: jnp.any(carry.alive > 0),
        result,
    )


def skip_learning(learn: Callable, *args) -> tuple[Any, dict]:
    """What `learn` returns when it does not run: the agent state as it is, zero metrics."""
    shapes = jax.eval_shape(lambda *a: learn(*a)[1], *args)
    return args[0], jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)


def learn_if(ready: jax.Array, learn: Callable, *args) -> tuple[Any, dict]:
    """`learn(*args)` where `ready`, else `skip_learning`'s agent state as it is with zero
    metrics, as `lax.cond(ready, learn, skip)` would, with `learn` traced once: the skipping
    branch takes the metrics' shapes from the learning branch's trace (`lax.switch` traces its
    branches in order, the learning one first), and traces `learn` again (`jax.eval_shape`)
    only where that order does not hold. The update is most of the chunk's trace: a second one
    cost about a quarter of a re-run's compile clock (issue 39)."""
    traced = []

    def run(*a):
        out = learn(*a)
        traced.append(jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), out[1]))
        return out

    def skip(*a):
        if not traced:
            return skip_learning(learn, *a)
        return a[0], jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), traced[-1])

    return jax.lax.switch(jnp.where(ready, 0, 1), (run, skip), *args)


NONFINITE = "nonfinite_"
"""Prefix of the per-step counts of NaN and infinite values (`nonfinite`); a chunk's summary
turns them into the iteration they first appeared at (`summarize_chunk`)."""


def _count_nonfinite(tree) -> jax.Array:
    leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)]
    counts = [jnp.sum(~jnp.isfinite(x)) for x in leaves]
    return sum(counts, jnp.zeros((), jnp.int32)).astype(jnp.float32)


def nonfinite(**quantities) -> dict:
    """How many values of each named quantity (any pytree) are NaN or infinite, as metrics
    `nonfinite_<name>`; the driver stops (or rolls back) a run whose chunk saw any."""
    return {NONFINITE + name: _count_nonfinite(tree) for name, tree in quantities.items()}


def episode_metrics(env_state) -> dict:
    """Sums over the envs whose episode ended at this step (auto-reset's finished stats)."""
    done, info = env_state.done, env_state.info
    return {
        "episodes": done.sum(),
        "episode_return_sum": (done * info["finished_return"]).sum(),
        "episode_length_sum": (done * info["finished_length"]).sum(),
    }


def summarize_chunk(
    metrics: dict,
    updates_per_iteration: int,
    iteration: jax.Array,
    iterations_per_row: int = 1,
    agent_state: Any = None,
) -> dict:
    """One row from a chunk's per-iteration metrics (or per row of `iterations_per_row`
    iterations): losses averaged over the iterations that ran updates (flag "updated"), episode
    statistics and update counts summed.

    Non-finite values: for each `nonfinite_<name>` count (`nonfinite`), and for the update
    metrics as a whole (`nonfinite_update`), the loop iteration by whose end they first
    appeared, -1 where none did; `agent_state` (the chunk's last) adds `nonfinite_parameters`
    (`iteration` where any of its floats is NaN or infinite)."""
    updated = metrics.pop("updated")
    counts = {k: metrics.pop(k) for k in list(metrics) if k.startswith(NONFINITE)}
    learned = [v for k, v in metrics.items() if not k.startswith("episode")]
    rows = updated.shape[0]
    if learned:
        counts[NONFINITE + "update"] = sum(
            (~jnp.isfinite(v)).reshape(rows, -1).sum(1).astype(jnp.float32) for v in learned
        )
    summary = {
        k: (v * updated).sum() / jnp.maximum(updated.sum(), 1.0)
        for k, v in metrics.items()
        if not k.startswith("episode")
    }
    for name, count in counts.items():
        bad = count > 0
        # The end of the first row that saw one, as an iteration count.
        first = iteration - (rows - 1 - jnp.argmax(bad)) * iterations_per_row
        summary[name] = jnp.where(bad.any(), first, -1)
    if agent_state is not None:
        broken = _count_nonfinite(agent_state) > 0
        summary[NONFINITE + "parameters"] = jnp.where(broken, iteration, -1)
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
    if config.algo is None:  # named by the agent alone
        config = dataclasses.replace(config, algo=agent.name or "sac")
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
    config = config.resolved(agent.loop_defaults)
    if agent.reads_next_action and config.n_step != 1:
        raise ConfigError(
            f"--n-step {config.n_step} with {config.algo}: its critic penalty reads the "
            "dataset's next action of a 1-step transition; set --n-step 1"
        )
    return config
