"""PPO (Schulman et al. 2017) as Brax and MuJoCo Playground run it: a tanh-Gaussian policy and a
separate value network, GAE over rollouts of many envs, several epochs of shuffled minibatch
updates of the clipped surrogate plus a value loss (optionally clipped) and an entropy bonus,
global gradient-norm clipping, reward scaling and a constant or linearly decaying learning rate.

The rollouts come from the on-policy loop (`jaxrl.loops.onpolicy`); GAE, epochs and minibatches are
the update's own business, so the loop stays algorithm-agnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import optax

from jaxrl import distributions
from jaxrl.agents.base import Agent, state_hyperparameters
from jaxrl.agents.configs.ppo import (  # jax-free (jaxrl.agents.configs), re-exported
    PPOConfig,
    check_minibatches,
)
from jaxrl.networks import MLP, GaussianActor
from jaxrl.types import Rollout


@flax.struct.dataclass
class PPOState:
    params: dict  # {"policy": ..., "value": ...}
    opt_state: optax.OptState
    step: jax.Array  # rollouts learned from
    hp: dict  # the continuous settings the update reads (`state_hyperparameters`), as arrays
    action_size: int = flax.struct.field(pytree_node=False)


# --- Pure pieces, as the paper writes them. ----------------------------------------------------


# The advantage recursion is written out, not looped, up to this many steps: with the
# advantage in the loss (Brax's choice) it runs in every gradient step (512 per update at
# Playground's settings, 30 steps each), and a loop's trips are sequential on a GPU, each with
# the loop's own overhead, where the written-out steps are elementwise work XLA fuses. The
# same operations in the same order: the results are bit for bit a loop's.
GAE_UNROLL_MAX = 64


def gae(
    reward: jax.Array,
    value: jax.Array,
    next_value: jax.Array,
    terminated: jax.Array,
    done: jax.Array,
    discount: jax.Array,
    lam: float,
    *,
    horizon: int = 0,
    estimator: str = "gae",
    truncation: str = "bootstrap",
    scan: str = "sequential",
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over [T, ...] arrays (time first).

    delta_t = r_t + discount_t (1 - terminated_t) V(s'_t) - V(s_t), with s'_t the state step t
    truly reached: a truncated episode bootstraps from it, a terminated one does not;
    A_t = delta_t + discount_t lam (1 - cut_t) A_{t+1}, cut_t = done_t or (horizon > 0 and
    t + 1 a multiple of horizon): nothing flows back across the end of an episode (terminated
    or truncated), since step t+1 then belongs to the next one, nor across a horizon boundary.
    With estimator "vtrace" the advantage is delta_t + discount_t (1 - cut_t) A_{t+1} instead
    (Brax's PPO). With truncation "mask" (Brax's PPO) a truncated step's delta and advantage
    are 0, so its target is V(s_t). With scan "associative" the recursion runs as a log-depth
    parallel scan of its affine steps (`jax.lax.associative_scan`) instead of step by step:
    fewer, wider kernels, the same numbers to float tolerance (sums in another order). Returns
    (advantages, value targets A + V)."""
    delta = reward + discount * (1.0 - terminated) * next_value - value
    kept = 1.0 - (done - terminated)  # 0 on truncated steps
    if truncation == "mask":
        delta = delta * kept
    cut = done
    if horizon:
        boundary = (jnp.arange(1, reward.shape[0] + 1) % horizon == 0).astype(done.dtype)
        cut = jnp.maximum(done, boundary.reshape((-1,) + (1,) * (done.ndim - 1)))

    if scan == "associative":
        advantage = _affine_suffix_scan(discount * lam * (1.0 - cut), delta)
    else:

        def backward(next_advantage, xs):
            delta_t, discount_t, cut_t = xs
            advantage = delta_t + discount_t * lam * (1.0 - cut_t) * next_advantage
            return advantage, advantage

        steps = reward.shape[0]
        _, advantage = jax.lax.scan(
            backward,
            jnp.zeros_like(value[0]),
            (delta, discount, cut),
            reverse=True,
            unroll=steps if steps <= GAE_UNROLL_MAX else 1,
        )
    target = advantage + value
    if estimator == "vtrace":
        following = jnp.concatenate([advantage[1:], jnp.zeros_like(advantage[:1])])
        # A truncated step's is 0 with "mask" too: its delta is 0 and the cut stops the rest.
        advantage = delta + discount * (1.0 - cut) * following
    return advantage, target


