"""The configs of the offline agents: SAC-N and EDAC (An et al. 2021, "Uncertainty-Based
Offline RL with Diversified Q-Ensemble"; the agent `jaxrl.agents.edac`) and TD3+BC (Fujimoto
and Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning"; `jaxrl.agents.td3_bc`),
ReBRAC (Tarasov et al. 2023; `jaxrl.agents.rebrac`), E2O (`jaxrl.agents.e2o`) and SAC-RND
(Nikulin et al. 2023; `jaxrl.agents.sac_rnd`). No jax here."""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar

from jaxrl.agents.configs.heads import ACTOR_Q
from jaxrl.agents.configs.sac import TEMPERATURE_LOSSES, SACConfig
from jaxrl.agents.configs.td3 import TD3Config
from jaxrl.config.choices import Choices

# E2OConfig.online_target's values.
ONLINE_TARGETS = ("weighted_min_pair", "random_min_pair", "min")


@dataclasses.dataclass(frozen=True)
class EDACConfig(SACConfig):
    # The paper's and its reference code's settings for MuJoCo (as CORL's edac.py keeps
    # them): 3 x 256 hidden layers, 10 critics, eta 1, learning rates 3e-4, tau 0.005, the
    # raw log-std clipped to [-5, 2], batch 256 (the loop's). Their initialisation (biases
    # 0.1, output layers uniform in +-3e-3) is not reproduced: jaxrl's LeCun-normal one.
    actor_hidden: tuple[int, ...] = (256, 256, 256)
    critic_hidden: tuple[int, ...] = (256, 256, 256)
    num_critics: int = 10
    log_std_clip: bool = True
    eta: float = 1.0
    """Weight of the ensemble gradient-diversity term in the critics' loss (the paper's eta):
    the mean over rows of the sum over critic pairs i != j of the cosine between dQ_i/da and
    dQ_j/da, divided by N - 1. 0: SAC-N."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (*SACConfig.ARRAY_FIELDS, "eta")

    def __post_init__(self):
        super().__post_init__()
        if self.num_critics < 2:
            raise ValueError(f"{type(self).__name__} needs num_critics >= 2")
        if self.eta < 0:
            raise ValueError(f"eta must be >= 0, got {self.eta}")
        if self.policy_delay != 1 or self.critic_dropout or self.num_target_critics:
            raise ValueError(
                "SAC-N and EDAC update the actor every step from all critics, without dropout "
                "(policy_delay 1, critic_dropout 0, num_target_critics unset)"
            )


@dataclasses.dataclass(frozen=True)
class SACNConfig(EDACConfig):
    # SAC-N: EDAC without the diversity term. The paper's N depends on the task (10 to 500
    # for MuJoCo); 10 here, with the batch and lr of the loop.
    eta: float = 0.0
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = SACConfig.ARRAY_FIELDS  # no eta to vary

    def __post_init__(self):
        super().__post_init__()
        if self.eta:
            raise ValueError(f"SAC-N has no diversity term (eta {self.eta}): that is --algo edac")


@dataclasses.dataclass(frozen=True)
class TD3BCConfig(TD3Config):
    # The paper's and the author's code's settings: TD3's (2 x 256, lr 3e-4, tau 0.005,
    # policy delay 2, target noise 0.2 clipped at 0.5), alpha 2.5, batch 256 (the loop's), the
    # states normalised by the dataset's statistics (the loop's normalize_observations; jaxrl
    # divides by sqrt(var + 1e-8) and clips at 10, the author's code by std + 1e-3).
    bc_alpha: float = 2.5
    """The actor's loss is -lambda Q1(s, pi(s)) + mean (pi(s) - a)^2, lambda = bc_alpha over
    the batch's mean |Q1(s, pi(s))| (held constant in the gradient): the paper's alpha."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (*TD3Config.ARRAY_FIELDS, "bc_alpha")

    def __post_init__(self):
        super().__post_init__()
        if self.bc_alpha < 0:
            raise ValueError(f"bc_alpha must be >= 0, got {self.bc_alpha}")


