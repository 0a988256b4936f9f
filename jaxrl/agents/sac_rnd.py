"""SAC-RND (Nikulin et al. 2023, "Anti-Exploration by Random Network Distillation"): SAC with
an anti-exploration penalty instead of an ensemble, the error of a random network distillation
(RND) trained on the dataset's state-action pairs, high where an action is unlike the data's.

- The RND: a predictor f(s, a) (bilinear first layer) regressed onto a fixed random target
  g(s, a) (FiLM in its last hidden layer), both reading the state and action standardised by
  their moments. b(s, a) = |f - g|^2 (summed over the embedding) / std, std the running
  standard deviation of the per-row errors seen in training (`jaxrl.normalization`'s running
  moments, from the reference code's RunningMeanStd's start: `fresh_moments`).
- The first `rnd_pretrain_updates` updates train the RND alone (the reference's pretraining),
  and the input moments are those of their batches (the reference takes the dataset's once:
  with 1,000 batches of 1,024 rows the two agree to sampling error). After them the RND is
  frozen and SAC trains, one `lax.cond` in one program.
- SAC's update, in the reference code's order: the actor, E[alpha log pi + actor_beta b(s, a)
  - min Q(s, a)], against the critics the update started from; the temperature from the
  actor's log-probs; the critics, their target min Q'(s', a') - alpha log pi(a'|s') -
  critic_beta b(s', a') with a' from the new actor and the temperature the update started
  from; then the target critics' Polyak move.
"""

from __future__ import annotations

import dataclasses

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions, normalization
from jaxrl.agents import sac_family
from jaxrl.agents.base import Agent, Learner, adam, apply_gradients, learner
from jaxrl.agents.configs.offline import SACRNDConfig  # jax-free, re-exported
from jaxrl.agents.sac_family import SACState
from jaxrl.networks import RNDPredictor, RNDTarget
from jaxrl.normalization import RunningStats
from jaxrl.types import Batch

__all__ = ["RNDState", "SACRNDConfig", "SACRNDState", "fresh_moments", "make"]


def fresh_moments(shape: tuple[int, ...] = ()) -> RunningStats:
    """Running moments as the reference code's RunningMeanStd starts them (mean and variance
    0, count 1e-4), merged by `normalization.update` (the same parallel formula)."""
    zeros = jnp.zeros(shape, jnp.float32)
    return RunningStats(zeros, zeros, jnp.asarray(1e-4, jnp.float32))


@flax.struct.dataclass
class RNDState:
    predictor: Learner
    target_params: dict  # g's, fixed at their draw
    obs_moments: RunningStats
    action_moments: RunningStats
    error_moments: RunningStats  # of the per-row errors |f - g|^2: the bonus's scale


@flax.struct.dataclass
class SACRNDState(SACState):
    rnd: RNDState


