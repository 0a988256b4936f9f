"""FastTD3 (Seo et al. 2025): TD3 scaled out. A C51 distributional twin critic with clipped
double Q on distributions, AdamW, wide networks, very large batches drawn from many parallel
envs, each env exploring with its own noise std redrawn at every reset.

TD3 (`jaxrl.agents.td3`) with the critic head `jaxrl.heads.Categorical`: each critic predicts
a distribution over `num_atoms` atoms in [v_min, v_max]; the target is the next distribution of
the target critic with the lower expected value, shifted by the reward and projected back onto
the atoms; the critics minimise the cross-entropy to it, and the actor climbs the lower of the
two expected values. `LOOP_DEFAULTS` are the loop settings the agent brings to any TrainConfig
that leaves them unset, so `jaxrl train --algo fast_td3` explores as FastTD3 does, preset or not.
"""

from __future__ import annotations

from jaxrl.agents import td3
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.td3 import FastTD3Config  # jax-free (jaxrl.agents.configs), re-exported

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