@dataclasses.dataclass(frozen=True)
class ReBRACConfig(TD3Config):
    # ReBRAC (Tarasov et al. 2023, "Revisiting the Minimalist Approach to Offline RL"; its
    # code tinkoff-ai/ReBRAC, as CORL's rebrac.py keeps it): TD3+BC with 3 x 256 layers,
    # LayerNorm after each critic ReLU (none in the actor), learning rates 1e-3, the actor
    # climbing the critics' minimum, and a second penalty in the critics' target. The batch
    # (1024) is the loop's (preset rebrac_d4rl); the states are not normalised (the code's
    # default). The two penalties' weights are tuned per dataset in the paper (its appendix
    # tables); 1 here, the code's default. Its initialisation (biases 0.1, PyTorch-uniform
    # kernels, output layers uniform in +-1e-3/3e-3) is not reproduced: jaxrl's LeCun normal.
    actor_hidden: tuple[int, ...] = (256, 256, 256)
    critic_hidden: tuple[int, ...] = (256, 256, 256)
    critic_layer_norm: bool = True
    critic_norm_after_relu: bool = True
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    actor_q: Annotated[str, Choices(ACTOR_Q)] = "min"
    actor_bc_coef: float = 1.0
    """The actor's loss is mean(actor_bc_coef |pi(s) - a|^2 - lambda Q(s, pi(s))), the squared
    distance summed over action dimensions, Q the critics' minimum, lambda = 1 / mean |Q| over
    the batch (held constant in the gradient) with normalize_q: the paper's beta_1."""
    critic_bc_coef: float = 1.0
    """The critics' target is r + gamma (1 - terminated) (min_i Q'_i(s', a') - critic_bc_coef
    |a' - a_next|^2), a' the smoothed target action and a_next the action the dataset took at
    s' (no penalty where the row ended its episode): the paper's beta_2."""
    normalize_q: bool = True
    """Divide the actor's Q term by the batch's mean |Q| (held constant in the gradient)."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *TD3Config.ARRAY_FIELDS,
        "actor_bc_coef",
        "critic_bc_coef",
    )

    def __post_init__(self):
        super().__post_init__()
        for name in ("actor_bc_coef", "critic_bc_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclasses.dataclass(frozen=True)
class E2OConfig(EDACConfig):
    # E2O / ENOTO (Zhao et al. 2023, "Ensemble-based Offline-to-Online Reinforcement Learning:
    # From Pessimistic Learning to Optimistic Exploration"): an N-critic offline agent (here
    # SAC-N, or EDAC with eta > 0) carried online with its ensemble; online, the pessimistic
    # term dropped (eta), the target's minimum over all N loosened to WeightedMinPair, and
    # exploration by SUNRISE's upper confidence bound over the critics. 10 critics, as the
    # paper's E2O-CQL-10 and EDAC's MuJoCo settings.
    eta: float = 0.0
    online_target: Annotated[str, Choices(ONLINE_TARGETS)] = "weighted_min_pair"
    """The online target's value of the N target critics: "weighted_min_pair" (the mean over
    all pairs of their minimum, the paper's choice), "random_min_pair" (the minimum of one pair
    drawn per update) or "min" (over all N, as offline: no loosening)."""
    pessimism_decay_updates: int = 0
    """Online updates over which the target moves linearly from the offline minimum to the
    online one (and eta to 0); 0: at once at the switch, as the paper."""
    ucb_lambda: float = 1.0
    """Online exploration (SUNRISE): of `ucb_candidates` actions drawn from the policy, the one
    of highest mean + ucb_lambda x std over the critics. 0 with 1 candidate: SAC's draw."""
    ucb_candidates: int = 10
    """Actions drawn per env step for the upper confidence bound; 1: no selection."""

    # eta shapes E2O's program (at 0 no diversity term is computed), so it is no data to vary
    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (*SACConfig.ARRAY_FIELDS, "ucb_lambda")

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.pessimism_decay_updates, int) or self.pessimism_decay_updates < 0:
            raise ValueError(
                f"pessimism_decay_updates must be an integer >= 0, got "
                f"{self.pessimism_decay_updates!r}"
            )
        if not isinstance(self.ucb_candidates, int) or self.ucb_candidates < 1:
            raise ValueError(f"ucb_candidates must be an integer >= 1, got {self.ucb_candidates!r}")
        if self.ucb_lambda < 0:
            raise ValueError(f"ucb_lambda must be >= 0, got {self.ucb_lambda}")


