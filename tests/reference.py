"""Independent numpy references for the agents' update tests.

Everything here is float64 numpy written from the papers' equations, not from jaxrl's code:
network forward passes read the flax parameter trees by name, gradients come from central
finite differences of the numpy losses, and `assert_adam_first_step` checks the one optimiser
step an update takes from a fresh optimiser state. Only random draws come from `jax.random`,
with the keys the update is documented to use, so a test pins which key feeds which draw.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.types import Batch


def to64(tree: Any) -> Any:
    """A pytree of jax arrays as float64 numpy arrays (ints keep their dtype)."""

    def cast(x):
        x = np.asarray(x)
        return x.astype(np.float64) if np.issubdtype(x.dtype, np.floating) else x

    return jax.tree.map(cast, tree)


def perturbed(tree: Any, key: jax.Array, scale: float = 0.1) -> Any:
    """`tree` plus Gaussian noise: target parameters that differ from the online ones."""
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    noisy = [
        x + scale * jax.random.normal(k, x.shape, x.dtype)
        for x, k in zip(leaves, keys, strict=True)
    ]
    return jax.tree.unflatten(treedef, noisy)


def mixed_batch(
    key: jax.Array, size: int = 8, obs_size: int = 3, action_size: int = 2, gamma: float = 0.9
) -> Batch:
    """A replay batch with terminated rows (0, 4), rows whose episode was truncated (1, 5: they
    keep terminated = 0 and carry the final observation) and rows of 1-, 2- and 3-step returns
    (discount gamma, gamma^2, gamma^3), so an update that reads `done`, a constant gamma or the
    wrong observation gives other numbers."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    terminated = np.zeros(size, np.float32)
    terminated[0::4] = 1.0
    steps = 1 + np.arange(size) % 3
    return Batch(
        obs=jax.random.normal(k1, (size, obs_size)),
        action=jax.random.uniform(k2, (size, action_size), minval=-0.9, maxval=0.9),
        reward=jax.random.normal(k3, (size,)),
        next_obs=jax.random.normal(k4, (size, obs_size)) + 1.0,
        terminated=jnp.asarray(terminated),
        discount=jnp.asarray(gamma**steps, jnp.float32),
    )


# --- Layers. ---------------------------------------------------------------------------------


def relu(x):
    return np.maximum(x, 0.0)


def swish(x):
    return x / (1.0 + np.exp(-x))


ACTIVATIONS = {"relu": relu, "swish": swish}


def softplus(x):
    return np.logaddexp(0.0, x)


