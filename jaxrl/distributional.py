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
