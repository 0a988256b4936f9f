"""TD3 (Fujimoto et al. 2018): deterministic actor, clipped double-Q with target policy
smoothing, delayed actor and target updates.

Also the base of the deterministic family: `target_actor=False` drops the target actor (PQL).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl import distributions, heads
from jaxrl.agents.base import (
    Agent,
    Learner,
    adam,
    apply_gradients,
    delayed,
    learner,
    polyak,
    state_hyperparameters,
)
from jaxrl.agents.configs.td3 import TD3Config  # jax-free (jaxrl.agents.configs), re-exported
from jaxrl.networks import DeterministicActor, QEnsemble
from jaxrl.types import Batch


@flax.struct.dataclass
class TD3State:
    actor: Learner
    critic: Learner
    target_actor_params: dict
    target_critic_params: dict
    step: jax.Array  # critic updates done; the actor updates when step % policy_delay == 0
    head_state: Any  # the critic head's own state (None for scalar and C51 critics)
    hp: dict  # the continuous settings act and update read (`state_hyperparameters`)
    action_size: int = flax.struct.field(pytree_node=False)


def smoothed_target_action(
    key: jax.Array, next_action: jax.Array, noise: float, noise_clip: float
) -> jax.Array:
    """clip(pi'(s') + clip(noise * eps, -c, c), -1, 1): target policy smoothing."""
    eps = jnp.clip(noise * jax.random.normal(key, next_action.shape), -noise_clip, noise_clip)
    return jnp.clip(next_action + eps, -1.0, 1.0)


def actor_loss(q: jax.Array, reduce: str = "first") -> jax.Array:
    """-Q(s, pi(s)), with Q the first critic's value (the paper), or the min (FastTD3) or the
    mean over the critics. q: [E, B]."""
    return -heads.reduce_critics(q, reduce).mean()


def critic_network(config: TD3Config) -> QEnsemble:
    """The critic ensemble, with the head's outputs per critic."""
    return QEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.critic_layer_norm,
        outputs=config.head().outputs,
        norm_after_relu=config.critic_norm_after_relu,
        residual=config.critic_residual,
        matmul_precision=config.matmul_precision,
    )


def actor_network(config: TD3Config, action_size: int) -> DeterministicActor:
    """The deterministic tanh actor."""
    return DeterministicActor(
        action_size, config.actor_hidden, matmul_precision=config.matmul_precision
    )


class Losses(NamedTuple):
    """TD3's objectives as `update` differentiates them, over one batch."""

    critic: Callable  # (critic params, state, batch, key) -> (loss, (values [E, B], head state))
    actor: Callable  # (actor params, critic params, state, batch) -> loss


def losses(config: TD3Config) -> Losses:
    """The critic's and the actor's objectives (`Losses`) of `make(config)`'s update."""
    head = config.head()
    critic_net = critic_network(config)

    def critic(params, state: TD3State, batch: Batch, key: jax.Array):
        # The head's target from the target critics at (s', smoothed pi'(s')) (PQL: pi(s'));
        # no gradient reaches it (it reads no critic parameter).
        policy, hp = actor_network(config, state.action_size), state.hp
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        target_policy = state.target_actor_params if config.target_actor else state.actor.params
        next_action = smoothed_target_action(
            key,
            policy.apply(target_policy, batch.next_obs),
            hp["target_noise"],
            hp["target_noise_clip"],
        )
        next_out = critic_net.apply(state.target_critic_params, next_critic_obs, next_action)
        reward = hp["reward_scale"] * batch.reward
        target = head.target(
            key, next_out, reward, batch.terminated, batch.discount, jnp.zeros_like(reward), hp
        )
        out = critic_net.apply(params, critic_obs, batch.action)
        return head.loss(out, target, state.head_state, hp, state.step == 0)

    def actor(params, critic_params, state: TD3State, batch: Batch):
        # -Q(s, pi(s)) against the critics this update just stepped.
        hp, policy = state.hp, actor_network(config, state.action_size)
        out = critic_net.apply(
            critic_params, batch.critic_inputs[0], policy.apply(params, batch.obs)
        )
        return actor_loss(head.values(out, hp), config.actor_q)

    return Losses(critic, actor)


class Optimizers(NamedTuple):
    actor: optax.GradientTransformation
    critic: optax.GradientTransformation


