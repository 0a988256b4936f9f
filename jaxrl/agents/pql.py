"""Parallel Q-Learning (PQL, Li et al. ICML 2023).

PQL runs an actor (simulation and exploration), a V-learner (critic) and a P-learner (policy)
concurrently and keeps their rates fixed: critic updates per env step of all envs (the loop's
`updates_per_step`, 8 in the paper's runs) and critic:actor updates (`policy_delay`, 2). On one
device the three share one compiled program, with what made PQL's scheme work kept as options of the
shared loop and of TD3: mixed exploration (per-env noise std spaced evenly over [0.05, 0.8],
`exploration="linspace"`), n-step returns (`n_step=3`), no target actor, a double-Q or C51
critic ("PQL-D": `critic="c51"`, the head `jaxrl.heads.Categorical`; with `actor_q="min"` the
actor climbs the lower expected value, as FastTD3's does), and an acting policy that may lag
the learners by `acting_lag` iterations as PQL's asynchronous actor does. `LOOP_DEFAULTS` are
the loop settings the agent brings to any TrainConfig that leaves them unset. Over two devices
or more, actor and learners run on separate devices at once (`split_every`, the loop
`jaxrl.loops.split`).
"""

from __future__ import annotations

from jaxrl.agents import td3
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.td3 import PQLConfig  # jax-free (jaxrl.agents.configs), re-exported

# The loop settings of the public implementation (docs/ALGORITHMS.md, "impl"): mixed exploration
# with per-env noise std spaced evenly over [0.05, 0.8], 3-step returns, normalised observations.
LOOP_DEFAULTS = {
    "exploration": "linspace",
    "noise_scale_min": 0.05,
    "noise_scale_max": 0.8,
    "n_step": 3,
    "normalize_observations": True,
    # Over two devices or more: the actor on one, the learners on the others, exchanging data
    # and parameters every 8 iterations (jaxrl.loops.split). Ignored on one device.
    "split_every": 8,
}


def make(config: PQLConfig = PQLConfig()) -> Agent:
    return td3.make(config)._replace(name="pql", loop_defaults=LOOP_DEFAULTS)
