"""Soft Actor-Critic with a learned temperature (Haarnoja et al. 2018, "SAC v2").

Twin (or N) critics as one vmapped ensemble, Polyak-averaged target critics, a tanh-Gaussian
actor trained against the minimum of the critics, and log-alpha trained towards a target entropy.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributional, distributions, losses
from jaxrl.agents.base import (
    Agent,
    Learner,
    adam,
    apply_gradients,
    check_network_config,
    hyperparameters,
    learner,
    polyak,
)
from jaxrl.networks import GaussianActor, QEnsemble
from jaxrl.types import Batch


@dataclasses.dataclass(frozen=True)
class SACConfig:
    # Published defaults (Haarnoja et al. 2018, v2 paper, Table 1) unless noted.

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the policy network."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of each critic network."""
    num_critics: int = 2
    """Critics in the ensemble; the target takes the min over them (or over num_target_critics)."""
    critic_layer_norm: bool = False
    """LayerNorm in each critic hidden layer (MuJoCo Playground's Brax SAC runs use LayerNorm)."""
    critic_residual: bool = False
    """Critics of residual LayerNorm blocks (BRO/SimBa) instead of an MLP; needs equal widths."""
    critic_norm_after_relu: bool = False
    """The critics' LayerNorm after the ReLU (Brax's MLP) rather than before it (DroQ's order)."""
    softplus_std: bool = False
    """Policy std from Brax's head, softplus(raw) + 0.001, instead of a squashed log-std.
    True: std 0.69 at init, no upper bound; False: exp of a log-std squashed into [-5, 2]
    (std 0.22 at init)."""
    actor_lr: float = 3e-4
    """Adam learning rate of the policy."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critics."""
    alpha_lr: float = 3e-4
    """Adam learning rate of the entropy temperature (learned as log alpha)."""
    tau: float = 0.005
    """Polyak rate of the target critics, moved towards the critics after every update."""
    init_alpha: float = 1.0
    """Initial entropy temperature alpha."""
    target_entropy_scale: float = 1.0
    """Target entropy = -target_entropy_scale * |A|: 1.0 in the paper, 0.5 in Brax's SAC."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets."""

    # REDQ / DroQ knobs (off by default, i.e. plain SAC):
    num_target_critics: int | None = None
    """Size of the random subset of critics the target's min is over (REDQ: 2); None: all."""
    actor_q: str = "min"
    """How the actor's loss reduces the critics: "min" over them (SAC) or "mean" (REDQ)."""
    critic_dropout: float = 0.0
    """Dropout rate in each critic hidden layer; 0: none (DroQ: 0.01, with LayerNorm).
    On in every critic pass of an update, the target pass included."""
    policy_delay: int = 1
    """Critic updates per actor and temperature update; 1: both every update (SAC)."""
    actor_uses_updated_critic: bool = True
    """The actor's loss reads the critics updated in the same step (the SAC paper's pseudo-code).
    False: the critics the step started from (Brax's SAC: actor, critic and temperature all
    computed from the same parameters, no data dependency)."""
    critic: str = "mse"
    """Critic type: "mse" scalar critics (SAC, REDQ, DroQ) or "gaussian" ones (DSAC-T).
    "mse": regressed on the soft target. "gaussian": each critic predicts a Gaussian return
    N(Q, sigma^2), trained with DSAC-T's refinements; the actor and the targets use the means
    (jaxrl.distributional.gaussian_critic_loss)."""
    td_bound: float = 3.0
    """Gaussian critic: return samples clipped to Q +- td_bound x running mean std (DSAC-T's b)."""
    std_bias: float = 0.1
    """Gaussian critic: the bias that keeps 1 / (sigma^2 + bias) finite as sigma -> 0."""
    std_tau: float = 0.005
    """Gaussian critic: rate of each critic's running mean of its predicted std."""

    # Data, not program: these live in the agent state (the learning rates in the optimiser
    # states), so settings that differ only in them train together under vmap (`--vmap`).
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "tau",
        "init_alpha",
        "target_entropy_scale",
        "reward_scale",
        "td_bound",
        "std_bias",
        "std_tau",
    )

    def __post_init__(self):
        check_network_config(self, residual=self.critic_residual)
        if self.num_target_critics is not None and not (
            1 <= self.num_target_critics <= self.num_critics
        ):
            raise ValueError(
                f"num_target_critics must be in [1, num_critics={self.num_critics}], "
                f"got {self.num_target_critics}"
            )
        if self.actor_q not in ("min", "mean"):
            raise ValueError(f"actor_q must be 'min' or 'mean', got {self.actor_q!r}")
        if self.critic not in ("mse", "gaussian"):
            raise ValueError(f"critic must be 'mse' or 'gaussian', got {self.critic!r}")
        if self.td_bound <= 0 or self.std_bias <= 0 or not 0 < self.std_tau <= 1:
            raise ValueError(
                f"need td_bound > 0, std_bias > 0 and std_tau in (0, 1], got {self.td_bound}, "
                f"{self.std_bias}, {self.std_tau}"
            )
        if not 0 <= self.critic_dropout < 1:
            raise ValueError(f"critic_dropout must be in [0, 1), got {self.critic_dropout}")


