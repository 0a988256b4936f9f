"""The training programs: `make_train(config, agent)` picks the loop the agent learns by.

- `offpolicy`: act, step all envs, store in the replay buffer, `updates_per_step` updates;
- `onpolicy`: a rollout of `unroll_length` steps, then one update on it (agents with `explore`);
- `split`: the off-policy loop as PQL's actor and learners on separate devices (`--devices N`
  with `split_every` > 0, PQL's default), several programs run at once;
- `base`: what all share (envs, evaluation, chunk summaries, the `Trainer` they return).

An iteration is one pass of a loop's body: a step of all envs and its updates (off-policy), a
rollout and its update (on-policy); `TrainConfig.steps_per_iteration` is its length in steps
of each env. Both states count iterations in `iteration`.
"""

from __future__ import annotations

from typing import Any

from jaxrl.agents.base import Agent
from jaxrl.config import TrainConfig
from jaxrl.errors import ConfigError
from jaxrl.loops import offpolicy, onpolicy, split
from jaxrl.loops.base import Trainer, resolve_config
from jaxrl.loops.offpolicy import OffPolicyState
from jaxrl.loops.onpolicy import OnPolicyState


def make_train(
    config: TrainConfig,
    agent: Agent,
    env: Any = None,
    randomization_fn: Any = None,
    on_iteration: Any = None,
) -> Trainer:
    """The training program of `agent` on `config.env` (or on the base env `env`, an object
    with Brax's reset/step/observation_size/action_size): the replay loop for off-policy
    agents, the rollout loop for on-policy ones (those with `explore`). Config fields left at
    None take the agent's loop defaults (`Trainer.config` holds the resolved config).
    `randomization_fn(model, rng) -> (models, in_axes)`: domain randomization, as Brax's and
    Playground's trainers take it (`jaxrl.loops.base.make_envs`). An off-policy config with
    `split_every` > 0 over two devices or more gives the actor/learner split
    (`jaxrl.loops.split`), whose `chunk` runs on the host. `on_iteration(finished, metrics)`:
    the on-policy loop's host callback after every iteration (`onpolicy.make_train`)."""
    config = resolve_config(config, agent)
    if agent.on_policy:
        return onpolicy.make_train(config, agent, env, randomization_fn, on_iteration)
    if on_iteration is not None:
        raise ConfigError("on_iteration: only the on-policy loop (PPO) calls it")
    loop = split if config.split else offpolicy
    return loop.make_train(config, agent, env, randomization_fn)


__all__ = ["OffPolicyState", "OnPolicyState", "Trainer", "make_train", "resolve_config"]
