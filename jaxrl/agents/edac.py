"""SAC-N and EDAC (An et al. 2021, "Uncertainty-Based Offline RL with Diversified Q-Ensemble").

SAC-N is SAC with N critics, vmapped as one ensemble, whose target takes the minimum over all
N target critics: pessimism grows with N, which keeps an offline policy from the actions the
data does not hold. EDAC adds to the critics' loss a term that pushes the critics' action
gradients apart (`diversity`), so that far fewer critics give the same pessimism.

One update, in the order of the reference code (snu-mllab/EDAC, as CORL keeps it): the
temperature from a draw of its own at s, then the actor against the critics with the new
temperature, then the critics, whose target bootstraps from the new actor's draw at s'.
SAC's state, networks, losses and heads are reused (`jaxrl.agents.sac_family`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl import distributions
from jaxrl.agents import sac_family
from jaxrl.agents.base import Agent, apply_gradients
from jaxrl.agents.configs.offline import EDACConfig, SACNConfig  # jax-free, re-exported
from jaxrl.agents.sac_family import SACState
from jaxrl.types import Batch

__all__ = ["EDACConfig", "SACNConfig", "action_gradients", "diversity", "ensemble_update", "make"]


def diversity(action_grads: jax.Array) -> jax.Array:
    """EDAC's ensemble gradient-diversity term of action gradients [E, B, A] (dQ_i/da at each
    row): each normalised to unit length (plus 1e-10, the reference code's), the sum over pairs
    i != j of their dot products, averaged over rows and divided by E - 1."""
    size = action_grads.shape[0]
    # |g| with a zero gradient where g = 0 (a ReLU critic can be flat in the action): the
    # norm's own gradient there is 0/0, a NaN that reaches the parameters (through eta * NaN
    # even at eta 0).
    squares = jnp.sum(action_grads**2, axis=-1, keepdims=True)
    nonzero = squares > 0
    norm = jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, squares, 1.0)), 0.0)
    unit = action_grads / (norm + 1e-10)
    # Products and sums, not a matmul: [E, E, B] of a few action dimensions, which every
    # matmul precision (`matmul_precision`) would compute alike.
    gram = (unit[:, None] * unit[None, :]).sum(-1)
    off_diagonal = gram.sum((0, 1)) - jnp.trace(gram)
    return off_diagonal.mean() / (size - 1)


def action_gradients(config: EDACConfig):
    """`action_grads(params, obs, action, hp) -> dQ_i/da [E, B, A]`: each critic's value
    differentiated in its own copy of the actions, in one backward pass."""
    critic_net, head = sac_family.critic_network(config), config.head()

    def action_grads(params, obs, action, hp):
        stacked = jnp.broadcast_to(action, (config.num_critics, *action.shape))

        def total(actions):
            return head.values(critic_net.apply(params, obs, actions, True, True), hp).sum()

        return jax.grad(total)(stacked)

    return action_grads


def make(config: EDACConfig = EDACConfig()) -> Agent:
    sac_n = type(config) is SACNConfig
    objectives = sac_family.losses(config)
    action_grads = action_gradients(config)

    def critic_objective(params, state, batch, keys):
        """SAC's critic loss (half the squared TD error, summed over critics) plus eta / 2
        times the diversity term: the paper's sum of squared errors plus eta times it, halved,
        a scale Adam's step does not see."""
        loss, (values, head_state, _) = objectives.critic(params, state, batch, keys)
        if sac_n:  # no diversity term: none computed
            return loss, (values, head_state, loss, None)
        spread = diversity(action_grads(params, batch.critic_inputs[0], batch.action, state.hp))
        total = loss + 0.5 * state.hp["eta"] * spread
        return total, (values, head_state, loss, spread)

    name = "sac_n" if sac_n else "edac"
    return Agent(
        init=sac_family.initializer(config, sac_family.optimizers(config)),
        act=sac_family.acting(config),
        update=ensemble_update(config, critic_objective, with_diversity=not sac_n),
        name=name,
    )


def ensemble_update(config: EDACConfig, critic_objective, with_diversity: bool):
    """The update of SAC-N, EDAC and E2O, given the critics' objective
    `critic_objective(params, state, batch, keys) -> (loss, (values [E, B], head state, TD
    loss, diversity or None))`: the temperature, the actor, then the critics."""
    actor_opt, critic_opt, alpha_opt = sac_family.optimizers(config)
    objectives = sac_family.losses(config)

    def update(state: SACState, batch: Batch, key: jax.Array):
        keys = sac_family.update_keys(key)
        target_entropy = -state.hp["target_entropy_scale"] * state.action_size

        # 1. The temperature, from its own draw a ~ pi(s) (no gradient reaches the actor).
        mean, log_std = sac_family.actor_network(config, state.action_size).apply(
            state.actor.params, batch.obs
        )
        _, draw_log_prob = distributions.tanh_gaussian_sample(
            keys.temperature_action, mean, log_std
        )
        t_loss, t_grads = jax.value_and_grad(sac_family.alpha_loss)(
            state.log_alpha.params, draw_log_prob, target_entropy, config.temperature_loss
        )
        log_alpha = apply_gradients(state.log_alpha, t_grads, alpha_opt)
        state = state.replace(log_alpha=log_alpha)

        # 2. The actor, against the critics this update started from and the new temperature.
        (a_loss, (log_prob, _)), a_grads = jax.value_and_grad(objectives.actor, has_aux=True)(
            state.actor.params, state.critic.params, state, batch, keys
        )
        state = state.replace(actor=apply_gradients(state.actor, a_grads, actor_opt))

        # 3. The critics, their target from the new actor's a' ~ pi(s') and the new alpha.
        (_, (q, head_state, c_loss, spread)), c_grads = jax.value_and_grad(
            critic_objective, has_aux=True
        )(state.critic.params, state, batch, keys)
        new_state = sac_family.finish_update(
            state,
            state.hp["tau"],
            actor=state.actor,
            critic=apply_gradients(state.critic, c_grads, critic_opt),
            log_alpha=log_alpha,
            head_state=head_state,
        )
        alpha = jnp.exp(log_alpha.params)
        metrics = sac_family.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        metrics["q_std"] = q.std(0).mean()  # the ensemble's disagreement, its pessimism
        if with_diversity:
            metrics["diversity"] = spread
        return new_state, metrics

    return update
