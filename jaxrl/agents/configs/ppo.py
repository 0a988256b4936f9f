"""PPO's config, and the check of its minibatches against a run's rollout size. No jax here:
the agent built from it lives in `jaxrl.agents.ppo`."""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar

from jaxrl.agents.configs.network import ACTIVATION_NAMES, InitSettings, check_network_config
from jaxrl.config.choices import Choices
from jaxrl.errors import ConfigError

LR_SCHEDULES = ("constant", "linear")
ADVANTAGE_ESTIMATORS = ("gae", "vtrace")
TRUNCATIONS = ("bootstrap", "mask")
GAE_SCANS = ("sequential", "associative")


@dataclasses.dataclass(frozen=True)
class PPOConfig(InitSettings):
    # Network sizes of MuJoCo Playground's DM Control PPO runs; the rest are the paper's or
    # Brax's defaults (docs/ALGORITHMS.md). Presets set each task's values. Widths, matmul
    # precision and kernel_init: InitSettings (jaxrl.agents.configs.network).

    actor_hidden: tuple[int, ...] = (32, 32, 32, 32)
    critic_hidden: tuple[int, ...] = (256, 256, 256, 256, 256)
    """Hidden-layer widths of the value network."""
    learning_rate: float = 3e-4
    """Adam learning rate of the policy and value networks (one optimiser)."""
    lr_schedule: Annotated[str, Choices(LR_SCHEDULES)] = "constant"
    """Learning-rate schedule: "constant", or "linear" (decays to 0 over the run)."""
    num_epochs: int = 4
    """Passes over each rollout per update (Brax: num_updates_per_batch)."""
    num_minibatches: int = 32
    """Minibatches per epoch: the rollout's num_envs x unroll_length samples split evenly."""
    clip_epsilon: float = 0.2
    """Probability-ratio clip of the surrogate objective (Brax's default: 0.3)."""
    clip_value: bool = False
    """Clip the value update around the rollout's values too (by clip_epsilon, as PPO2 does)."""
    value_coef: float = 0.5
    """Weight of the value loss in the total loss."""
    entropy_coef: float = 1e-2
    """Weight of the entropy bonus in the total loss."""
    max_grad_norm: float = 1.0
    """Clip of the gradients' global norm; 0 turns clipping off."""
    gae_lambda: float = 0.95
    """GAE's lambda, from 1-step TD advantages (0) to discounted returns minus V (1)."""
    advantage_estimator: Annotated[str, Choices(ADVANTAGE_ESTIMATORS)] = "gae"
    """Advantage estimator: "gae" (Schulman et al.) or "vtrace" (Brax's PPO).
    "gae": A_t = delta_t + gamma lam A_{t+1}. "vtrace": A_t = r_t + gamma v_{t+1} - V(s_t)
    with v the lambda-return (IMPALA's policy-gradient advantage with on-policy ratios), i.e.
    delta_t + gamma A^gae_{t+1}. Value targets are the lambda-returns A^gae + V either way."""
    gae_horizon: int = 0
    """Steps after which the advantage recursion restarts, bootstrapping from V there; 0: never.
    Brax computes it per unroll of unroll_length steps; 0 runs it over the whole rollout."""
    gae_scan: Annotated[str, Choices(GAE_SCANS)] = "sequential"
    """How the advantage recursion runs: "sequential", step by step as Brax's loop does (bit
    for bit its numbers), or "associative", a log-depth parallel scan
    (`jax.lax.associative_scan`): fewer, wider kernels, the same numbers to float tolerance,
    which PPO amplifies over a run. A speed experiment for GPUs, where PPO's update may be
    bound by its kernels' number; not timed there yet."""
    truncation: Annotated[str, Choices(TRUNCATIONS)] = "bootstrap"
    """How a truncated step (the time limit) enters the advantages. "bootstrap": from V of the
    observation it reached (`Rollout.next_obs`). "mask" (Brax's PPO, whose rollouts keep only
    the next episode's first observation there): its TD error and advantage are 0 and its
    value target is V(s_t), so it adds nothing to the value loss, and nothing flows across it.
    Terminated steps never bootstrap, either way."""
    advantage_in_loss: bool = False
    """Brax's PPO: advantages and value targets are computed inside the loss, with the value
    parameters of each gradient step (not those from before the update), per minibatch of whole
    unrolls of gae_horizon steps, shuffled as units, the last step of each unroll bootstrapping
    from V of its next observation; keys split as Brax's sgd_step splits them. Needs
    gae_horizon > 0. False: once per rollout before the epochs, minibatches of single steps."""
    normalize_advantages: bool = True
    """Normalise the advantages to zero mean and unit std, per minibatch."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this (Brax: reward_scaling)."""
    softplus_std: bool = True
    """Policy std from Brax's head, softplus(raw) + 0.001 (std 0.69 at init, no upper bound).
    False: exp of a log-std squashed into [-5, 2] (std 0.22 at init)."""
    activation: Annotated[str, Choices(ACTIVATION_NAMES)] = "relu"
    """Hidden-layer activation of both networks: "relu", or "swish" (Brax's PPO default)."""

    # Data, not program: these live in the agent state (the learning rate and the gradient-norm
    # clip in the optimiser state), so settings that differ only in them train together under
    # vmap. Whether gradients are clipped at all (max_grad_norm > 0) is static, and shows in
    # the state's structure (no clip in it without clipping), so a grid cannot mix the two.
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "learning_rate",
        "clip_epsilon",
        "value_coef",
        "entropy_coef",
        "max_grad_norm",
        "gae_lambda",
        "reward_scale",
    )
    CONSUMED: ClassVar[tuple[str, ...]] = ("learning_rate", "max_grad_norm")
    """The ARRAY_FIELDS read once, by the optimiser. `act` and `update` read the others from the
    state's `hp` (`base.state_hyperparameters`)."""

    def __post_init__(self):
        check_network_config(self)
        for name in ("num_epochs", "num_minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("learning_rate", "clip_epsilon", "reward_scale"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("value_coef", "entropy_coef", "max_grad_norm"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.gae_lambda <= 1:
            raise ValueError(f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
        if self.gae_horizon < 0:
            raise ValueError(
                f"gae_horizon must be >= 0 (0: the whole rollout), got {self.gae_horizon}"
            )
        if self.advantage_in_loss and self.gae_horizon < 1:
            raise ValueError(
                "advantage_in_loss computes advantages per unroll of gae_horizon steps: set "
                f"gae_horizon >= 1 (Brax: its unroll_length), got {self.gae_horizon}"
            )

    def check_train(self, train) -> None:
        """Cross-checks with the run config, before anything is compiled."""
        check_minibatches(
            train.num_envs, train.unroll_length, self.num_minibatches, self.unroll_horizon
        )

    @property
    def unroll_horizon(self) -> int:
        """Steps per minibatch unit: gae_horizon with advantage_in_loss, else single steps."""
        return self.gae_horizon if self.advantage_in_loss else 1


def check_minibatches(num_envs: int, unroll_length: int, num_minibatches: int, horizon: int):
    if horizon > 1 and unroll_length % horizon:
        raise ConfigError(
            f"advantage_in_loss splits each rollout into unrolls of gae_horizon={horizon} "
            f"steps: unroll_length={unroll_length} must be a multiple of it."
        )
    units = num_envs * unroll_length // horizon
    if units % num_minibatches:
        what = "samples (num_envs x unroll_length)"
        if horizon > 1:
            what = f"unrolls of {horizon} steps (num_envs x unroll_length / gae_horizon)"
        raise ConfigError(
            f"a rollout of {units} {what} does not split into num_minibatches={num_minibatches} "
            "equal minibatches; pick sizes whose product is a multiple of num_minibatches."
        )
