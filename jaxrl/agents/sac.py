"""Soft Actor-Critic with a learned temperature (Haarnoja et al. 2018, "SAC v2").

Twin (or N) critics as one vmapped ensemble, Polyak-averaged target critics, a tanh-Gaussian
actor trained against the minimum of the critics, and log-alpha trained towards a target entropy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributions, heads
from jaxrl.agents.base import (
    Agent,
    Learner,
    adam,
    apply_gradients,
    check_network_config,
    delayed,
    hyperparameters,
    learner,
    polyak,
    update_hyperparameters,
)
from jaxrl.config.choices import Choices
from jaxrl.networks import KERNEL_INITS, MATMUL_PRECISIONS, GaussianActor, QEnsemble
from jaxrl.types import Batch


@dataclasses.dataclass(frozen=True)
class SACConfig:
    # Published defaults (Haarnoja et al. 2018, v2 paper, Table 1) unless noted.

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the policy network."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of each critic network."""
    matmul_precision: Annotated[str, Choices(MATMUL_PRECISIONS)] = "float32"
    """Network matmuls: "float32", or "bfloat16" (bf16 operands, float32 sums; GPU only).
    With "bfloat16" every product's operands are rounded to bfloat16 and summed in float32, in
    the backward pass too (tensor-core speed on GPUs); on a CPU it computes in float32.
    Parameters, optimiser states, norms and losses stay float32 (`networks.dense_precision`)."""
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
    kernel_init: Annotated[str, Choices(KERNEL_INITS)] = "lecun_normal"
    """Weight initialisation of the policy and the critics: "lecun_normal" (flax's default, a
    truncated normal of variance 1 / fan_in) or "lecun_uniform" (Brax's networks: a uniform of
    the same variance). Biases start at 0 either way."""
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
    temperature_loss: Annotated[str, Choices(TEMPERATURE_LOSSES)] = "log_alpha"
    """The temperature's loss. "log_alpha": -log(alpha) E[log pi + H_target] (its gradient in
    log alpha does not depend on alpha). "alpha" (Brax's SAC): alpha E[-log pi - H_target], whose
    gradient scales with alpha, so Adam's steps shrink for a while after alpha falls."""
    truncation: Annotated[str, Choices(TRUNCATIONS)] = "bootstrap"
    """Rows whose episode ended at the time limit: "bootstrap" (their target bootstraps from the
    state reached, as every other row's) or "mask" (Brax's SAC: weight 0 in the critic loss,
    still counted in its mean over rows, so the loss shrinks with their share)."""
    temperature_draw: Annotated[str, Choices(TEMPERATURE_DRAWS)] = "actor"
    """The action sample the temperature's loss reads: "actor" (the actor loss's own draw) or
    "own" (Brax's SAC: a second draw from the same policy, with a key of its own; one more
    sample, no more network passes). Both are unbiased estimates of the same expectation."""

    # REDQ / DroQ knobs (off by default, i.e. plain SAC):
    num_target_critics: int | None = None
    """Size of the random subset of critics the target's min is over (REDQ: 2); None: all."""
    actor_q: Annotated[str, Choices(ACTOR_Q)] = "min"
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
        if self.actor_q not in ACTOR_Q:
            raise ValueError(f"actor_q must be 'min' or 'mean', got {self.actor_q!r}")
        if not 0 <= self.critic_dropout < 1:
            raise ValueError(f"critic_dropout must be in [0, 1), got {self.critic_dropout}")
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {self.truncation!r}")
        if self.temperature_draw not in TEMPERATURE_DRAWS:
            raise ValueError(
                f"temperature_draw must be one of {TEMPERATURE_DRAWS}, "
                f"got {self.temperature_draw!r}"
            )
        if self.temperature_loss not in TEMPERATURE_LOSSES:
            raise ValueError(
                f"temperature_loss must be one of {TEMPERATURE_LOSSES}, "
                f"got {self.temperature_loss!r}"
            )

    def head(self) -> heads.Head:
        """What the critics predict (`jaxrl.heads`): one value each (DSAC-T: a Gaussian)."""
        return heads.Scalar()


@flax.struct.dataclass
class SACState:
    actor: Learner
    critic: Learner
    target_critic_params: dict
    log_alpha: Learner  # params: scalar log temperature
    step: jax.Array
    head_state: Any  # the critic head's own state (DSAC-T: each critic's running mean std)
    hp: dict  # the continuous settings the update reads (`update_hyperparameters`), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# The ARRAY_FIELDS the optimisers and `init` consume; `update` reads the others from state.hp.