def _affine_suffix_scan(decay: jax.Array, delta: jax.Array) -> jax.Array:
    """A_t = delta_t + decay_t A_{t+1} over time (axis 0), A_T = 0, as a parallel scan: each
    step is the affine map x -> delta_t + decay_t x, and A_t applies those of t, t+1, ..., T-1
    in turn to 0. Two maps compose as (decay, delta) of the earlier applied after the later's."""

    def compose(later, earlier):  # reverse=True hands the later steps' composite first
        later_decay, later_delta = later
        earlier_decay, earlier_delta = earlier
        return earlier_decay * later_decay, earlier_delta + earlier_decay * later_delta

    return jax.lax.associative_scan(compose, (decay, delta), reverse=True)[1]


def clipped_surrogate(ratio: jax.Array, advantage: jax.Array, epsilon: float) -> jax.Array:
    """-E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)], the policy loss to minimise."""
    clipped = jnp.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
    return -jnp.minimum(ratio * advantage, clipped * advantage).mean()


def value_loss(
    value: jax.Array, target: jax.Array, old_value: jax.Array, epsilon: float | None
) -> jax.Array:
    """0.5 E[(V - target)^2]; with epsilon, the larger of that and the error of the value moved
    at most epsilon from the rollout's old value (PPO2's value clipping)."""
    error = (value - target) ** 2
    if epsilon is not None:
        moved = old_value + jnp.clip(value - old_value, -epsilon, epsilon)
        error = jnp.maximum(error, (moved - target) ** 2)
    return 0.5 * error.mean()


def minibatch_indices(key: jax.Array, samples: int, num_minibatches: int) -> jax.Array:
    """A fresh permutation of the samples split into [num_minibatches, samples / M] rows: each
    sample lands in exactly one minibatch per epoch."""
    return jax.random.permutation(key, samples).reshape(num_minibatches, -1)


class Losses(NamedTuple):
    """PPO's losses of one minibatch, (total, metrics) = f(params, batch, key, hp, action_size);
    `jax.grad` of the total is what each gradient step follows.

    minibatch: single steps [B] carrying their "advantage" and "target" (computed once per
    rollout) with "obs", "raw_action", "log_prob", "value" (old values) and, asymmetric,
    "value_obs". unroll (advantage_in_loss, Brax's compute_ppo_loss): whole unrolls [B, H]
    with "obs", "raw_action", "log_prob", "reward", "terminated", "done", "discount" and the
    next observation the value function bootstraps from: "bootstrap_obs" [B] of each unroll's
    last step (truncation "mask"), else "next_value_obs" [B, H] of every step.
    unroll_time_major: the same loss of the same unrolls laid out time first, [H, B]
    ("bootstrap_obs" still [B]), which the update feeds it (`_update_unrolls`)."""

    minibatch: Callable
    unroll: Callable
    unroll_time_major: Callable


class Distribution(NamedTuple):
    """The policy's action distribution, over what `Networks.policy` outputs (`out`: jaxrl's
    (mean, log_std), or a Brax distribution's parameters). `raw` is the sample before any
    squashing, as the update stores it to recompute log-probabilities exactly.

    log_prob(out, raw) -> [...]; entropy(key, out) -> [...] (a one-sample estimate where it
    has no closed form); explore(key, out) -> (action, raw, log_prob); act(key, out,
    noise_scale) -> action: the mode's at a Python 0 (drawing nothing), else a sample with its
    noise scaled by noise_scale (a scalar or one per row). moments(out) -> (loc, scale) of the
    Gaussian before any squashing, for the update's `policy_dist_*` metrics (None: none)."""

    log_prob: Callable
    entropy: Callable
    explore: Callable
    act: Callable
    moments: Callable | None = None


def _tanh_gaussian_explore(key, out):
    mean, log_std = out
    raw, log_prob = distributions.pre_tanh_sample(key, mean, log_std)
    return jnp.tanh(raw), raw, log_prob


# jaxrl's own: the tanh-squashed Gaussian of (mean, log_std).
TANH_GAUSSIAN = Distribution(
    log_prob=lambda out, raw: distributions.tanh_gaussian_log_prob_pre_tanh(raw, *out),
    entropy=lambda key, out: distributions.tanh_gaussian_entropy(key, *out),
    explore=_tanh_gaussian_explore,
    act=lambda key, out, noise_scale: distributions.tanh_gaussian_act(key, *out, noise_scale),
    moments=lambda out: (out[0], jnp.exp(out[1])),
)


