"""REDQ (Chen et al. 2021): SAC with a large vmapped critic ensemble, the target taken as the
minimum over a random subset of M critics drawn for every update, the actor trained on the
ensemble mean, and a high update-to-data ratio (set by the loop's `updates_per_step`).

Only the defaults differ from SAC; the mechanism lives in `jaxrl.agents.sac` (the update) and
`jaxrl.agents.sac_family` (the losses).
"""

from __future__ import annotations

from jaxrl.agents import sac
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.sac import REDQConfig  # jax-free (jaxrl.agents.configs), re-exported


def make(config: REDQConfig = REDQConfig()) -> Agent:
    return sac.make(config)._replace(name="redq")