CONSUMED = ("actor_lr", "critic_lr", "alpha_lr", "init_alpha")


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
    return heads.bootstrap_target(reward, terminated, discount, soft_value)


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
    return (alpha * log_prob - heads.reduce_critics(q, reduce)).mean()


TEMPERATURE_LOSSES = ("log_alpha", "alpha")
TEMPERATURE_DRAWS = ("actor", "own")
TRUNCATIONS = ("bootstrap", "mask")
ACTOR_Q = ("min", "mean")  # how the actor's loss reduces the critics


def row_weights(batch: Batch, truncation: str) -> jax.Array | None:
    """The critic loss's row weights: 0 at truncated rows with "mask" (Brax's SAC), else None
    (every row weighs 1)."""
    if truncation == "mask" and batch.truncated is not None:
        return 1.0 - batch.truncated
    return None


def alpha_loss(
    log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float, form: str = "log_alpha"
) -> jax.Array:
    """-log_alpha * E[log pi + target_entropy] ("log_alpha"), or Brax's
    alpha * E[-log pi - target_entropy] ("alpha"): either raises alpha when the entropy is
    below target; the second's gradient carries a factor alpha."""
    gap = jax.lax.stop_gradient(log_prob + target_entropy)
    if form == "alpha":
        return (jnp.exp(log_alpha) * -gap).mean()
    return -(log_alpha * gap).mean()


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


def actor_and_temperature(
    step,
    policy_delay,
    actor,
    log_alpha,
    objective,
    target_entropy,
    actor_opt,
    alpha_opt,
    held,
    temperature_loss="log_alpha",
):
    """The actor and temperature step, every `policy_delay` updates (`base.delayed`); CrossQ's
    too. `objective(params) -> (actor loss, (log_prob, aux))`. Returns (actor, log_alpha, aux,
    actor loss, temperature loss, log_prob), with `aux` replaced by `held` at the updates that
    hold (CrossQ: the actor's batch statistics). `temperature_loss`: `alpha_loss`'s form."""

    def update():
        (a_loss, (log_prob, aux)), grads = jax.value_and_grad(objective, has_aux=True)(actor.params)
        t_loss, t_grads = jax.value_and_grad(alpha_loss)(
            log_alpha.params, log_prob, target_entropy, temperature_loss
        )
        return (
            apply_gradients(actor, grads, actor_opt),
            apply_gradients(log_alpha, t_grads, alpha_opt),
            aux,
            a_loss,
            t_loss,
            log_prob,
        )

    def hold():
        a_loss, (log_prob, _) = objective(actor.params)
        t_loss = alpha_loss(log_alpha.params, log_prob, target_entropy, temperature_loss)
        return actor, log_alpha, held, a_loss, t_loss, log_prob

    return delayed(step, policy_delay, update, hold)


def update_keys(key: jax.Array) -> jax.Array:
    """The keys of one update, split(key, 8): [0] the next action, [1] and [3] the target and
    online critics' dropout, [2] REDQ's target subset, [4] the policy's action and [5] its
    critics' dropout, [6] the head's target sample, [7] the temperature's own action
    (temperature_draw="own"). The first 7 are split(key, 7)'s (JAX's default partitionable
    threefry), so runs from before the 8th key keep their numbers."""
    return jax.random.split(key, 8)


class Losses(NamedTuple):
    """SAC's objectives as `update` differentiates them, over one batch, with `keys` from
    `update_keys`. The actor's returns the log-probs the temperature's loss (`alpha_loss`)
    reads: those of its own action, or of a second draw (temperature_draw="own")."""

    critic: Callable  # (critic params, state, batch, keys) -> (loss, (values [E, B], head state))
    actor: Callable  # (actor params, critic params, state, batch, keys) -> (loss, (log_prob, None))


