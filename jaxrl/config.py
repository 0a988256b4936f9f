"""The run configuration shared by every algorithm (the agent's own config is separate)."""

from __future__ import annotations

import dataclasses
from typing import Any

EXPLORATION_MODES = ("fixed", "uniform", "linspace")
WARMUP_ACTIONS = ("uniform", "policy")

# The loop-level settings an algorithm may choose for itself (an agent's `loop_defaults`), and
# their values for algorithms that choose none: a config field left at None takes the agent's
# value, else this one.
LOOP_DEFAULTS = {
    "normalize_observations": False,
    "n_step": 1,
    "exploration": "fixed",
    "noise_scale_min": 1.0,
    "noise_scale_max": 1.0,
    "acting_lag": 0,
}


class ConfigError(ValueError):
    """An inconsistent or out-of-range setting, found before anything is compiled."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    env: str = "classic/pendulum"
    algo: str = "sac"
    seed: int = 0
    total_steps: int = 50_000  # env steps (transitions collected), all envs together
    num_envs: int = 16
    env_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    episode_length: int | None = None  # None: the task's own time limit
    action_repeat: int | None = None  # None: the task's own
    batch_size: int = 256
    # Gradient updates per loop iteration (one iteration = one step of all num_envs envs), so
    # the classic single-env update-to-data ratio is updates_per_step / num_envs.
    # 8 updates per iteration of 16 envs: UTD 0.5, which learns pendulum in ~10k env steps.
    updates_per_step: int = 8
    buffer_size: int = 1_000_000
    learning_starts: int = 5_000  # env steps of warm-up actions before any update
    # Warm-up actions: "uniform" random in [-1, 1] (the SAC/TD3 papers), or "policy": the
    # untrained policy's own samples (Brax's SAC prefills its buffer that way).
    warmup_actions: str = "uniform"
    eval_every: int = 5_000  # env steps between deterministic evaluations (one chunk)
    eval_envs: int = 16
    # None: the algorithm's own default (the agent's `loop_defaults`, then `LOOP_DEFAULTS` above:
    # FastTD3 and PQL normalise observations and explore with per-env noise scales).
    normalize_observations: bool | None = None
    # Normalised observations are clipped to +-obs_clip (0: not clipped, as in Brax's trainers).
    obs_clip: float = 10.0
    gamma: float = 0.99  # discount, for 1-step and n-step bootstrapped targets alike
    n_step: int | None = None  # n-step returns, summed at sampling time (stopping at episode ends)
    # Per-env exploration noise scale (1 = the agent's own noise, 0 = deterministic):
    # "fixed" 1 for every env; "uniform": drawn from U[noise_scale_min, noise_scale_max] per env,
    # redrawn when its episode ends (FastTD3); "linspace": spaced evenly over that range (PQL).
    exploration: str | None = None
    noise_scale_min: float | None = None
    noise_scale_max: float | None = None
    # Iterations the acting parameters lag the learners (PQL's asynchronous actor); 0: none.
    acting_lag: int | None = None
    # On-policy algorithms (PPO): steps of every env per rollout, one update per rollout. The
    # replay fields above (batch_size, updates_per_step, buffer_size, learning_starts, n_step,
    # exploration, acting_lag) are off-policy only.
    unroll_length: int = 20
    # On-policy: the update reads the rollout normalised with the statistics that already
    # include it (Brax's PPO order; acting used the previous ones), or (False) with the
    # statistics it was collected under.
    renormalize_rollout: bool = False

    def __post_init__(self):
        positive = (
            "total_steps",
            "num_envs",
            "batch_size",
            "updates_per_step",
            "buffer_size",
            "eval_every",
            "eval_envs",
            "unroll_length",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("episode_length", "action_repeat"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be a positive integer or unset, got {value!r}")
        if self.n_step is not None and self.n_step < 1:
            raise ConfigError(f"n_step must be a positive integer, got {self.n_step!r}")
        if not 0 <= self.gamma <= 1:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.exploration is not None and self.exploration not in EXPLORATION_MODES:
            raise ConfigError(
                f"unknown exploration {self.exploration!r}; choose one of {EXPLORATION_MODES}"
            )
        low, high = self.noise_scale_min, self.noise_scale_max
        if (low is not None and low < 0) or (high is not None and high < 0):
            raise ConfigError(f"noise scales must be >= 0, got {low} and {high}")
        if low is not None and high is not None and low > high:
            raise ConfigError(f"need 0 <= noise_scale_min <= noise_scale_max, got {low} and {high}")
        if self.acting_lag is not None and self.acting_lag < 0:
            raise ConfigError(f"acting_lag must be >= 0, got {self.acting_lag}")
        if self.warmup_actions not in WARMUP_ACTIONS:
            raise ConfigError(
                f"unknown warmup_actions {self.warmup_actions!r}; choose one of {WARMUP_ACTIONS}"
            )
        if not self.obs_clip >= 0:
            raise ConfigError(f"obs_clip must be >= 0 (0: no clipping), got {self.obs_clip}")
        if self.learning_starts < 0:
            raise ConfigError(f"learning_starts must be >= 0, got {self.learning_starts}")
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"batch_size {self.batch_size} is larger than the replay buffer "
                f"(buffer_size {self.buffer_size}); raise buffer_size or lower batch_size."
            )
        if self.num_envs > self.buffer_size:
            raise ConfigError(
                f"num_envs {self.num_envs} exceeds buffer_size {self.buffer_size}: one step of "
                "all envs would not fit in the replay buffer; raise buffer_size."
            )
        if (self.n_step or 1) * self.num_envs > self.buffer_size:
            raise ConfigError(
                f"n_step {self.n_step} x num_envs {self.num_envs} rows do not fit in buffer_size "
                f"{self.buffer_size}; raise buffer_size."
            )
        if not self.on_policy and self.learning_starts >= self.total_steps:
            raise ConfigError(
                f"learning_starts {self.learning_starts} >= total_steps {self.total_steps}: "
                "no gradient update would ever run; lower learning_starts or raise total_steps."
            )

    def resolved(self, agent_defaults: dict[str, Any] | None = None) -> TrainConfig:
        """This config with every field left at None set: the agent's own loop defaults first
        (e.g. FastTD3's per-env noise scales), then LOOP_DEFAULTS. Explicit values stay."""
        defaults = {**LOOP_DEFAULTS, **(agent_defaults or {})}
        unknown = set(defaults) - set(LOOP_DEFAULTS)
        if unknown:
            raise ConfigError(f"loop defaults {sorted(unknown)} are not loop-level settings")
        unset = {name: value for name, value in defaults.items() if getattr(self, name) is None}
        return dataclasses.replace(self, **unset) if unset else self

    @property
    def replay_capacity(self) -> int:
        """buffer_size rounded down to whole loop iterations, so that row i + num_envs is
        always the same env's next step (n-step returns rely on it)."""
        return self.buffer_size - self.buffer_size % self.num_envs

    @property
    def on_policy(self) -> bool:
        from jaxrl import agents  # the registry knows which algorithms learn on-policy

        spec = agents.ALGORITHMS.get(self.algo)
        return spec is not None and spec.on_policy

    @property
    def iteration_unit(self) -> int:
        """Steps of all envs per loop iteration: one rollout of unroll_length for on-policy
        algorithms, one step for off-policy ones."""
        return self.unroll_length if self.on_policy else 1

    @property
    def num_chunks(self) -> int:
        """Evaluations in the run: one every eval_every env steps, but at most one per
        iteration (a step of all envs, or a rollout), so the run does not overshoot
        total_steps when an iteration is longer than eval_every."""
        per_chunk = max(self.eval_every, self.num_envs * self.iteration_unit)
        return -(-self.total_steps // per_chunk)

    @property
    def iterations_per_chunk(self) -> int:
        """Steps of all envs per chunk, spread so the run ends at the first multiple of
        num_envs * num_chunks (times unroll_length, on-policy) at or above total_steps: an
        evaluation about every eval_every env steps."""
        unit = self.num_envs * self.iteration_unit
        iterations = -(-self.total_steps // unit)
        return -(-iterations // self.num_chunks) * self.iteration_unit

    @property
    def env_steps_per_chunk(self) -> int:
        return self.iterations_per_chunk * self.num_envs