def layer_norm(x, scale, bias, eps=1e-6):
    """flax.linen.LayerNorm's defaults: biased variance over the last axis, epsilon 1e-6."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def mlp(
    layers: dict,
    x: np.ndarray,
    layer_norm_: bool = False,
    after_relu: bool = False,
    activation: str = "relu",
) -> np.ndarray:
    """Dense_0 .. Dense_L (ReLU, or swish, between; LayerNorm_i before each activation when
    asked, or after it with `after_relu`, Brax's order)."""
    count = sum(name.startswith("Dense_") for name in layers)

    def norm(x, i):
        return layer_norm(x, layers[f"LayerNorm_{i}"]["scale"], layers[f"LayerNorm_{i}"]["bias"])

    for i in range(count):
        x = x @ layers[f"Dense_{i}"]["kernel"] + layers[f"Dense_{i}"]["bias"]
        if i < count - 1:
            if layer_norm_ and not after_relu:
                x = norm(x, i)
            x = ACTIVATIONS[activation](x)
            if layer_norm_ and after_relu:
                x = norm(x, i)
    return x


def member(tree: Any, index: int) -> Any:
    """Critic `index` of a stacked ensemble's parameters ([E, ...] leaves)."""
    return jax.tree.map(lambda x: x[index], tree)


def q_ensemble(
    params: dict,
    obs,
    action,
    layer_norm_: bool = False,
    after_relu: bool = False,
    activation: str = "relu",
) -> np.ndarray:
    """A jaxrl QEnsemble's outputs [E, B, outputs] from its parameter tree."""
    layers = params["params"]["critics"]["MLP_0"]
    size = next(iter(layers["Dense_0"].values())).shape[0]
    x = np.concatenate([obs, action], -1)
    return np.stack(
        [mlp(member(layers, e), x, layer_norm_, after_relu, activation) for e in range(size)]
    )


def squash_log_std(raw, low=-5.0, high=2.0):
    return low + 0.5 * (high - low) * (np.tanh(raw) + 1.0)


def gaussian_actor(
    params: dict,
    obs,
    softplus_std: bool = False,
    activation: str = "relu",
    layer_norm_: bool = False,
    log_std_max: float = 2.0,
    log_std_clip: bool = False,
):
    """A GaussianActor's (mean, log_std), [B, A] each: the log-std squashed into
    [-5, log_std_max] (or clipped to it), or Brax's softplus std."""
    out = mlp(params["params"]["MLP_0"], obs, layer_norm_, activation=activation)
    mean, raw = np.split(out, 2, axis=-1)
    if softplus_std:
        return mean, np.log(softplus(raw) + 1e-3)
    if log_std_clip:
        return mean, np.clip(raw, -5.0, log_std_max)
    return mean, squash_log_std(raw, high=log_std_max)


def tanh_gaussian_log_prob(u, mean, log_std):
    """log pi(tanh(u)) for u ~ N(mean, exp(log_std)), summed over actions."""
    z = (u - mean) / np.exp(log_std)
    gaussian = (-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    # log(1 - tanh(u)^2) = 2 log 2 - 2 log(e^u + e^-u), exact where tanh(u) rounds to +-1.
    return gaussian - (2 * math.log(2.0) - 2 * np.logaddexp(u, -u)).sum(-1)


def q_action_grads(params: dict, obs, action) -> np.ndarray:
    """dQ_i/da [E, B, A] of a ReLU QEnsemble without normalisation layers, by backpropagating
    by hand through each critic: W_L, then each hidden layer's ReLU mask and kernel."""
    layers = params["params"]["critics"]["MLP_0"]
    count = sum(name.startswith("Dense_") for name in layers)
    size = next(iter(layers["Dense_0"].values())).shape[0]
    x = np.concatenate([obs, action], -1)
    grads = []
    for e in range(size):
        critic = member(layers, e)
        h, masks = x, []
        for i in range(count - 1):
            z = h @ critic[f"Dense_{i}"]["kernel"] + critic[f"Dense_{i}"]["bias"]
            masks.append(z > 0)
            h = relu(z)
        g = np.broadcast_to(critic[f"Dense_{count - 1}"]["kernel"][:, 0], h.shape)
        for i in reversed(range(count - 1)):
            g = (g * masks[i]) @ critic[f"Dense_{i}"]["kernel"].T
        grads.append(g[:, obs.shape[-1] :])
    return np.stack(grads)


def normal(key: jax.Array, shape) -> np.ndarray:
    return np.asarray(jax.random.normal(key, shape), np.float64)


# --- Gradients and the optimiser step. ---------------------------------------------------------


def finite_difference_grad(loss: Callable[[Any], float], params: Any, eps: float = 1e-6) -> Any:
    """Central differences of a numpy loss over every element of a float64 parameter tree."""
    leaves, treedef = jax.tree.flatten(params)
    grads = []
    for index, leaf in enumerate(leaves):
        grad = np.zeros_like(leaf)
        for position in np.ndindex(leaf.shape):
            values = []
            for sign in (1.0, -1.0):
                moved = [x.copy() for x in leaves]
                moved[index][position] += sign * eps
                values.append(loss(jax.tree.unflatten(treedef, moved)))
            grad[position] = (values[0] - values[1]) / (2 * eps)
        grads.append(grad)
    return jax.tree.unflatten(treedef, grads)


def assert_adam_first_step(
    old: Any,
    new: Any,
    grad: Any,
    lr: float,
    weight_decay: float = 0.0,
    min_checked: int = 10,
    residue_moves: bool = False,
) -> None:
    """The first step of Adam from a fresh state moves each parameter by -lr g / (|g| + eps),
    i.e. -lr sign(g) (AdamW adds -lr wd p). Checked on every entry whose reference gradient is
    clearly away from zero, so the sign is trustworthy; parameters with zero gradient must not
    move (but for weight decay), or, with `residue_moves`, by at most lr: where the gradient is
    zero only in exact arithmetic (a bias that merely shifts a normalisation's input), float32
    leaves a rounding residue that Adam's first step scales up to anywhere in [-lr, lr]."""
    old, new, grad = to64(old), to64(new), to64(grad)
    checked = 0
    scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(grad))
    assert scale > 0, "the reference gradient is zero everywhere"
    for p0, p1, g in zip(
        jax.tree.leaves(old), jax.tree.leaves(new), jax.tree.leaves(grad), strict=True
    ):
        step = p1 - p0 + lr * weight_decay * p0
        clear = np.abs(g) > 1e-3 * scale
        np.testing.assert_allclose(step[clear], -lr * np.sign(g[clear]), rtol=2e-3, atol=lr * 2e-3)
        exact_zero = np.abs(g) < 1e-9 * scale
        np.testing.assert_allclose(
            step[exact_zero], 0.0, atol=lr * (1.001 if residue_moves else 1e-3)
        )
        checked += int(clear.sum())
    assert checked >= min_checked, f"only {checked} entries had a clear gradient sign"


# --- Additions for the distributional (DSAC-T) and on-policy (PPO) references. ----------------


def gaussian_q_ensemble(params: dict, obs, action, layer_norm_: bool = False):
    """A Gaussian critic ensemble's (mean, std), [E, B] each: output 0 is the mean, output 1
    the raw std head, std = softplus(raw)."""
    out = q_ensemble(params, obs, action, layer_norm_)
    return out[..., 0], softplus(out[..., 1])


def value_mlp(params: dict, obs, activation: str = "relu") -> np.ndarray:
    """A jaxrl MLP(out=1) value network's V(obs) [...] from its parameter tree."""
    return mlp(params["params"], obs, activation=activation)[..., 0]


def tanh_gaussian_entropy_estimate(eps, mean, log_std):
    """Entropy of tanh(u), u ~ N(mean, exp(log_std)): the Gaussian's closed form
    sum(log_std + (1 + log 2 pi) / 2) plus one sample u = mean + std * eps of
    E[log(1 - tanh(u)^2)], summed over actions."""
    u = mean + np.exp(log_std) * eps
    gaussian = (log_std + 0.5 * (1.0 + math.log(2 * math.pi))).sum(-1)
    return gaussian + np.log(1.0 - np.tanh(u) ** 2).sum(-1)


def assert_trees_close(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Leaf-by-leaf assert_allclose of two pytrees of the same structure."""
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol),
        actual,
        expected,
    )


# --- Deterministic actors and categorical (C51) critics. ---------------------------------------


def deterministic_actor(params: dict, obs) -> np.ndarray:
    """A DeterministicActor's action tanh(MLP(obs)), [B, A]."""
    return np.tanh(mlp(params["params"]["MLP_0"], obs))


def log_softmax(logits, axis=-1):
    shifted = logits - logits.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def softmax(logits, axis=-1):
    return np.exp(log_softmax(logits, axis))


def categorical_projection(probs, reward, bootstrap, atoms) -> np.ndarray:
    """Bellemare et al. (2017), Algorithm 1, one atom at a time: the mass p_j at atom z_j moves
    to Tz_j = clip(r + bootstrap z_j, v_min, v_max) and is split between the two atoms around
    Tz_j in proportion to closeness (whole to one atom when Tz_j falls on it). probs [B, K],
    reward and bootstrap [B]; returns [B, K]."""
    probs, atoms = np.asarray(probs, np.float64), np.asarray(atoms, np.float64)
    size, count = probs.shape
    v_min, v_max = atoms[0], atoms[-1]
    delta = (v_max - v_min) / (count - 1)
    out = np.zeros_like(probs)
    for b in range(size):
        for j in range(count):
            tz = min(max(reward[b] + bootstrap[b] * atoms[j], v_min), v_max)
            position = (tz - v_min) / delta
            low, high = math.floor(position), math.ceil(position)
            if low == high:
                out[b, low] += probs[b, j]
            else:
                out[b, low] += probs[b, j] * (high - position)
                out[b, high] += probs[b, j] * (position - low)
    return out


# --- Batch Renormalisation (Ioffe 2017) and CrossQ's networks. ---------------------------------


def batch_renorm(
    x,
    scale,
    bias,
    stats: dict,
    train: bool,
    momentum: float = 0.99,
    warmup: int = 100_000,
    eps: float = 1e-3,
    r_max: float = 3.0,
    d_max: float = 5.0,
    rd=None,
):
    """One BatchRenorm layer over the rows of x [N, F] -> (y, new stats, (r, d)).

    Training: y = (x - mu_B) / sigma_B * r + d, sigma = sqrt(var + eps), r = sigma_B / sigma_run
    clipped to [1/r_max, r_max], d = (mu_B - mu_run) / sigma_run clipped to [-d_max, d_max],
    r = 1 and d = 0 while the layer has taken fewer than `warmup` steps; the running statistics
    move by (1 - momentum) towards the batch's (biased variance) and steps += 1. r and d are
    constants of the step (no gradient): pass `rd` to hold them at given values, as a finite
    difference must. Evaluation: normalise by the running statistics, nothing changes."""
    if not train:
        y = (x - stats["mean"]) / np.sqrt(stats["var"] + eps)
        return y * scale + bias, stats, None
    mu, var = x.mean(0), x.var(0)
    sigma, sigma_run = np.sqrt(var + eps), np.sqrt(stats["var"] + eps)
    if rd is None:
        if int(stats["steps"]) < warmup:
            rd = (np.ones_like(mu), np.zeros_like(mu))
        else:
            rd = (
                np.clip(sigma / sigma_run, 1.0 / r_max, r_max),
                np.clip((mu - stats["mean"]) / sigma_run, -d_max, d_max),
            )
    r, d = rd
    y = (x - mu) / sigma * r + d
    new = {
        "mean": momentum * stats["mean"] + (1 - momentum) * mu,
        "var": momentum * stats["var"] + (1 - momentum) * var,
        "steps": stats["steps"] + 1,
    }
    return y * scale + bias, new, rd


def brn_mlp(
    params: dict,
    stats: dict,
    x,
    train: bool,
    momentum: float,
    warmup: int,
    rds=None,
    after_relu: bool = False,
):
    """CrossQ's body: BatchRenorm_0 on the input, then Dense_i -> BatchRenorm_{i+1} -> ReLU per
    hidden layer (`after_relu`: Dense_i -> ReLU -> BatchRenorm_{i+1}), then the output Dense.
    Returns (out, new stats, {layer: (r, d)})."""
    count = sum(name.startswith("Dense_") for name in params)
    new_stats, used = {}, {}

    def norm(i, h):
        name = f"BatchRenorm_{i}"
        y, new_stats[name], used[name] = batch_renorm(
            h,
            params[name]["scale"],
            params[name]["bias"],
            stats[name],
            train,
            momentum,
            warmup,
            rd=None if rds is None else rds[name],
        )
        return y

    x = norm(0, x)
    for i in range(count):
        x = x @ params[f"Dense_{i}"]["kernel"] + params[f"Dense_{i}"]["bias"]
        if i < count - 1:
            x = norm(i + 1, relu(x)) if after_relu else relu(norm(i + 1, x))
    return x, new_stats, used


def brn_q_ensemble(
    params, stats, obs, action, train, momentum, warmup, rds=None, after_relu: bool = False
):
    """A BRNQEnsemble: (Q [E, N] or, for critics of several outputs, [E, N, K]; new stats
    stacked [E] like the flax tree; [(r, d) per critic]). Each critic normalises with its own
    statistics of all N rows."""
    layers, layer_stats = params["critics"], stats["critics"]
    size = layers["Dense_0"]["bias"].shape[0]
    x = np.concatenate([obs, action], -1)
    outs, new, used = [], [], []
    for e in range(size):
        out, s, rd = brn_mlp(
            member(layers, e),
            member(layer_stats, e),
            x,
            train,
            momentum,
            warmup,
            None if rds is None else rds[e],
            after_relu,
        )
        outs.append(out[..., 0] if out.shape[-1] == 1 else out)
        new.append(s)
        used.append(rd)
    stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *new)
    return np.stack(outs), {"critics": stacked}, used


def brn_gaussian_actor(
    params,
    stats,
    obs,
    train,
    momentum,
    warmup,
    rds=None,
    after_relu: bool = False,
    log_std_clip: bool = True,
):
    """A BRNGaussianActor: ((mean, log_std) [B, A] each, new stats, (r, d) per layer); the
    log-std clipped to [-20, 2] (the authors' head), or without `log_std_clip` squashed
    into [-5, 2]."""
    out, new, used = brn_mlp(
        params["BRNMLP_0"], stats["BRNMLP_0"], obs, train, momentum, warmup, rds, after_relu
    )
    mean, raw = np.split(out, 2, axis=-1)
    log_std = np.clip(raw, -20.0, 2.0) if log_std_clip else squash_log_std(raw)
    return (mean, log_std), {"BRNMLP_0": new}, used


# --- More optimiser checks. ----------------------------------------------------------------------


def assert_adam_first_moment(
    opt_state: Any, grad: Any, b1: float = 0.9, rtol: float = 2e-3
) -> None:
    """After Adam's first step from a fresh state its first moment is (1 - b1) g: this pins the
    gradient's magnitude (the step itself only shows its sign) and the optimiser's b1."""
    states = [
        s
        for s in jax.tree.leaves(opt_state, is_leaf=lambda s: hasattr(s, "mu"))
        if hasattr(s, "mu")
    ]
    assert len(states) == 1, "expected one Adam state"
    assert int(states[0].count) == 1, "expected the state after exactly one step"
    grad = to64(grad)
    scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(grad))
    jax.tree.map(
        lambda mu, g: np.testing.assert_allclose(
            np.asarray(mu, np.float64), (1 - b1) * g, rtol=rtol, atol=(1 - b1) * 1e-4 * scale
        ),
        states[0].mu,
        grad,
    )


