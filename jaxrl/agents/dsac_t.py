"""DSAC-T (Duan et al. 2023, "Distributional Soft Actor-Critic with Three Refinements").

SAC whose twin critics each predict a Gaussian return distribution N(Q, sigma^2), trained with
- expected value substitution: the mean head learns from the expected target y_q, only the std
  head from a sampled return target y_z;
- twin value distribution learning: the target critic with the lower mean supplies both
  targets, and the actor maximises the lower of the two means;
- variance-based critic gradient adjustment: the gradient is scaled by the running mean of the
  predicted std (squared, plus a bias), and y_z is clipped to a few running stds around Q.

The mechanism lives in `jaxrl.agents.sac` (critic="gaussian") and the losses in
`jaxrl.distributional`; this file holds the published defaults.
"""

from __future__ import annotations

import dataclasses

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
    critic: str = "gaussian"
    td_bound: float = 3.0
    std_bias: float = 0.1
    std_tau: float = 0.005


def make(config: DSACTConfig = DSACTConfig()) -> Agent:
    return sac.make(config)._replace(name="dsac_t")
