"""TD3 (Fujimoto et al. 2018): deterministic actor, clipped double-Q with target policy
smoothing, delayed actor and target updates.

Also the base of the deterministic family: `target_actor=False` drops the target actor (PQL).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import flax.struct
import jax
import jax.numpy as jnp

from jaxrl import distributional, losses
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
from jaxrl.networks import DeterministicActor, QEnsemble
from jaxrl.types import Batch


@dataclasses.dataclass(frozen=True)
class TD3Config:
    # Published defaults (Fujimoto et al. 2018) unless noted.

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the deterministic policy network."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of each critic network."""
    num_critics: int = 2
    """Critics in the ensemble; the target takes the min over them (clipped double Q)."""
    critic_layer_norm: bool = False
    """LayerNorm in each critic hidden layer (before the ReLU)."""
    critic_residual: bool = False
    """Critics of residual LayerNorm blocks (BRO/SimBa) instead of an MLP; needs equal widths."""
    actor_lr: float = 3e-4
    """Learning rate of the policy (Adam, or AdamW when weight_decay > 0)."""
    critic_lr: float = 3e-4
    """Learning rate of the critics (Adam, or AdamW when weight_decay > 0)."""
    tau: float = 0.005
    """Polyak rate of the target actor and critics, moved at every actor update."""
    exploration_noise: float = 0.1
    """Std of the Gaussian acting noise (actions in [-1, 1]), times the loop's noise scale.
    FastTD3 and PQL use 1, so that the loop's per-env noise scales are the stds."""
    target_noise: float = 0.2
    """Std of the target policy smoothing noise, added to the target actions."""
    target_noise_clip: float = 0.5
    """The target policy smoothing noise is clipped to +-target_noise_clip."""
    policy_delay: int = 2
    """Critic updates per actor (and target) update."""
    target_actor: bool = True
    """Bootstrap with a Polyak-averaged target actor; False: with the online actor (PQL)."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets."""
    critic: str = "double_q"
    """Critic type: "double_q" scalar critics or "c51" categorical ones (FastTD3, PQL-D).
    "double_q": the target is the min over the critics. "c51": categorical critics over
    num_atoms atoms in [v_min, v_max], the target the projected next distribution of the
    critic with the lower expected value."""
    num_atoms: int = 101
    """C51 critics: atoms of the return distribution, spread evenly over [v_min, v_max]."""
    v_min: float = -250.0
    """C51 critics: the lowest return of the support (of rewards times reward_scale)."""
    v_max: float = 250.0
    """C51 critics: the highest return of the support (of rewards times reward_scale)."""
    weight_decay: float = 0.0
    """AdamW weight decay of actor and critic; 0: Adam, no decay (FastTD3: 0.1)."""

    # Data, not program: these live in the agent state (the learning rates and weight decay in
    # the optimiser states), so settings that differ only in them train together under vmap.
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "tau",
        "exploration_noise",
        "target_noise",
        "target_noise_clip",
        "reward_scale",
        "v_min",
        "v_max",
        "weight_decay",
    )

    def __post_init__(self):
        check_network_config(self, residual=self.critic_residual)
        if self.critic not in ("double_q", "c51"):
            raise ValueError(f"critic must be 'double_q' or 'c51', got {self.critic!r}")
        if self.critic == "c51" and (self.num_atoms < 2 or self.v_min >= self.v_max):
            raise ValueError(
                f"c51 needs num_atoms >= 2 and v_min < v_max, got {self.num_atoms}, "
                f"[{self.v_min}, {self.v_max}]"
            )
        for name in ("exploration_noise", "target_noise", "target_noise_clip", "weight_decay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@flax.struct.dataclass
class TD3State:
    actor: Learner
    critic: Learner
    target_actor_params: dict
    target_critic_params: dict
    step: jax.Array  # critic updates done; the actor updates when step % policy_delay == 0
    hp: dict  # the continuous settings act and update read (UPDATE_HYPERPARAMETERS), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# What `act` and `update` read of the config's ARRAY_FIELDS: all but those the optimisers hold.
UPDATE_HYPERPARAMETERS = tuple(
    name for name in TD3Config.ARRAY_FIELDS if name not in ("actor_lr", "critic_lr", "weight_decay")
)


def smoothed_target_action(
    key: jax.Array, next_action: jax.Array, noise: float, noise_clip: float
) -> jax.Array:
    """clip(pi'(s') + clip(noise * eps, -c, c), -1, 1): target policy smoothing."""
    eps = jnp.clip(noise * jax.random.normal(key, next_action.shape), -noise_clip, noise_clip)
    return jnp.clip(next_action + eps, -1.0, 1.0)


def critic_target(reward, terminated, discount, next_q: jax.Array) -> jax.Array:
    """Clipped double Q: y = r + discount (1 - terminated) min_i Q'_i(s', a~'), [B]."""
    return losses.bootstrap_target(reward, terminated, discount, next_q.min(axis=0))


critic_loss = losses.critic_mse


def actor_loss(q: jax.Array) -> jax.Array:
    """-Q_1(s, pi(s)): the actor follows the first critic, as in the paper. q: [E, B]."""
    return -q[0].mean()


def c51_target(next_logits: jax.Array, reward, terminated, discount, atoms: jax.Array) -> jax.Array:
    """Clipped double Q on distributions: per sample, the next distribution of the critic whose
    expected value is lowest, projected through r + discount (1 - terminated) z. [E, B, K] ->
    [B, K]."""
    next_values = distributional.expected_value(next_logits, atoms)  # [E, B]
    pick = jnp.argmin(next_values, axis=0)  # [B]
    probs = jax.nn.softmax(jnp.take_along_axis(next_logits, pick[None, :, None], 0)[0], -1)
    return distributional.categorical_projection(
        probs, reward, discount * (1.0 - terminated), atoms
    )


def c51_critic_loss(logits: jax.Array, target: jax.Array) -> jax.Array:
    """Sum over critics of the mean cross-entropy to the projected target. logits [E, B, K]."""
    return distributional.cross_entropy(target[None], logits).mean(axis=-1).sum()


def make(config: TD3Config = TD3Config()) -> Agent:
    c51 = config.critic == "c51"
    critic_net = QEnsemble(
        config.critic_hidden,
        config.num_critics,
        config.critic_layer_norm,
        outputs=config.num_atoms if c51 else None,
        residual=config.critic_residual,
    )
    # Adam, or AdamW where weight_decay > 0 (whether it decays is static, by how much data).
    actor_opt = adam(config.actor_lr, config.weight_decay)
    critic_opt = adam(config.critic_lr, config.weight_decay)

    def q_values(critic_out: jax.Array, hp: dict) -> jax.Array:
        """[E, B] values: the critics' outputs, or their expected values for C51."""
        if not c51:
            return critic_out
        atoms = distributional.support(config.num_atoms, hp["v_min"], hp["v_max"])
        return distributional.expected_value(critic_out, atoms)

    def actor_net(action_size: int) -> DeterministicActor:
        return DeterministicActor(action_size, config.actor_hidden)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> TD3State:
        actor_key, critic_key = jax.random.split(key)
        obs, action = jnp.zeros((1, obs_size)), jnp.zeros((1, action_size))
        critic_obs = jnp.zeros((1, critic_obs_size or obs_size))
        actor_params = actor_net(action_size).init(actor_key, obs)
        critic_params = critic_net.init(critic_key, critic_obs, action)
        return TD3State(
            actor=learner(actor_params, actor_opt),
            critic=learner(critic_params, critic_opt),
            target_actor_params=actor_params,
            target_critic_params=critic_params,
            step=jnp.zeros((), jnp.int32),
            hp=hyperparameters(config, UPDATE_HYPERPARAMETERS),
            action_size=action_size,
        )

    def act(state: TD3State, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        action = actor_net(state.action_size).apply(state.actor.params, obs)
        scale = jnp.expand_dims(jnp.asarray(noise_scale, action.dtype), -1)
        noise = state.hp["exploration_noise"] * scale * jax.random.normal(key, action.shape)
        return jnp.clip(action + noise, -1.0, 1.0)

    def update(state: TD3State, batch: Batch, key: jax.Array):
        policy, hp = actor_net(state.action_size), state.hp
        critic_obs, next_critic_obs = batch.critic_inputs  # obs / next_obs unless asymmetric
        target_policy = state.target_actor_params if config.target_actor else state.actor.params
        next_action = smoothed_target_action(
            key,
            policy.apply(target_policy, batch.next_obs),
            hp["target_noise"],
            hp["target_noise_clip"],
        )
        next_out = critic_net.apply(state.target_critic_params, next_critic_obs, next_action)
        reward = hp["reward_scale"] * batch.reward
        if c51:
            atoms = distributional.support(config.num_atoms, hp["v_min"], hp["v_max"])
            target = c51_target(next_out, reward, batch.terminated, batch.discount, atoms)
        else:
            target = critic_target(reward, batch.terminated, batch.discount, next_out)

        def critic_objective(params):
            out = critic_net.apply(params, critic_obs, batch.action)
            loss = c51_critic_loss(out, target) if c51 else critic_loss(out, target)
            return loss, q_values(out, hp)

        (c_loss, q), grads = jax.value_and_grad(critic_objective, has_aux=True)(state.critic.params)
        critic = apply_gradients(state.critic, grads, critic_opt)

        def actor_objective(params):
            out = critic_net.apply(critic.params, critic_obs, policy.apply(params, batch.obs))
            # C51 (FastTD3): the min of the critics' expected values; TD3: the first critic.
            return -q_values(out, hp).min(axis=0).mean() if c51 else actor_loss(out)

        def update_actor_and_targets(_):
            a_loss, grads = jax.value_and_grad(actor_objective)(state.actor.params)
            actor = apply_gradients(state.actor, grads, actor_opt)
            targets = (
                polyak(state.target_actor_params, actor.params, hp["tau"]),
                polyak(state.target_critic_params, critic.params, hp["tau"]),
            )
            return actor, targets, a_loss

        def hold(_):
            targets = (state.target_actor_params, state.target_critic_params)
            return state.actor, targets, actor_objective(state.actor.params)

        due = state.step % config.policy_delay == 0
        actor, (target_actor, target_critic), a_loss = jax.lax.cond(
            due, update_actor_and_targets, hold, None
        )
        new_state = state.replace(
            actor=actor,
            critic=critic,
            target_actor_params=target_actor,
            target_critic_params=target_critic,
            step=state.step + 1,
        )
        return new_state, {"critic_loss": c_loss, "actor_loss": a_loss, "q_mean": q.mean()}

    return Agent(init=init, act=act, update=update, name="td3")
