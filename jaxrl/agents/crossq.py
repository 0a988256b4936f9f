"""CrossQ (Bhatt et al. ICLR 2024): SAC without target networks, made stable by Batch
Renormalisation in critic and actor and by ONE joint critic pass over (s, a) and (s', a'), so
the batch statistics cover both distributions. Running statistics are agent state: used
(train=False) when acting, evaluating and in the actor's critic pass, and checkpointed.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions, heads
from jaxrl.agents import sac
from jaxrl.agents.base import (
    Agent,
    Learner,
    adam,
    apply_gradients,
    hyperparameters,
    learner,
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
    hp: dict  # the continuous settings the update reads (UPDATE_HYPERPARAMETERS), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# What `update` reads of the config's ARRAY_FIELDS: all but those the optimisers hold and the
# one `init` consumes.
UPDATE_HYPERPARAMETERS = tuple(
    name
    for name in CrossQConfig.ARRAY_FIELDS
    if name not in ("actor_lr", "critic_lr", "alpha_lr", "adam_b1", "init_alpha")
)


def joint_critic_pass(apply, obs, action, next_obs, next_action):
    """Q over the concatenation [(s, a); (s', a')] in one training-mode pass, split back:
    (q [E, B], next_q [E, B], new batch statistics)."""
    q_all, stats = apply(jnp.concatenate([obs, next_obs]), jnp.concatenate([action, next_action]))
    q, next_q = jnp.split(q_all, 2, axis=-1)
    return q, next_q, stats


def make(config: CrossQConfig = CrossQConfig()) -> Agent:
    critic_net = BRNQEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.bn_momentum,
        config.bn_warmup_steps,
        config.matmul_precision,
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
            hp=hyperparameters(config, UPDATE_HYPERPARAMETERS),
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
        alpha = jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        mean, log_std = policy(state.actor.params, state.actor_stats, batch.next_obs, action_size)
        next_action, next_log_prob = distributions.tanh_gaussian_sample(next_key, mean, log_std)

        def critic_objective(params):
            def apply(obs, action):
                variables = {"params": params, "batch_stats": state.critic_stats}
                q, updates = critic_net.apply(variables, obs, action, True, mutable=["batch_stats"])
                return q, updates["batch_stats"]

            q, next_q, stats = joint_critic_pass(
                apply, critic_obs, batch.action, next_critic_obs, next_action
            )
            # No target network: the target is the stop-gradient of the same joint pass.
            target = sac.critic_target(
                hp["reward_scale"] * batch.reward,
                batch.terminated,
                jax.lax.stop_gradient(next_q),
                next_log_prob,
                alpha,
                batch.discount,
            )
            return heads.critic_mse(q, target), (q, stats)

        (c_loss, (q, critic_stats)), grads = jax.value_and_grad(critic_objective, has_aux=True)(
            state.critic.params
        )
        critic = apply_gradients(state.critic, grads, critic_opt)

        def actor_objective(params):
            (mean, log_std), updates = policy(
                params, state.actor_stats, batch.obs, action_size, True
            )
            action, log_prob = distributions.tanh_gaussian_sample(actor_key, mean, log_std)
            variables = {"params": critic.params, "batch_stats": critic_stats}
            q_pi = critic_net.apply(variables, critic_obs, action)  # running statistics
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
        )
        return new_state, sac.update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)

    return Agent(init=init, act=act, update=update, name="crossq")
