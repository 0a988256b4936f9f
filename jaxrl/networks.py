"""Networks shared by the agents: MLP, Q-networks and their vmapped ensembles, actor heads."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

# The choices of the configs' network settings are named without jax, in
# jaxrl.agents.configs.network (MATMUL_PRECISIONS re-exported here); ACTIVATIONS and
# KERNEL_INITS map those names (ACTIVATION_NAMES, KERNEL_INIT_NAMES) to flax's functions.
from jaxrl.agents.configs.network import MATMUL_PRECISIONS as MATMUL_PRECISIONS
from jaxrl.agents.configs.network import check_matmul_precision

ACTIVATIONS = {"relu": nn.relu, "swish": nn.swish}


def dense_precision(matmul_precision: str) -> Any:
    """The `precision` of the networks' float32 Dense layers: None (XLA's default, float32) for
    "float32", and for "bfloat16" JAX's BF16_BF16_F32 dot algorithm: each product's operands
    rounded to bfloat16, the sums kept and returned in float32, forward and backward passes
    alike. A dot algorithm rather than bfloat16 activations: activations, LayerNorm,
    BatchRenorm, parameters, optimiser states and losses all stay float32. With "mixed" the
    hidden layers compute in bfloat16 (`dense`) and only the output layers take this
    algorithm.

    Where the program is traced for a CPU, the algorithm is float32 too: XLA:CPU ignores it in
    most products and refuses it in some (a 1x1 result: "Algorithm not supported by the
    ElementalIrEmitter"), so it could only fail there, never speed anything up."""
    check_matmul_precision(matmul_precision)
    if matmul_precision == "float32" or _platform() == "cpu":
        return None
    return jax.lax.DotAlgorithmPreset.BF16_BF16_F32


# Kernel initialisers by name: flax's default (a truncated normal of variance 1 / fan_in), or
# Brax's networks' (a uniform of the same variance). Biases start at 0 either way.
KERNEL_INITS = {
    "lecun_normal": nn.initializers.lecun_normal(),
    "lecun_uniform": nn.initializers.lecun_uniform(),
}


def dense(
    width: int,
    matmul_precision: str,
    kernel_init: str | Any = "lecun_normal",
    output: bool = False,
    zero: bool = False,
    bias_init: Any = nn.initializers.zeros,
) -> nn.Dense:
    """A Dense layer of `width` outputs computing at `matmul_precision`, its kernel drawn by
    `kernel_init` (KERNEL_INITS; `zero`: all zeros): every network's layers are made here.

    "float32" and "bfloat16": float32 inputs and outputs, products by `dense_precision`.
    "mixed" (automatic mixed precision, as PyTorch's autocast gives FastTD3): a hidden layer
    (`output` false) casts its input, kernel and bias to bfloat16 and returns bfloat16, so its
    activation and the backward pass's elementwise work move half the bytes, and its product is
    a bfloat16 one (summed in float32 by GPUs' tensor cores); an `output` layer returns float32
    (values, logits, means and log-stds keep float32's resolution), its products rounding the
    operands to bfloat16 as "bfloat16" does. Parameters, optimiser states and losses stay
    float32 in every mode: the gradients reach the float32 parameters through the casts.
    `kernel_init` is a KERNEL_INITS name or an initialiser; so is `bias_init`."""
    init = KERNEL_INITS[kernel_init] if isinstance(kernel_init, str) else kernel_init
    init = nn.initializers.zeros if zero else init
    inits = dict(kernel_init=init, bias_init=bias_init)
    if matmul_precision == "mixed" and not output:
        return nn.Dense(width, dtype=jnp.bfloat16, **inits)
    return nn.Dense(width, dtype=jnp.float32, precision=dense_precision(matmul_precision), **inits)


def _platform() -> str:
    """The platform programs are traced for (a function, so tests can name another)."""
    return jax.default_backend()


class MLP(nn.Module):
    """Dense layers with ReLU (or `activation`); each hidden layer is Dense -> [Dropout] ->
    [LayerNorm] -> ReLU (DroQ's order), or with `norm_after_relu` Dense -> [Dropout] -> ReLU ->
    [LayerNorm] (the order of Brax's MLP). Dropout is active only when `train` is true and a
    "dropout" rng is given. The `out` layer returns float32 at every matmul_precision; with
    "mixed" and no `out`, the MLP returns its last hidden layer's bfloat16 activations."""

    hidden: Sequence[int]
    out: int | None = None
    layer_norm: bool = False
    dropout: float = 0.0
    # Residual LayerNorm blocks (SimBa / BRO style) for wide, deep critics: a projection to
    # hidden[0], then per entry x + Dense(w)(relu(Dense(4w)(LayerNorm(x)))), a final LayerNorm.
    residual: bool = False
    norm_after_relu: bool = False
    # "relu", or "swish" (x * sigmoid(x)): Brax's PPO networks' default.
    activation: str = "relu"
    matmul_precision: str = "float32"  # `dense_precision`
    kernel_init: str = "lecun_normal"  # KERNEL_INITS (the residual blocks: flax's default)
    # The output layer's kernel starts at zero (its bias does anyway): FastSAC's policy head,
    # whose outputs then start equal in every state.
    zero_out: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        if self.residual:
            return self._residual(x)
        for width in self.hidden:
            x = dense(width, self.matmul_precision, self.kernel_init)(x)
            if self.dropout > 0:
                x = nn.Dropout(self.dropout, deterministic=not train)(x)
            if self.layer_norm and not self.norm_after_relu:
                x = nn.LayerNorm()(x)
            x = ACTIVATIONS[self.activation](x)
            if self.layer_norm and self.norm_after_relu:
                x = nn.LayerNorm()(x)
        if self.out is not None:
            out = dense(self.out, self.matmul_precision, self.kernel_init, True, self.zero_out)
            x = out(x)
        return x

    def _residual(self, x: jax.Array) -> jax.Array:
        if len(set(self.hidden)) != 1:
            raise ValueError(f"residual blocks need equal widths, got {tuple(self.hidden)}")
        width = self.hidden[0]
        x = dense(width, self.matmul_precision)(x)
        for _ in self.hidden:
            y = dense(4 * width, self.matmul_precision)(nn.LayerNorm()(x))
            x = x + dense(width, self.matmul_precision)(nn.relu(y))
        x = nn.LayerNorm()(x)
        return dense(self.out, self.matmul_precision, output=True)(x) if self.out is not None else x


class QNetwork(nn.Module):
    """Q(s, a) -> [...]: one critic; with `outputs` set, [..., outputs] (e.g. C51 logits)."""

    hidden: Sequence[int]
    layer_norm: bool = False
    dropout: float = 0.0
    outputs: int | None = None
    residual: bool = False
    norm_after_relu: bool = False
    matmul_precision: str = "float32"
    kernel_init: str = "lecun_normal"  # KERNEL_INITS
    activation: str = "relu"  # ACTIVATIONS (FastSAC: "swish", i.e. SiLU)

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array, train: bool = False) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        mlp = MLP(
            self.hidden,
            self.outputs or 1,
            self.layer_norm,
            self.dropout,
            self.residual,
            self.norm_after_relu,
            activation=self.activation,
            matmul_precision=self.matmul_precision,
            kernel_init=self.kernel_init,
        )
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
    norm_after_relu: bool = False
    matmul_precision: str = "float32"
    kernel_init: str = "lecun_normal"  # KERNEL_INITS
    activation: str = "relu"  # ACTIVATIONS

    @nn.compact
    def __call__(
        self, obs: jax.Array, action: jax.Array, train: bool = False, stacked: bool = False
    ) -> jax.Array:
        """Q [E, B, outputs] of (obs [B, O], action [B, A]); `stacked`: the actions are
        already one batch per critic, [E, B, A] (EDAC differentiates each critic's value in
        its own copy of the actions)."""
        # Each critic gets the inputs along the ensemble axis (a broadcast of a few columns)
        # rather than shared (in_axes=None). Shared, the first layer's product has the
        # ensemble axis on its kernel only; XLA:CPU then lays its [E, B, H] output out batch
        # first and transposes it in the forward and backward passes, a few percent of the
        # update's time (benchmarks/notes/2026-12-06-code-figures.md). Same values to
        # float32 rounding (tests/agents/test_redq_droq.py).
        ensemble = nn.vmap(
            QNetwork,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            in_axes=(0, 0, None),
            out_axes=0,
            axis_size=self.num_critics,
        )
        critics = ensemble(
            self.hidden,
            self.layer_norm,
            self.dropout,
            self.outputs,
            self.residual,
            self.norm_after_relu,
            self.matmul_precision,
            self.kernel_init,
            self.activation,
            name="critics",
        )
        each = functools.partial(_along_ensemble, size=self.num_critics)
        return critics(each(obs), action if stacked else each(action), train)


