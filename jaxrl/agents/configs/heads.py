"""The config side of the critic heads (`jaxrl.heads`), without jax: the settings a config
offers for a head and the names of the settings a head reads from the agent state."""

from __future__ import annotations

import dataclasses

ACTOR_Q = ("min", "mean", "first")
"""How an actor's loss reduces the critics (`heads.reduce_critics`)."""

CATEGORICAL_HYPERPARAMETERS = ("v_min", "v_max")
"""The settings a C51 head reads from the state (`heads.Categorical.HYPERPARAMETERS`)."""

GAUSSIAN_HYPERPARAMETERS = ("td_bound", "std_bias", "std_tau")
"""The settings DSAC-T's head reads from the state (`heads.Gaussian.HYPERPARAMETERS`)."""

CRITICS = ("double_q", "c51")
"""A `critic` field's choices (PQL, CrossQ): scalar critics under clipped double Q, or C51
ones (`CategoricalSettings`)."""


@dataclasses.dataclass(frozen=True)
class CategoricalSettings:
    """The config fields of a C51 head, for configs that offer one (FastTD3, PQL-D)."""

    num_atoms: int = 101
    """C51 critics: atoms of the return distribution, spread evenly over [v_min, v_max]."""
    v_min: float = -250.0
    """C51 critics: the lowest return of the support (of rewards times reward_scale)."""
    v_max: float = 250.0
    """C51 critics: the highest return of the support (of rewards times reward_scale)."""

    def check_support(self) -> None:
        if self.num_atoms < 2 or self.v_min >= self.v_max:
            raise ValueError(
                f"c51 needs num_atoms >= 2 and v_min < v_max, got {self.num_atoms}, "
                f"[{self.v_min}, {self.v_max}]"
            )
