"""Categorical (C51) value distributions: the projection of a shifted distribution back onto a
fixed support (Bellemare et al. 2017), as used by FastTD3's and PQL-D's critics."""

from __future__ import annotations

import jax
import jax.numpy as jnp


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


# --- Gaussian value distributions (DSAC-T, Duan et al. 2023) ---------------------------------
# Each critic predicts a Gaussian return Z(s, a) ~ N(Q, sigma^2). Shapes: [E, B] per critic.


def gaussian_targets(
    reward: jax.Array,
    bootstrap: jax.Array,
    next_mean: jax.Array,
    next_std: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    noise: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Twin value distribution learning: per sample, the target critic with the lower mean
    (next_mean, next_std [E, B]) gives both targets, [B] each:
    - y_q = r + bootstrap (Q'(s', a') - alpha log pi(a'|s')), the mean target used by expected
      value substitution;
    - y_z = r + bootstrap (z' - alpha log pi(a'|s')), z' = Q' + noise * sigma' a return sample,
      `noise` [B] standard normal draws clipped to [-3, 3] by the caller.
    `bootstrap` is discount * (1 - terminated)."""
    pick = jnp.argmin(next_mean, axis=0)[None]  # [1, B]
    mean = jnp.take_along_axis(next_mean, pick, 0)[0]
    std = jnp.take_along_axis(next_std, pick, 0)[0]
    soft = -alpha * next_log_prob
    return reward + bootstrap * (mean + soft), reward + bootstrap * (mean + noise * std + soft)


def gaussian_critic_loss(
    mean: jax.Array,
    std: jax.Array,
    target_mean: jax.Array,
    target_sample: jax.Array,
    mean_std: jax.Array,
    td_bound: float = 3.0,
    bias: float = 0.1,
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
    per_critic = (-mean_coef * mean - std_coef * std).mean(axis=-1)
    return (omega * per_critic).sum()


def update_mean_std(mean_std: jax.Array, std: jax.Array, tau: float, first: jax.Array) -> jax.Array:
    """Running mean of each critic's predicted std ([E] from std [E, B]): set from the first
    batch, then mean_std <- (1 - tau) mean_std + tau mean(std)."""
    batch = jax.lax.stop_gradient(std.mean(axis=-1))
    return jnp.where(first, batch, (1 - tau) * mean_std + tau * batch)