def make(config: SACRNDConfig = SACRNDConfig()) -> Agent:
    predictor = RNDPredictor(config.rnd_hidden, config.rnd_embedding, config.matmul_precision)
    target_net = RNDTarget(config.rnd_hidden, config.rnd_embedding, config.matmul_precision)
    rnd_opt = adam(config.rnd_lr)
    actor_opt, critic_opt, alpha_opt = sac_family.optimizers(config)
    critic_net, head = sac_family.critic_network(config), config.head()

    def errors(params, rnd: RNDState, obs, action) -> jax.Array:
        """|f(s, a) - g(s, a)|^2 [B], summed over the embedding. The fixed network's output
        is a constant to every gradient (the reference's stop_gradient): the actor's gradient
        of the bonus passes through the predictor alone."""
        # sqrt(var + 1e-8) where the reference has std + 1e-8: a dimension the data holds
        # constant stays finite instead of dividing rounding error by 1e-8.
        s = normalization.normalize(rnd.obs_moments, obs, clip=0.0)
        a = normalization.normalize(rnd.action_moments, action, clip=0.0)
        fixed = jax.lax.stop_gradient(target_net.apply(rnd.target_params, s, a))
        return ((predictor.apply(params, s, a) - fixed) ** 2).sum(-1)

    def bonus(rnd: RNDState, obs, action) -> jax.Array:
        """b(s, a) [B]: the error over the running std of the training errors."""
        scale = jnp.sqrt(rnd.error_moments.var)
        return errors(rnd.predictor.params, rnd, obs, action) / scale

    def rnd_update(state: SACRNDState, batch: Batch, key: jax.Array):
        rnd = state.rnd.replace(
            obs_moments=normalization.update(state.rnd.obs_moments, batch.obs),
            action_moments=normalization.update(state.rnd.action_moments, batch.action),
        )

        def loss(params):
            rows = errors(params, rnd, batch.obs, batch.action)
            return rows.mean(), rows

        (rnd_loss, rows), grads = jax.value_and_grad(loss, has_aux=True)(rnd.predictor.params)
        rnd = rnd.replace(
            predictor=apply_gradients(rnd.predictor, grads, rnd_opt),
            error_moments=normalization.update(rnd.error_moments, jax.lax.stop_gradient(rows)),
        )
        zero = jnp.zeros((), jnp.float32)
        metrics = sac_family.update_metrics(
            zero, zero, zero, jnp.exp(state.log_alpha.params), zero[None, None], zero[None]
        )
        metrics |= {
            "rnd_loss": rnd_loss,
            "rnd_bonus_data": rnd_loss / jnp.sqrt(rnd.error_moments.var),
        }
        metrics |= {"rnd_bonus_policy": zero}
        return state.replace(rnd=rnd, step=state.step + 1), metrics

    def sac_update(state: SACRNDState, batch: Batch, key: jax.Array):
        keys = sac_family.update_keys(key)
        hp, alpha = state.hp, jnp.exp(state.log_alpha.params)
        actor_net = sac_family.actor_network(config, state.action_size)
        critic_obs, next_critic_obs = batch.critic_inputs

        def actor_objective(params):
            mean, log_std = actor_net.apply(params, batch.obs)
            action, log_prob = distributions.tanh_gaussian_sample(keys.policy_action, mean, log_std)
            q = head.values(critic_net.apply(state.critic.params, critic_obs, action, True), hp)
            penalty = bonus(state.rnd, batch.obs, action)
            loss = sac_family.actor_loss(q, log_prob, alpha, config.actor_q)
            return loss + hp["actor_beta"] * penalty.mean(), (log_prob, penalty)

        (a_loss, (log_prob, policy_bonus)), a_grads = jax.value_and_grad(
            actor_objective, has_aux=True
        )(state.actor.params)
        actor = apply_gradients(state.actor, a_grads, actor_opt)
        target_entropy = -hp["target_entropy_scale"] * state.action_size
        t_loss, t_grads = jax.value_and_grad(sac_family.alpha_loss)(
            state.log_alpha.params, log_prob, target_entropy, config.temperature_loss
        )
        log_alpha = apply_gradients(state.log_alpha, t_grads, alpha_opt)

        def critic_objective(params):
            mean, log_std = actor_net.apply(actor.params, batch.next_obs)
            next_action, next_log_prob = distributions.tanh_gaussian_sample(
                keys.next_action, mean, log_std
            )
            next_out = critic_net.apply(
                state.target_critic_params, next_critic_obs, next_action, True
            )
            penalty = hp["critic_beta"] * bonus(state.rnd, batch.next_obs, next_action)
            target = head.target(
                keys.head_target,
                next_out,
                hp["reward_scale"] * batch.reward,
                batch.terminated,
                batch.discount,
                -alpha * next_log_prob - penalty,
                hp,
            )
            out = critic_net.apply(params, critic_obs, batch.action, True)
            first = state.step == config.rnd_pretrain_updates
            weight = sac_family.row_weights(batch, config.truncation)
            loss, (values, head_state) = head.loss(out, target, state.head_state, hp, first, weight)
            return loss, (values, head_state)

        (c_loss, (q, head_state)), c_grads = jax.value_and_grad(critic_objective, has_aux=True)(
            state.critic.params
        )
        new_state = sac_family.finish_update(
            state,
            hp["tau"],
            actor=actor,
            critic=apply_gradients(state.critic, c_grads, critic_opt),
            log_alpha=log_alpha,
            head_state=head_state,
        )
        metrics = sac_family.update_metrics(
            c_loss, a_loss, t_loss, jnp.exp(log_alpha.params), q, log_prob
        )
        data = errors(state.rnd.predictor.params, state.rnd, batch.obs, batch.action).mean()
        metrics |= {
            "rnd_loss": data,
            "rnd_bonus_data": data / jnp.sqrt(state.rnd.error_moments.var),
            "rnd_bonus_policy": policy_bonus.mean(),
        }
        return new_state, metrics

    def update(state: SACRNDState, batch: Batch, key: jax.Array):
        pretraining = state.step < config.rnd_pretrain_updates
        return jax.lax.cond(pretraining, rnd_update, sac_update, state, batch, key)

    base_init = sac_family.initializer(config, sac_family.optimizers(config))

    def init(key, obs_size, action_size, critic_obs_size=None) -> SACRNDState:
        sac_key, predictor_key, target_key = jax.random.split(key, 3)
        base = base_init(sac_key, obs_size, action_size, critic_obs_size)
        obs, action = jnp.zeros((1, obs_size)), jnp.zeros((1, action_size))
        rnd = RNDState(
            predictor=learner(predictor.init(predictor_key, obs, action), rnd_opt),
            target_params=target_net.init(target_key, obs, action),
            obs_moments=fresh_moments((obs_size,)),
            action_moments=fresh_moments((action_size,)),
            error_moments=fresh_moments(),
        )
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return SACRNDState(**fields, rnd=rnd)

    return Agent(init=init, act=sac_family.acting(config), update=update, name="sac_rnd")
