"""TD3+BC (Fujimoto and Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning"):
TD3 whose actor also regresses onto the dataset's actions.

The actor's loss is -lambda Q1(s, pi(s)) + mean((pi(s) - a)^2) with lambda = alpha / mean
|Q1(s, pi(s))| over the batch, held constant in the gradient, so the Q term keeps one scale
whatever the rewards' (the author's code: `F.mse_loss`, a mean over rows and action
dimensions). The critics, targets and delays are TD3's (`jaxrl.agents.td3`); the states are
normalised by the dataset's statistics (the loop's normalize_observations, on by default).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl import heads
from jaxrl.agents import td3
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.offline import TD3BCConfig  # jax-free, re-exported
from jaxrl.agents.td3 import TD3State
from jaxrl.types import Batch

__all__ = ["TD3BCConfig", "actor_loss", "make"]


def actor_loss(q: jax.Array, policy_action: jax.Array, action: jax.Array, alpha) -> jax.Array:
    """-alpha / mean|Q| * mean(Q) + mean((pi(s) - a)^2), with Q [B] the actor's critic value."""
    scale = alpha / jax.lax.stop_gradient(jnp.abs(q).mean())
    return -scale * q.mean() + jnp.mean((policy_action - action) ** 2)


def make(config: TD3BCConfig = TD3BCConfig()) -> Agent:
    objectives = td3.losses(config)
    critic_net = td3.critic_network(config)
    head = config.head()

    def actor(params, critic_params, state: TD3State, batch: Batch):
        policy_action = td3.actor_network(config, state.action_size).apply(params, batch.obs)
        out = critic_net.apply(critic_params, batch.critic_inputs[0], policy_action)
        q = heads.reduce_critics(head.values(out, state.hp), config.actor_q)
        return actor_loss(q, policy_action, batch.action, state.hp["bc_alpha"])

    opts = td3.optimizers(config)
    update = td3.updater(config, objectives._replace(actor=actor), opts)
    return Agent(
        init=td3.initializer(config, opts),
        act=td3.acting(config),
        update=update,
        name="td3_bc",
        loop_defaults={"normalize_observations": True},  # the paper normalises the states
    )