@dataclasses.dataclass(frozen=True)
class SACRNDConfig(SACConfig):
    # SAC-RND (Nikulin et al. 2023, "Anti-Exploration by Random Network Distillation"; its code
    # tinkoff-ai/sac-rnd, as CORL's sac_rnd_jax.py keeps it, with the per-dataset configs'
    # settings for MuJoCo): two LayerNorm critics of 3 x 256 (LayerNorm after each ReLU), a
    # 3 x 256 actor whose raw log-std is clipped to [-5, 2], learning rates 1e-3 at batch 1024
    # (the loop's; preset sac_rnd_d4rl), the temperature's loss alpha (H - target), 1,000 RND
    # updates before SAC's, RND 256 wide with a 32-dimensional embedding, learning rate 3e-4.
    # The paper tunes the two penalties' weights per dataset (its appendix); 1 here, the code's
    # default. Its initialisation of the actor and critics (biases 0.1, output layers uniform in
    # +-1e-3 / 3e-3) is not reproduced: jaxrl's LeCun normal; the RND's (PyTorch's) is.
    actor_hidden: tuple[int, ...] = (256, 256, 256)
    critic_hidden: tuple[int, ...] = (256, 256, 256)
    critic_layer_norm: bool = True
    critic_norm_after_relu: bool = True
    log_std_clip: bool = True
    log_std_max: float = 2.0
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    temperature_loss: Annotated[str, Choices(TEMPERATURE_LOSSES)] = "alpha"
    actor_beta: float = 1.0
    """The actor's loss is E[alpha log pi(a|s) + actor_beta b(s, a) - min_i Q_i(s, a)], a ~
    pi(s), b the RND bonus: the anti-exploration penalty on actions unlike the data's."""
    critic_beta: float = 1.0
    """The critics' target is r + gamma (1 - terminated) (min_i Q'_i(s', a') - alpha log
    pi(a'|s') - critic_beta b(s', a')), a' ~ pi(s')."""
    rnd_pretrain_updates: int = 1000
    """Updates at the start of training that train the RND predictor alone (the actor,
    critics and temperature wait); after them the RND is frozen and SAC trains."""
    rnd_hidden: int = 256
    """Width of the RND predictor's and target's layers."""
    rnd_embedding: int = 32
    """Size of the RND embedding: b(s, a) = |f(s, a) - g(s, a)|^2 / std, f the predictor, g
    the fixed random target, std that of the squared errors over the pretraining's rows."""
    rnd_lr: float = 3e-4
    """Adam's learning rate for the RND predictor."""

    ARRAY_FIELDS: ClassVar[tuple[str, ...]] = (
        *SACConfig.ARRAY_FIELDS,
        "actor_beta",
        "critic_beta",
    )

    def __post_init__(self):
        super().__post_init__()
        for name in ("actor_beta", "critic_beta"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("rnd_pretrain_updates", "rnd_hidden", "rnd_embedding"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.rnd_lr <= 0:
            raise ValueError(f"rnd_lr must be > 0, got {self.rnd_lr}")
        if self.policy_delay != 1 or self.critic_dropout or self.num_target_critics:
            raise ValueError(
                "SAC-RND updates the actor every step from its critics' minimum, without "
                "dropout (policy_delay 1, critic_dropout 0, num_target_critics unset)"
            )