def _along_ensemble(x: jax.Array, size: int) -> jax.Array:
    return jnp.broadcast_to(x, (size, *x.shape))


def squash_log_std(raw: jax.Array, low: float, high: float) -> jax.Array:
    """Maps raw outputs smoothly into [low, high] (a hard clip would zero the gradient)."""
    return low + 0.5 * (high - low) * (jnp.tanh(raw) + 1)


class GaussianActor(nn.Module):
    """obs -> (mean, log_std) of a diagonal Gaussian over pre-tanh actions, each [..., A].

    log_std is squashed smoothly into [log_std_min, log_std_max] (or clipped to it).
    """

    action_size: int
    hidden: Sequence[int]
    layer_norm: bool = False
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    # Brax's tanh-normal head instead: std = softplus(raw) + min_std (0.69 at initialisation,
    # where the squashed log-std starts at 0.22), which PPO's on-policy exploration needs.
    softplus_std: bool = False
    min_std: float = 1e-3
    activation: str = "relu"
    matmul_precision: str = "float32"
    kernel_init: str = "lecun_normal"  # KERNEL_INITS
    # FastSAC: the head's kernel starts at zero, so every state starts at mean 0 and the
    # log-std at the middle of [log_std_min, log_std_max].
    zero_head: bool = False
    # EDAC's and SAC-N's head: the raw log-std clipped to [log_std_min, log_std_max].
    log_std_clip: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = MLP(
            self.hidden,
            out=2 * self.action_size,
            layer_norm=self.layer_norm,
            activation=self.activation,
            matmul_precision=self.matmul_precision,
            kernel_init=self.kernel_init,
            zero_out=self.zero_head,
        )(obs)
        mean, raw = jnp.split(x, 2, axis=-1)
        if self.softplus_std:
            return mean, jnp.log(jax.nn.softplus(raw) + self.min_std)
        if self.log_std_clip:
            return mean, jnp.clip(raw, self.log_std_min, self.log_std_max)
        return mean, squash_log_std(raw, self.log_std_min, self.log_std_max)