@flax.struct.dataclass
class SACState:
    actor: Learner
    critic: Learner
    target_critic_params: dict
    log_alpha: Learner  # params: scalar log temperature
    step: jax.Array
    mean_std: jax.Array  # [E] running mean of each critic's predicted std (gaussian critic)
    hp: dict  # the continuous settings the update reads (UPDATE_HYPERPARAMETERS), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# What `update` reads of the config's ARRAY_FIELDS: all but those the optimisers hold and the
# one `init` consumes.
UPDATE_HYPERPARAMETERS = tuple(
    name
    for name in SACConfig.ARRAY_FIELDS
    if name not in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha")
)


# --- Losses, as the paper writes them. Shapes: Q [E, B], log-probs [B]. -------------------------


def critic_target(
    reward: jax.Array,
    terminated: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    discount: jax.Array,
) -> jax.Array:
    """y = r + discount (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')), [B]."""
    soft_value = next_q.min(axis=0) - alpha * next_log_prob
    return losses.bootstrap_target(reward, terminated, discount, soft_value)


critic_loss = losses.critic_mse


def target_subset(key: jax.Array, next_q: jax.Array, size: int | None) -> jax.Array:
    """REDQ: the rows of `size` critics drawn without replacement ([E, B] -> [size, B]); all
    of them when size is None."""
    if size is None or size == next_q.shape[0]:
        return next_q
    return next_q[jax.random.choice(key, next_q.shape[0], (size,), replace=False)]


def actor_loss(
    q: jax.Array, log_prob: jax.Array, alpha: jax.Array, reduce: str = "min"
) -> jax.Array:
    """E[alpha log pi(a|s) - Q(s, a)], a ~ pi(s), with Q the min (SAC) or the mean (REDQ) over
    the critics."""
    q = q.min(axis=0) if reduce == "min" else q.mean(axis=0)
    return (alpha * log_prob - q).mean()


def alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """-log_alpha * E[log pi + target_entropy]: raises alpha when entropy is below target."""
    return -(log_alpha * jax.lax.stop_gradient(log_prob + target_entropy)).mean()


def update_metrics(critic_loss, actor_loss, temperature_loss, alpha, q, log_prob) -> dict:
    """The metrics every SAC-style update reports."""
    return {
        "critic_loss": critic_loss,
        "actor_loss": actor_loss,
        "alpha_loss": temperature_loss,
        "alpha": alpha,
        "q_mean": q.mean(),
        "entropy": -log_prob.mean(),
    }


