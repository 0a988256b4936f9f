"""CrossQ (Bhatt et al. ICLR 2024): SAC without target networks, made stable by Batch
Renormalisation in critic and actor and by ONE joint critic pass over (s, a) and (s', a'), so
the batch statistics cover both distributions. Running statistics are agent state: used
(train=False) when acting, evaluating and in the actor's critic pass, and checkpointed.

The critics go through the critic heads (`jaxrl.heads`) as SAC's do: scalar critics (the
paper's) or C51 ones (`critic="c51"`), the target built by the head from the stop-gradient of
the joint pass's (s', a') half.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions
from jaxrl.agents import sac_family
from jaxrl.agents.base import (
    Agent,
    Learner,
    adam,
    apply_gradients,
    learner,
    state_hyperparameters,
)
from jaxrl.agents.configs.sac import CrossQConfig  # jax-free (jaxrl.agents.configs), re-exported
from jaxrl.networks import BRNGaussianActor, BRNQEnsemble
from jaxrl.types import Batch


@flax.struct.dataclass
class CrossQState:
    actor: Learner
    actor_stats: dict  # BatchRenorm running statistics of the actor
    critic: Learner
    critic_stats: dict  # ... of the critics, stacked [E]
    log_alpha: Learner
    step: jax.Array
    head_state: Any  # the critic head's own state (None for scalar and C51 critics)
    hp: dict  # the continuous settings the update reads (`state_hyperparameters`), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


def joint_critic_pass(apply, obs, action, next_obs, next_action):
    """The critics' outputs over the concatenation [(s, a); (s', a')] in one training-mode
    pass, split back along the batch: (out [E, B, ...], next_out [E, B, ...], new batch
    statistics)."""
    out, stats = apply(jnp.concatenate([obs, next_obs]), jnp.concatenate([action, next_action]))
    online, next_out = jnp.split(out, 2, axis=1)
    return online, next_out, stats


class UpdateKeys(NamedTuple):
    """The keys of one CrossQ update (`update_keys`), named by the draw each one feeds."""

    next_action: jax.Array  # the next action a' ~ pi(s') of the joint pass
    policy_action: jax.Array  # the actor's action a ~ pi(s)
    head_target: jax.Array  # the head's own draw (none for scalar and C51 critics: unused)


def update_keys(key: jax.Array) -> UpdateKeys:
    """split(key) into the next-action and the actor's draws; the head's is folded from the
    first, so the split, and the numbers of runs from before it, stay as they were."""
    next_key, actor_key = jax.random.split(key)
    return UpdateKeys(next_key, actor_key, jax.random.fold_in(next_key, 1))


def critic_network(config: CrossQConfig) -> BRNQEnsemble:
    """The BatchRenorm critic ensemble, with the head's outputs per critic."""
    return BRNQEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.bn_momentum,
        config.bn_warmup_steps,
        config.matmul_precision,
        outputs=config.head().outputs,
        after_relu=config.bn_after_relu,
    )


def actor_network(config: CrossQConfig, action_size: int) -> BRNGaussianActor:
    """The BatchRenorm tanh-Gaussian actor."""
    return BRNGaussianActor(
        action_size,
        config.actor_hidden,
        config.bn_momentum,
        config.bn_warmup_steps,
        matmul_precision=config.matmul_precision,
        after_relu=config.bn_after_relu,
        log_std_clip=config.log_std_clip,
    )


def policy(config: CrossQConfig, params, stats, obs, action_size, train=False):
    """The actor's (mean, log_std) at obs: with its running statistics (train=False), or in
    training mode, returning ((mean, log_std), {"batch_stats": new statistics})."""
    variables = {"params": params, "batch_stats": stats}
    if train:
        return actor_network(config, action_size).apply(
            variables, obs, True, mutable=["batch_stats"]
        )
    return actor_network(config, action_size).apply(variables, obs)


class Losses(NamedTuple):
    """CrossQ's objectives as `update` differentiates them, over one batch, with `keys` from
    `update_keys`."""

    # (critic params, state, batch, keys) -> (loss, (values [E, B], head state, batch stats))
    critic: Callable
    # (actor params, critic params, critic stats, state, batch, keys)
    #   -> (loss, (log_prob, actor batch stats))
    actor: Callable


