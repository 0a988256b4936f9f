"""REDQ (Chen et al. 2021): SAC with a large vmapped critic ensemble, the target taken as the
minimum over a random subset of M critics drawn for every update, the actor trained on the
ensemble mean, and a high update-to-data ratio (set by the loop's `updates_per_step`).

Only the defaults differ from SAC; the mechanism lives in `jaxrl.agents.sac`.
"""

from __future__ import annotations

import dataclasses

from jaxrl.agents import sac
from jaxrl.agents.base import Agent


@dataclasses.dataclass(frozen=True)
class REDQConfig(sac.SACConfig):
    num_critics: int = 10  # N (paper)
    num_target_critics: int | None = 2  # M (paper)
    actor_q: str = "mean"  # actor on the mean over all N critics (paper)
    # Actor and temperature every 20 critic updates: the delay the public JAX implementation
    # (ikostrikov/jaxrl) pairs with UTD 20; the paper updates the actor once per env step.
    policy_delay: int = 20


def make(config: REDQConfig = REDQConfig()) -> Agent:
    return sac.make(config)._replace(name="redq")
