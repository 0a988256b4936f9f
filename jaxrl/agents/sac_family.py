"""What SAC's family shares: SAC (`jaxrl.agents.sac`) and REDQ, DroQ and DSAC-T (SAC's update
with other defaults or another critic head), FastSAC (`fast_sac`: its own update order) and
CrossQ (`crossq`: its own state, networks and losses).

- SAC's state (`SACState`), networks (`Networks`, `networks`: jaxrl's own, built of
  `critic_network` and `actor_network`, or the caller's, injected), optimisers
  (`Optimizers`, `optimizers`), `Agent.init` and `Agent.act` (`initializer`, `acting`): those of
  every member but CrossQ;
- the losses as the paper writes them (`actor_loss`, `alpha_loss`, REDQ's `target_subset`, the
  critic loss's `row_weights`), and SAC's objectives over a batch (`Losses`, `losses`), with the
  keys of one update (`UpdateKeys`, `update_keys`);
- the steps of an update: the delayed actor-and-temperature step (`actor_and_temperature`,
  CrossQ's too), the end of an update with target critics (`finish_update`: their Polyak move
  and the step count) and the metrics every member reports (`update_metrics`).

Each member's module writes its `make` and, where its order differs from SAC's, its update.
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
    Learner,
    adam,
    apply_gradients,
    delayed,
    learner,
    polyak,
    state_hyperparameters,
)
from jaxrl.agents.configs.sac import SACConfig
from jaxrl.networks import GaussianActor, QEnsemble
from jaxrl.types import Batch


@flax.struct.dataclass
class SACState:
    actor: Learner
    critic: Learner
    target_critic_params: dict
    log_alpha: Learner  # params: scalar log temperature
    step: jax.Array
    head_state: Any  # the critic head's own state (DSAC-T: each critic's running mean std)
    hp: dict  # the continuous settings the update reads (`state_hyperparameters`), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# --- Losses, as the paper writes them. Shapes: Q [E, B], log-probs [B]. -------------------------


def target_subset(key: jax.Array, next_q: jax.Array, size: int | None) -> jax.Array:
    """REDQ: the rows of `size` critics drawn without replacement ([E, B] -> [size, B]); all
    of them when size is None."""
    if size is None or size == next_q.shape[0]:
        return next_q
    return next_q[jax.random.choice(key, next_q.shape[0], (size,), replace=False)]


def actor_loss(
    q: jax.Array, log_prob: jax.Array, alpha: jax.Array, reduce: str = "min"
) -> jax.Array:
    """E[alpha log pi(a|s) - Q(s, a)], a ~ pi(s), with Q the min (SAC) or the mean (REDQ) over
    the critics."""
    return (alpha * log_prob - heads.reduce_critics(q, reduce)).mean()


def row_weights(batch: Batch, truncation: str) -> jax.Array | None:
    """The critic loss's row weights: 0 at truncated rows with "mask" (Brax's SAC), else None
    (every row weighs 1)."""
    if truncation == "mask" and batch.truncated is not None:
        return 1.0 - batch.truncated
    return None


def alpha_loss(
    log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float, form: str = "log_alpha"
) -> jax.Array:
    """-log_alpha * E[log pi + target_entropy] ("log_alpha"), or Brax's
    alpha * E[-log pi - target_entropy] ("alpha"): either raises alpha when the entropy is
    below target; the second's gradient carries a factor alpha."""
    gap = jax.lax.stop_gradient(log_prob + target_entropy)
    if form == "alpha":
        return (jnp.exp(log_alpha) * -gap).mean()
    return -(log_alpha * gap).mean()


def update_metrics(critic_loss, actor_loss, temperature_loss, alpha, q, log_prob) -> dict:
    """The metrics every SAC-style update reports."""
    return {
        "critic_loss": critic_loss,
        "actor_loss": actor_loss,
        "alpha_loss": temperature_loss,
        "alpha": alpha,
        "q_mean": q.mean(),
        "entropy": -log_prob.mean(),
    }


def actor_and_temperature(
    step,
    policy_delay,
    actor,
    log_alpha,
    objective,
    target_entropy,
    actor_opt,
    alpha_opt,
    held,
    temperature_loss="log_alpha",
):
    """The actor and temperature step, every `policy_delay` updates (`base.delayed`); CrossQ's
    too. `objective(params) -> (actor loss, (log_prob, aux))`. Returns (actor, log_alpha, aux,
    actor loss, temperature loss, log_prob), with `aux` replaced by `held` at the updates that
    hold (CrossQ: the actor's batch statistics). `temperature_loss`: `alpha_loss`'s form."""

    def update():
        (a_loss, (log_prob, aux)), grads = jax.value_and_grad(objective, has_aux=True)(actor.params)
        t_loss, t_grads = jax.value_and_grad(alpha_loss)(
            log_alpha.params, log_prob, target_entropy, temperature_loss
        )
        return (
            apply_gradients(actor, grads, actor_opt),
            apply_gradients(log_alpha, t_grads, alpha_opt),
            aux,
            a_loss,
            t_loss,
            log_prob,
        )

    def hold():
        a_loss, (log_prob, _) = objective(actor.params)
        t_loss = alpha_loss(log_alpha.params, log_prob, target_entropy, temperature_loss)
        return actor, log_alpha, held, a_loss, t_loss, log_prob

    return delayed(step, policy_delay, update, hold)