class Networks(NamedTuple):
    """PPO's networks, as `make(config, networks)` takes them (network injection): jaxrl's own
    (`networks(config)`, the default) or any others of this shape, such as Brax's
    `PPONetworks` read by `jaxrl.brax.factories.ppo_networks`.

    init(key, obs_size, action_size, critic_obs_size) -> {"policy": ..., "value": ...};
    policy(params, obs, action_size) -> the parameters of `distribution` over [..., A]
    (jaxrl's: the pre-tanh Gaussian's (mean, log_std)); value(params, obs) -> the values
    [...]. Observations arrive normalised (the loop's running statistics), so the networks do
    no normalisation of their own."""

    init: Callable
    policy: Callable
    value: Callable
    distribution: Distribution = TANH_GAUSSIAN


def networks(config: PPOConfig = PPOConfig()) -> Networks:
    """jaxrl's own PPO networks: a GaussianActor and an MLP value network, as `config` sets
    their widths, activation, initialiser and std head."""

    def policy_net(action_size: int) -> GaussianActor:
        return GaussianActor(
            action_size,
            config.actor_hidden,
            softplus_std=config.softplus_std,
            activation=config.activation,
            matmul_precision=config.matmul_precision,
            kernel_init=config.kernel_init,
        )

    value_net = MLP(
        config.critic_hidden,
        out=1,
        activation=config.activation,
        matmul_precision=config.matmul_precision,
        kernel_init=config.kernel_init,
    )

    def init(key, obs_size: int, action_size: int, critic_obs_size: int | None = None) -> dict:
        policy_key, value_key = jax.random.split(key)
        obs = jnp.zeros((1, obs_size))
        value_obs = jnp.zeros((1, critic_obs_size or obs_size))
        return {
            "policy": policy_net(action_size).init(policy_key, obs),
            "value": value_net.init(value_key, value_obs),
        }

    def policy(params, obs, action_size: int):
        return policy_net(action_size).apply(params["policy"], obs)

    def value(params, obs: jax.Array) -> jax.Array:
        return value_net.apply(params["value"], obs)[..., 0]

    return Networks(init, policy, value)


def losses(config: PPOConfig = PPOConfig(), nets: Networks | None = None) -> Losses:
    """The losses `make(config, nets)`'s update differentiates (for tests and parity checks)."""
    nets = nets or networks(config)
    value = nets.value

    def objective(params, batch, values, advantage, target, key, hp, action_size):
        """Clipped surrogate + value_coef x value loss - entropy_coef x entropy, given the
        minibatch's values under `params` (differentiated) and its advantages and targets."""
        dist, out = nets.distribution, nets.policy(params, batch["obs"], action_size)
        log_prob = dist.log_prob(out, batch["raw_action"])
        log_ratio = log_prob - batch["log_prob"]
        ratio = jnp.exp(log_ratio)
        if config.normalize_advantages:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        policy_loss = clipped_surrogate(ratio, advantage, hp["clip_epsilon"])
        clip = hp["clip_epsilon"] if config.clip_value else None
        v_loss = value_loss(values, target, batch.get("value"), clip)
        entropy = dist.entropy(key, out).mean()
        total = policy_loss + hp["value_coef"] * v_loss - hp["entropy_coef"] * entropy
        metrics = {
            "policy_loss": policy_loss,
            "value_loss": v_loss,
            "entropy": entropy,
            # Schulman's low-variance estimator of KL(old || new).
            "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
            "clip_fraction": (jnp.abs(ratio - 1.0) > hp["clip_epsilon"]).mean(),
        }
        if dist.moments is not None:  # the policy's Gaussian over the minibatch, as Brax's
            loc, scale = dist.moments(out)
            for name, x in (("loc", loc), ("std", scale)):
                metrics |= {
                    f"policy_dist_mean_{name}": x.mean(),
                    f"policy_dist_max_{name}": x.max(),
                    f"policy_dist_min_{name}": x.min(),
                }
        return total, metrics

    def minibatch(params, batch: dict, key: jax.Array, hp: dict, action_size: int):
        values = value(params, batch.get("value_obs", batch["obs"]))
        return objective(
            params, batch, values, batch["advantage"], batch["target"], key, hp, action_size
        )

    def unroll(params, batch: dict, key: jax.Array, hp: dict, action_size: int):
        return unroll_time_major(params, time_major(batch), key, hp, action_size)

    def unroll_time_major(params, batch: dict, key: jax.Array, hp: dict, action_size: int):
        batch = dict(batch)
        bootstrap_obs = batch.pop("bootstrap_obs", None)
        # Two passes of the value network, as Brax's loss makes them. One pass over both would
        # save a GPU some launches but run the backward products over the bootstrap rows too
        # (no gradient reaches them): 2.2% more product FLOPs at Playground's settings.
        values = value(params, batch.get("value_obs", batch["obs"]))
        if bootstrap_obs is not None:  # Brax: V(s_{t+1}) from the next row, V(s'_H) at the end
            last = value(params, bootstrap_obs)
            next_values = jnp.concatenate([values[1:], last[None]])
        else:  # every step bootstraps from the observation it reached
            next_values = value(params, batch["next_value_obs"])
        advantage, target = gae(
            hp["reward_scale"] * batch["reward"],
            values,
            next_values,
            batch["terminated"],
            batch["done"],
            batch["discount"],
            hp["gae_lambda"],
            horizon=0,
            estimator=config.advantage_estimator,
            truncation=config.truncation,
            scan=config.gae_scan,
        )
        advantage, target = jax.lax.stop_gradient((advantage, target))
        total, metrics = objective(params, batch, values, advantage, target, key, hp, action_size)
        metrics["value_mean"] = values.mean()
        return total, metrics

    return Losses(minibatch, unroll, unroll_time_major)


