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

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

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
    shares_simulator,
    summarize_chunk,
)
from jaxrl.loops.offpolicy import OffPolicyState, Parts, learn_if, make_parts


def make_train(
    config: TrainConfig, agent: Agent, env: Any = None, randomization_fn: Any = None
) -> Trainer:
    """The split trainer (`config.split`: off-policy, split_every > 0, two devices or more);
    `config` resolved. Its `chunk` and `train` run on the host (several programs);
    `compile_chunk(state)` compiles them ahead of the first chunk."""
    layout = _layout(config)
    env, eval_env = make_envs(config, env, randomization_fn)
    view = observation_view(config, env)
    acting = make_parts(config, agent, env, view, layout.actor_axis)
    learning = make_parts(config, agent, env, view, layout.learner_axis)
    # Its evaluation keeps envs of its own: "shared" is refused, "auto" is "own".
    shares_simulator(config, randomization_fn is not None or bool(config.randomize), False)
    evaluate = make_evaluate(config, agent, eval_env, view=view, data=layout.actor_axis)
    exchanges = config.iterations_per_chunk // config.split_every
    exchange = _Exchange(config, acting, learning, evaluate, layout.learner_axis)
    jitted = _jitted(exchange, layout)

    def compile_chunk(state: OffPolicyState):
        """The chunk's programs compiled for `state` (placed), ahead of the first chunk."""
        programs = _compiled(jitted, exchange, layout, exchanges, state)
        return functools.partial(_run_chunk, programs, layout, exchanges)

    lazy = {}  # the programs compiled at their first call (`chunk` without `compile_chunk`)

    def chunk(state: OffPolicyState) -> tuple[OffPolicyState, dict]:
        if not lazy:
            lazy.update(jitted)
            lazy["insert"] = _insert_program(exchange, state.buffer)
        return _run_chunk(lazy, layout, exchanges, state)

    def init(key: jax.Array, member: Any = None) -> OffPolicyState:
        if member is not None:
            raise ConfigError("an actor/learner split trains one member, not a grid")
        return acting.init(key)

    place = functools.partial(_place, layout)

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
        layout.actor_axis,
        compile_chunk=compile_chunk,
        place=place,
    )


class _Layout(NamedTuple):
    """Where the split's parts live: the actor on the first device, the learners on the rest."""

    actor_axis: sharding.DataAxis
    learner_axis: sharding.DataAxis
    on_actor: Any  # the actor's device, as a sharding
    on_learners: Any  # replicated over the learners' devices
    by_env: Any  # replay rows and collected transitions, [time, env, ...]: split by env


def _layout(config: TrainConfig) -> _Layout:
    """The split's devices: the first acts, the other `devices - 1` learn (ConfigError with
    acting_lag, or where the envs or the batch do not divide among the learners)."""
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
    return _Layout(
        actor_axis,
        learner_axis,
        on_actor=actor_axis.sharding(),
        on_learners=learner_axis.sharding(),
        by_env=learner_axis.sharding(PartitionSpec(None, sharding.DATA)),
    )


def _place(layout: _Layout, state: OffPolicyState) -> OffPolicyState:
    """Agent and replay buffer on the learners' devices, the rest on the actor's."""
    where = jax.tree.map(lambda _: layout.on_actor, state)
    where = where.replace(
        agent=jax.tree.map(lambda _: layout.on_learners, state.agent),
        buffer=jax.tree.map(lambda _: layout.on_learners, state.buffer).replace(
            data=jax.tree.map(lambda _: layout.by_env, state.buffer.data)
        ),
    )
    return jax.device_put(state, where)