def finish_update(
    state: SACState,
    tau: jax.Array,
    *,
    actor: Learner,
    critic: Learner,
    log_alpha: Learner,
    head_state: Any,
) -> SACState:
    """The state after an update that moved the actor, critics, temperature and head state to
    these: the target critics moved towards the new critics by `tau` (Polyak; the caller reads
    it from `state.hp`) and the step counted."""
    return state.replace(
        actor=actor,
        critic=critic,
        target_critic_params=polyak(state.target_critic_params, critic.params, tau),
        log_alpha=log_alpha,
        step=state.step + 1,
        head_state=head_state,
    )


class UpdateKeys(NamedTuple):
    """The keys of one SAC update (`update_keys`), named by the draw each one feeds."""

    next_action: jax.Array  # the next action a' ~ pi(s') the target bootstraps from
    target_dropout: jax.Array  # the target critics' dropout (DroQ)
    target_subset: jax.Array  # REDQ's subset of the target critics
    online_dropout: jax.Array  # the online critics' dropout in the critic loss
    policy_action: jax.Array  # the actor's action a ~ pi(s)
    policy_dropout: jax.Array  # the critics' dropout in the actor's loss
    head_target: jax.Array  # the head's target sample (DSAC-T's return noise)
    temperature_action: jax.Array  # the temperature's own action (temperature_draw="own")


def update_keys(key: jax.Array) -> UpdateKeys:
    """The keys of one update, split(key, 8) in `UpdateKeys`' order. The first 7 are
    split(key, 7)'s (JAX's default partitionable threefry), so runs from before the 8th key
    (temperature_action) keep their numbers."""
    return UpdateKeys(*jax.random.split(key, len(UpdateKeys._fields)))


class Losses(NamedTuple):
    """SAC's objectives as its update differentiates them, over one batch, with `keys` from
    `update_keys`. The actor's returns the log-probs the temperature's loss (`alpha_loss`)
    reads: those of its own action, or of a second draw (temperature_draw="own"). The critic's
    returns those of the bootstrap action a' ~ pi(s'), which FastSAC's temperature reads."""

    # (critic params, state, batch, keys) -> (loss, (values [E, B], head state, next log-probs))
    critic: Callable
    actor: Callable  # (actor params, critic params, state, batch, keys) -> (loss, (log_prob, None))


def losses(config: SACConfig, nets: Networks | None = None) -> Losses:
    """The critic's and the actor's objectives (`Losses`) of `sac.make(config, nets)`'s
    update (FastSAC's too)."""
    head = config.head()
    nets = nets or networks(config)
    critic_apply = nets.critic

    def critic(params, state: SACState, batch: Batch, keys: UpdateKeys):
        # The head's target from the target critics at (s', a' ~ pi(s')), with the soft bonus
        # -alpha log pi(a'|s'); no gradient reaches it (it reads no critic parameter).
        hp, alpha = state.hp, jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        mean, log_std = nets.actor(state.actor.params, batch.next_obs, state.action_size)
        next_action, next_log_prob = distributions.tanh_gaussian_sample(
            keys.next_action, mean, log_std
        )
        next_out = critic_apply(
            state.target_critic_params, next_critic_obs, next_action, keys.target_dropout
        )
        next_out = target_subset(keys.target_subset, next_out, config.num_target_critics)
        reward = hp["reward_scale"] * batch.reward
        bonus = -alpha * next_log_prob
        target = head.target(
            keys.head_target, next_out, reward, batch.terminated, batch.discount, bonus, hp
        )
        out = critic_apply(params, critic_obs, batch.action, keys.online_dropout)
        weight = row_weights(batch, config.truncation)
        loss, (values, head_state) = head.loss(
            out, target, state.head_state, hp, state.step == 0, weight
        )
        return loss, (values, head_state, next_log_prob)

    def actor(params, critic_params, state: SACState, batch: Batch, keys: UpdateKeys):
        alpha = jnp.exp(state.log_alpha.params)
        mean, log_std = nets.actor(params, batch.obs, state.action_size)
        action, log_prob = distributions.tanh_gaussian_sample(keys.policy_action, mean, log_std)
        out = critic_apply(critic_params, batch.critic_inputs[0], action, keys.policy_dropout)
        q_pi = head.values(out, state.hp)
        loss = actor_loss(q_pi, log_prob, alpha, config.actor_q)
        if config.temperature_draw == "own":  # no gradient reaches the actor through it
            sg = jax.lax.stop_gradient
            _, log_prob = distributions.tanh_gaussian_sample(
                keys.temperature_action, sg(mean), sg(log_std)
            )
        return loss, (log_prob, None)

    return Losses(critic, actor)