def gaussian_heads(out: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A Gaussian critic's [..., 2] output -> (mean, std), std = softplus(raw) >= 0."""
    return out[..., 0], jax.nn.softplus(out[..., 1])


def make(config: SACConfig = SACConfig()) -> Agent:
    gaussian = config.critic == "gaussian"
    critic_net = QEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.critic_layer_norm,
        config.critic_dropout,
        outputs=2 if gaussian else None,
        residual=config.critic_residual,
        norm_after_relu=config.critic_norm_after_relu,
    )
    actor_opt = adam(config.actor_lr)
    critic_opt = adam(config.critic_lr)
    alpha_opt = adam(config.alpha_lr)

    def actor_module(action_size: int) -> GaussianActor:
        return GaussianActor(action_size, config.actor_hidden, softplus_std=config.softplus_std)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> SACState:
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, obs_size))
        critic_obs = jnp.zeros((1, critic_obs_size or obs_size))
        action = jnp.zeros((1, action_size))
        actor_params = actor_module(action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, critic_obs, action)
        log_alpha = jnp.asarray(jnp.log(config.init_alpha), jnp.float32)
        return SACState(
            actor=learner(actor_params, actor_opt),
            critic=learner(critic_params, critic_opt),
            target_critic_params=critic_params,
            log_alpha=learner(log_alpha, alpha_opt),
            step=jnp.zeros((), jnp.int32),
            mean_std=jnp.zeros(config.num_critics, jnp.float32),
            hp=hyperparameters(config, UPDATE_HYPERPARAMETERS),
            action_size=action_size,
        )

    def _policy(params, obs, action_size):
        return actor_module(action_size).apply(params, obs)

    def act(state: SACState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        mean, log_std = _policy(state.actor.params, obs, state.action_size)
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    def critic_apply(params, obs, action, key):
        # Dropout (DroQ) is on in every critic pass of an update, target pass included.
        return critic_net.apply(params, obs, action, True, rngs={"dropout": key})

    def q_values(out: jax.Array) -> jax.Array:
        """[E, B] action values: the critics' outputs, or their means (gaussian)."""
        return gaussian_heads(out)[0] if gaussian else out

    def update(state: SACState, batch: Batch, key: jax.Array):
        action_size, hp = state.action_size, state.hp
        target_entropy = -hp["target_entropy_scale"] * action_size
        keys = jax.random.split(key, 7)
        alpha = jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric

        # Critic.
        mean, log_std = _policy(state.actor.params, batch.next_obs, action_size)
        next_action, next_log_prob = distributions.tanh_gaussian_sample(keys[0], mean, log_std)
        next_out = critic_apply(state.target_critic_params, next_critic_obs, next_action, keys[1])
        next_out = target_subset(keys[2], next_out, config.num_target_critics)
        reward = hp["reward_scale"] * batch.reward
        if gaussian:
            next_mean, next_std = gaussian_heads(next_out)
            noise = jnp.clip(jax.random.normal(keys[6], reward.shape), -3.0, 3.0)
            bootstrap = batch.discount * (1.0 - batch.terminated)
            targets = distributional.gaussian_targets(
                reward, bootstrap, next_mean, next_std, next_log_prob, alpha, noise
            )
        else:
            target = critic_target(
                reward, batch.terminated, next_out, next_log_prob, alpha, batch.discount
            )

        def critic_objective(params):
            out = critic_apply(params, critic_obs, batch.action, keys[3])
            if not gaussian:
                return critic_loss(out, target), (out, state.mean_std)
            q, std = gaussian_heads(out)
            mean_std = distributional.update_mean_std(
                state.mean_std, std, hp["std_tau"], state.step == 0
            )
            loss = distributional.gaussian_critic_loss(
                q, std, *targets, mean_std, hp["td_bound"], hp["std_bias"]
            )
            return loss, (q, mean_std)

        (c_loss, (q, mean_std)), grads = jax.value_and_grad(critic_objective, has_aux=True)(
            state.critic.params
        )
        critic = apply_gradients(state.critic, grads, critic_opt)

        # Actor and temperature, every policy_delay steps, against the freshly updated critics
        # or (actor_uses_updated_critic=False) the ones this step started from.
        actor_critic_params = (
            critic.params if config.actor_uses_updated_critic else state.critic.params
        )

        def actor_objective(params):
            mean, log_std = _policy(params, batch.obs, action_size)
            action, log_prob = distributions.tanh_gaussian_sample(keys[4], mean, log_std)
            q_pi = q_values(critic_apply(actor_critic_params, critic_obs, action, keys[5]))
            return actor_loss(q_pi, log_prob, alpha, config.actor_q), log_prob

        def update_actor(_):
            (a_loss, log_prob), grads = jax.value_and_grad(actor_objective, has_aux=True)(
                state.actor.params
            )
            t_loss, t_grads = jax.value_and_grad(alpha_loss)(
                state.log_alpha.params, log_prob, target_entropy
            )
            actor = apply_gradients(state.actor, grads, actor_opt)
            return (
                actor,
                apply_gradients(state.log_alpha, t_grads, alpha_opt),
                a_loss,
                t_loss,
                log_prob,
            )

        def hold(_):
            a_loss, log_prob = actor_objective(state.actor.params)
            t_loss = alpha_loss(state.log_alpha.params, log_prob, target_entropy)
            return state.actor, state.log_alpha, a_loss, t_loss, log_prob

        if config.policy_delay == 1:
            actor, log_alpha, a_loss, t_loss, log_prob = update_actor(None)
        else:
            due = state.step % config.policy_delay == 0
            actor, log_alpha, a_loss, t_loss, log_prob = jax.lax.cond(due, update_actor, hold, None)

        new_state = state.replace(
            actor=actor,
            critic=critic,
            target_critic_params=polyak(state.target_critic_params, critic.params, hp["tau"]),
            log_alpha=log_alpha,
            step=state.step + 1,
            mean_std=mean_std,
        )
        metrics = update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        if gaussian:
            metrics["q_std"] = mean_std.mean()
        return new_state, metrics

    return Agent(init=init, act=act, update=update, name="sac")