class DeterministicActor(nn.Module):
    """obs -> tanh(MLP(obs)): an action in [-1, 1]^A."""

    action_size: int
    hidden: Sequence[int]
    layer_norm: bool = False
    matmul_precision: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        mlp = MLP(
            self.hidden,
            out=self.action_size,
            layer_norm=self.layer_norm,
            matmul_precision=self.matmul_precision,
        )
        return jnp.tanh(mlp(obs))


class BatchRenorm(nn.Module):
    """Batch Renormalisation (Ioffe 2017) over the leading axes, as CrossQ uses it.

    flax.linen has BatchNorm but no BatchRenorm. In training it normalises with the batch
    statistics corrected towards the running ones by r = std_B / std_run (clipped to
    [1/r_max, r_max]) and d = (mean_B - mean_run) / std_run (clipped to [-d_max, d_max]); for
    the first `warmup_steps` updates r = 1, d = 0 (plain batch norm). With
    `use_running_average` it normalises with the running statistics (acting, evaluation).
    Running statistics and the step count live in the "batch_stats" collection.
    """

    use_running_average: bool = False
    momentum: float = 0.99
    epsilon: float = 1e-3
    warmup_steps: int = 100_000
    r_max: float = 3.0
    d_max: float = 5.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        features = x.shape[-1]
        axes = tuple(range(x.ndim - 1))
        running_mean = self.variable("batch_stats", "mean", jnp.zeros, (features,))
        running_var = self.variable("batch_stats", "var", jnp.ones, (features,))
        steps = self.variable("batch_stats", "steps", lambda: jnp.zeros((), jnp.int32))
        scale = self.param("scale", nn.initializers.ones, (features,))
        bias = self.param("bias", nn.initializers.zeros, (features,))
        if self.use_running_average:
            mean, var = running_mean.value, running_var.value
        else:
            batch_mean, batch_var = x.mean(axes), x.var(axes)
            batch_std = jnp.sqrt(batch_var + self.epsilon)
            running_std = jnp.sqrt(running_var.value + self.epsilon)
            r = jax.lax.stop_gradient(jnp.clip(batch_std / running_std, 1 / self.r_max, self.r_max))
            d = jax.lax.stop_gradient(
                jnp.clip((batch_mean - running_mean.value) / running_std, -self.d_max, self.d_max)
            )
            warming_up = steps.value < self.warmup_steps
            r = jnp.where(warming_up, 1.0, r)
            d = jnp.where(warming_up, 0.0, d)
            # (x - mean_B) / std_B * r + d, written as a normalisation by (mean, var):
            mean = batch_mean - d * batch_std / r
            var = (batch_std / r) ** 2 - self.epsilon
            if not self.is_initializing():
                m = self.momentum
                running_mean.value = m * running_mean.value + (1 - m) * jax.lax.stop_gradient(
                    batch_mean
                )
                running_var.value = m * running_var.value + (1 - m) * jax.lax.stop_gradient(
                    batch_var
                )
                steps.value = steps.value + 1
        return (x - mean) / jnp.sqrt(var + self.epsilon) * scale + bias