@dataclasses.dataclass(frozen=True)
class _Exchange:
    """The bodies of one exchange's programs (`split_every` iterations), before jit: the
    actor's (`act`, `finish`) from `acting`, the learners' (`learn`, `insert`) from `learning`,
    the same functions over two data axes (`make_parts`)."""

    config: TrainConfig
    acting: Parts
    learning: Parts
    evaluate: Callable
    learner_axis: sharding.DataAxis

    def start(self, key):
        """The chunk's key split into the actor's and the learners'."""
        return tuple(jax.random.split(key))

    def act(self, acting_agent, env_state, stats, noise_scale, iteration, key, hp):
        """The actor's K iterations: (env_state, stats, noise_scale, iteration, key),
        transitions [K, N], episode sums."""

        def body(carry, _):
            env_state, stats, noise_scale, iteration, key = carry
            key, step_key = jax.random.split(key)
            env_state, transition, stats, noise_scale, episodes = self.acting.collect(
                acting_agent, env_state, stats, noise_scale, iteration, step_key, hp
            )
            return (env_state, stats, noise_scale, iteration + 1, key), (transition, episodes)

        carry = (env_state, stats, noise_scale, iteration, key)
        carry, (transitions, episodes) = jax.lax.scan(body, carry, None, self.config.split_every)
        return carry, transitions, jax.tree.map(jnp.sum, episodes)

    def learn(self, agent_state, buffer, stats, key, hp):
        """The learners' K iterations of updates on the buffer as it is (nothing when it holds
        too little yet): agent_state, next key, mean metrics with "updated"."""
        learning = self.learning
        key, round_key = jax.random.split(key)

        def run(agent_state):
            def body(agent_state, step_key):
                return learning.learn(agent_state, buffer, stats, step_key, hp["gamma"])

            agent_state, metrics = jax.lax.scan(
                body, agent_state, jax.random.split(round_key, self.config.split_every)
            )
            return agent_state, jax.tree.map(jnp.mean, metrics)

        ready = learning.ready(buffer)
        agent_state, metrics = learn_if(ready, run, agent_state)  # `run` traced once
        return agent_state, key, {**metrics, "updated": ready.astype(jnp.float32)}

    def insert(self, buffer, transitions):
        """The actor's transitions [K, N, ...] into the buffer, one time slot per iteration."""

        def body(buffer, rows):
            return replay.add(buffer, self.learner_axis.split(rows)), None

        return jax.lax.scan(body, buffer, transitions)[0]

    def finish(self, acting_agent, stats, key, iteration, episodes, learned):
        """The chunk's summary (as the one-program loop's) and its evaluation, on the actor."""
        config = self.config
        every = config.split_every
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
        summary.update(self.evaluate(acting_agent, stats, eval_key))
        return key, summary


def _jitted(exchange: _Exchange, layout: _Layout) -> dict:
    """The exchange's programs under jit but `insert` (`_insert_program`). Each keeps its
    outputs where its inputs live; what one side hands the other moves with jax.device_put,
    asynchronously."""
    return dict(
        start=jax.jit(exchange.start, out_shardings=layout.on_actor),
        act=jax.jit(exchange.act, donate_argnums=(1, 2, 3, 4, 5), out_shardings=layout.on_actor),
        learn=jax.jit(exchange.learn, donate_argnums=(0, 3), out_shardings=layout.on_learners),
        finish=jax.jit(exchange.finish, out_shardings=layout.on_actor),
    )


def _insert_program(exchange: _Exchange, buffer_like):
    """`insert` under jit, its output where `buffer_like`'s parts are."""
    where = jax.tree.map(lambda x: x.sharding, buffer_like)
    return jax.jit(exchange.insert, donate_argnums=0, out_shardings=where)


def _run_chunk(
    programs: dict, layout: _Layout, exchanges: int, state: OffPolicyState
) -> tuple[OffPolicyState, dict]:
    """One chunk of `exchanges` exchanges, on the host, by `programs` (jitted or compiled)."""
    on_actor, on_learners, by_env = layout.on_actor, layout.on_learners, layout.by_env
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
    key, summary = programs["finish"](acting_agent, stats, key, iteration, episodes, learned)
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


def _compiled(
    jitted: dict, exchange: _Exchange, layout: _Layout, exchanges: int, state: OffPolicyState
) -> dict:
    """The chunk's programs compiled for `state` (placed): each lowered for the shapes and
    places its arguments will have (`jax.eval_shape` of the programs before it)."""
    on_actor, on_learners = layout.on_actor, layout.on_learners
    on = lambda tree, where: jax.tree.map(  # noqa: E731
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=where), tree
    )
    key = jax.ShapeDtypeStruct(state.key.shape, state.key.dtype, sharding=on_actor)
    actor = (state.env_state, state.obs_stats, state.noise_scale, state.iteration, key)
    acting_agent = on(state.agent, on_actor)
    act_args = (acting_agent, *actor, state.hp)
    _, transitions, sums = jax.eval_shape(exchange.act, *act_args)
    learn_args = (
        state.agent,
        state.buffer,
        on(state.obs_stats, on_learners),
        on(key, on_learners),
        on(state.hp, on_learners),
    )
    _, _, metrics = jax.eval_shape(exchange.learn, *learn_args)
    finish_args = (
        acting_agent,
        state.obs_stats,
        key,
        state.iteration,
        [on(sums, on_actor)] * exchanges,
        [on(metrics, on_actor)] * exchanges,
    )
    return {
        "start": jitted["start"].lower(key).compile(),
        "act": jitted["act"].lower(*act_args).compile(),
        "learn": jitted["learn"].lower(*learn_args).compile(),
        "insert": _insert_program(exchange, state.buffer)
        .lower(state.buffer, on(transitions, layout.by_env))
        .compile(),
        "finish": jitted["finish"].lower(*finish_args).compile(),
    }
