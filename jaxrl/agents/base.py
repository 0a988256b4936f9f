"""The agent interface: a NamedTuple of pure functions over explicit state (optax's shape)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import flax.struct
import jax
import jax.numpy as jnp
import optax

# Moved to the jax-free configs (jaxrl.agents.configs.network); importable here as before.
from jaxrl.agents.configs.network import check_network_config as check_network_config

AgentState = Any
Metrics = dict[str, jax.Array]


class Agent(NamedTuple):
    """init(key, obs_size, action_size, critic_obs_size=None) -> state: critic_obs_size is the
    size of the critic's own observation (asymmetric actor-critic, `jaxrl.observations`),
    None where the critic reads the actor's; its batches then carry `critic_obs`;
    act(state, obs [N, O], key, noise_scale) -> actions [N, A] in [-1, 1], where noise_scale
    ([N] or scalar) scales the agent's exploration noise: 1 its own, 0 deterministic (eval);
    update(state, batch, key) -> (state, metrics): `batch` is a replay Batch [B] for
    off-policy agents, a Rollout [T, N] for on-policy ones. All pure and jit/vmap-safe.

    On-policy agents also give explore(state, obs [N, O], key) -> (actions [N, A], extras):
    an exploring action with what the update needs of it (log-probabilities, pre-squash
    actions), stored in the Rollout. Its presence selects the on-policy loop.

    `name` is the algorithm's registry name (a TrainConfig naming another algorithm is refused
    by `make_train`); `loop_defaults` are the loop-level settings the algorithm intends (e.g.
    FastTD3's per-env noise scales), taken by every TrainConfig field left at None.

    `begin_online(state) -> state`, where given, is applied by the off-policy loop at the start
    of every online chunk: an agent whose update differs after offline training (E2O) marks
    the switch there; it must leave a state it already marked as it is.

    `reads_next_action`: the agent's update reads `Batch.next_action` (ReBRAC), so the
    off-policy loop draws each row with the action its env took next (1-step returns only)."""

    init: Callable[..., AgentState]
    act: Callable[[AgentState, jax.Array, jax.Array, jax.Array | float], jax.Array]
    update: Callable[[AgentState, Any, jax.Array], tuple[AgentState, Metrics]]
    explore: Callable[[AgentState, jax.Array, jax.Array], tuple[jax.Array, dict]] | None = None
    name: str = ""
    loop_defaults: Mapping[str, Any] | None = None
    begin_online: Callable[[AgentState], AgentState] | None = None
    reads_next_action: bool = False

    @property
    def on_policy(self) -> bool:
        return self.explore is not None


@flax.struct.dataclass
class Learner:
    """Parameters with their optimiser state."""

    params: Any
    opt_state: optax.OptState


def adam(learning_rate: float, weight_decay: float = 0.0, **kwargs) -> optax.GradientTransformation:
    """Adam (AdamW where weight_decay > 0) whose numeric settings live in its state
    (`optax.inject_hyperparams`), not in the compiled program: states built from configs with
    other learning rates stack and train under one vmapped update."""
    if weight_decay > 0:
        return optax.inject_hyperparams(optax.adamw)(
            learning_rate=learning_rate, weight_decay=weight_decay, **kwargs
        )
    return optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate, **kwargs)


def hyperparameters(config: Any, names: tuple[str, ...]) -> dict[str, jax.Array]:
    """The continuous settings an update reads, as float32 arrays of the agent state (never
    Python constants closed over by the update): a vmap over states made from configs that
    differ only in these trains every setting in one program."""
    return {name: jnp.asarray(getattr(config, name), jnp.float32) for name in names}


def array_fields(config: Any) -> tuple[str, ...]:
    """The fields of an agent config that are data (`ARRAY_FIELDS`: learning rates, tau,
    scales, ...): those a settings grid (`--vmap`) may vary. Every other field shapes the
    program (sizes, counts, modes) and is static."""
    return tuple(getattr(type(config), "ARRAY_FIELDS", ()))


def learner(params: Any, optimizer: optax.GradientTransformation) -> Learner:
    return Learner(params, optimizer.init(params))


def apply_gradients(
    learner: Learner, grads: Any, optimizer: optax.GradientTransformation
) -> Learner:
    updates, opt_state = optimizer.update(grads, learner.opt_state, learner.params)
    return Learner(optax.apply_updates(learner.params, updates), opt_state)


def update_hyperparameters(config: Any) -> tuple[str, ...]:
    """The ARRAY_FIELDS an agent's `act` and `update` read from `state.hp`: all of the config's
    but those its class lists as `CONSUMED` (read once, by the optimisers or by `init`)."""
    consumed = getattr(type(config), "CONSUMED", ())
    return tuple(name for name in array_fields(config) if name not in consumed)


def state_hyperparameters(config: Any) -> dict[str, jax.Array]:
    """An agent state's `hp`: the config's `update_hyperparameters` as float32 arrays. Every
    family builds its state's `hp` here, from its config's ARRAY_FIELDS and CONSUMED."""
    return hyperparameters(config, update_hyperparameters(config))


T = TypeVar("T")


def delayed(step: jax.Array, period: int, update: Callable[[], T], hold: Callable[[], T]) -> T:
    """The delayed actor step of SAC, CrossQ and TD3: `update()` at updates whose `step` is a
    multiple of `period`, `hold()` (the same structure, state unchanged) at the others. Period
    1 updates every time, with no branch in the program."""
    if period == 1:
        return update()
    return jax.lax.cond(step % period == 0, update, hold)


def polyak(target: Any, online: Any, tau: float) -> Any:
    """target <- (1 - tau) target + tau online."""
    return optax.incremental_update(online, target, tau)