def time_major(unrolls: dict) -> dict:
    """Unrolls [B, H, ...] (`Losses`' unroll) laid out time first, [H, B, ...], as
    `Losses.unroll_time_major` reads them ("bootstrap_obs" [B, ...] stays)."""
    return {
        name: x if name == "bootstrap_obs" else jnp.swapaxes(x, 0, 1) for name, x in unrolls.items()
    }


def make(config: PPOConfig = PPOConfig(), nets: Networks | None = None) -> Agent:
    """PPO with `config`'s settings, over `nets` (default: jaxrl's own, `networks(config)`;
    the config's network fields then do not apply)."""
    nets = nets or networks(config)
    optimizer = _optimizer(config)
    learner = _Learner(config, nets, losses(config, nets), optimizer)

    def init(
        key: jax.Array, obs_size: int, action_size: int, critic_obs_size: int | None = None
    ) -> PPOState:
        params = nets.init(key, obs_size, action_size, critic_obs_size)
        return PPOState(
            params,
            optimizer.init(params),
            jnp.zeros((), jnp.int32),
            state_hyperparameters(config),
            action_size,
        )

    policy = nets.policy

    def act(state: PPOState, obs: jax.Array, key: jax.Array, noise_scale=1.0) -> jax.Array:
        out = policy(state.params, obs, state.action_size)
        return nets.distribution.act(key, out, noise_scale)

    def explore(state: PPOState, obs: jax.Array, key: jax.Array):
        out = policy(state.params, obs, state.action_size)
        action, raw, log_prob = nets.distribution.explore(key, out)
        return action, {"raw_action": raw, "log_prob": log_prob}

    def update(state: PPOState, rollout: Rollout, key: jax.Array):
        steps, num_envs = rollout.reward.shape
        check_minibatches(  # at trace time, before compiling
            num_envs, steps, config.num_minibatches, config.unroll_horizon
        )
        fraction = 1.0 - rollout.progress if config.lr_schedule == "linear" else 1.0
        if config.advantage_in_loss:
            params, opt_state, metrics = _update_unrolls(learner, state, rollout, key, fraction)
        else:
            params, opt_state, metrics = _update_steps(learner, state, rollout, key, fraction)
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics["gradient_steps"] = jnp.asarray(
            config.num_epochs * config.num_minibatches, jnp.float32
        )
        return state.replace(params=params, opt_state=opt_state, step=state.step + 1), metrics

    return Agent(init=init, act=act, update=update, explore=explore, name="ppo")


# --- The update's pieces. ----------------------------------------------------------------------


