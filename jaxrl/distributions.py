"""Tanh-squashed diagonal Gaussian, as pure functions over (mean, log_std).

Own code rather than distrax/TFP: neither is a dependency (TFP pulls TensorFlow-probability's
large substrate, distrax is in maintenance mode), and the agent needs only sample, log-prob
and mode with the numerically stable tanh correction below.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

_LOG_2PI = math.log(2 * math.pi)


def _log_abs_det_tanh(u: jax.Array) -> jax.Array:
    # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), exact and stable for large |u|.
    return 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u))


def gaussian_log_prob(u: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Log-density of a diagonal Gaussian, summed over the last axis."""
    z = (u - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)


def _gaussian_draw(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def pre_tanh_sample(
    key: jax.Array, mean: jax.Array, log_std: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """u ~ N(mean, std) (reparameterised) and log pi(tanh(u)): the pre-squash action that
    on-policy updates store to recompute log-probabilities exactly. Shapes [..., A]."""
    u = _gaussian_draw(key, mean, log_std)
    return u, tanh_gaussian_log_prob_pre_tanh(u, mean, log_std)


def tanh_gaussian_sample(
    key: jax.Array, mean: jax.Array, log_std: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Reparameterised sample a = tanh(u), u ~ N(mean, std), and log pi(a). Shapes [..., A]."""
    u, log_prob = pre_tanh_sample(key, mean, log_std)
    return jnp.tanh(u), log_prob


def tanh_gaussian_log_prob_pre_tanh(u: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """log pi(tanh(u)) = log N(u) - sum log(1 - tanh(u)^2)."""
    return gaussian_log_prob(u, mean, log_std) - jnp.sum(_log_abs_det_tanh(u), axis=-1)


def tanh_gaussian_log_prob(
    action: jax.Array, mean: jax.Array, log_std: jax.Array, eps: float = 1e-6
) -> jax.Array:
    """log pi(action) for an action already in (-1, 1) (clipped by eps before atanh)."""
    u = jnp.arctanh(jnp.clip(action, -1.0 + eps, 1.0 - eps))
    return tanh_gaussian_log_prob_pre_tanh(u, mean, log_std)


def tanh_gaussian_entropy(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Entropy of tanh(u), u ~ N(mean, std): the Gaussian's closed form plus a one-sample
    estimate of E[log(1 - tanh(u)^2)] (it has no closed form; Brax's PPO estimates it the same
    way). Summed over the last axis, [..., A] -> [...]."""
    u = _gaussian_draw(key, mean, log_std)
    gaussian = jnp.sum(log_std + 0.5 * (1.0 + _LOG_2PI), axis=-1)
    return gaussian + jnp.sum(_log_abs_det_tanh(u), axis=-1)


def is_zero(noise_scale: Any) -> bool:
    """Whether a noise scale is the Python number 0 (known at trace time): a greedy action."""
    return isinstance(noise_scale, int | float) and noise_scale == 0


def tanh_gaussian_act(
    key: jax.Array, mean: jax.Array, log_std: jax.Array, noise_scale: jax.Array | float
) -> jax.Array:
    """An acting sample tanh(mean + noise_scale * std * eps); noise_scale is a scalar or one
    value per row ([N] for [N, A] means), and 0 gives the mode tanh(mean). A Python 0 (a
    greedy policy's) draws nothing, so the greedy program holds no random-number ops (an
    exported ONNX graph cannot hold them) and costs no draw."""
    if is_zero(noise_scale):
        return jnp.tanh(mean)
    scale = jnp.expand_dims(jnp.asarray(noise_scale, mean.dtype), -1)
    return jnp.tanh(
        mean + scale * jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
    )