def losses(config: CrossQConfig) -> Losses:
    """The critic's and the actor's objectives (`Losses`) of `make(config)`'s update."""
    head = config.head()
    critic_net = critic_network(config)

    def critic(params, state: CrossQState, batch: Batch, keys: UpdateKeys):
        # One training-mode pass over [(s, a); (s', a' ~ pi(s'))]; no target network: the
        # target is the stop-gradient of its second half, with SAC's soft bonus.
        hp, alpha = state.hp, jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        mean, log_std = policy(
            config, state.actor.params, state.actor_stats, batch.next_obs, state.action_size
        )
        next_action, next_log_prob = distributions.tanh_gaussian_sample(
            keys.next_action, mean, log_std
        )

        def apply(obs, action):
            variables = {"params": params, "batch_stats": state.critic_stats}
            q, updates = critic_net.apply(variables, obs, action, True, mutable=["batch_stats"])
            return q, updates["batch_stats"]

        out, next_out, stats = joint_critic_pass(
            apply, critic_obs, batch.action, next_critic_obs, next_action
        )
        reward = hp["reward_scale"] * batch.reward
        bonus = -alpha * next_log_prob
        next_out = jax.lax.stop_gradient(next_out)
        target = head.target(
            keys.head_target, next_out, reward, batch.terminated, batch.discount, bonus, hp
        )
        c_loss, (q, head_state) = head.loss(out, target, state.head_state, hp, state.step == 0)
        return c_loss, (q, head_state, stats)

    def actor(params, critic_params, critic_stats, state: CrossQState, batch, keys):
        # The actor in training mode (its statistics move); the critics with their running
        # statistics, those the joint pass just left.
        alpha = jnp.exp(state.log_alpha.params)
        (mean, log_std), updates = policy(
            config, params, state.actor_stats, batch.obs, state.action_size, True
        )
        action, log_prob = distributions.tanh_gaussian_sample(keys.policy_action, mean, log_std)
        variables = {"params": critic_params, "batch_stats": critic_stats}
        out = critic_net.apply(variables, batch.critic_inputs[0], action)  # running statistics
        q_pi = head.values(out, state.hp)
        return sac_family.actor_loss(q_pi, log_prob, alpha), (log_prob, updates["batch_stats"])

    return Losses(critic, actor)


def optimizers(config: CrossQConfig) -> sac_family.Optimizers:
    """SAC's three Adams, with the paper's b1 (`adam_b1`)."""
    return sac_family.Optimizers(
        adam(config.actor_lr, b1=config.adam_b1),
        adam(config.critic_lr, b1=config.adam_b1),
        adam(config.alpha_lr, b1=config.adam_b1),
    )


def initializer(config: CrossQConfig, opts: sac_family.Optimizers) -> Callable[..., CrossQState]:
    """CrossQ's `Agent.init`: networks and their batch statistics (initialised on 2 rows),
    optimiser states, log alpha, the head's state and `hp`."""
    head = config.head()
    critic_net = critic_network(config)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> CrossQState:
        actor_key, critic_key = jax.random.split(key)
        obs, action = jnp.zeros((2, obs_size)), jnp.zeros((2, action_size))
        critic_obs = jnp.zeros((2, critic_obs_size or obs_size))
        actor_vars = actor_network(config, action_size).init(actor_key, obs)
        critic_vars = critic_net.init(critic_key, critic_obs, action)
        return CrossQState(
            actor=learner(actor_vars["params"], opts.actor),
            actor_stats=actor_vars["batch_stats"],
            critic=learner(critic_vars["params"], opts.critic),
            critic_stats=critic_vars["batch_stats"],
            log_alpha=learner(jnp.asarray(jnp.log(config.init_alpha), jnp.float32), opts.alpha),
            step=jnp.zeros((), jnp.int32),
            head_state=head.init(config.num_critics),
            hp=state_hyperparameters(config),
            action_size=action_size,
        )

    return init


def acting(config: CrossQConfig) -> Callable[..., jax.Array]:
    """CrossQ's `Agent.act`: the actor with its running statistics, tanh(mean + noise)."""

    def act(state: CrossQState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        mean, log_std = policy(
            config, state.actor.params, state.actor_stats, obs, state.action_size
        )
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    return act


def make(config: CrossQConfig = CrossQConfig()) -> Agent:
    head = config.head()
    objectives = losses(config)
    actor_opt, critic_opt, alpha_opt = opts = optimizers(config)

    def update(state: CrossQState, batch: Batch, key: jax.Array):
        target_entropy = -state.hp["target_entropy_scale"] * state.action_size
        keys = update_keys(key)
        alpha = jnp.exp(state.log_alpha.params)

        (c_loss, (q, head_state, critic_stats)), grads = jax.value_and_grad(
            objectives.critic, has_aux=True
        )(state.critic.params, state, batch, keys)
        critic = apply_gradients(state.critic, grads, critic_opt)

        actor, log_alpha, actor_stats, a_loss, t_loss, log_prob = sac_family.actor_and_temperature(
            state.step,
            config.policy_delay,
            state.actor,
            state.log_alpha,
            lambda params: objectives.actor(
                params, critic.params, critic_stats, state, batch, keys
            ),
            target_entropy,
            actor_opt,
            alpha_opt,
            held=state.actor_stats,
        )
        new_state = state.replace(
            actor=actor,
            actor_stats=actor_stats,
            critic=critic,
            critic_stats=critic_stats,
            log_alpha=log_alpha,
            step=state.step + 1,
            head_state=head_state,
        )
        metrics = sac_family.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        return new_state, {**metrics, **head.metrics(head_state)}

    return Agent(init=initializer(config, opts), act=acting(config), update=update, name="crossq")
