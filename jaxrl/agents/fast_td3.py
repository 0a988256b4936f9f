"""FastTD3 (Seo et al. 2025): TD3 scaled out. A C51 distributional twin critic with clipped
double Q on distributions, AdamW, wide networks, very large batches drawn from many parallel
envs, each env exploring with its own noise std redrawn at every reset.

The mechanism lives in `jaxrl.agents.td3` (critic="c51") and in the shared loop (per-env noise
scales: `exploration="uniform"`, observation normalisation); this file holds the published
defaults, and `LOOP_DEFAULTS` the loop settings the agent brings to any TrainConfig that leaves
them unset (so `jaxrl train --algo fast_td3` explores as FastTD3 does, preset or not).
"""

from __future__ import annotations

import dataclasses

from jaxrl.agents import td3
from jaxrl.agents.base import Agent


@dataclasses.dataclass(frozen=True)
class FastTD3Config(td3.TD3Config):
    # Defaults of the public implementation (docs/ALGORITHMS.md, "impl").
    actor_hidden: tuple[int, ...] = (512, 256, 128)
    critic_hidden: tuple[int, ...] = (1024, 512, 256)
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    weight_decay: float = 0.1
    tau: float = 0.1
    policy_delay: int = 2
    # Per-env std comes from the loop's noise scale, U[0.001, 0.4]: the base std is 1.
    exploration_noise: float = 1.0
    target_noise: float = 0.001
    target_noise_clip: float = 0.5
    critic: str = "c51"
    num_atoms: int = 101
    v_min: float = -250.0  # [-10, 10] for MuJoCo Playground tasks
    v_max: float = 250.0


# The loop settings of the public implementation (docs/ALGORITHMS.md, "impl"): each env explores
# with its own noise std drawn from U[0.001, 0.4] at every reset, and observations are normalised.
LOOP_DEFAULTS = {
    "exploration": "uniform",
    "noise_scale_min": 0.001,
    "noise_scale_max": 0.4,
    "normalize_observations": True,
}


def make(config: FastTD3Config = FastTD3Config()) -> Agent:
    return td3.make(config)._replace(name="fast_td3", loop_defaults=LOOP_DEFAULTS)