class Optimizers(NamedTuple):
    actor: optax.GradientTransformation
    critic: optax.GradientTransformation
    alpha: optax.GradientTransformation  # of log alpha


def optimizers(config: SACConfig) -> Optimizers:
    """SAC's three Adams, their learning rates in their states (FastSAC: AdamWs)."""
    return Optimizers(adam(config.actor_lr), adam(config.critic_lr), adam(config.alpha_lr))


def initializer(
    config: SACConfig, opts: Optimizers, nets: Networks | None = None
) -> Callable[..., SACState]:
    """The `Agent.init` of SAC's family: networks, optimiser states, log alpha and `hp` (the
    ARRAY_FIELDS that the config's CONSUMED, read by the optimisers and `init`, leaves)."""
    head = config.head()
    nets = nets or networks(config)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> SACState:
        actor_params, critic_params = nets.init(key, obs_size, action_size, critic_obs_size)
        log_alpha = jnp.asarray(jnp.log(config.init_alpha), jnp.float32)
        return SACState(
            actor=learner(actor_params, opts.actor),
            critic=learner(critic_params, opts.critic),
            target_critic_params=critic_params,
            log_alpha=learner(log_alpha, opts.alpha),
            step=jnp.zeros((), jnp.int32),
            head_state=head.init(config.num_critics),
            hp=state_hyperparameters(config),
            action_size=action_size,
        )

    return init


def acting(config: SACConfig, nets: Networks | None = None) -> Callable[..., jax.Array]:
    """The `Agent.act` of SAC's family: tanh(mean + noise_scale * std * eps)."""
    nets = nets or networks(config)

    def act(state: SACState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        mean, log_std = nets.actor(state.actor.params, obs, state.action_size)
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    return act


class Networks(NamedTuple):
    """The actor and critics of SAC's family as its losses, `init` and `act` use them (network
    injection): jaxrl's own (`networks(config)`, the default) or any others of this shape, such
    as Brax's `SACNetworks` read by `jaxrl.brax.factories.sac_networks`.

    init(key, obs_size, action_size, critic_obs_size) -> (actor params, critic params);
    actor(params, obs, action_size) -> (mean, log_std) of the pre-tanh Gaussian;
    critic(params, obs, action, dropout key) -> the critics' outputs [E, B, ...] (the head's).
    Observations arrive normalised by the loop."""

    init: Callable
    actor: Callable
    critic: Callable


def networks(config: SACConfig) -> Networks:
    """jaxrl's own: `actor_network` and the `critic_network` ensemble, dropout (DroQ) on in
    every critic pass of an update, the target pass included."""
    critic_net = critic_network(config)

    def init(key, obs_size: int, action_size: int, critic_obs_size: int | None = None):
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, obs_size))
        critic_obs = jnp.zeros((1, critic_obs_size or obs_size))
        action = jnp.zeros((1, action_size))
        actor_params = actor_network(config, action_size).init(actor_key, obs)
        return actor_params, critic_net.init(critic_key, critic_obs, action)

    def actor(params, obs, action_size: int):
        return actor_network(config, action_size).apply(params, obs)

    def critic(params, obs, action, key):
        return critic_net.apply(params, obs, action, True, rngs={"dropout": key})

    return Networks(init, actor, critic)


def critic_network(config: SACConfig) -> QEnsemble:
    return QEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.critic_layer_norm,
        config.critic_dropout,
        outputs=config.head().outputs,
        residual=config.critic_residual,
        norm_after_relu=config.critic_norm_after_relu,
        matmul_precision=config.matmul_precision,
        kernel_init=config.kernel_init,
        activation=config.activation,
    )


def actor_network(config: SACConfig, action_size: int) -> GaussianActor:
    return GaussianActor(
        action_size,
        config.actor_hidden,
        layer_norm=config.actor_layer_norm,
        log_std_max=config.log_std_max,
        activation=config.activation,
        zero_head=config.zero_policy_head,
        softplus_std=config.softplus_std,
        log_std_clip=config.log_std_clip,
        matmul_precision=config.matmul_precision,
        kernel_init=config.kernel_init,
    )
