"""DSAC-T (Duan et al. 2023, "Distributional Soft Actor-Critic with Three Refinements").

SAC (`jaxrl.agents.sac`) whose twin critics each predict a Gaussian return distribution
N(Q, sigma^2): the critic head `jaxrl.heads.Gaussian`, with the paper's three refinements:
- expected value substitution: the mean head learns from the expected target y_q, only the std
  head from a sampled return target y_z;
- twin value distribution learning: the target critic with the lower mean supplies both
  targets, and the actor maximises the lower of the two means;
- variance-based critic gradient adjustment: the gradient is scaled by the running mean of the
  predicted std (squared, plus a bias), and y_z is clipped to a few running stds around Q.
Everything else (actor, temperature, delayed actor step, Polyak targets) is SAC's.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxrl import heads
from jaxrl.agents import sac
from jaxrl.agents.base import Agent


@dataclasses.dataclass(frozen=True)
class DSACTConfig(sac.SACConfig):
    # The paper's settings (Duan et al. 2023, hyperparameter table): 3 x 256 hidden layers,
    # critic and actor lr 1e-4, temperature lr 3e-4, tau 0.005, policy delay 2, target entropy
    # -|A|, clip b = 3, bias 0.1. The paper uses GELU hidden activations; our MLPs use ReLU.
    actor_hidden: tuple[int, ...] = (256, 256, 256)
    critic_hidden: tuple[int, ...] = (256, 256, 256)
    actor_lr: float = 1e-4
    critic_lr: float = 1e-4
    alpha_lr: float = 3e-4
    policy_delay: int = 2
    td_bound: float = 3.0
    """Return samples clipped to Q +- td_bound x running mean std (the paper's b)."""
    std_bias: float = 0.1
    """The bias that keeps 1 / (sigma^2 + bias) finite as sigma -> 0."""
    std_tau: float = 0.005
    """Rate of each critic's running mean of its predicted std."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *sac.SACConfig.ARRAY_FIELDS,
        *heads.Gaussian.HYPERPARAMETERS,
    )

    def __post_init__(self):
        super().__post_init__()
        if self.td_bound <= 0 or self.std_bias <= 0 or not 0 < self.std_tau <= 1:
            raise ValueError(
                f"need td_bound > 0, std_bias > 0 and std_tau in (0, 1], got {self.td_bound}, "
                f"{self.std_bias}, {self.std_tau}"
            )

    def head(self) -> heads.Head:
        return heads.Gaussian()


def make(config: DSACTConfig = DSACTConfig()) -> Agent:
    return sac.make(config)._replace(name="dsac_t")
