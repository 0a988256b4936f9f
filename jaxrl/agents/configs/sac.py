"""The configs of SAC's family: SAC and the algorithms that differ from it only in defaults
(REDQ, DroQ) or in the critic head (DSAC-T), FastSAC (a C51 head, AdamW and its own update
order), and CrossQ, SAC without target networks. No jax here: the agents built from them live
in `jaxrl.agents.sac` (and redq, droq, dsac_t, fast_sac, crossq; what they share in
`jaxrl.agents.sac_family`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, ClassVar

from jaxrl.agents.configs.heads import (
    CATEGORICAL_HYPERPARAMETERS,
    CRITICS,
    GAUSSIAN_HYPERPARAMETERS,
    CategoricalSettings,
)
from jaxrl.agents.configs.network import (
    ACTIVATION_NAMES,
    InitSettings,
    NetworkSettings,
    check_network_config,
)
from jaxrl.config.choices import Choices

if TYPE_CHECKING:
    from jaxrl import heads

TEMPERATURE_LOSSES = ("log_alpha", "alpha")
TEMPERATURE_DRAWS = ("actor", "own")
TRUNCATIONS = ("bootstrap", "mask")
ACTOR_Q = ("min", "mean")  # how the actor's loss reduces the critics


@dataclasses.dataclass(frozen=True)
class SACConfig(InitSettings):
    # Published defaults (Haarnoja et al. 2018, v2 paper, Table 1) unless noted. Widths,
    # matmul precision and kernel_init: InitSettings (jaxrl.agents.configs.network).

    num_critics: int = 2
    """Critics in the ensemble; the target takes the min over them (or over num_target_critics)."""
    critic_layer_norm: bool = False
    """LayerNorm in each critic hidden layer (MuJoCo Playground's Brax SAC runs use LayerNorm)."""
    critic_residual: bool = False
    """Critics of residual LayerNorm blocks (BRO/SimBa) instead of an MLP; needs equal widths."""
    critic_norm_after_relu: bool = False
    """The critics' LayerNorm after the ReLU (Brax's MLP) rather than before it (DroQ's order)."""
    softplus_std: bool = False
    """Policy std from Brax's head, softplus(raw) + 0.001, instead of a squashed log-std.
    True: std 0.69 at init, no upper bound; False: exp of a log-std squashed into [-5, 2]
    (std 0.22 at init)."""
    activation: Annotated[str, Choices(ACTIVATION_NAMES)] = "relu"
    """Hidden activation of the policy and the critics: "relu", or "swish" (SiLU, FastSAC's)."""
    actor_layer_norm: bool = False
    """LayerNorm in each policy hidden layer, before the activation (FastSAC)."""
    log_std_max: float = 2.0
    """Upper bound of the policy's squashed log-std, whose lower bound is -5 (FastSAC: 0).
    Unused with softplus_std."""
    log_std_clip: bool = False
    """The policy's raw log-std clipped to [-5, log_std_max] (EDAC's and SAC-N's head)
    instead of squashed smoothly into it: std 1 at initialisation (the squashed head's 0.22),
    and a zero gradient beyond the bounds. Unused with softplus_std."""
    zero_policy_head: bool = False
    """The policy's output layer starts at zero: mean 0 and log-std mid-range in every state.
    FastSAC's initialisation: with log_std_max 0 every action dimension starts at std exp(-2.5)."""
    actor_lr: float = 3e-4
    """Adam learning rate of the policy."""
    critic_lr: float = 3e-4
    """Adam learning rate of the critics."""
    alpha_lr: float = 3e-4
    """Adam learning rate of the entropy temperature (learned as log alpha)."""
    tau: float = 0.005
    """Polyak rate of the target critics, moved towards the critics after every update."""
    init_alpha: float = 1.0
    """Initial entropy temperature alpha."""
    target_entropy_scale: float = 1.0
    """Target entropy = -target_entropy_scale * |A|: 1.0 in the paper, 0.5 in Brax's SAC."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets."""
    temperature_loss: Annotated[str, Choices(TEMPERATURE_LOSSES)] = "log_alpha"
    """The temperature's loss. "log_alpha": -log(alpha) E[log pi + H_target] (its gradient in
    log alpha does not depend on alpha). "alpha" (Brax's SAC): alpha E[-log pi - H_target], whose
    gradient scales with alpha, so Adam's steps shrink for a while after alpha falls."""
    truncation: Annotated[str, Choices(TRUNCATIONS)] = "bootstrap"
    """Rows whose episode ended at the time limit: "bootstrap" (their target bootstraps from the
    state reached, as every other row's) or "mask" (Brax's SAC: weight 0 in the critic loss,
    still counted in its mean over rows, so the loss shrinks with their share)."""
    temperature_draw: Annotated[str, Choices(TEMPERATURE_DRAWS)] = "actor"
    """The action sample the temperature's loss reads: "actor" (the actor loss's own draw) or
    "own" (Brax's SAC: a second draw from the same policy, with a key of its own; one more
    sample, no more network passes). Both are unbiased estimates of the same expectation."""

    # REDQ / DroQ knobs (off by default, i.e. plain SAC):
    num_target_critics: int | None = None
    """Size of the random subset of critics the target's min is over (REDQ: 2); None: all."""
    actor_q: Annotated[str, Choices(ACTOR_Q)] = "min"
    """How the actor's loss reduces the critics: "min" over them (SAC) or "mean" (REDQ)."""
    critic_dropout: float = 0.0
    """Dropout rate in each critic hidden layer; 0: none (DroQ: 0.01, with LayerNorm).
    On in every critic pass of an update, the target pass included."""
    policy_delay: int = 1
    """Critic updates per actor and temperature update; 1: both every update (SAC)."""
    actor_uses_updated_critic: bool = True
    """The actor's loss reads the critics updated in the same step (the SAC paper's pseudo-code).
    False: the critics the step started from (Brax's SAC: actor, critic and temperature all
    computed from the same parameters, no data dependency)."""
    # Data, not program: these live in the agent state (the learning rates in the optimiser
    # states), so settings that differ only in them train together under vmap (`--vmap`).
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "tau",
        "init_alpha",
        "target_entropy_scale",
        "reward_scale",
    )
    CONSUMED: ClassVar[tuple[str, ...]] = ("actor_lr", "critic_lr", "alpha_lr", "init_alpha")
    """The ARRAY_FIELDS read once, by the optimisers and `init`. `act` and `update` read the
    others from the state's `hp` (`base.state_hyperparameters`)."""

    def __post_init__(self):
        check_network_config(self, residual=self.critic_residual)
        if self.log_std_max <= -5.0:
            raise ValueError(
                f"log_std_max must be above -5 (the lower bound), got {self.log_std_max}"
            )
        if self.num_target_critics is not None and not (
            1 <= self.num_target_critics <= self.num_critics
        ):
            raise ValueError(
                f"num_target_critics must be in [1, num_critics={self.num_critics}], "
                f"got {self.num_target_critics}"
            )
        if not 0 <= self.critic_dropout < 1:
            raise ValueError(f"critic_dropout must be in [0, 1), got {self.critic_dropout}")

    def head(self) -> heads.Head:
        """What the critics predict (`jaxrl.heads`): one value each (DSAC-T: a Gaussian)."""
        from jaxrl import heads  # jax: imported when an agent is built, not with its config

        return heads.Scalar()


