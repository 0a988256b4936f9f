"""Networks shared by the agents: MLP, Q-networks and their vmapped ensembles, actor heads."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    """Dense layers with ReLU; each hidden layer is Dense -> [Dropout] -> [LayerNorm] -> ReLU
    (DroQ's order). Dropout is active only when `train` is true and a "dropout" rng is given."""

    hidden: Sequence[int]
    out: int | None = None
    layer_norm: bool = False
    dropout: float = 0.0
    # Residual LayerNorm blocks (SimBa / BRO style) for wide, deep critics: a projection to
    # hidden[0], then per entry x + Dense(w)(relu(Dense(4w)(LayerNorm(x)))), a final LayerNorm.
    residual: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        if self.residual:
            return self._residual(x)
        for width in self.hidden:
            x = nn.Dense(width)(x)
            if self.dropout > 0:
                x = nn.Dropout(self.dropout, deterministic=not train)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = nn.relu(x)
        if self.out is not None:
            x = nn.Dense(self.out)(x)
        return x

    def _residual(self, x: jax.Array) -> jax.Array:
        if len(set(self.hidden)) != 1:
            raise ValueError(f"residual blocks need equal widths, got {tuple(self.hidden)}")
        width = self.hidden[0]
        x = nn.Dense(width)(x)
        for _ in self.hidden:
            y = nn.Dense(4 * width)(nn.LayerNorm()(x))
            x = x + nn.Dense(width)(nn.relu(y))
        x = nn.LayerNorm()(x)
        return nn.Dense(self.out)(x) if self.out is not None else x


class QNetwork(nn.Module):
    """Q(s, a) -> [...]: one critic; with `outputs` set, [..., outputs] (e.g. C51 logits)."""

    hidden: Sequence[int]
    layer_norm: bool = False
    dropout: float = 0.0
    outputs: int | None = None
    residual: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array, train: bool = False) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        mlp = MLP(self.hidden, self.outputs or 1, self.layer_norm, self.dropout, self.residual)
        out = mlp(x, train)
        return out if self.outputs else out[..., 0]


class QEnsemble(nn.Module):
    """`num_critics` independently initialised critics as one vmapped module: params are stacked
    along a leading axis [E] and the output is [E, ...]."""

    hidden: Sequence[int]
    num_critics: int = 2
    layer_norm: bool = False
    dropout: float = 0.0
    outputs: int | None = None
    residual: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array, train: bool = False) -> jax.Array:
        ensemble = nn.vmap(
            QNetwork,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        critics = ensemble(
            self.hidden, self.layer_norm, self.dropout, self.outputs, self.residual, name="critics"
        )
        return critics(obs, action, train)


class GaussianActor(nn.Module):
    """obs -> (mean, log_std) of a diagonal Gaussian over pre-tanh actions, each [..., A].

    log_std is squashed smoothly into [log_std_min, log_std_max] (a hard clip would zero its
    gradient outside the range).
    """

    action_size: int
    hidden: Sequence[int]
    layer_norm: bool = False
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = MLP(self.hidden, out=2 * self.action_size, layer_norm=self.layer_norm)(obs)
        mean, raw = jnp.split(x, 2, axis=-1)
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (
            jnp.tanh(raw) + 1
        )
        return mean, log_std


class DeterministicActor(nn.Module):
    """obs -> tanh(MLP(obs)): an action in [-1, 1]^A."""

    action_size: int
    hidden: Sequence[int]
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(MLP(self.hidden, out=self.action_size, layer_norm=self.layer_norm)(obs))
