"""DroQ (Hiraoka et al. 2022): REDQ made cheap. Two critics whose hidden layers are
Dense -> Dropout(0.01) -> LayerNorm -> ReLU, the target the min of the two target critics,
and a high update-to-data ratio (the loop's `updates_per_step`). Dropout is on in every update
(its keys threaded through `update`) and off when acting and evaluating, where the critic is
not used at all.

Only the defaults differ from SAC; the mechanism lives in `jaxrl.agents.sac` (the update) and
`jaxrl.agents.sac_family` (the losses).
"""

from __future__ import annotations

from jaxrl.agents import sac
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.sac import DroQConfig  # jax-free (jaxrl.agents.configs), re-exported


def make(config: DroQConfig = DroQConfig()) -> Agent:
    return sac.make(config)._replace(name="droq")