@dataclasses.dataclass(frozen=True)
class REDQConfig(SACConfig):
    num_critics: int = 10  # N (paper)
    num_target_critics: int | None = 2  # M (paper)
    actor_q: str = "mean"  # actor on the mean over all N critics (paper)
    # Actor and temperature every 20 critic updates: the delay the public JAX implementation
    # (ikostrikov/jaxrl) pairs with UTD 20; the paper updates the actor once per env step.
    policy_delay: int = 20


@dataclasses.dataclass(frozen=True)
class DroQConfig(SACConfig):
    num_critics: int = 2
    critic_dropout: float = 0.01  # paper; SBX's default too
    critic_layer_norm: bool = True
    policy_delay: int = 20  # SBX README: policy_delay 20 with gradient_steps 20


@dataclasses.dataclass(frozen=True)
class DSACTConfig(SACConfig):
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
        *SACConfig.ARRAY_FIELDS,
        *GAUSSIAN_HYPERPARAMETERS,
    )

    def __post_init__(self):
        super().__post_init__()
        if self.td_bound <= 0 or self.std_bias <= 0 or not 0 < self.std_tau <= 1:
            raise ValueError(
                f"need td_bound > 0, std_bias > 0 and std_tau in (0, 1], got {self.td_bound}, "
                f"{self.std_bias}, {self.std_tau}"
            )

    def head(self) -> heads.Head:
        from jaxrl import heads

        return heads.Gaussian()


