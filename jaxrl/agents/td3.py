"""TD3 (Fujimoto et al. 2018): deterministic actor, clipped double-Q with target policy
smoothing, delayed actor and target updates.

Also the base of the deterministic family: `target_actor=False` drops the target actor (PQL).
"""

from __future__ import annotations

import dataclasses

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl import losses
from jaxrl.agents.base import Agent, Learner, apply_gradients, learner, polyak
from jaxrl.networks import DeterministicActor, QEnsemble
from jaxrl.types import Batch


@dataclasses.dataclass(frozen=True)
class TD3Config:
    # Published defaults (Fujimoto et al. 2018) unless noted.
    actor_hidden: tuple[int, ...] = (256, 256)
    critic_hidden: tuple[int, ...] = (256, 256)
    num_critics: int = 2
    critic_layer_norm: bool = False
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    tau: float = 0.005
    exploration_noise: float = 0.1  # std of the acting noise (times the loop's noise scale)
    target_noise: float = 0.2  # target policy smoothing std
    target_noise_clip: float = 0.5
    policy_delay: int = 2  # critic updates per actor (and target) update
    target_actor: bool = True  # False: bootstrap with the online actor (PQL)
    reward_scale: float = 1.0

    def __post_init__(self):
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if not widths or any(w < 1 for w in widths):
                raise ValueError(
                    f"{name} must be a non-empty list of positive widths, got {widths}"
                )
        for name in ("num_critics", "policy_delay"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("actor_lr", "critic_lr"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        for name in ("exploration_noise", "target_noise", "target_noise_clip"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@flax.struct.dataclass
class TD3State:
    actor: Learner
    critic: Learner
    target_actor_params: dict
    target_critic_params: dict
    step: jax.Array  # critic updates done; the actor updates when step % policy_delay == 0


def smoothed_target_action(
    key: jax.Array, next_action: jax.Array, noise: float, noise_clip: float
) -> jax.Array:
    """clip(pi'(s') + clip(noise * eps, -c, c), -1, 1): target policy smoothing."""
    eps = jnp.clip(noise * jax.random.normal(key, next_action.shape), -noise_clip, noise_clip)
    return jnp.clip(next_action + eps, -1.0, 1.0)


def critic_target(reward, terminated, discount, next_q: jax.Array) -> jax.Array:
    """Clipped double Q: y = r + discount (1 - terminated) min_i Q'_i(s', a~'), [B]."""
    return losses.bootstrap_target(reward, terminated, discount, next_q.min(axis=0))


critic_loss = losses.critic_mse


def actor_loss(q: jax.Array) -> jax.Array:
    """-Q_1(s, pi(s)): the actor follows the first critic, as in the paper. q: [E, B]."""
    return -q[0].mean()


def make(config: TD3Config = TD3Config()) -> Agent:
    critic_net = QEnsemble(config.critic_hidden, config.num_critics, config.critic_layer_norm)
    actor_opt = optax.adam(config.actor_lr)
    critic_opt = optax.adam(config.critic_lr)

    def actor_net(action_size: int) -> DeterministicActor:
        return DeterministicActor(action_size, config.actor_hidden)

    def action_size_of(params) -> int:
        return params["params"]["MLP_0"][f"Dense_{len(config.actor_hidden)}"]["bias"].shape[-1]

    def init(key: jax.Array, obs_size: int, action_size: int) -> TD3State:
        actor_key, critic_key = jax.random.split(key)
        obs, action = jnp.zeros((1, obs_size)), jnp.zeros((1, action_size))
        actor_params = actor_net(action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, obs, action)
        return TD3State(
            actor=learner(actor_params, actor_opt),
            critic=learner(critic_params, critic_opt),
            target_actor_params=actor_params,
            target_critic_params=critic_params,
            step=jnp.zeros((), jnp.int32),
        )

    def act(state: TD3State, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        action = actor_net(action_size_of(state.actor.params)).apply(state.actor.params, obs)
        scale = jnp.expand_dims(jnp.asarray(noise_scale, action.dtype), -1)
        noise = config.exploration_noise * scale * jax.random.normal(key, action.shape)
        return jnp.clip(action + noise, -1.0, 1.0)

    def update(state: TD3State, batch: Batch, key: jax.Array):
        policy = actor_net(batch.action.shape[-1])
        target_policy = state.target_actor_params if config.target_actor else state.actor.params
        next_action = smoothed_target_action(
            key,
            policy.apply(target_policy, batch.next_obs),
            config.target_noise,
            config.target_noise_clip,
        )
        next_q = critic_net.apply(state.target_critic_params, batch.next_obs, next_action)
        target = critic_target(
            config.reward_scale * batch.reward, batch.terminated, batch.discount, next_q
        )

        def critic_objective(params):
            q = critic_net.apply(params, batch.obs, batch.action)
            return critic_loss(q, target), q

        (c_loss, q), grads = jax.value_and_grad(critic_objective, has_aux=True)(state.critic.params)
        critic = apply_gradients(state.critic, grads, critic_opt)

        def actor_objective(params):
            return actor_loss(
                critic_net.apply(critic.params, batch.obs, policy.apply(params, batch.obs))
            )

        def update_actor_and_targets(_):
            a_loss, grads = jax.value_and_grad(actor_objective)(state.actor.params)
            actor = apply_gradients(state.actor, grads, actor_opt)
            targets = (
                polyak(state.target_actor_params, actor.params, config.tau),
                polyak(state.target_critic_params, critic.params, config.tau),
            )
            return actor, targets, a_loss

        def hold(_):
            targets = (state.target_actor_params, state.target_critic_params)
            return state.actor, targets, actor_objective(state.actor.params)

        due = state.step % config.policy_delay == 0
        actor, (target_actor, target_critic), a_loss = jax.lax.cond(
            due, update_actor_and_targets, hold, None
        )
        new_state = TD3State(actor, critic, target_actor, target_critic, state.step + 1)
        return new_state, {"critic_loss": c_loss, "actor_loss": a_loss, "q_mean": q.mean()}

    return Agent(init=init, act=act, update=update)
