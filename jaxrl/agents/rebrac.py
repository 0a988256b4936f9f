"""ReBRAC (Tarasov et al. 2023, "Revisiting the Minimalist Approach to Offline RL"): TD3+BC
with a behaviour-cloning penalty on both sides, LayerNorm critics, deeper networks and large
batches.

- Actor: mean(beta_1 |pi(s) - a|^2 - lambda Q(s, pi(s))), the squared distance summed over
  action dimensions, Q the critics' minimum, lambda = 1 / mean |Q| over the batch (held
  constant in the gradient).
- Critics: TD3's clipped double-Q target with smoothing, its next value penalised by
  beta_2 |a' - a_next|^2, a' the smoothed target action at s' and a_next the action the data
  took there (`Batch.next_action`, drawn by the loop because the agent `reads_next_action`).
  Where the row ended its episode no next action exists: a termination zeroes the bootstrap
  anyway; a truncated row (which the reference code drops) bootstraps unpenalised.

The targets, delays and optimisers are TD3's (`jaxrl.agents.td3`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl import heads
from jaxrl.agents import td3
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.offline import ReBRACConfig  # jax-free, re-exported
from jaxrl.agents.td3 import TD3State
from jaxrl.types import Batch

__all__ = ["ReBRACConfig", "actor_loss", "critic_penalty", "make"]


def actor_loss(
    q: jax.Array, policy_action: jax.Array, action: jax.Array, beta, normalize_q: bool
) -> jax.Array:
    """mean(beta |pi(s) - a|^2 - lambda Q) over rows, lambda = 1 / mean |Q| (constant in the
    gradient) with `normalize_q`, else 1. q [B], actions [B, A]."""
    scale = 1.0 / jax.lax.stop_gradient(jnp.abs(q).mean()) if normalize_q else 1.0
    return jnp.mean(beta * ((policy_action - action) ** 2).sum(-1) - scale * q)


def critic_penalty(target_action: jax.Array, batch: Batch, beta) -> jax.Array:
    """beta |a' - a_next|^2 [B] where the next action is known, 0 elsewhere."""
    if batch.next_action is None:
        raise ValueError(
            "ReBRAC's batches carry next_action and next_action_known (the off-policy loop "
            "draws them for an agent that reads_next_action)"
        )
    distance = ((target_action - batch.next_action) ** 2).sum(-1)
    return beta * batch.next_action_known * distance


def make(config: ReBRACConfig = ReBRACConfig()) -> Agent:
    head = config.head()
    critic_net = td3.critic_network(config)

    def critic(params, state: TD3State, batch: Batch, key: jax.Array):
        policy, hp = td3.actor_network(config, state.action_size), state.hp
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        target_action = td3.smoothed_target_action(
            key,
            policy.apply(state.target_actor_params, batch.next_obs),
            hp["target_noise"],
            hp["target_noise_clip"],
        )
        next_out = critic_net.apply(state.target_critic_params, next_critic_obs, target_action)
        reward = hp["reward_scale"] * batch.reward
        penalty = critic_penalty(target_action, batch, hp["critic_bc_coef"])
        # The head adds its bonus to min_i Q'_i(s', a') inside the bootstrap.
        target = head.target(key, next_out, reward, batch.terminated, batch.discount, -penalty, hp)
        out = critic_net.apply(params, critic_obs, batch.action)
        return head.loss(out, target, state.head_state, hp, state.step == 0)

    def actor(params, critic_params, state: TD3State, batch: Batch):
        policy_action = td3.actor_network(config, state.action_size).apply(params, batch.obs)
        out = critic_net.apply(critic_params, batch.critic_inputs[0], policy_action)
        q = heads.reduce_critics(head.values(out, state.hp), config.actor_q)
        return actor_loss(
            q, policy_action, batch.action, state.hp["actor_bc_coef"], config.normalize_q
        )

    opts = td3.optimizers(config)
    update = td3.updater(config, td3.Losses(critic, actor), opts)
    return Agent(
        init=td3.initializer(config, opts),
        act=td3.acting(config),
        update=update,
        name="rebrac",
        reads_next_action=True,
    )