@dataclasses.dataclass(frozen=True)
class FastSACConfig(SACConfig, CategoricalSettings):
    # FastSAC (Seo et al. 2025, "Learning Sim-to-Real Humanoid Locomotion in 15 Minutes") as its
    # public implementation sets it (amazon-far/holosoma, `FastSACConfig` and the `fast_sac`
    # algo values; docs/ALGORITHMS.md, "impl"). The update's own order is jaxrl.agents.fast_sac.
    actor_hidden: tuple[int, ...] = (512, 256, 128)  # actor_hidden_dim 512, halved per layer
    critic_hidden: tuple[int, ...] = (768, 384, 192)  # critic_hidden_dim 768, halved per layer
    activation: str = "swish"  # SiLU, in the policy and the critics
    critic_layer_norm: bool = True  # Linear -> LayerNorm -> SiLU, in both networks
    actor_layer_norm: bool = True
    log_std_max: float = 0.0  # log-std squashed into [-5, 0]
    zero_policy_head: bool = True  # mean and log-std layers' weights and biases start at 0
    actor_lr: float = 3e-4
    """AdamW learning rate of the policy."""
    critic_lr: float = 3e-4
    """AdamW learning rate of the critics."""
    alpha_lr: float = 3e-4
    """AdamW learning rate of the entropy temperature (learned as log alpha)."""
    tau: float = 0.125
    init_alpha: float = 0.001
    target_entropy_scale: float = 0.0  # target_entropy_ratio 0: a target entropy of 0
    temperature_loss: str = "alpha"  # -alpha E[log pi + H], its gradient scaled by alpha
    temperature_draw: str = "actor"
    """Unused: FastSAC's temperature reads the bootstrap actions' draw at s' ("actor" only)."""
    num_critics: int = 2
    """Critics in the ensemble, each learning from its own target critic (no min over them)."""
    actor_q: str = "mean"  # the actor climbs the mean of the critics' expected values
    policy_delay: int = 4
    """Critic updates per actor update (the temperature steps at every update): 4, the
    reference's policy_frequency, 2 actor updates per 8 critic updates."""
    v_min: float = -20.0
    v_max: float = 20.0
    weight_decay: float = 0.001
    """AdamW weight decay of the policy and the critics (their optimisers are AdamW)."""
    adam_b2: float = 0.95
    """Adam's beta2 (decay of the squared gradients' running mean) in all three optimisers."""
    alpha_weight_decay: float = 0.01
    """AdamW weight decay of log alpha: torch's default, which the reference leaves in place."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *SACConfig.ARRAY_FIELDS,
        "weight_decay",
        "adam_b2",
        "alpha_weight_decay",
        *CATEGORICAL_HYPERPARAMETERS,
    )
    CONSUMED: ClassVar[tuple[str, ...]] = (
        *SACConfig.CONSUMED,
        "weight_decay",
        "adam_b2",
        "alpha_weight_decay",
    )

    def __post_init__(self):
        super().__post_init__()
        self.check_support()
        if self.weight_decay < 0 or self.alpha_weight_decay < 0 or not 0 < self.adam_b2 < 1:
            raise ValueError(
                "need weight_decay >= 0, alpha_weight_decay >= 0 and adam_b2 in (0, 1), got "
                f"{self.weight_decay}, {self.alpha_weight_decay}, {self.adam_b2}"
            )
        # FastSAC's temperature reads the bootstrap draw at s', and every critic learns its own
        # target critic's projection: SAC's other choices for these do not apply.
        if self.temperature_draw != "actor":
            raise ValueError("FastSAC's temperature reads the bootstrap action's draw at s'")
        if self.num_target_critics is not None:
            raise ValueError("FastSAC's critics each learn from their own target critic")

    def head(self) -> heads.Head:
        from jaxrl import heads

        return heads.Categorical(self.num_atoms, clipped_double_q=False)


@dataclasses.dataclass(frozen=True)
class CrossQConfig(NetworkSettings, CategoricalSettings):
    # Authors' defaults (docs/ALGORITHMS.md) unless noted.

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the policy network, each layer with BatchRenorm."""
    critic_hidden: tuple[int, ...] = (2048, 2048)
    """Hidden-layer widths of each critic, each layer with BatchRenorm (SBX uses 1024)."""
    num_critics: int = 2
    """Critics in the ensemble; the target takes the min over them."""
    actor_lr: float = 1e-3
    """Adam learning rate of the policy."""
    critic_lr: float = 1e-3
    """Adam learning rate of the critics."""
    alpha_lr: float = 1e-3
    """Adam learning rate of the entropy temperature (learned as log alpha)."""
    adam_b1: float = 0.5
    """Adam's beta1 (decay of the gradients' running mean) in all three optimisers."""
    policy_delay: int = 3
    """Critic updates per actor and temperature update."""
    bn_momentum: float = 0.99
    """Momentum of the BatchRenorm running statistics (their decay per training pass)."""
    bn_warmup_steps: int = 100_000
    """Updates for which BatchRenorm acts as BatchNorm (the actor counts its own updates)."""
    bn_after_relu: bool = False
    """Each hidden layer as Dense -> ReLU -> BatchRenorm (the authors' code and SBX's) rather
    than Dense -> BatchRenorm -> ReLU, in the critics and the actor."""
    log_std_clip: bool = True
    """The policy's log-std as the authors' code and SBX make it: its raw output clipped to
    [-20, 2] (std 1 at initialisation). False: squashed smoothly into [-5, 2] (std 0.22 there),
    which explores too little to swing CartpoleSwingup up reliably (docs/ALGORITHMS.md)."""
    init_alpha: float = 1.0
    """Initial entropy temperature alpha."""
    target_entropy_scale: float = 1.0
    """Target entropy = -target_entropy_scale * |A|, |A| the number of action dimensions."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this in the critic targets."""
    critic: Annotated[str, Choices(CRITICS)] = "double_q"
    """"double_q": scalar critics (the paper); "c51": categorical ones over num_atoms in
    [v_min, v_max], through the same critic heads as SAC's (`jaxrl.heads`)."""

    # Data, not program: these live in the agent state (learning rates and beta1 in the
    # optimiser states), so settings that differ only in them train together under vmap.
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "adam_b1",
        "init_alpha",
        "target_entropy_scale",
        "reward_scale",
        *CATEGORICAL_HYPERPARAMETERS,
    )
    CONSUMED: ClassVar[tuple[str, ...]] = (
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "adam_b1",
        "init_alpha",
    )
    """The ARRAY_FIELDS read once, by the optimisers and `init`. `act` and `update` read the
    others from the state's `hp` (`base.state_hyperparameters`)."""

    def __post_init__(self):
        check_network_config(self)
        if not 0 <= self.adam_b1 < 1 or not 0 < self.bn_momentum < 1:
            raise ValueError("adam_b1 must be in [0, 1) and bn_momentum in (0, 1)")
        if self.critic == "c51":
            self.check_support()

    def head(self) -> heads.Head:
        """What the critics predict (`jaxrl.heads`): one value each, or C51 distributions."""
        from jaxrl import heads  # jax: imported when an agent is built, not with its config

        return heads.of_critic(self.critic, self.num_atoms)
