"""Critic heads: what a critic ensemble's outputs mean, what they bootstrap from, how they learn.

SAC and TD3 (and the algorithms built on them) take a head from their config (`config.head()`)
instead of branching on a critic type; the head's own settings are fields of that config and
its continuous ones (`v_min`, `td_bound`, ...) are read from the agent's `hp` like any other.

- `Scalar`: one value per critic, regressed (MSE) on r + discount (1 - terminated) (min_i Q'_i
  + bonus). SAC, REDQ, DroQ, TD3, PQL.
- `Categorical` (C51, Bellemare et al. 2017): each critic predicts a distribution over a fixed
  support of atoms; the target is the next distribution of the critic with the lowest expected
  value, shifted by the reward and projected back onto the support. FastTD3, PQL-D; FastSAC
  without the clipped double Q (each critic learns its own target critic's projection).
- `Gaussian` (DSAC-T, Duan et al. 2023): each critic predicts N(Q, sigma^2), trained with
  expected value substitution, twin value distribution learning and the variance-based
  gradient adjustment (`gaussian_critic_loss`); its state is each critic's running mean std.

Every head takes `bonus` [B], added to the next state's value inside the bootstrap: SAC's soft
term -alpha log pi(a'|s'), 0 for TD3. Shapes: critic outputs [E, B, ...] (ensemble, batch),
targets and rewards [B].
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp

# The config side of the heads, without jax (jaxrl.agents.configs.heads); re-exported here.
from jaxrl.agents.configs.heads import ACTOR_Q as ACTOR_Q
from jaxrl.agents.configs.heads import CATEGORICAL_HYPERPARAMETERS, GAUSSIAN_HYPERPARAMETERS
from jaxrl.agents.configs.heads import CategoricalSettings as CategoricalSettings


class Head(Protocol):
    outputs: int | None
    """Outputs of each critic (QEnsemble's `outputs`); None: one scalar."""
    HYPERPARAMETERS: ClassVar[tuple[str, ...]]
    """The config fields (data, in `hp`) the head reads."""

    def init(self, num_critics: int) -> Any:
        """The head's own state (None where it has none)."""

    def values(self, out: jax.Array, hp: dict) -> jax.Array:
        """[E, B] action values (expected returns) of the critics' outputs."""

    def target(self, key, next_out, reward, terminated, discount, bonus, hp: dict) -> Any:
        """What the critics regress on, from the target critics' outputs at (s', a')."""

    def loss(
        self, out, target, state, hp: dict, first: jax.Array, weight: jax.Array | None = None
    ) -> tuple[jax.Array, tuple]:
        """(loss summed over critics, (values [E, B], new head state)); `first`: the first
        update, where running statistics start; `weight` [B]: each row's weight in the mean
        over rows (`row_mean`; Brax's SAC: 0 for truncated rows), None: all 1."""

    def metrics(self, state: Any) -> dict:
        """What the head adds to the update's metrics."""


def of_critic(critic: str, num_atoms: int) -> Head:
    """The head a config's `critic` field names (`CRITICS`: PQL, CrossQ): C51 critics over
    `num_atoms` atoms, or scalar ones ("double_q")."""
    return Categorical(num_atoms) if critic == "c51" else Scalar()


# --- Scalar critics -------------------------------------------------------------------------


def bootstrap_target(
    reward: jax.Array, terminated: jax.Array, discount: jax.Array, next_value: jax.Array
) -> jax.Array:
    """y = r + discount (1 - terminated) V(s'). `discount` is gamma, or gamma^k for a k-step
    return. A time-limit truncation is not a termination, so it keeps the bootstrap."""
    return reward + discount * (1.0 - terminated) * next_value


def row_mean(x: jax.Array, weight: jax.Array | None) -> jax.Array:
    """Mean over the last axis (rows) of x [..., B], each row times weight [B]: a row of weight 0
    adds 0 and still counts in the mean (Brax's SAC masks truncated rows so)."""
    return (x if weight is None else x * weight).mean(axis=-1)


def critic_mse(q: jax.Array, target: jax.Array, weight: jax.Array | None = None) -> jax.Array:
    """Sum over critics of 0.5 * mean squared TD error; the target carries no gradient."""
    td = q - jax.lax.stop_gradient(target)[None]
    return 0.5 * row_mean(td**2, weight).sum()


@dataclasses.dataclass(frozen=True)
class Scalar:
    outputs: ClassVar[None] = None
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = ()

    def init(self, num_critics: int) -> None:
        return None

    def values(self, out: jax.Array, hp: dict) -> jax.Array:
        return out

    def target(self, key, next_out, reward, terminated, discount, bonus, hp) -> jax.Array:
        """Clipped double Q: r + discount (1 - terminated) (min_i Q'_i(s', a') + bonus), [B]."""
        return bootstrap_target(reward, terminated, discount, next_out.min(axis=0) + bonus)

    def loss(self, out, target, state, hp, first, weight=None):
        return critic_mse(out, target, weight), (out, state)

    def metrics(self, state) -> dict:
        return {}


# --- Categorical (C51) critics ---------------------------------------------------------------


def support(num_atoms: int, v_min: float, v_max: float) -> jax.Array:
    return jnp.linspace(v_min, v_max, num_atoms)


def expected_value(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """E[Z] of the softmax of logits [..., K] over atoms [K] -> [...]."""
    return (jax.nn.softmax(logits, axis=-1) * atoms).sum(-1)


def categorical_projection(
    probs: jax.Array, reward: jax.Array, bootstrap: jax.Array, atoms: jax.Array
) -> jax.Array:
    """Moves the mass of `probs` [B, K] at atoms z to r + bootstrap * z, clipped to the support's
    ends, and splits each mass between the two nearest atoms in proportion to its distance.
    `bootstrap` [B] is discount * (1 - terminated). Returns [B, K]; total mass is conserved."""
    num_atoms = atoms.shape[0]
    v_min, v_max = atoms[0], atoms[-1]
    delta = (v_max - v_min) / (num_atoms - 1)
    shifted = jnp.clip(reward[:, None] + bootstrap[:, None] * atoms[None], v_min, v_max)
    position = (shifted - v_min) / delta  # fractional atom index, [B, K]
    lower = jnp.floor(position)
    upper = jnp.ceil(position)
    # A mass that lands exactly on an atom (lower == upper) goes to it whole.
    lower_mass = probs * jnp.where(upper == lower, 1.0, upper - position)
    upper_mass = probs * (position - lower)
    rows = jnp.arange(probs.shape[0])[:, None]
    projected = jnp.zeros_like(probs)
    projected = projected.at[rows, lower.astype(jnp.int32)].add(lower_mass)
    return projected.at[rows, upper.astype(jnp.int32)].add(upper_mass)


def cross_entropy(target: jax.Array, logits: jax.Array) -> jax.Array:
    """-sum target * log softmax(logits) over atoms, [..., K] -> [...]; no gradient to target."""
    return -(jax.lax.stop_gradient(target) * jax.nn.log_softmax(logits, axis=-1)).sum(-1)


def c51_target(next_logits: jax.Array, reward, terminated, discount, atoms: jax.Array) -> jax.Array:
    """Clipped double Q on distributions: per sample, the next distribution of the critic whose
    expected value is lowest, projected through r + discount (1 - terminated) z. [E, B, K] ->
    [B, K]."""
    next_values = expected_value(next_logits, atoms)  # [E, B]
    pick = jnp.argmin(next_values, axis=0)  # [B]
    probs = jax.nn.softmax(jnp.take_along_axis(next_logits, pick[None, :, None], 0)[0], -1)
    return categorical_projection(probs, reward, discount * (1.0 - terminated), atoms)


def c51_own_targets(
    next_logits: jax.Array, reward, terminated, discount, atoms: jax.Array
) -> jax.Array:
    """No clipped double Q (FastSAC): each target critic's own next distribution, projected
    through r + discount (1 - terminated) z, the target of the critic of the same index.
    [E, B, K] -> [E, B, K]."""
    bootstrap = discount * (1.0 - terminated)

    def project(logits):
        return categorical_projection(jax.nn.softmax(logits, -1), reward, bootstrap, atoms)

    return jax.vmap(project)(next_logits)


def c51_critic_loss(
    logits: jax.Array, target: jax.Array, weight: jax.Array | None = None
) -> jax.Array:
    """Sum over critics of the mean cross-entropy to the projected target. logits [E, B, K];
    target [B, K], shared by the critics, or [E, B, K], one per critic (`c51_own_targets`)."""
    shared = target.ndim < logits.ndim
    return row_mean(cross_entropy(target[None] if shared else target, logits), weight).sum()


@dataclasses.dataclass(frozen=True)
class Categorical:
    """C51 critics over `outputs` atoms spread evenly over [hp["v_min"], hp["v_max"]].
    `clipped_double_q`: every critic learns the projection of the target critic with the lowest
    expected value (FastTD3); False: each its own target critic's (FastSAC)."""

    outputs: int = 101
    clipped_double_q: bool = True
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = CATEGORICAL_HYPERPARAMETERS

    def atoms(self, hp: dict) -> jax.Array:
        return support(self.outputs, hp["v_min"], hp["v_max"])

    def init(self, num_critics: int) -> None:
        return None

    def values(self, out: jax.Array, hp: dict) -> jax.Array:
        return expected_value(out, self.atoms(hp))

    def target(self, key, next_out, reward, terminated, discount, bonus, hp) -> jax.Array:
        # r + d (z + bonus) = (r + d bonus) + d z: the bonus shifts the reward.
        bonus = discount * (1.0 - terminated) * bonus
        if not self.clipped_double_q:
            return c51_own_targets(next_out, reward + bonus, terminated, discount, self.atoms(hp))
        return c51_target(next_out, reward + bonus, terminated, discount, self.atoms(hp))

    def loss(self, out, target, state, hp, first, weight=None):
        return c51_critic_loss(out, target, weight), (self.values(out, hp), state)

    def metrics(self, state) -> dict:
        return {}


# --- Gaussian critics (DSAC-T) ---------------------------------------------------------------


def gaussian_heads(out: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A Gaussian critic's [..., 2] output -> (mean, std), std = softplus(raw) >= 0."""
    return out[..., 0], jax.nn.softplus(out[..., 1])


def gaussian_targets(
    reward: jax.Array,
    bootstrap: jax.Array,
    next_mean: jax.Array,
    next_std: jax.Array,
    bonus: jax.Array,
    noise: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Twin value distribution learning: per sample, the target critic with the lower mean
    (next_mean, next_std [E, B]) gives both targets, [B] each:
    - y_q = r + bootstrap (Q'(s', a') + bonus), the mean target used by expected value
      substitution;
    - y_z = r + bootstrap (z' + bonus), z' = Q' + noise * sigma' a return sample, `noise` [B]
      standard normal draws clipped to [-3, 3] by the caller.
    `bootstrap` is discount * (1 - terminated); `bonus` SAC's -alpha log pi(a'|s')."""
    pick = jnp.argmin(next_mean, axis=0)[None]  # [1, B]
    mean = jnp.take_along_axis(next_mean, pick, 0)[0]
    std = jnp.take_along_axis(next_std, pick, 0)[0]
    return reward + bootstrap * (mean + bonus), reward + bootstrap * (mean + noise * std + bonus)


def gaussian_critic_loss(
    mean: jax.Array,
    std: jax.Array,
    target_mean: jax.Array,
    target_sample: jax.Array,
    mean_std: jax.Array,
    td_bound: float = 3.0,
    bias: float = 0.1,
    weight: jax.Array | None = None,
) -> jax.Array:
    """DSAC-T's critic loss, summed over critics. mean, std [E, B]; targets [B]; mean_std [E],
    each critic's running mean of its predicted std.

    Its gradient is that of the Gaussian negative log-likelihood of the targets, with:
    - expected value substitution: the mean's gradient uses the mean target y_q, not a sample,
      dL/dQ = -(y_q - Q) / (sigma^2 + bias);
    - a clipped sample for the std: y_z is clipped to Q +- td_bound * mean_std,
      dL/dsigma = -((Q - y_z)^2 - sigma^2) / (sigma^3 + bias);
    - variance-based gradient adjustment: both scaled by omega = mean_std^2 + bias, so the step
      size does not depend on the scale of the returns.
    `bias` keeps the divisions finite as sigma -> 0. The value is a surrogate with exactly that
    gradient (coefficients carry no gradient), as in the authors' implementation."""
    sg = jax.lax.stop_gradient
    bound = td_bound * mean_std[:, None]
    clipped = sg(mean) + jnp.clip(sg(target_sample)[None] - sg(mean), -bound, bound)
    std_sg = sg(std)
    mean_coef = sg((target_mean[None] - mean) / (std_sg**2 + bias))
    std_coef = sg(((mean - clipped) ** 2 - std_sg**2) / (std_sg**3 + bias))
    omega = sg(mean_std**2 + bias)
    per_critic = row_mean(-mean_coef * mean - std_coef * std, weight)
    return (omega * per_critic).sum()


def update_mean_std(mean_std: jax.Array, std: jax.Array, tau: float, first: jax.Array) -> jax.Array:
    """Running mean of each critic's predicted std ([E] from std [E, B]): set from the first
    batch, then mean_std <- (1 - tau) mean_std + tau mean(std)."""
    batch = jax.lax.stop_gradient(std.mean(axis=-1))
    return jnp.where(first, batch, (1 - tau) * mean_std + tau * batch)


@dataclasses.dataclass(frozen=True)
class Gaussian:
    """DSAC-T's critics; state: each critic's running mean of its predicted std, [E]."""

    outputs: ClassVar[int] = 2
    HYPERPARAMETERS: ClassVar[tuple[str, ...]] = GAUSSIAN_HYPERPARAMETERS

    def init(self, num_critics: int) -> jax.Array:
        return jnp.zeros(num_critics, jnp.float32)

    def values(self, out: jax.Array, hp: dict) -> jax.Array:
        return gaussian_heads(out)[0]

    def target(self, key, next_out, reward, terminated, discount, bonus, hp):
        """(y_q, y_z), the return sample drawn with `key`."""
        next_mean, next_std = gaussian_heads(next_out)
        noise = jnp.clip(jax.random.normal(key, reward.shape), -3.0, 3.0)
        bootstrap = discount * (1.0 - terminated)
        return gaussian_targets(reward, bootstrap, next_mean, next_std, bonus, noise)

    def loss(self, out, target, state, hp, first, weight=None):
        q, std = gaussian_heads(out)
        mean_std = update_mean_std(state, std, hp["std_tau"], first)
        loss = gaussian_critic_loss(
            q, std, *target, mean_std, hp["td_bound"], hp["std_bias"], weight
        )
        return loss, (q, mean_std)

    def metrics(self, state) -> dict:
        return {"q_std": state.mean()}


def reduce_critics(values: jax.Array, how: str) -> jax.Array:
    """[E, B] -> [B]: the value an actor climbs. "min" over the critics (SAC, FastTD3), their
    "mean" (REDQ) or the "first" critic (TD3, as in its paper)."""
    if how == "min":
        return values.min(axis=0)
    if how == "mean":
        return values.mean(axis=0)
    return values[0]
