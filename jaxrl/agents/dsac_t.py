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

from jaxrl.agents import sac
from jaxrl.agents.base import Agent
from jaxrl.agents.configs.sac import DSACTConfig  # jax-free (jaxrl.agents.configs), re-exported


def make(config: DSACTConfig = DSACTConfig()) -> Agent:
    return sac.make(config)._replace(name="dsac_t")
