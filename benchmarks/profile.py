"""Where a jaxrl run's time goes, for the targets the suite reports as missed.

For one algorithm and preset (a "profile" case), with the persistent compilation cache off:
- compile: XLA compile seconds (and Python trace seconds) of each program piece on its own, as
  the chunk program contains it: `init` (env reset, agent and buffer init), `env_step` (one
  step of the training envs, auto-reset included), `evaluate` (reset and deterministic
  episodes of the evaluation envs), `update` (one chunk's gradient updates) and the whole
  `chunk` that holds them all. Pieces compiled apart do not add up to the chunk exactly (XLA
  optimises the whole program), but they show which piece dominates.
- run: steady seconds of one chunk, split into `learn` (the chunk's gradient updates: the
  chunk minus the same chunk with updates that do nothing), `simulate` (the chunk's env steps
  with random actions in one scan: the simulator limit), `evaluate` (the evaluation, run apart
  with the trained agent) and `other`, the rest: acting, replay, observation statistics.

Profiling is timing of the compiled programs, not `jax.profiler`: a trace shows XLA ops, but the
question here is which piece of our own program to shrink, which this answers directly.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxrl.loops import make_train
from jaxrl.types import Rollout, random_batch


def _compile(fn: Callable, *args) -> tuple[dict, Callable]:
    tick = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    traced = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return {"trace_seconds": traced - tick, "compile_seconds": done - traced}, compiled


def median_seconds(call: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - tick)
    return statistics.median(times)


def _seconds(compiled: Callable, *args) -> float:
    """Median wall seconds of a call after one warm-up call."""
    jax.block_until_ready(compiled(*args))
    return median_seconds(lambda: compiled(*args))


def learning_data(trainer, agent_state, key: jax.Array):
    """What one update learns from, at the run's sizes: a rollout of unroll_length steps of all
    envs (on-policy) or a batch of batch_size rows (off-policy), random but well-formed."""
    config, agent, env = trainer.config, trainer.agent, trainer.env
    obs_size, action_size = trainer.observation.actor_size, env.action_size
    critic_size = trainer.observation.critic_size  # asymmetric: the critic's own input
    key, critic_key = jax.random.split(key)
    if not agent.on_policy:
        batch = random_batch(key, config.batch_size, obs_size, action_size, config.gamma)
        if critic_size is None:
            return batch
        critic_obs = jax.random.normal(critic_key, (config.batch_size, critic_size))
        return batch._replace(critic_obs=critic_obs, next_critic_obs=critic_obs)
    k1, k2, k3 = jax.random.split(key, 3)
    steps, n = config.unroll_length, config.num_envs
    obs = jax.random.normal(k1, (steps, n, obs_size))
    _, extras = agent.explore(agent_state, obs.reshape(steps * n, obs_size), k2)
    zeros = jnp.zeros((steps, n))
    critic_obs = None
    if critic_size is not None:
        critic_obs = jax.random.normal(critic_key, (steps, n, critic_size))
    return Rollout(
        obs=obs,
        reward=jax.random.normal(k3, (steps, n)),
        next_obs=obs,
        terminated=zeros,
        done=zeros,
        discount=zeros + config.gamma,
        extras=jax.tree.map(lambda x: x.reshape((steps, n) + x.shape[1:]), extras),
        progress=jnp.zeros(()),
        critic_obs=critic_obs,
        next_critic_obs=critic_obs,
    )


def random_steps(env, num_envs: int, steps: int):
    """run(env_state, key): `steps` steps of the batched env with uniform random actions in one
    scan, returning the sum of the observations (not of the rewards: a constant reward, as
    inverted pendulum's, would let XLA drop the physics as dead code)."""

    def run(env_state, key):
        def body(state, key):
            action = jax.random.uniform(key, (num_envs, env.action_size), minval=-1)
            state = env.step(state, action)
            return state, sum(x.sum() for x in jax.tree.leaves(state.obs))

        _, out = jax.lax.scan(body, env_state, jax.random.split(key, steps))
        return out.sum()

    return run


def updates_per_chunk(trainer) -> int:
    config = trainer.config
    if trainer.agent.on_policy:
        return config.iterations_per_chunk  # one update (of epochs x minibatches) per rollout
    return config.iterations_per_chunk * config.updates_per_step


def without_updates(agent):
    """The agent with an update that leaves its state alone (same metrics, zeros): the loop
    around it then runs everything but the learning."""

    def update(state, data, key):
        shapes = jax.eval_shape(agent.update, state, data, key)[1]
        return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    return agent._replace(update=update)


def _chunk_seconds(chunk: Callable, state, warmup: int = 2):
    """Median seconds of a chunk after `warmup` chunks (they also carry the off-policy replay
    warm-up), and the state after them all."""
    for _ in range(warmup):
        state, _ = chunk(state)
    carry = [state]

    def next_chunk():
        carry[0], metrics = chunk(carry[0])
        return metrics

    return median_seconds(next_chunk), carry[0]


def profile(trainer, seed: int = 0) -> dict:
    """Compile and run seconds of `trainer`'s chunk program and of its pieces."""
    jax.config.update("jax_enable_compilation_cache", False)
    config, agent, env = trainer.config, trainer.agent, trainer.env
    key = jax.random.PRNGKey(seed)
    compile_times, run_times = {}, {}

    compile_times["init"], init = _compile(trainer.init, key)
    state = init(key)

    actions = jnp.zeros((config.num_envs, env.action_size))
    compile_times["env_step"], _ = _compile(env.step, state.env_state, actions)

    def evaluate(state):
        return trainer.evaluate(state.agent, state.obs_stats, state.key)

    compile_times["evaluate"], evaluate = _compile(evaluate, state)

    count = updates_per_chunk(trainer)

    def learn(agent_state, data, key):
        def body(agent_state, key):
            return agent.update(agent_state, data, key)[0], None

        return jax.lax.scan(body, agent_state, jax.random.split(key, count))[0]

    data = learning_data(trainer, state.agent, key)
    compile_times["update"], _ = _compile(learn, state.agent, data, key)

    steps = config.iterations_per_chunk * config.steps_per_iteration
    simulate = random_steps(env, config.num_envs, steps)
    _, simulate = _compile(simulate, state.env_state, key)
    run_times["simulate"] = _seconds(simulate, state.env_state, key)

    # Learning is timed in place: the same chunk with updates that do nothing, subtracted.
    # (Updates timed apart on made-up data run at another speed than on the loop's.)
    compile_times["chunk"], chunk = _compile(trainer.chunk, state)
    run_times["chunk"], trained = _chunk_seconds(chunk, state)
    idle = make_train(config, without_updates(agent))
    _, idle_chunk = _compile(idle.chunk, state)
    # From the trained state, so that its evaluations run as long as the real chunk's.
    idle_seconds, _ = _chunk_seconds(idle_chunk, trained)
    run_times["learn"] = run_times["chunk"] - idle_seconds
    # Evaluated with the agent the chunks trained: an untrained one ends its episodes early.
    run_times["evaluate"] = _seconds(evaluate, trained)
    run_times["other"] = idle_seconds - run_times["evaluate"] - run_times["simulate"]
    return {
        "compile": compile_times,
        "run": run_times,
        "env_steps_per_chunk": config.env_steps_per_chunk,
        "updates_per_chunk": count,
    }
