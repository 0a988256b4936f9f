"""E2O (Zhao et al. 2023, "Ensemble-based Offline-to-Online Reinforcement Learning: From
Pessimistic Learning to Optimistic Exploration"; ENOTO in its later version): SAC-N (or EDAC)
offline, then online with the same N critics, their pessimism loosened and their
disagreement explored.

- Offline, the target takes the minimum over all N target critics (SAC-N), plus EDAC's
  diversity term where eta > 0: the update of `jaxrl.agents.edac`.
- Online (from the first online chunk: `Agent.begin_online` marks the update count), the
  target's value is the mean over all pairs of critics of their minimum ("WeightedMinPair",
  the paper's choice; `online_target`), reached at once or over `pessimism_decay_updates`
  (`pessimism`), and the diversity term's weight goes with it to 0.
- Acting, `ucb_candidates` actions are drawn from the policy and the one of the highest
  mean + ucb_lambda x std over the critics is taken (SUNRISE's upper confidence bound, which
  the paper picks among its exploration methods). With noise scale 0 (evaluation) every
  candidate is the policy's mode.
"""

from __future__ import annotations

import dataclasses

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions, heads
from jaxrl.agents import sac_family
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.offline import E2OConfig  # jax-free, re-exported
from jaxrl.agents.edac import action_gradients, diversity, ensemble_update
from jaxrl.agents.sac_family import SACState
from jaxrl.types import Batch

__all__ = ["E2OConfig", "E2OState", "make", "pessimism", "ucb_choice", "weighted_min_pair"]


@flax.struct.dataclass
class E2OState(SACState):
    online_from: jax.Array  # int32: the update count at the switch to online; -1 before it


def weighted_min_pair(q: jax.Array) -> jax.Array:
    """[E, B] -> [B]: the mean over all E (E - 1) / 2 pairs i < j of min(q_i, q_j). Sorted
    ascending, the k-th smallest value (k = 0, ..., E - 1) is the minimum of the E - 1 - k
    pairs it makes with the larger ones."""
    size = q.shape[0]
    weights = (size - 1 - jnp.arange(size)) / (size * (size - 1) / 2)
    # Products and a sum, not a matmul: every matmul precision computes it alike.
    return (weights.astype(q.dtype)[:, None] * jnp.sort(q, axis=0)).sum(0)


def pessimism(step: jax.Array, online_from: jax.Array, decay_updates: int) -> jax.Array:
    """The offline minimum's weight in the target (1 - it: the online value's): 1 before the
    switch (online_from < 0), then 0 at once (decay_updates 0) or falling linearly to 0 over
    decay_updates updates after it."""
    if decay_updates == 0:
        online = jnp.zeros((), jnp.float32)
    else:
        done = (step - online_from).astype(jnp.float32)
        online = jnp.clip(1.0 - done / decay_updates, 0.0, 1.0)
    return jnp.where(online_from < 0, 1.0, online)


def ucb_choice(candidates: jax.Array, q: jax.Array, ucb_lambda: jax.Array) -> jax.Array:
    """Candidates [M, N, A] with their critics' values [E, M, N] -> [N, A]: per row, the
    candidate of the highest mean + ucb_lambda x std over the critics (SUNRISE's score; std
    over the population of critics)."""
    score = q.mean(0) + ucb_lambda * q.std(0)
    best = jnp.argmax(score, axis=0)  # [N]
    return jnp.take_along_axis(candidates, best[None, :, None], axis=0)[0]


def make(config: E2OConfig = E2OConfig()) -> Agent:
    critic_net = sac_family.critic_network(config)
    head = config.head()
    action_grads = action_gradients(config)
    with_diversity = config.eta > 0  # the diversity term is computed only where it weighs

    def next_value(next_q: jax.Array, key: jax.Array, weight: jax.Array) -> jax.Array:
        """The target critics' value at (s', a'): the offline minimum and the online value,
        mixed by `weight` (`pessimism`)."""
        offline = next_q.min(axis=0)
        if config.online_target == "min":
            return offline
        if config.online_target == "random_min_pair":
            online = sac_family.target_subset(key, next_q, 2).min(axis=0)
        else:
            online = weighted_min_pair(next_q)
        return weight * offline + (1.0 - weight) * online

    def critic_objective(params, state: E2OState, batch: Batch, keys):
        """SAC's critic loss against the E2O target, plus eta x weight / 2 times EDAC's
        diversity term (as `edac.make`'s)."""
        hp, alpha = state.hp, jnp.exp(state.log_alpha.params)
        weight = pessimism(state.step, state.online_from, config.pessimism_decay_updates)
        critic_obs, next_critic_obs = batch.critic_inputs
        mean, log_std = sac_family.actor_network(config, state.action_size).apply(
            state.actor.params, batch.next_obs
        )
        next_action, next_log_prob = distributions.tanh_gaussian_sample(
            keys.next_action, mean, log_std
        )
        next_q = critic_net.apply(state.target_critic_params, next_critic_obs, next_action, True)
        value = next_value(next_q, keys.target_subset, weight) - alpha * next_log_prob
        reward = hp["reward_scale"] * batch.reward
        target = heads.bootstrap_target(reward, batch.terminated, batch.discount, value)
        out = critic_net.apply(params, critic_obs, batch.action, True)
        row_weight = sac_family.row_weights(batch, config.truncation)
        loss, (values, head_state) = head.loss(
            out, target, state.head_state, hp, state.step == 0, row_weight
        )
        if not with_diversity:
            return loss, (values, head_state, loss, None)
        spread = diversity(action_grads(params, critic_obs, batch.action, hp))
        total = loss + 0.5 * config.eta * weight * spread
        return total, (values, head_state, loss, spread)

    sac_update = ensemble_update(config, critic_objective, with_diversity)

    def update(state: E2OState, batch: Batch, key: jax.Array):
        new_state, metrics = sac_update(state, batch, key)
        weight = pessimism(state.step, state.online_from, config.pessimism_decay_updates)
        return new_state, {**metrics, "pessimism": weight}

    base_init = sac_family.initializer(config, sac_family.optimizers(config))

    def init(key, obs_size, action_size, critic_obs_size=None) -> E2OState:
        base = base_init(key, obs_size, action_size, critic_obs_size)
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return E2OState(**fields, online_from=jnp.asarray(-1, jnp.int32))

    def begin_online(state: E2OState) -> E2OState:
        """The switch to online marked at the update count it happens at (kept once made)."""
        return state.replace(
            online_from=jnp.where(state.online_from < 0, state.step, state.online_from)
        )

    def act(state: E2OState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        actor = sac_family.actor_network(config, state.action_size)
        mean, log_std = actor.apply(state.actor.params, obs)
        greedy = distributions.is_zero(noise_scale)  # every draw the mode
        if config.ucb_candidates == 1 or greedy:  # (and a greedy policy reads no critic)
            return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)
        keys = jax.random.split(key, config.ucb_candidates)
        candidates = jax.vmap(
            lambda k: distributions.tanh_gaussian_act(k, mean, log_std, noise_scale)
        )(keys)  # [M, N, A]
        many_obs = jnp.broadcast_to(obs, (config.ucb_candidates, *obs.shape))
        q = head.values(critic_net.apply(state.critic.params, many_obs, candidates), state.hp)
        return ucb_choice(candidates, q, state.hp["ucb_lambda"])

    return Agent(init=init, act=act, update=update, name="e2o", begin_online=begin_online)
