"""Soft Actor-Critic with a learned temperature (Haarnoja et al. 2018, "SAC v2").

Twin (or N) critics as one vmapped ensemble, Polyak-averaged target critics, a tanh-Gaussian
actor trained against the minimum of the critics, and log-alpha trained towards a target entropy.
"""

from __future__ import annotations

import dataclasses

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl import distributions
from jaxrl.agents.base import Agent, Learner, apply_gradients, learner, polyak
from jaxrl.networks import GaussianActor, QEnsemble
from jaxrl.types import Batch


@dataclasses.dataclass(frozen=True)
class SACConfig:
    # Published defaults (Haarnoja et al. 2018, v2 paper, Table 1) unless noted.
    actor_hidden: tuple[int, ...] = (256, 256)
    critic_hidden: tuple[int, ...] = (256, 256)
    num_critics: int = 2
    critic_layer_norm: bool = False  # MuJoCo Playground's Brax SAC runs use LayerNorm
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    alpha_lr: float = 3e-4
    tau: float = 0.005
    init_alpha: float = 1.0
    # Target entropy = -target_entropy_scale * |A|: 1.0 in the paper, 0.5 in Brax's SAC.
    target_entropy_scale: float = 1.0
    reward_scale: float = 1.0

    def __post_init__(self):
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if not widths or any(w < 1 for w in widths):
                raise ValueError(
                    f"{name} must be a non-empty list of positive widths, got {widths}"
                )
        if self.num_critics < 1:
            raise ValueError(f"num_critics must be >= 1, got {self.num_critics}")
        for name in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")


@flax.struct.dataclass
class SACState:
    actor: Learner
    critic: Learner
    target_critic_params: dict
    log_alpha: Learner  # params: scalar log temperature
    step: jax.Array


# --- Losses, as the paper writes them. Shapes: Q [E, B], log-probs [B]. -------------------------


def critic_target(
    reward: jax.Array,
    terminated: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    discount: jax.Array,
) -> jax.Array:
    """y = r + discount (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')), [B];
    discount is gamma, or gamma^k for a k-step return. Truncation is not termination: a
    time-limited step still bootstraps."""
    soft_value = next_q.min(axis=0) - alpha * next_log_prob
    return reward + discount * (1.0 - terminated) * soft_value


def critic_loss(q: jax.Array, target: jax.Array) -> jax.Array:
    """Sum over critics of 0.5 * mean squared TD error; the target carries no gradient."""
    td = q - jax.lax.stop_gradient(target)[None]
    return 0.5 * (td**2).mean(axis=-1).sum()


def actor_loss(q: jax.Array, log_prob: jax.Array, alpha: jax.Array) -> jax.Array:
    """E[alpha log pi(a|s) - min_i Q_i(s, a)], a ~ pi(s)."""
    return (alpha * log_prob - q.min(axis=0)).mean()


def alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """-log_alpha * E[log pi + target_entropy]: raises alpha when entropy is below target."""
    return -(log_alpha * jax.lax.stop_gradient(log_prob + target_entropy)).mean()


def make(config: SACConfig = SACConfig()) -> Agent:
    critic_net = QEnsemble(config.critic_hidden, config.num_critics, config.critic_layer_norm)
    actor_opt = optax.adam(config.actor_lr)
    critic_opt = optax.adam(config.critic_lr)
    alpha_opt = optax.adam(config.alpha_lr)

    def actor_module(action_size: int) -> GaussianActor:
        return GaussianActor(action_size, config.actor_hidden)

    def init(key: jax.Array, obs_size: int, action_size: int) -> SACState:
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, obs_size))
        action = jnp.zeros((1, action_size))
        actor_params = actor_module(action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, obs, action)
        log_alpha = jnp.asarray(jnp.log(config.init_alpha), jnp.float32)
        return SACState(
            actor=learner(actor_params, actor_opt),
            critic=learner(critic_params, critic_opt),
            target_critic_params=critic_params,
            log_alpha=learner(log_alpha, alpha_opt),
            step=jnp.zeros((), jnp.int32),
        )

    def _policy(params, obs, action_size):
        return actor_module(action_size).apply(params, obs)

    def act(state: SACState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        # The output layer holds mean and log-std: 2 * |A| units (a static shape under jit).
        output_layer = state.actor.params["params"]["MLP_0"][f"Dense_{len(config.actor_hidden)}"]
        action_size = output_layer["bias"].shape[-1] // 2
        mean, log_std = _policy(state.actor.params, obs, action_size)
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    def update(state: SACState, batch: Batch, key: jax.Array):
        action_size = batch.action.shape[-1]
        target_entropy = -config.target_entropy_scale * action_size
        next_key, actor_key = jax.random.split(key)
        alpha = jnp.exp(state.log_alpha.params)

        # Critic.
        mean, log_std = _policy(state.actor.params, batch.next_obs, action_size)
        next_action, next_log_prob = distributions.tanh_gaussian_sample(next_key, mean, log_std)
        next_q = critic_net.apply(state.target_critic_params, batch.next_obs, next_action)
        target = critic_target(
            config.reward_scale * batch.reward,
            batch.terminated,
            next_q,
            next_log_prob,
            alpha,
            batch.discount,
        )

        def critic_objective(params):
            q = critic_net.apply(params, batch.obs, batch.action)
            return critic_loss(q, target), q

        (c_loss, q), grads = jax.value_and_grad(critic_objective, has_aux=True)(state.critic.params)
        critic = apply_gradients(state.critic, grads, critic_opt)

        # Actor, against the freshly updated critics.
        def actor_objective(params):
            mean, log_std = _policy(params, batch.obs, action_size)
            action, log_prob = distributions.tanh_gaussian_sample(actor_key, mean, log_std)
            q_pi = critic_net.apply(critic.params, batch.obs, action)
            return actor_loss(q_pi, log_prob, alpha), log_prob

        (a_loss, log_prob), grads = jax.value_and_grad(actor_objective, has_aux=True)(
            state.actor.params
        )
        actor = apply_gradients(state.actor, grads, actor_opt)

        # Temperature.
        t_loss, grads = jax.value_and_grad(alpha_loss)(
            state.log_alpha.params, log_prob, target_entropy
        )
        log_alpha = apply_gradients(state.log_alpha, grads, alpha_opt)

        new_state = SACState(
            actor=actor,
            critic=critic,
            target_critic_params=polyak(state.target_critic_params, critic.params, config.tau),
            log_alpha=log_alpha,
            step=state.step + 1,
        )
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "alpha_loss": t_loss,
            "alpha": alpha,
            "q_mean": q.mean(),
            "entropy": -log_prob.mean(),
        }
        return new_state, metrics

    return Agent(init=init, act=act, update=update)
