"""Soft Actor-Critic with a learned temperature (Haarnoja et al. 2018, "SAC v2").

Twin (or N) critics as one vmapped ensemble, Polyak-averaged target critics, a tanh-Gaussian
actor trained against the minimum of the critics, and log-alpha trained towards a target entropy.

SAC's update and `make`; the state, networks, losses and steps it shares with REDQ, DroQ,
DSAC-T, FastSAC and CrossQ live in `jaxrl.agents.sac_family`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl.agents import sac_family
from jaxrl.agents.base import Agent, apply_gradients
from jaxrl.agents.configs.sac import SACConfig  # jax-free (jaxrl.agents.configs), re-exported
from jaxrl.agents.sac_family import SACState
from jaxrl.types import Batch


def make(config: SACConfig = SACConfig(), nets: sac_family.Networks | None = None) -> Agent:
    """SAC with `config`'s settings, over `nets` (default: jaxrl's own,
    `sac_family.networks(config)`; the config's network fields then do not apply)."""
    head = config.head()
    objectives = sac_family.losses(config, nets)
    actor_opt, critic_opt, alpha_opt = opts = sac_family.optimizers(config)

    def update(state: SACState, batch: Batch, key: jax.Array):
        target_entropy = -state.hp["target_entropy_scale"] * state.action_size
        keys = sac_family.update_keys(key)
        alpha = jnp.exp(state.log_alpha.params)

        (c_loss, (q, head_state, _)), grads = jax.value_and_grad(objectives.critic, has_aux=True)(
            state.critic.params, state, batch, keys
        )
        critic = apply_gradients(state.critic, grads, critic_opt)

        # Actor and temperature, every policy_delay steps, against the freshly updated critics
        # or (actor_uses_updated_critic=False) the ones this step started from.
        critic_params = critic.params if config.actor_uses_updated_critic else state.critic.params
        actor, log_alpha, _, a_loss, t_loss, log_prob = sac_family.actor_and_temperature(
            state.step,
            config.policy_delay,
            state.actor,
            state.log_alpha,
            lambda params: objectives.actor(params, critic_params, state, batch, keys),
            target_entropy,
            actor_opt,
            alpha_opt,
            held=None,
            temperature_loss=config.temperature_loss,
        )
        new_state = sac_family.finish_update(
            state,
            state.hp["tau"],
            actor=actor,
            critic=critic,
            log_alpha=log_alpha,
            head_state=head_state,
        )
        metrics = sac_family.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        return new_state, {**metrics, **head.metrics(head_state)}

    return Agent(
        init=sac_family.initializer(config, opts, nets),
        act=sac_family.acting(config, nets),
        update=update,
        name="sac",
    )
