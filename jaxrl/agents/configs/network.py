"""The network settings every agent config shares (widths, matmul precision, initialisation),
their allowed values and their checks. Imports no jax: `jaxrl.networks` maps these names to
flax's layers and initialisers."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from jaxrl.config.choices import Choices, check_choices, check_finite

MATMUL_PRECISIONS = ("float32", "bfloat16", "mixed")
"""The agents' `matmul_precision` choices (`networks.dense_precision`)."""

KERNEL_INIT_NAMES = ("lecun_normal", "lecun_uniform")
"""The agents' `kernel_init` choices, the keys of `networks.KERNEL_INITS`."""

ACTIVATION_NAMES = ("relu", "swish")
"""PPO's `activation` choices, the keys of `networks.ACTIVATIONS`."""


def check_matmul_precision(matmul_precision: str) -> None:
    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(
            f"matmul_precision must be one of {', '.join(MATMUL_PRECISIONS)}, "
            f"got {matmul_precision!r}"
        )


@dataclasses.dataclass(frozen=True)
class NetworkSettings:
    """The first fields of every agent config: the policy's and the critics' widths and the
    precision of their matmuls. A config redeclares a field to change its default (and its
    docstring where its networks differ); a redeclared field keeps its place, first."""

    actor_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of the policy network."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Hidden-layer widths of each critic network."""
    matmul_precision: Annotated[str, Choices(MATMUL_PRECISIONS)] = "float32"
    """Network arithmetic: "float32", "bfloat16" (bf16 products, float32 activations; GPU
    only) or "mixed" (bf16 hidden activations). With "bfloat16" every product's operands are
    rounded to bfloat16 and summed in float32, in the backward pass too (tensor-core speed on
    GPUs); on a CPU it computes in float32. With "mixed" (PyTorch's autocast, as FastTD3 and
    FastSAC train) the hidden layers also keep their outputs, and so the activations and the
    backward pass's elementwise work, in bfloat16, half the memory traffic; output layers
    return float32. It computes so on a CPU too (slower there). Parameters, optimiser states,
    norms and losses stay float32 in every mode (`networks.dense`)."""


@dataclasses.dataclass(frozen=True)
class InitSettings(NetworkSettings):
    """NetworkSettings and the networks' weight initialisation (SAC's family and PPO; TD3's
    and CrossQ's networks keep flax's default)."""

    kernel_init: Annotated[str, Choices(KERNEL_INIT_NAMES)] = "lecun_normal"
    """Weight initialisation of the networks: "lecun_normal" (flax's default, a truncated
    normal of variance 1 / fan_in) or "lecun_uniform" (Brax's networks: a uniform of the same
    variance). Biases start at 0 either way."""


def check_network_config(config: Any, residual: bool = False) -> None:
    """Shared checks of an agent config, called first by every agent config's __post_init__:
    widths, counts >= 1 and learning rates > 0, by the field names the agents use, and every
    field marked with `Choices`; raises ValueError naming the field."""
    check_finite(config)
    fields = vars(config)
    for name in ("actor_hidden", "critic_hidden"):
        widths = fields[name]
        if not widths or any(w < 1 for w in widths):
            raise ValueError(f"{name} must be a non-empty list of positive widths, got {widths}")
    if residual and len(set(fields["critic_hidden"])) != 1:
        raise ValueError(
            f"critic_residual needs equal critic_hidden widths, got {fields['critic_hidden']}"
        )
    for name in ("num_critics", "policy_delay"):
        if name in fields and fields[name] < 1:
            raise ValueError(f"{name} must be >= 1, got {fields[name]}")
    for name in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha"):
        if name in fields and fields[name] <= 0:
            raise ValueError(f"{name} must be > 0, got {fields[name]}")
    check_choices(config)  # every field marked with Choices: matmul_precision, kernel_init, ...
    if "tau" in fields and not 0 < fields["tau"] <= 1:
        raise ValueError(f"tau must be in (0, 1], got {fields['tau']}")