def assert_adam_second_moment(opt_state: Any, grad: Any, b2: float, rtol: float = 2e-3) -> None:
    """After Adam's first step from a fresh state its second moment is (1 - b2) g^2: this pins
    the optimiser's b2, which the first step itself (-lr sign g) does not show."""
    states = [
        s
        for s in jax.tree.leaves(opt_state, is_leaf=lambda s: hasattr(s, "nu"))
        if hasattr(s, "nu")
    ]
    assert len(states) == 1, "expected one Adam state"
    assert int(states[0].count) == 1, "expected the state after exactly one step"
    grad = to64(grad)
    scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(grad)) ** 2
    jax.tree.map(
        lambda nu, g: np.testing.assert_allclose(
            np.asarray(nu, np.float64), (1 - b2) * g**2, rtol=rtol, atol=(1 - b2) * 1e-6 * scale
        ),
        states[0].nu,
        grad,
    )


def assert_polyak(new_target: Any, old_target: Any, online: Any, tau: float) -> None:
    """new target = (1 - tau) old target + tau online, leaf by leaf."""
    jax.tree.map(
        lambda n, t, o: np.testing.assert_allclose(
            np.asarray(n, np.float64),
            (1 - tau) * np.asarray(t, np.float64) + tau * np.asarray(o, np.float64),
            rtol=1e-5,
            atol=1e-6,
        ),
        new_target,
        old_target,
        online,
    )


# --- Asymmetric actor-critic. -----------------------------------------------------------------

CRITIC_OBS = 5  # the critic's own observation size in asymmetric cases (the actor's is other)


def with_critic_obs(batch: Batch, key: jax.Array, size: int = CRITIC_OBS) -> Batch:
    """`batch` with the critic's own observations (asymmetric actor-critic): of another size
    than the actor's and drawn apart from them, so an update whose critic reads `obs` (or whose
    actor reads `critic_obs`) fails on shapes or gives other numbers."""
    k1, k2 = jax.random.split(key)
    rows = batch.reward.shape[0]
    return batch._replace(
        critic_obs=jax.random.normal(k1, (rows, size)) - 0.5,
        next_critic_obs=jax.random.normal(k2, (rows, size)) + 0.5,
    )


def critic_inputs(batch: Any) -> tuple[Any, Any]:
    """(obs, next_obs) as a critic must read them: its own where the batch has them."""
    if batch.critic_obs is None:
        return batch.obs, batch.next_obs
    return batch.critic_obs, batch.next_critic_obs
