"""The agent interface: a NamedTuple of pure functions over explicit state (optax's shape)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import optax

from jaxrl.types import Batch

AgentState = Any
Metrics = dict[str, jax.Array]


class Agent(NamedTuple):
    """init(key, obs_size, action_size) -> state;
    act(state, obs [N, O], key, noise_scale) -> actions [N, A] in [-1, 1], where noise_scale
    ([N] or scalar) scales the agent's exploration noise: 1 its own, 0 deterministic (eval);
    update(state, batch [B], key) -> (state, metrics). All pure and jit/vmap-safe."""

    init: Callable[[jax.Array, int, int], AgentState]
    act: Callable[[AgentState, jax.Array, jax.Array, jax.Array | float], jax.Array]
    update: Callable[[AgentState, Batch, jax.Array], tuple[AgentState, Metrics]]


@flax.struct.dataclass
class Learner:
    """Parameters with their optimiser state."""

    params: Any
    opt_state: optax.OptState


def learner(params: Any, optimizer: optax.GradientTransformation) -> Learner:
    return Learner(params, optimizer.init(params))


def apply_gradients(
    learner: Learner, grads: Any, optimizer: optax.GradientTransformation
) -> Learner:
    updates, opt_state = optimizer.update(grads, learner.opt_state, learner.params)
    return Learner(optax.apply_updates(learner.params, updates), opt_state)


def polyak(target: Any, online: Any, tau: float) -> Any:
    """target <- (1 - tau) target + tau online."""
    return optax.incremental_update(online, target, tau)
