"""Named presets: an algorithm, a task and the hyperparameters that train it.

`jaxrl train --preset NAME` starts from one; any flag given on the command line overrides it.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # The README's first run: learns pendulum swing-up in about a minute on 2 CPU cores.
    "sac_pendulum": {
        "algo": "sac",
        "train": {
            "env": "classic/pendulum",
            "total_steps": 20_000,
            "num_envs": 16,
            "updates_per_step": 8,
            "learning_starts": 1_000,
            "eval_every": 2_000,
            "buffer_size": 100_000,
        },
        "agent": {"actor_hidden": (64, 64), "critic_hidden": (64, 64)},
    },
    "sac_inverted_pendulum": {
        "algo": "sac",
        "train": {
            "env": "brax/inverted_pendulum",
            "total_steps": 24_576,
            "num_envs": 32,
            "updates_per_step": 16,
            "learning_starts": 1_000,
            "eval_every": 2_048,
            "buffer_size": 200_000,
            "normalize_observations": True,
        },
        "agent": {
            "actor_hidden": (64, 64),
            "critic_hidden": (64, 64),
            "actor_lr": 1e-3,
            "critic_lr": 1e-3,
            "alpha_lr": 1e-3,
        },
    },
    # Brax SAC as MuJoCo Playground runs it on the DM Control Suite (ALGORITHMS.md): 128 envs,
    # batch 512, 8 updates per step, replay 4M (min 8192), lr 1e-3, gamma 0.99, LayerNorm Q.
    "sac_dmc": {
        "algo": "sac",
        "train": {
            "env": "playground/CheetahRun",
            "total_steps": 5_000_000,
            "num_envs": 128,
            "batch_size": 512,
            "updates_per_step": 8,
            "buffer_size": 4_194_304,
            "learning_starts": 8_192,
            "eval_every": 100_000,
            "normalize_observations": True,
        },
        "agent": {
            "actor_lr": 1e-3,
            "critic_lr": 1e-3,
            "alpha_lr": 1e-3,
            "critic_layer_norm": True,
        },
    },
}
