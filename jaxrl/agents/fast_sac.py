"""FastSAC (Seo et al. 2025, "Learning Sim-to-Real Humanoid Locomotion in 15 Minutes"): SAC
scaled out as FastTD3 scales TD3, in the public implementation's form (amazon-far/holosoma;
docs/ALGORITHMS.md, "impl").

SAC's networks, losses and state (`jaxrl.agents.sac_family`) with FastSAC's config
(`FastSACConfig`):
- C51 twin critics without clipped double Q: each critic learns the projection of its own
  target critic's next distribution, shifted by r - discount alpha log pi(a'|s')
  (`heads.Categorical(clipped_double_q=False)`); the actor climbs the mean of the two
  critics' expected values;
- LayerNorm and SiLU in both networks, a policy head that starts at zero, log-std in [-5, 0];
- AdamW (beta2 0.95) for the policy, the critics and log alpha, which starts at 0.001 and
  tracks a target entropy of 0.

Only the order of one update differs from SAC's, and this module writes it:
1. the critics step on the C51 loss (the target from the temperature the update starts from);
2. the temperature steps at EVERY update, on the log-probs of the bootstrap actions a' ~ pi(s')
   that the critics' target drew, not on the actor's draw at s and not only with the actor;
3. every `policy_delay` updates the actor steps, against the updated critics and the updated
   temperature;
4. the target critics move by tau at every update.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl.agents import sac_family
from jaxrl.agents.base import Agent, Learner, adam, apply_gradients, delayed
from jaxrl.agents.configs.sac import FastSACConfig  # jax-free (jaxrl.agents.configs), re-exported
from jaxrl.types import Batch

# The loop settings of the public implementation: observations normalised by running
# statistics; exploration is the policy's own sampling (no per-env noise scales).
LOOP_DEFAULTS = {"normalize_observations": True}


def optimizers(config: FastSACConfig) -> sac_family.Optimizers:
    """AdamW for all three, beta2 0.95. The reference builds log alpha's AdamW without a weight
    decay, so torch's default 0.01 applies to it (`alpha_weight_decay`)."""
    b2 = config.adam_b2
    return sac_family.Optimizers(
        actor=adam(config.actor_lr, config.weight_decay, b2=b2),
        critic=adam(config.critic_lr, config.weight_decay, b2=b2),
        alpha=adam(config.alpha_lr, config.alpha_weight_decay, b2=b2),
    )


def actor_step(step, policy_delay, actor: Learner, objective, opt):
    """The actor's step every `policy_delay` updates (`base.delayed`), its loss and log-probs
    reported at the others too. `objective(params) -> (loss, (log_prob, _))`."""

    def update():
        (loss, (log_prob, _)), grads = jax.value_and_grad(objective, has_aux=True)(actor.params)
        return apply_gradients(actor, grads, opt), loss, log_prob

    def hold():
        loss, (log_prob, _) = objective(actor.params)
        return actor, loss, log_prob

    return delayed(step, policy_delay, update, hold)


def make(config: FastSACConfig = FastSACConfig()) -> Agent:
    objectives = sac_family.losses(config)
    opts = optimizers(config)

    def update(state: sac_family.SACState, batch: Batch, key: jax.Array):
        target_entropy = -state.hp["target_entropy_scale"] * state.action_size
        keys = sac_family.update_keys(key)
        alpha = jnp.exp(state.log_alpha.params)

        (c_loss, (q, head_state, next_log_prob)), grads = jax.value_and_grad(
            objectives.critic, has_aux=True
        )(state.critic.params, state, batch, keys)
        critic = apply_gradients(state.critic, grads, opts.critic)

        # The temperature, at every update, from the bootstrap actions' log-probs (the
        # reference's `_update_main`, before the actor's `_update_pol`).
        t_loss, t_grads = jax.value_and_grad(sac_family.alpha_loss)(
            state.log_alpha.params, next_log_prob, target_entropy, config.temperature_loss
        )
        log_alpha = apply_gradients(state.log_alpha, t_grads, opts.alpha)

        # The actor, every policy_delay updates, with the temperature just updated. The
        # reference's steps are the 2nd and 6th of each env step's 8 (i % 4 == 1), these the
        # 1st and 5th: the same rate, another phase.
        critic_params = critic.params if config.actor_uses_updated_critic else state.critic.params
        after = state.replace(log_alpha=log_alpha)
        actor, a_loss, log_prob = actor_step(
            state.step,
            config.policy_delay,
            state.actor,
            lambda params: objectives.actor(params, critic_params, after, batch, keys),
            opts.actor,
        )
        new_state = sac_family.finish_update(
            state,
            state.hp["tau"],
            actor=actor,
            critic=critic,
            log_alpha=log_alpha,
            head_state=head_state,
        )
        return new_state, sac_family.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)

    return Agent(
        init=sac_family.initializer(config, opts),
        act=sac_family.acting(config),
        update=update,
        name="fast_sac",
        loop_defaults=LOOP_DEFAULTS,
    )
