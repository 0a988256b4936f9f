"""The actor/learner split of Parallel Q-Learning (Li et al. 2023) over several devices.

PQL runs its actor (simulation and exploration) and its learners on separate GPUs at once,
exchanging data and parameters as they go. Here, over `--devices N` (N >= 2) with
`split_every K` > 0 (PQL's default), the first device steps the envs and acts and the other
N - 1 learn, data-parallel over their own mesh (`jaxrl.sharding`). Work proceeds in
exchanges of K iterations. In exchange r, at the same time:

- the actor steps every env K times, acting with the parameters the learners had at the end
  of exchange r - 1, and collects the K x num_envs transitions D_r;
- the learners run K x updates_per_step updates (critic and, every policy_delay of them,
  actor: PQL's fixed V:P ratio) on the replay buffer holding D_1 .. D_{r-1}, with the
  observation statistics as of D_{r-1}.

Then D_r goes into the learners' buffer and their parameters to the actor. So each side works
one exchange behind the other, as PQL's asynchronous parts do, but the schedule is fixed: the
same seed gives the same numbers whatever the devices' speeds. The rates of PQL's scheme
(updates per env step, critic:actor updates) are kept exactly. The learners' two parts (V-
and P-learner in the paper) run one after the other on the learners' devices, not
concurrently with each other.

Each exchange is three programs, compiled once: the actor's K steps (on the actor's device),
the learners' updates and the buffer insert (on the learners'); JAX dispatches them
asynchronously, so the actor's and the learners' programs of one exchange run at the same
time. A chunk is a whole number of exchanges, ending with the exchange's transfers, so between
chunks the state is an ordinary `OffPolicyState` (the actor's copy of the parameters is made
at a chunk's start and dropped at its end, when it equals the learners'): checkpoints and
resume work as for the one-program loop, and a split run resumes on one device. Not combined
with seeds or settings under vmap (several programs cannot be vmapped as one).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from jaxrl import replay, sharding
from jaxrl.agents.base import Agent
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.loops.base import (
    Trainer,
    make_envs,
    make_evaluate,
    make_policy,
    observation_view,
    summarize_chunk,
)
from jaxrl.loops.offpolicy import OffPolicyState, make_parts, skip_learning


def make_train(
    config: TrainConfig, agent: Agent, env: Any = None, randomization_fn: Any = None
) -> Trainer:
    """The split trainer (`config.split`: off-policy, split_every > 0, two devices or more);
    `config` resolved. Its `chunk` and `train` run on the host (several programs);
    `compile_chunk(state)` compiles them ahead of the first chunk."""
    if config.acting_lag:
        raise ConfigError(
            f"acting_lag {config.acting_lag} with an actor/learner split (split_every "
            f"{config.split_every} over {config.devices} devices): the split's actor already "
            "acts one exchange behind the learners; set acting_lag 0, or split_every 0"
        )
    devices = sharding.first_devices(sharding.device_count(config.devices))
    learners = len(devices) - 1
    sharding.check_shares(
        learners,
        "learner device(s)",
        f" of the actor/learner split (--devices {len(devices)}: one actor, {learners} learners)",
        num_envs=config.num_envs,
        batch_size=config.batch_size,
    )
    actor_axis, learner_axis = sharding.over(devices[:1]), sharding.over(devices[1:])
    env, eval_env = make_envs(config, env, randomization_fn)
    view = observation_view(config, env)
    acting = make_parts(config, agent, env, view, actor_axis)
    learning = make_parts(config, agent, env, view, learner_axis)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=actor_axis)
    every = config.split_every
    exchanges = config.iterations_per_chunk // every
    on_actor = actor_axis.sharding()
    on_learners = learner_axis.sharding()
    # Replay rows and collected transitions are laid out [time, env, ...]: split by env.
    by_env = learner_axis.sharding(PartitionSpec(None, sharding.DATA))

    def place(state: OffPolicyState) -> OffPolicyState:
        """Agent and replay buffer on the learners' devices, the rest on the actor's."""
        where = jax.tree.map(lambda _: on_actor, state)
        where = where.replace(
            agent=jax.tree.map(lambda _: on_learners, state.agent),
            buffer=jax.tree.map(lambda _: on_learners, state.buffer).replace(
                data=jax.tree.map(lambda _: by_env, state.buffer.data)
            ),
        )
        return jax.device_put(state, where)

    def start(key):
        return tuple(jax.random.split(key))

    def act(acting_agent, env_state, stats, noise_scale, iteration, key, hp):
        """The actor's K iterations: (env_state, stats, noise_scale, iteration, key),
        transitions [K, N], episode sums."""

        def body(carry, _):
            env_state, stats, noise_scale, iteration, key = carry
            key, step_key = jax.random.split(key)
            env_state, transition, stats, noise_scale, episodes = acting.collect(
                acting_agent, env_state, stats, noise_scale, iteration, step_key, hp
            )
            return (env_state, stats, noise_scale, iteration + 1, key), (transition, episodes)

        carry = (env_state, stats, noise_scale, iteration, key)
        carry, (transitions, episodes) = jax.lax.scan(body, carry, None, every)
        return carry, transitions, jax.tree.map(jnp.sum, episodes)

    def learn(agent_state, buffer, stats, key, hp):
        """The learners' K iterations of updates on the buffer as it is (nothing when it holds
        too little yet): agent_state, next key, mean metrics with "updated"."""
        key, round_key = jax.random.split(key)

        def run(agent_state):
            def body(agent_state, step_key):
                return learning.learn(agent_state, buffer, stats, step_key, hp["gamma"])

            agent_state, metrics = jax.lax.scan(
                body, agent_state, jax.random.split(round_key, every)
            )
            return agent_state, jax.tree.map(jnp.mean, metrics)

        ready = learning.ready(buffer)
        skip = lambda a: skip_learning(  # noqa: E731
            learning.learn, a, buffer, stats, round_key, hp["gamma"]
        )
        agent_state, metrics = jax.lax.cond(ready, run, skip, agent_state)
        return agent_state, key, {**metrics, "updated": ready.astype(jnp.float32)}

    def insert(buffer, transitions):
        """The actor's transitions [K, N, ...] into the buffer, one time slot per iteration."""

        def body(buffer, rows):
            return replay.add(buffer, learner_axis.split(rows)), None

        return jax.lax.scan(body, buffer, transitions)[0]

    def finish(acting_agent, stats, key, iteration, episodes, learned):
        """The chunk's summary (as the one-program loop's) and its evaluation, on the actor."""
        key, eval_key = jax.random.split(key)
        per_exchange = {
            **jax.tree.map(lambda *xs: jnp.stack(xs), *learned),
            **jax.tree.map(lambda *xs: jnp.stack(xs), *episodes),
        }
        summary = summarize_chunk(
            per_exchange,
            every * config.updates_per_step,
            iteration,
            iterations_per_row=every,
            agent_state=acting_agent,
        )
        summary.update(evaluate(acting_agent, stats, eval_key))
        return key, summary

    # Each program keeps its outputs where its inputs live; what one side hands the other
    # moves with jax.device_put, asynchronously.
    jit_start = jax.jit(start, out_shardings=on_actor)
    jit_act = jax.jit(act, donate_argnums=(1, 2, 3, 4, 5), out_shardings=on_actor)
    jit_learn = jax.jit(learn, donate_argnums=(0, 3), out_shardings=on_learners)
    jit_finish = jax.jit(finish, out_shardings=on_actor)

    def runner(programs: dict):
        def chunk(state: OffPolicyState) -> tuple[OffPolicyState, dict]:
            key, learn_key = programs["start"](state.key)
            learn_key = jax.device_put(learn_key, on_learners)
            hp_learners = jax.device_put(state.hp, on_learners)
            stats_learners = jax.device_put(state.obs_stats, on_learners)
            agent_state, buffer = state.agent, state.buffer
            acting_agent = jax.device_put(agent_state, on_actor)
            actor = (state.env_state, state.obs_stats, state.noise_scale, state.iteration, key)
            episodes, learned = [], []
            for _ in range(exchanges):
                # Dispatched one after the other, run at the same time: neither reads what
                # the other writes in this exchange.
                actor, transitions, sums = programs["act"](acting_agent, *actor, state.hp)
                agent_state, learn_key, metrics = programs["learn"](
                    agent_state, buffer, stats_learners, learn_key, hp_learners
                )
                buffer = programs["insert"](buffer, jax.device_put(transitions, by_env))
                stats_learners = jax.device_put(actor[1], on_learners)
                acting_agent = jax.device_put(agent_state, on_actor)
                episodes.append(sums)
                learned.append(jax.device_put(metrics, on_actor))
            env_state, stats, noise_scale, iteration, key = actor
            key, summary = programs["finish"](
                acting_agent, stats, key, iteration, episodes, learned
            )
            state = state.replace(
                agent=agent_state,
                env_state=env_state,
                buffer=buffer,
                obs_stats=stats,
                key=key,
                iteration=iteration,
                noise_scale=noise_scale,
            )
            return state, summary

        return chunk

    def insert_program(buffer_like):
        where = jax.tree.map(lambda x: x.sharding, buffer_like)
        return jax.jit(insert, donate_argnums=0, out_shardings=where)

    def compile_chunk(state: OffPolicyState):
        """The chunk's programs compiled for `state` (placed), ahead of the first chunk."""
        on = lambda tree, where: jax.tree.map(  # noqa: E731
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=where), tree
        )
        key = jax.ShapeDtypeStruct(state.key.shape, state.key.dtype, sharding=on_actor)
        actor = (state.env_state, state.obs_stats, state.noise_scale, state.iteration, key)
        acting_agent = on(state.agent, on_actor)
        act_args = (acting_agent, *actor, state.hp)
        _, transitions, sums = jax.eval_shape(act, *act_args)
        learn_args = (
            state.agent,
            state.buffer,
            on(state.obs_stats, on_learners),
            on(key, on_learners),
            on(state.hp, on_learners),
        )
        _, _, metrics = jax.eval_shape(learn, *learn_args)
        finish_args = (
            acting_agent,
            state.obs_stats,
            key,
            state.iteration,
            [on(sums, on_actor)] * exchanges,
            [on(metrics, on_actor)] * exchanges,
        )
        programs = {
            "start": jit_start.lower(key).compile(),
            "act": jit_act.lower(*act_args).compile(),
            "learn": jit_learn.lower(*learn_args).compile(),
            "insert": insert_program(state.buffer)
            .lower(state.buffer, on(transitions, by_env))
            .compile(),
            "finish": jit_finish.lower(*finish_args).compile(),
        }
        return runner(programs)

    lazy = {}  # the programs compiled at their first call (`chunk` without `compile_chunk`)

    def chunk(state: OffPolicyState) -> tuple[OffPolicyState, dict]:
        if not lazy:
            lazy.update(start=jit_start, act=jit_act, learn=jit_learn, finish=jit_finish)
            lazy["insert"] = insert_program(state.buffer)
        return runner(lazy)(state)

    def init(key: jax.Array, member: Any = None) -> OffPolicyState:
        if member is not None:
            raise ConfigError("an actor/learner split trains one member, not a grid")
        return acting.init(key)

    def train(key: jax.Array) -> tuple[OffPolicyState, dict]:
        """The whole run on the host: `num_chunks` chunks, their metrics stacked."""
        state = place(jax.jit(init)(key))
        rows = []
        for _ in range(config.num_chunks):
            state, metrics = chunk(state)
            rows.append(metrics)
        return state, jax.tree.map(lambda *xs: jnp.stack(xs), *rows)

    policy = make_policy(config, agent)
    return Trainer(
        config,
        agent,
        env,
        eval_env,
        init,
        chunk,
        evaluate,
        train,
        policy,
        view,
        actor_axis,
        compile_chunk=compile_chunk,
        place=place,
    )
