"""The configs of TD3's deterministic family: TD3, FastTD3 (a C51 critic, AdamW, wide networks)
and PQL (no target actor, a double-Q or C51 critic). No jax here: the agents built from them
live in `jaxrl.agents.td3` (and fast_td3, pql)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, ClassVar

from jaxrl.agents.configs.heads import (
    ACTOR_Q,
    CATEGORICAL_HYPERPARAMETERS,
    CRITICS,
    CategoricalSettings,
)
from jaxrl.agents.configs.network import NetworkSettings, check_network_config
from jaxrl.config.choices import Choices

if TYPE_CHECKING:
    from jaxrl import heads


@dataclasses.dataclass(frozen=True)
class TD3Config(NetworkSettings):
    # Published defaults (Fujimoto et al. 2018) unless noted. critic_hidden and
    # matmul_precision: NetworkSettings (jaxrl.agents.configs.network).

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the deterministic policy network."""
    num_critics: int = 2
    """Critics in the ensemble; the target takes the min over them (clipped double Q)."""
    critic_layer_norm: bool = False
    """LayerNorm in each critic hidden layer (before the ReLU, or after: critic_norm_after_relu)."""
    critic_norm_after_relu: bool = False
    """The critics' LayerNorm after the ReLU (ReBRAC's and Brax's order) rather than before."""
    critic_residual: bool = False
    """Critics of residual LayerNorm blocks (BRO/SimBa) instead of an MLP; needs equal widths."""
    actor_lr: float = 3e-4
    """Learning rate of the policy (Adam, or AdamW when weight_decay > 0)."""
    critic_lr: float = 3e-4
    """Learning rate of the critics (Adam, or AdamW when weight_decay > 0)."""
    tau: float = 0.005
    """Polyak rate of the target actor and critics, moved at every actor update."""
    exploration_noise: float = 0.1
    """Std of the Gaussian acting noise (actions in [-1, 1]), times the loop's noise scale.
    FastTD3 and PQL use 1, so that the loop's per-env noise scales are the stds."""
    target_noise: float = 0.2
    """Std of the target policy smoothing noise, added to the target actions."""
    target_noise_clip: float = 0.5
    """The target policy smoothing noise is clipped to +-target_noise_clip."""
    policy_delay: int = 2
    """Critic updates per actor (and target) update."""
    target_actor: bool = True
    """Bootstrap with a Polyak-averaged target actor; False: with the online actor (PQL)."""
    critic_target_every_update: bool = False
    """Move the target critics at every critic update (FastTD3's code), not only at the
    actor's (the TD3 paper: every policy_delay updates). The target actor, where there is one,
    still moves with the actor."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets."""
    actor_q: Annotated[str, Choices(ACTOR_Q)] = "first"
    """What the actor climbs: the "first" critic (the paper), the "min" (FastTD3) or the "mean"
    of the critics' values."""
    weight_decay: float = 0.0
    """AdamW weight decay of actor and critic; 0: Adam, no decay (FastTD3: 0.1)."""

    # Data, not program: these live in the agent state (the learning rates and weight decay in
    # the optimiser states), so settings that differ only in them train together under vmap.
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "tau",
        "exploration_noise",
        "target_noise",
        "target_noise_clip",
        "reward_scale",
        "weight_decay",
    )
    CONSUMED: ClassVar[tuple[str, ...]] = ("actor_lr", "critic_lr", "weight_decay")
    """The ARRAY_FIELDS read once, by the optimisers. `act` and `update` read the others from the
    state's `hp` (`base.state_hyperparameters`)."""

    def __post_init__(self):
        check_network_config(self, residual=self.critic_residual)
        for name in ("exploration_noise", "target_noise", "target_noise_clip", "weight_decay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    def head(self) -> heads.Head:
        """What the critics predict (`jaxrl.heads`): one value each (FastTD3: C51)."""
        from jaxrl import heads  # jax: imported when an agent is built, not with its config

        return heads.Scalar()


@dataclasses.dataclass(frozen=True)
class FastTD3Config(TD3Config, CategoricalSettings):
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
    actor_q: str = "min"
    num_atoms: int = 101
    v_min: float = -250.0  # [-10, 10] for MuJoCo Playground tasks
    v_max: float = 250.0

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *TD3Config.ARRAY_FIELDS,
        *CATEGORICAL_HYPERPARAMETERS,
    )

    def __post_init__(self):
        super().__post_init__()
        self.check_support()

    def head(self) -> heads.Head:
        from jaxrl import heads

        return heads.Categorical(self.num_atoms)


@dataclasses.dataclass(frozen=True)
class PQLConfig(TD3Config, CategoricalSettings):
    # Defaults of the public implementation (docs/ALGORITHMS.md, "impl").
    actor_lr: float = 5e-4
    critic_lr: float = 5e-4
    tau: float = 0.05
    policy_delay: int = 2  # critic:actor update ratio
    target_actor: bool = False
    # Per-env std comes from the loop's noise scale, linspace(0.05, 0.8): the base std is 1.
    exploration_noise: float = 1.0
    critic: Annotated[str, Choices(CRITICS)] = "double_q"
    """"double_q": scalar critics; "c51": categorical ones over num_atoms in [v_min, v_max]
    (PQL-D)."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *TD3Config.ARRAY_FIELDS,
        *CATEGORICAL_HYPERPARAMETERS,
    )

    def __post_init__(self):
        super().__post_init__()
        if self.critic == "c51":
            self.check_support()

    def head(self) -> heads.Head:
        from jaxrl import heads  # jax: imported when an agent is built, not with its config

        return heads.of_critic(self.critic, self.num_atoms)