def _optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """Adam after global gradient-norm clipping (none when max_grad_norm is 0). Learning rate
    and clip in the optimiser state (data); a linear schedule scales the updates by the run's
    remaining fraction (`_Learner.gradient_step`), so it can follow the run's progress.

    Without clipping the state holds no max_grad_norm: whether the program clips is static, so
    the two states differ in structure, which a vmapped grid refuses to mix and the store of
    compiled programs keys on. (With one structure, a member or a re-run at 0 ran the clipping
    program, which clipped every gradient to zero.)"""

    def chain(learning_rate, max_grad_norm=None):
        clip = (
            optax.identity() if max_grad_norm is None else optax.clip_by_global_norm(max_grad_norm)
        )
        return optax.chain(clip, optax.adam(learning_rate))

    clip = {"max_grad_norm": config.max_grad_norm} if config.max_grad_norm > 0 else {}
    return optax.inject_hyperparams(chain)(learning_rate=config.learning_rate, **clip)


class _Learner(NamedTuple):
    """What `make(config)`'s update learns with, besides its state and rollout."""

    config: PPOConfig
    nets: Networks
    loss_fns: Losses
    optimizer: optax.GradientTransformation

    def rollout_values(self, params, obs: jax.Array) -> jax.Array:
        """Values of a whole rollout [T, N, ...] -> [T, N], one time step at a time: at once,
        XLA holds every hidden layer of every sample (5 GB for Playground's 5x256 value net
        over 2048 envs x 480 steps)."""
        value = self.nets.value
        return jax.lax.map(lambda o: value(params, o), obs)

    def gradient_step(self, loss, params, opt_state, batch, key, hp, action_size, fraction):
        """One optimiser step down `loss` (a `Losses` entry) on `batch`: (params, opt_state,
        the loss's metrics with "grad_norm")."""
        (_, metrics), grads = jax.value_and_grad(loss, has_aux=True)(
            params, batch, key, hp, action_size
        )
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        if self.config.lr_schedule == "linear":
            updates = jax.tree.map(lambda u: fraction * u, updates)
        metrics["grad_norm"] = optax.tree_utils.tree_norm(grads)
        return optax.apply_updates(params, updates), opt_state, metrics


def _step_samples(learner: _Learner, state: PPOState, rollout: Rollout) -> tuple[dict, jax.Array]:
    """The rollout as single steps [T x N] with their advantages and value targets (GAE from
    the values before the update, no gradient through any of it), and those values [T, N]."""
    config, hp, samples = learner.config, state.hp, rollout.reward.size
    value_obs, next_value_obs = rollout.critic_inputs  # obs / next_obs unless asymmetric
    values = learner.rollout_values(state.params, value_obs)
    advantage, target = gae(
        hp["reward_scale"] * rollout.reward,
        values,
        learner.rollout_values(state.params, next_value_obs),
        rollout.terminated,
        rollout.done,
        rollout.discount,
        hp["gae_lambda"],
        horizon=config.gae_horizon,
        estimator=config.advantage_estimator,
        truncation=config.truncation,
        scan=config.gae_scan,
    )
    flat = {
        "obs": rollout.obs,
        "raw_action": rollout.extras["raw_action"],
        "log_prob": rollout.extras["log_prob"],
        "advantage": advantage,
        "target": target,
        "value": values,
    }
    if rollout.critic_obs is not None:  # asymmetric: the value function's own input
        flat["value_obs"] = value_obs
    flat = jax.tree.map(lambda x: x.reshape((samples,) + x.shape[2:]), flat)
    return jax.lax.stop_gradient(flat), values


def _update_steps(learner: _Learner, state: PPOState, rollout: Rollout, key: jax.Array, fraction):
    """Advantages once, from the values before the update; minibatches of single steps."""
    config, hp, samples = learner.config, state.hp, rollout.reward.size
    flat, values = _step_samples(learner, state, rollout)

    def minibatch_step(carry, xs):
        params, opt_state = carry
        rows, step_key = xs
        batch = jax.tree.map(lambda x: x[rows], flat)
        params, opt_state, metrics = learner.gradient_step(
            learner.loss_fns.minibatch, params, opt_state, batch, step_key, hp,
            state.action_size, fraction,
        )  # fmt: skip
        return (params, opt_state), metrics

    def epoch(carry, key):
        perm_key, step_key = jax.random.split(key)
        rows = minibatch_indices(perm_key, samples, config.num_minibatches)
        step_keys = jax.random.split(step_key, config.num_minibatches)
        return jax.lax.scan(minibatch_step, carry, (rows, step_keys))

    (params, opt_state), metrics = jax.lax.scan(
        epoch,
        (state.params, state.opt_state),
        jax.random.split(key, config.num_epochs),
    )
    metrics["value_mean"] = values.mean()  # the rollout's, before the update
    return params, opt_state, metrics