def optimizers(config: TD3Config) -> Optimizers:
    """Adam, or AdamW where weight_decay > 0 (whether it decays is static, by how much data)."""
    return Optimizers(
        adam(config.actor_lr, config.weight_decay), adam(config.critic_lr, config.weight_decay)
    )


def initializer(config: TD3Config, opts: Optimizers) -> Callable[..., TD3State]:
    """The `Agent.init` of TD3's family: networks, their targets, optimiser states, the head's
    state and `hp`."""
    head = config.head()
    critic_net = critic_network(config)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> TD3State:
        actor_key, critic_key = jax.random.split(key)
        obs, action = jnp.zeros((1, obs_size)), jnp.zeros((1, action_size))
        critic_obs = jnp.zeros((1, critic_obs_size or obs_size))
        actor_params = actor_network(config, action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, critic_obs, action)
        return TD3State(
            actor=learner(actor_params, opts.actor),
            critic=learner(critic_params, opts.critic),
            target_actor_params=actor_params,
            target_critic_params=critic_params,
            step=jnp.zeros((), jnp.int32),
            head_state=head.init(config.num_critics),
            hp=state_hyperparameters(config),
            action_size=action_size,
        )

    return init


def acting(config: TD3Config) -> Callable[..., jax.Array]:
    """The `Agent.act` of TD3's family: clip(pi(s) + exploration_noise * noise_scale * eps)."""

    def act(state: TD3State, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        action = actor_network(config, state.action_size).apply(state.actor.params, obs)
        if distributions.is_zero(noise_scale):  # greedy: no draw (tanh_gaussian_act's reason)
            return jnp.clip(action, -1.0, 1.0)
        scale = jnp.expand_dims(jnp.asarray(noise_scale, action.dtype), -1)
        noise = state.hp["exploration_noise"] * scale * jax.random.normal(key, action.shape)
        return jnp.clip(action + noise, -1.0, 1.0)

    return act


def actor_and_targets(config: TD3Config, state: TD3State, critic_params, objective, actor_opt):
    """The actor step and the targets' Polyak moves every `policy_delay` updates
    (`base.delayed`); in between, the actor holds and so do the targets, but for the critics'
    with critic_target_every_update (FastTD3's code). `objective(actor params) -> loss`.
    Returns (actor, (target actor params, target critic params), actor loss)."""
    hp = state.hp
    moved_critics = polyak(state.target_critic_params, critic_params, hp["tau"])

    def update_actor_and_targets():
        a_loss, grads = jax.value_and_grad(objective)(state.actor.params)
        actor = apply_gradients(state.actor, grads, actor_opt)
        targets = (polyak(state.target_actor_params, actor.params, hp["tau"]), moved_critics)
        return actor, targets, a_loss

    def hold():
        critics = moved_critics if config.critic_target_every_update else state.target_critic_params
        targets = (state.target_actor_params, critics)
        return state.actor, targets, objective(state.actor.params)

    return delayed(state.step, config.policy_delay, update_actor_and_targets, hold)


def make(config: TD3Config = TD3Config()) -> Agent:
    opts = optimizers(config)
    update = updater(config, losses(config), opts)
    return Agent(init=initializer(config, opts), act=acting(config), update=update, name="td3")


def updater(config: TD3Config, objectives: Losses, opts: Optimizers) -> Callable:
    """TD3's update over `objectives`: the critics' step, then the delayed actor and targets
    (TD3+BC: the same with its own actor objective)."""
    head = config.head()
    actor_opt, critic_opt = opts

    def update(state: TD3State, batch: Batch, key: jax.Array):
        (c_loss, (q, head_state)), grads = jax.value_and_grad(objectives.critic, has_aux=True)(
            state.critic.params, state, batch, key
        )
        critic = apply_gradients(state.critic, grads, critic_opt)
        actor, (target_actor, target_critic), a_loss = actor_and_targets(
            config,
            state,
            critic.params,
            lambda params: objectives.actor(params, critic.params, state, batch),
            actor_opt,
        )
        new_state = state.replace(
            actor=actor,
            critic=critic,
            target_actor_params=target_actor,
            target_critic_params=target_critic,
            step=state.step + 1,
            head_state=head_state,
        )
        metrics = {"critic_loss": c_loss, "actor_loss": a_loss, "q_mean": q.mean()}
        return new_state, {**metrics, **head.metrics(head_state)}

    return update
