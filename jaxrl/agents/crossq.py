"""CrossQ (Bhatt et al. ICLR 2024): SAC without target networks, made stable by Batch
Renormalisation in critic and actor and by ONE joint critic pass over (s, a) and (s', a'), so
the batch statistics cover both distributions. Running statistics are agent state: used
(train=False) when acting, evaluating and in the actor's critic pass, and checkpointed.

The critics go through the critic heads (`jaxrl.heads`) as SAC's do: scalar critics (the
paper's) or C51 ones (`critic="c51"`), the target built by the head from the stop-gradient of
the joint pass's (s', a') half.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions
from jaxrl.agents import sac
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


def make(config: CrossQConfig = CrossQConfig()) -> Agent:
    head = config.head()
    critic_net = BRNQEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.bn_momentum,
        config.bn_warmup_steps,
        config.matmul_precision,
        outputs=head.outputs,
    )
    actor_opt = adam(config.actor_lr, b1=config.adam_b1)
    critic_opt = adam(config.critic_lr, b1=config.adam_b1)
    alpha_opt = adam(config.alpha_lr, b1=config.adam_b1)

    def actor_net(action_size: int) -> BRNGaussianActor:
        return BRNGaussianActor(
            action_size,
            config.actor_hidden,
            config.bn_momentum,
            config.bn_warmup_steps,
            matmul_precision=config.matmul_precision,
        )

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> CrossQState:
        actor_key, critic_key = jax.random.split(key)
        obs, action = jnp.zeros((2, obs_size)), jnp.zeros((2, action_size))
        critic_obs = jnp.zeros((2, critic_obs_size or obs_size))
        actor_vars = actor_net(action_size).init(actor_key, obs)
        critic_vars = critic_net.init(critic_key, critic_obs, action)
        return CrossQState(
            actor=learner(actor_vars["params"], actor_opt),
            actor_stats=actor_vars["batch_stats"],
            critic=learner(critic_vars["params"], critic_opt),
            critic_stats=critic_vars["batch_stats"],
            log_alpha=learner(jnp.asarray(jnp.log(config.init_alpha), jnp.float32), alpha_opt),
            step=jnp.zeros((), jnp.int32),
            head_state=head.init(config.num_critics),
            hp=state_hyperparameters(config),
            action_size=action_size,
        )

    def policy(params, stats, obs, action_size, train=False):
        variables = {"params": params, "batch_stats": stats}
        if train:
            return actor_net(action_size).apply(variables, obs, True, mutable=["batch_stats"])
        return actor_net(action_size).apply(variables, obs)

    def act(state: CrossQState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        mean, log_std = policy(state.actor.params, state.actor_stats, obs, state.action_size)
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    def update(state: CrossQState, batch: Batch, key: jax.Array):
        action_size, hp = state.action_size, state.hp
        target_entropy = -hp["target_entropy_scale"] * action_size
        next_key, actor_key = jax.random.split(key)
        # The head's own draw (none for scalar and C51 critics: unused, compiled away); folded
        # from next_key so the split, and the numbers of earlier runs, stay as they were.
        target_key = jax.random.fold_in(next_key, 1)
        alpha = jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        mean, log_std = policy(state.actor.params, state.actor_stats, batch.next_obs, action_size)
        next_action, next_log_prob = distributions.tanh_gaussian_sample(next_key, mean, log_std)

        def critic_objective(params):
            def apply(obs, action):
                variables = {"params": params, "batch_stats": state.critic_stats}
                q, updates = critic_net.apply(variables, obs, action, True, mutable=["batch_stats"])
                return q, updates["batch_stats"]

            out, next_out, stats = joint_critic_pass(
                apply, critic_obs, batch.action, next_critic_obs, next_action
            )
            # No target network: the target is the stop-gradient of the same joint pass, with
            # SAC's soft bonus -alpha log pi(a'|s').
            reward = hp["reward_scale"] * batch.reward
            bonus = -alpha * next_log_prob
            next_out = jax.lax.stop_gradient(next_out)
            target = head.target(
                target_key, next_out, reward, batch.terminated, batch.discount, bonus, hp
            )
            c_loss, (q, head_state) = head.loss(out, target, state.head_state, hp, state.step == 0)
            return c_loss, (q, head_state, stats)

        (c_loss, (q, head_state, critic_stats)), grads = jax.value_and_grad(
            critic_objective, has_aux=True
        )(state.critic.params)
        critic = apply_gradients(state.critic, grads, critic_opt)

        def actor_objective(params):
            (mean, log_std), updates = policy(
                params, state.actor_stats, batch.obs, action_size, True
            )
            action, log_prob = distributions.tanh_gaussian_sample(actor_key, mean, log_std)
            variables = {"params": critic.params, "batch_stats": critic_stats}
            out = critic_net.apply(variables, critic_obs, action)  # running statistics
            q_pi = head.values(out, hp)
            return sac.actor_loss(q_pi, log_prob, alpha), (log_prob, updates["batch_stats"])

        actor, log_alpha, actor_stats, a_loss, t_loss, log_prob = sac.actor_and_temperature(
            state.step,
            config.policy_delay,
            state.actor,
            state.log_alpha,
            actor_objective,
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
        metrics = sac.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        return new_state, {**metrics, **head.metrics(head_state)}

    return Agent(init=init, act=act, update=update, name="crossq")