def losses(config: SACConfig) -> Losses:
    """The critic's and the actor's objectives (`Losses`) of `make(config)`'s update."""
    head = config.head()
    critic_net = critic_network(config)

    def critic_apply(params, obs, action, key):
        # Dropout (DroQ) is on in every critic pass of an update, target pass included.
        return critic_net.apply(params, obs, action, True, rngs={"dropout": key})

    def critic(params, state: SACState, batch: Batch, keys: jax.Array):
        # The head's target from the target critics at (s', a' ~ pi(s')), with the soft bonus
        # -alpha log pi(a'|s'); no gradient reaches it (it reads no critic parameter).
        hp, alpha = state.hp, jnp.exp(state.log_alpha.params)
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        mean, log_std = actor_network(config, state.action_size).apply(
            state.actor.params, batch.next_obs
        )
        next_action, next_log_prob = distributions.tanh_gaussian_sample(keys[0], mean, log_std)
        next_out = critic_apply(state.target_critic_params, next_critic_obs, next_action, keys[1])
        next_out = target_subset(keys[2], next_out, config.num_target_critics)
        reward = hp["reward_scale"] * batch.reward
        bonus = -alpha * next_log_prob
        target = head.target(keys[6], next_out, reward, batch.terminated, batch.discount, bonus, hp)
        out = critic_apply(params, critic_obs, batch.action, keys[3])
        weight = row_weights(batch, config.truncation)
        return head.loss(out, target, state.head_state, hp, state.step == 0, weight)

    def actor(params, critic_params, state: SACState, batch: Batch, keys: jax.Array):
        alpha = jnp.exp(state.log_alpha.params)
        mean, log_std = actor_network(config, state.action_size).apply(params, batch.obs)
        action, log_prob = distributions.tanh_gaussian_sample(keys[4], mean, log_std)
        out = critic_apply(critic_params, batch.critic_inputs[0], action, keys[5])
        q_pi = head.values(out, state.hp)
        loss = actor_loss(q_pi, log_prob, alpha, config.actor_q)
        if config.temperature_draw == "own":  # no gradient reaches the actor through it
            sg = jax.lax.stop_gradient
            _, log_prob = distributions.tanh_gaussian_sample(keys[7], sg(mean), sg(log_std))
        return loss, (log_prob, None)

    return Losses(critic, actor)


def critic_network(config: SACConfig) -> QEnsemble:
    return QEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.critic_layer_norm,
        config.critic_dropout,
        outputs=config.head().outputs,
        residual=config.critic_residual,
        norm_after_relu=config.critic_norm_after_relu,
        matmul_precision=config.matmul_precision,
        kernel_init=config.kernel_init,
    )


def actor_network(config: SACConfig, action_size: int) -> GaussianActor:
    return GaussianActor(
        action_size,
        config.actor_hidden,
        softplus_std=config.softplus_std,
        matmul_precision=config.matmul_precision,
        kernel_init=config.kernel_init,
    )


def make(config: SACConfig = SACConfig()) -> Agent:
    head = config.head()
    critic_net = critic_network(config)
    objectives = losses(config)
    actor_opt = adam(config.actor_lr)
    critic_opt = adam(config.critic_lr)
    alpha_opt = adam(config.alpha_lr)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> SACState:
        actor_key, critic_key = jax.random.split(key)
        obs = jnp.zeros((1, obs_size))
        critic_obs = jnp.zeros((1, critic_obs_size or obs_size))
        action = jnp.zeros((1, action_size))
        actor_params = actor_network(config, action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, critic_obs, action)
        log_alpha = jnp.asarray(jnp.log(config.init_alpha), jnp.float32)
        return SACState(
            actor=learner(actor_params, actor_opt),
            critic=learner(critic_params, critic_opt),
            target_critic_params=critic_params,
            log_alpha=learner(log_alpha, alpha_opt),
            step=jnp.zeros((), jnp.int32),
            head_state=head.init(config.num_critics),
            hp=hyperparameters(config, update_hyperparameters(config, CONSUMED)),
            action_size=action_size,
        )

    def act(state: SACState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        mean, log_std = actor_network(config, state.action_size).apply(state.actor.params, obs)
        return distributions.tanh_gaussian_act(key, mean, log_std, noise_scale)

    def update(state: SACState, batch: Batch, key: jax.Array):
        target_entropy = -state.hp["target_entropy_scale"] * state.action_size
        keys = update_keys(key)
        alpha = jnp.exp(state.log_alpha.params)

        (c_loss, (q, head_state)), grads = jax.value_and_grad(objectives.critic, has_aux=True)(
            state.critic.params, state, batch, keys
        )
        critic = apply_gradients(state.critic, grads, critic_opt)

        # Actor and temperature, every policy_delay steps, against the freshly updated critics
        # or (actor_uses_updated_critic=False) the ones this step started from.
        critic_params = critic.params if config.actor_uses_updated_critic else state.critic.params
        actor, log_alpha, _, a_loss, t_loss, log_prob = actor_and_temperature(
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
        new_state = state.replace(
            actor=actor,
            critic=critic,
            target_critic_params=polyak(state.target_critic_params, critic.params, state.hp["tau"]),
            log_alpha=log_alpha,
            step=state.step + 1,
            head_state=head_state,
        )
        metrics = update_metrics(c_loss, a_loss, t_loss, alpha, q, log_prob)
        return new_state, {**metrics, **head.metrics(head_state)}

    return Agent(init=init, act=act, update=update, name="sac")