class BRNMLP(nn.Module):
    """CrossQ's network body: BatchRenorm on the input, then per hidden layer Dense ->
    BatchRenorm -> ReLU or, with `after_relu`, Dense -> ReLU -> BatchRenorm (the authors' and
    SBX's order); then a Dense output."""

    hidden: Sequence[int]
    out: int
    momentum: float = 0.99
    warmup_steps: int = 100_000
    matmul_precision: str = "float32"
    after_relu: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        norm = lambda: BatchRenorm(not train, self.momentum, warmup_steps=self.warmup_steps)
        x = norm()(x)
        for width in self.hidden:
            x = dense(width, self.matmul_precision)(x)
            x = norm()(nn.relu(x)) if self.after_relu else nn.relu(norm()(x))
        return dense(self.out, self.matmul_precision, output=True)(x)


class BRNQEnsemble(nn.Module):
    """`num_critics` BatchRenorm critics, vmapped: params and batch statistics stacked [E]."""

    hidden: Sequence[int]
    num_critics: int = 2
    momentum: float = 0.99
    warmup_steps: int = 100_000
    matmul_precision: str = "float32"
    outputs: int | None = None
    """Outputs of each critic (a critic head's, e.g. C51 logits); None: one value."""
    after_relu: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array, train: bool = False) -> jax.Array:
        """[E, ...] (E critics), with a trailing [outputs] axis where `outputs` is set."""
        ensemble = nn.vmap(
            BRNMLP,
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        critics = ensemble(
            self.hidden,
            self.outputs or 1,
            self.momentum,
            self.warmup_steps,
            self.matmul_precision,
            self.after_relu,
            name="critics",
        )
        out = critics(jnp.concatenate([obs, action], -1), train)
        return out if self.outputs else out[..., 0]


class BRNGaussianActor(nn.Module):
    """CrossQ's actor: a BatchRenorm body with GaussianActor's (mean, log_std) head."""

    action_size: int
    hidden: Sequence[int]
    momentum: float = 0.99
    warmup_steps: int = 100_000
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    matmul_precision: str = "float32"
    after_relu: bool = False
    # The CrossQ authors' and SBX's head: the raw log-std clipped to [-20, log_std_max] (std 1
    # at initialisation); False: squashed smoothly into [log_std_min, log_std_max] (std 0.22).
    log_std_clip: bool = True

    @nn.compact
    def __call__(self, obs: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        body = BRNMLP(
            self.hidden,
            2 * self.action_size,
            self.momentum,
            self.warmup_steps,
            self.matmul_precision,
            self.after_relu,
        )
        x = body(obs, train)
        mean, raw = jnp.split(x, 2, axis=-1)
        if self.log_std_clip:
            return mean, jnp.clip(raw, -20.0, self.log_std_max)
        return mean, squash_log_std(raw, self.log_std_min, self.log_std_max)


# --- SAC-RND's random network distillation (Nikulin et al. 2023; jaxrl.agents.sac_rnd). ------


def torch_uniform(fan_in: int):
    """PyTorch's Linear initialisation, uniform in +-1/sqrt(fan_in), for kernels and biases:
    the RND's target is a fixed random function, so its draw is kept as the reference code's."""
    bound = 1.0 / float(fan_in) ** 0.5

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def _torch_dense(width: int, fan_in: int, matmul_precision: str, output: bool = False):
    return dense(
        width, matmul_precision, torch_uniform(fan_in), output, bias_init=torch_uniform(fan_in)
    )


class RNDPredictor(nn.Module):
    """SAC-RND's predictor f(s, a): a bilinear first layer, x_k = a^T W_k s + b_k (PyTorch's
    `nn.Bilinear`, action first), then ReLU and three Dense layers (two ReLU) to the
    embedding; every product at `matmul_precision` (`dense`'s rules)."""

    hidden: int
    embedding: int
    matmul_precision: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        a, s, h, mp = action.shape[-1], obs.shape[-1], self.hidden, self.matmul_precision
        kernel = self.param("bilinear_kernel", torch_uniform(a), (h, a, s))
        bias = self.param("bilinear_bias", torch_uniform(a), (h,))
        if mp == "mixed":  # a hidden layer: bfloat16 in and out, as `dense` makes them
            action, kernel, obs, bias = (
                x.astype(jnp.bfloat16) for x in (action, kernel, obs, bias)
            )
        precision = None if mp == "mixed" else dense_precision(mp)
        x = jnp.einsum("...i,kij,...j->...k", action, kernel, obs, precision=precision)
        x = nn.relu(x + bias)
        x = nn.relu(_torch_dense(h, h, mp)(x))
        x = nn.relu(_torch_dense(h, h, mp)(x))
        return _torch_dense(self.embedding, h, mp, output=True)(x)


class RNDTarget(nn.Module):
    """SAC-RND's fixed random target g(s, a): the action through two ReLU layers, the third
    modulated by the state (FiLM: relu(gamma(s) * W h + beta(s))), then to the embedding."""

    hidden: int
    embedding: int
    matmul_precision: str = "float32"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        a, s, h, mp = action.shape[-1], obs.shape[-1], self.hidden, self.matmul_precision
        gamma, beta = jnp.split(_torch_dense(2 * h, s, mp)(obs), 2, axis=-1)
        x = nn.relu(_torch_dense(h, a, mp)(action))
        x = nn.relu(_torch_dense(h, h, mp)(x))
        x = nn.relu(gamma * _torch_dense(h, h, mp)(x) + beta)
        return _torch_dense(self.embedding, h, mp, output=True)(x)