def _unroll_data(learner: _Learner, state: PPOState, rollout: Rollout) -> dict:
    """The rollout cut into unrolls of gae_horizon steps [T / H x N, H, ...], in Brax's order
    (unroll-major: row u * num_envs + e), with what the in-loss advantages read (`Losses`'
    unroll), no gradient through any of it."""
    config, horizon = learner.config, learner.config.gae_horizon
    steps, num_envs = rollout.reward.shape
    value_obs, next_value_obs = rollout.critic_inputs

    def unrolls(x):  # [T, N, ...] -> [T / H * N, H, ...]
        x = x.reshape((steps // horizon, horizon, num_envs) + x.shape[2:])
        return jnp.swapaxes(x, 1, 2).reshape((-1, horizon) + x.shape[3:])

    data = {
        "obs": rollout.obs,
        "raw_action": rollout.extras["raw_action"],
        "log_prob": rollout.extras["log_prob"],
        "reward": rollout.reward,
        "terminated": rollout.terminated,
        "done": rollout.done,
        "discount": rollout.discount,
    }
    if rollout.critic_obs is not None:
        data["value_obs"] = value_obs
    if config.clip_value:  # the rollout's own values, for the clip
        data["value"] = learner.rollout_values(state.params, value_obs)
    if config.truncation == "bootstrap":
        data["next_value_obs"] = next_value_obs
    data = jax.lax.stop_gradient(jax.tree.map(unrolls, data))
    if config.truncation == "mask":  # only each unroll's last next observation is read
        data["bootstrap_obs"] = jax.lax.stop_gradient(unrolls(next_value_obs)[:, -1])
    return data


def _update_unrolls(learner: _Learner, state: PPOState, rollout: Rollout, key: jax.Array, fraction):
    """Brax's sgd_step: the rollout's unrolls (`_unroll_data`) shuffled as units every epoch
    into minibatches whose loss computes the advantages with the current value parameters; the
    key split per epoch into (next, permutation, gradient steps), per step into (next, loss)."""
    config, hp = learner.config, state.hp
    data = _unroll_data(learner, state, rollout)
    unrolls = data["obs"].shape[0]

    def minibatch_step(carry, batch):
        params, opt_state, key = carry
        key, loss_key = jax.random.split(key)
        params, opt_state, metrics = learner.gradient_step(
            learner.loss_fns.unroll_time_major, params, opt_state, batch, loss_key, hp,
            state.action_size, fraction,
        )  # fmt: skip
        return (params, opt_state, key), metrics

    def epoch(carry, _):
        params, opt_state, key = carry
        key, perm_key, grad_key = jax.random.split(key, 3)
        # One permutation for every leaf: what Brax's per-leaf `permutation(perm_key, x)`
        # computes for arrays of two or more dimensions, drawn and sorted once, not per leaf.
        order = jax.random.permutation(perm_key, unrolls)
        shuffled = jax.tree.map(
            lambda x: jnp.take(x, order, axis=0, unique_indices=True).reshape(
                (config.num_minibatches, -1) + x.shape[1:]
            ),
            data,
        )
        # Each minibatch time first ([H, B], the loss's own order, as Brax's loss swaps its
        # batch), laid out so in memory here, once per epoch, where it is gathered anyway: fed
        # [B, H] and swapped inside the loss, XLA:GPU kept the losses' [H, B] arrays in the
        # data's [B, H] order and transposed the value network's activations to and from it
        # at every gradient step (benchmarks/notes/2026-12-06-code-figures.md).
        shuffled = jax.vmap(time_major)(shuffled)
        (params, opt_state, _), metrics = jax.lax.scan(
            minibatch_step, (params, opt_state, grad_key), shuffled
        )
        return (params, opt_state, key), metrics

    (params, opt_state, _), metrics = jax.lax.scan(
        epoch, (state.params, state.opt_state, key), None, config.num_epochs
    )
    return params, opt_state, metrics


__all__ = [
    "Losses",
    "PPOConfig",
    "PPOState",
    "clipped_surrogate",
    "gae",
    "losses",
    "make",
    "time_major",
    "value_loss",
]
