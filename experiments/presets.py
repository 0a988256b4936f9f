"""Named presets: an algorithm, a task and the hyperparameters that train it.

`jaxrl train --preset NAME` starts from one; any flag given on the command line overrides it.
"""

from __future__ import annotations

from typing import Any

# CPU settings shared by the small-task presets below (measured on 2 cores).
_PENDULUM = {
    "env": "classic/pendulum",
    "total_steps": 20_000,
    "num_envs": 16,
    "updates_per_step": 8,
    "learning_starts": 1_000,
    "eval_every": 2_000,
    "buffer_size": 100_000,
}
_INVERTED_PENDULUM = {
    "env": "brax/inverted_pendulum",
    "total_steps": 24_576,
    "num_envs": 32,
    "updates_per_step": 16,
    "learning_starts": 1_000,
    "eval_every": 2_048,
    "buffer_size": 200_000,
    "normalize_observations": True,
}
_SMALL = {"actor_hidden": (64, 64), "critic_hidden": (64, 64), "actor_lr": 1e-3, "critic_lr": 1e-3}
# REDQ / DroQ on CPU: UTD 0.5 instead of the published 20, so the actor every 2nd update.
_SMALL_SAC_FAMILY = {**_SMALL, "alpha_lr": 1e-3, "policy_delay": 2}

PRESETS: dict[str, dict[str, Any]] = {
    # The README's first run: learns pendulum swing-up in about 20 s on 2 CPU cores.
    "sac_pendulum": {
        "algo": "sac",
        "train": dict(_PENDULUM),
        "agent": {"actor_hidden": (64, 64), "critic_hidden": (64, 64)},
    },
    "sac_inverted_pendulum": {
        "algo": "sac",
        "train": dict(_INVERTED_PENDULUM),
        "agent": {**_SMALL, "alpha_lr": 1e-3},
    },
    # Brax SAC as MuJoCo Playground runs it on the DM Control Suite (docs/ALGORITHMS.md): 128 envs,
    # batch 512, 8 updates per step, replay 4M (min 8192), lr 1e-3, gamma 0.99, LayerNorm Q,
    # with Brax SAC's own choices, which the parity suite measured as better on these tasks
    # (ReacherEasy, 5 seeds: 615 against 430 with the paper's squashed log-std and the rest):
    # softplus std, target entropy -|A|/2, LayerNorm after the ReLU, the actor updated against
    # the critics the step started from, the untrained policy's warm-up, no observation clip.
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
            "warmup_actions": "policy",
            "obs_clip": 0.0,
        },
        "agent": {
            "actor_lr": 1e-3,
            "critic_lr": 1e-3,
            "alpha_lr": 1e-3,
            "critic_layer_norm": True,
            "critic_norm_after_relu": True,
            "softplus_std": True,
            "target_entropy_scale": 0.5,
            "actor_uses_updated_critic": False,
        },
    },
}

for _algo, _agent in (("redq", _SMALL_SAC_FAMILY), ("droq", _SMALL_SAC_FAMILY)):
    PRESETS[f"{_algo}_pendulum"] = {"algo": _algo, "train": dict(_PENDULUM), "agent": dict(_agent)}
    PRESETS[f"{_algo}_inverted_pendulum"] = {
        "algo": _algo,
        "train": dict(_INVERTED_PENDULUM),
        "agent": dict(_agent),
    }
# DSAC-T on CPU: the SAC-family small settings; its paper's lr 1e-4 is slow for 20k steps.
for _suffix, _train in (("pendulum", _PENDULUM), ("inverted_pendulum", _INVERTED_PENDULUM)):
    PRESETS[f"dsac_t_{_suffix}"] = {
        "algo": "dsac_t",
        "train": dict(_train),
        "agent": {**_SMALL_SAC_FAMILY, "actor_hidden": (64, 64), "critic_hidden": (64, 64)},
    }
# FastSAC on CPU: the SAC-family small settings, FastSAC's mechanisms kept (C51 critics each
# learning their own target, LayerNorm and SiLU, the zero policy head, AdamW, alpha from 0.001
# towards entropy 0); pendulum's returns, in [-1630, 0], scaled by 0.1 onto a support of
# [-200, 10] as FastTD3's preset does.
PRESETS["fast_sac_pendulum"] = {
    "algo": "fast_sac",
    "train": dict(_PENDULUM),
    "agent": {**_SMALL_SAC_FAMILY, "reward_scale": 0.1, "v_min": -200.0, "v_max": 10.0},
}
PRESETS["td3_pendulum"] = {"algo": "td3", "train": dict(_PENDULUM), "agent": dict(_SMALL)}
PRESETS["td3_inverted_pendulum"] = {
    "algo": "td3",
    # Mixed per-env exploration (std 0.05 to 0.4) and faster target networks (tau 0.05, as
    # FastTD3 uses). With the paper's tau 0.005 the scalar critic's targets trail too far
    # behind and 2 of 4 seeds settled on dropping the pole after ~40 steps; with tau 0.05,
    # 6 of 6 seeds reached 1,000 by 12,288 steps (measured on 2 CPU cores).
    "train": {
        **_INVERTED_PENDULUM,
        "exploration": "linspace",
        "noise_scale_min": 0.5,
        "noise_scale_max": 4.0,
    },
    "agent": {**_SMALL, "tau": 0.05},
}

# Published settings, one env stepping at a time as in the papers (for GPU-scale runs).
_PUBLISHED = {
    "env": "brax/halfcheetah",
    "total_steps": 1_000_000,
    "num_envs": 1,
    "learning_starts": 10_000,
    "eval_every": 10_000,
    "batch_size": 256,
}
PRESETS["td3_published"] = {
    "algo": "td3",
    "train": {**_PUBLISHED, "learning_starts": 25_000},
    "agent": {},
}
PRESETS["redq_published"] = {
    "algo": "redq",
    "train": {**_PUBLISHED, "updates_per_step": 20, "learning_starts": 5_000},
    "agent": {},
}
PRESETS["dsac_t_published"] = {
    "algo": "dsac_t",
    "train": {**_PUBLISHED, "learning_starts": 10_000},
    "agent": {},
}
PRESETS["droq_published"] = {
    "algo": "droq",
    "train": {**_PUBLISHED, "updates_per_step": 20, "learning_starts": 5_000},
    "agent": {},
}

# FastTD3: per-env noise std U[0.001, 0.4] redrawn at reset, observation normalisation, C51.
_FAST_TD3_LOOP = {
    "exploration": "uniform",
    "noise_scale_min": 0.001,
    "noise_scale_max": 0.4,
    "normalize_observations": True,
}
_FAST_TD3_SMALL = {**_SMALL, "tau": 0.05}
PRESETS["fast_td3_pendulum"] = {
    "algo": "fast_td3",
    "train": {**_PENDULUM, **_FAST_TD3_LOOP},
    # Returns in [-1600, 0]: scaled by 0.1 onto a support of [-200, 10].
    "agent": {**_FAST_TD3_SMALL, "reward_scale": 0.1, "v_min": -200.0, "v_max": 10.0},
}
PRESETS["fast_td3_inverted_pendulum"] = {
    "algo": "fast_td3",
    "train": {**_INVERTED_PENDULUM, **_FAST_TD3_LOOP},
    "agent": {**_FAST_TD3_SMALL, "v_min": -10.0, "v_max": 110.0},  # returns in [0, 100]
}
# The public implementation's settings for CheetahRun (FastTD3's fast_td3/hyperparams.py,
# `CheetahRunArgs` over `MuJoCoPlaygroundArgs`, HEAD 229ed59): 1024 envs, batch 32,768, 2
# updates per step, gamma 0.97, 3-step returns, per-env noise std U[0.1, 0.4], target policy
# noise 0.1, a replay of 10,240 steps per env, no target actor and the target critics moved at
# every critic update (its train.py), C51 on [-500, 500]. That support is coarse (atoms 10
# apart) but never clips: returns at gamma 0.97 and DM Control's rewards in [0, 1] lie in
# [0, 33.3], where [-10, 10] (its setting for the locomotion tasks, this preset's before
# issue 36) clipped every value above 10, i.e. any policy earning more than 0.3 per step.
# FastTD3 trains under bfloat16 autocast (its amp default): `--matmul-precision mixed` on a
# GPU; float32 here, since presets run on CPUs too, where mixed is slower.
PRESETS["fast_td3_playground"] = {
    "algo": "fast_td3",
    "train": {
        "env": "playground/CheetahRun",
        "total_steps": 20_000_000,
        "num_envs": 1024,
        "batch_size": 32_768,
        "updates_per_step": 2,
        "gamma": 0.97,
        "n_step": 3,
        "buffer_size": 1024 * 10_240,
        "learning_starts": 1024 * 10,
        "eval_every": 200_000,
        **_FAST_TD3_LOOP,
        "noise_scale_min": 0.1,
    },
    "agent": {
        "v_min": -500.0,
        "v_max": 500.0,
        "target_noise": 0.1,
        "target_actor": False,
        "critic_target_every_update": True,
    },
}

# FastSAC's humanoid recipe (docs/ALGORITHMS.md, FastSAC; its public implementation,
# amazon-far/holosoma, HEAD fc600e7: the `fast_sac` algo values and the G1 experiment) on
# MuJoCo Playground's G1: 4096 envs, batch 8192, 8 updates per step of all envs, gamma 0.97,
# 1-step returns, a replay of 1024 steps per env, no update in the first 10 steps of all envs,
# the policy's own actions from the first step, observation normalisation, the critics
# reading the privileged state, each action bounded by its joint's limits; 50,000 steps of
# all envs. The agent's defaults are that implementation's. Playground's G1 task is not
# holosoma's (its rewards, terrain and randomization differ), and it needs the Menagerie
# assets (not installable offline): pass --env for another task.
PRESETS["fast_sac_playground"] = {
    "algo": "fast_sac",
    "train": {
        "env": "playground/G1JoystickFlatTerrain",
        "total_steps": 4096 * 50_000,
        "num_envs": 4096,
        "batch_size": 8192,
        "updates_per_step": 8,
        "gamma": 0.97,
        "buffer_size": 4096 * 1024,
        "learning_starts": 4096 * 10,
        "warmup_actions": "policy",
        "eval_every": 4096 * 1000,
        "normalize_observations": True,
        "critic_obs": "privileged_state",
        "joint_limit_actions": True,
    },
    "agent": {},
}

# PQL: mixed exploration (per-env std spaced over [0.05, 0.8]), 3-step returns, no target actor,
# acting parameters a few iterations behind the learners.
_PQL_LOOP = {
    "exploration": "linspace",
    "noise_scale_min": 0.05,
    "noise_scale_max": 0.8,
    "n_step": 3,
}
PRESETS["pql_pendulum"] = {
    "algo": "pql",
    "train": {**_PENDULUM, **_PQL_LOOP},
    "agent": dict(_SMALL),
}
PRESETS["pql_inverted_pendulum"] = {
    "algo": "pql",
    # 4 seeds reached 1,000 by 8k, 8k, 14k and 22.5k steps: a budget with some room.
    "train": {**_INVERTED_PENDULUM, **_PQL_LOOP, "acting_lag": 4, "total_steps": 32_768},
    "agent": dict(_SMALL),
}
# The public implementation's settings (docs/ALGORITHMS.md): 4096 envs, batch 8192, replay 5e6,
# 8 critic updates per step of all envs, critic:actor 2 (policy_delay), 3-step returns.
PRESETS["pql_published"] = {
    "algo": "pql",
    "train": {
        "env": "brax/ant",
        "total_steps": 50_000_000,
        "num_envs": 4096,
        "batch_size": 8192,
        "updates_per_step": 8,
        "buffer_size": 5_000_000,
        "learning_starts": 4096 * 8,
        "eval_every": 1_000_000,
        "normalize_observations": True,
        **_PQL_LOOP,
    },
    "agent": {},
}

# CrossQ on CPU: a 256-wide critic (2,048 in the paper) and BatchRenorm's warm-up shortened to
# 2,000 updates to match runs of a few thousand updates; no target network, Adam beta1 0.5.
_CROSSQ_SMALL = {"actor_hidden": (64, 64), "critic_hidden": (256, 256), "bn_warmup_steps": 2_000}
PRESETS["crossq_pendulum"] = {"algo": "crossq", "train": dict(_PENDULUM), "agent": _CROSSQ_SMALL}
PRESETS["crossq_inverted_pendulum"] = {
    "algo": "crossq",
    # 2 of 2 seeds reached 1,000 at the first evaluation after learning (4,096 steps).
    "train": {**_INVERTED_PENDULUM, "total_steps": 10_240},
    "agent": dict(_CROSSQ_SMALL),
}
# The authors' settings (one env, UTD 1, 2,048-wide critic, policy delay 3: the defaults).
PRESETS["crossq_published"] = {
    "algo": "crossq",
    "train": {**_PUBLISHED, "learning_starts": 5_000},
    "agent": {},
}

# PPO. CPU settings that the learning tests use, then MuJoCo Playground's GPU presets.
PRESETS["ppo_inverted_pendulum"] = {
    "algo": "ppo",
    "train": {
        "env": "brax/inverted_pendulum",
        # 4 of 4 seeds reached 1,000 by 51,200 steps (2 CPU cores).
        "total_steps": 81_920,
        "num_envs": 64,
        "unroll_length": 32,
        "eval_every": 10_240,
        "gamma": 0.97,
        "normalize_observations": True,
    },
    "agent": {
        "actor_hidden": (32, 32),
        "critic_hidden": (64, 64),
        "learning_rate": 1e-3,
        "num_epochs": 4,
        "num_minibatches": 8,
    },
}
PRESETS["ppo_cartpole_balance"] = {
    "algo": "ppo",
    # Playground's DM Control settings scaled to 2 CPU cores: 256 envs instead of 2048 and a
    # 256x256 value net; still 16 epochs of 32 minibatches, which it needs (with 4-8 epochs, or
    # many more envs and few gradient steps, no seed passed 600 within 3M steps). No gradient
    # clipping, as Playground: clipped to norm 1 (grad norms run at 100-2,000 here), 5 of 5
    # seeds passed 900 by 752,640 steps but 3 of them then collapsed (final evals 755, 990,
    # 473, 992, 301; one chunk's mean approx-KL jumped to 46); unclipped, 5 of 5 passed 900 by
    # 1,075,200 (seed 0 last, at 928) and ended at 872, 996, 972, 770, 995 (32 eval envs).
    "train": {
        "env": "playground/CartpoleBalance",
        "total_steps": 1_290_240,
        "num_envs": 256,
        "unroll_length": 30,
        "eval_every": 107_520,
        "eval_envs": 32,
        "gamma": 0.995,
        "normalize_observations": True,
    },
    "agent": {
        "actor_hidden": (32, 32, 32, 32),
        "critic_hidden": (256, 256),
        "learning_rate": 1e-3,
        "num_epochs": 16,
        "num_minibatches": 32,
        "clip_epsilon": 0.3,
        "reward_scale": 10.0,
        "max_grad_norm": 0.0,
    },
}
# MuJoCo Playground's DM Control PPO (docs/ALGORITHMS.md): 2048 envs, 32 minibatches of 1024
# unrolls of 30 steps, 16 epochs, gamma 0.995, lr 1e-3, reward scaling 10, 60M steps. Brax
# collects those 32 x 1024 unrolls as 16 rollouts of 2048 envs; here that is one rollout of
# 16 x 30 = 480 steps per env (GAE then runs over 480 steps instead of 30-step segments).
# No gradient clipping, as there (Brax's max_grad_norm defaults to None and Playground's DM
# Control config sets none); see ppo_cartpole_balance for what clipping to norm 1 did.
PRESETS["ppo_dmc"] = {
    "algo": "ppo",
    "train": {
        "env": "playground/CheetahRun",
        "total_steps": 60_000_000,
        "num_envs": 2048,
        "unroll_length": 480,
        "eval_every": 1_000_000,
        "eval_envs": 128,
        "gamma": 0.995,
        "normalize_observations": True,
    },
    "agent": {
        "learning_rate": 1e-3,
        "num_epochs": 16,
        "num_minibatches": 32,
        "clip_epsilon": 0.3,
        "reward_scale": 10.0,
        "max_grad_norm": 0.0,
    },
}
# MuJoCo Playground's locomotion PPO (docs/ALGORITHMS.md): 8192 envs, 32 minibatches of 256
# unrolls of 20 steps (one rollout of all envs), 4 epochs, gamma 0.97, lr 3e-4, entropy 1e-2,
# gradient-norm clip 1.0. Its robots need the Menagerie assets (not installable offline), so
# the preset runs Brax's ant; pass --env for another task.
PRESETS["ppo_locomotion"] = {
    "algo": "ppo",
    "train": {
        "env": "brax/ant",
        "total_steps": 100_000_000,
        "num_envs": 8192,
        "unroll_length": 20,
        "eval_every": 5_000_000,
        "eval_envs": 128,
        "gamma": 0.97,
        "normalize_observations": True,
    },
    "agent": {
        "actor_hidden": (512, 256, 128),
        "critic_hidden": (512, 256, 128),
        "learning_rate": 3e-4,
        "num_epochs": 4,
        "num_minibatches": 32,
        "entropy_coef": 1e-2,
        "max_grad_norm": 1.0,
    },
}

# DM Control presets, one per algorithm (sac_dmc, ppo_dmc and fast_td3_playground above), from
# each paper's or its reference code's settings, on MuJoCo Playground's CheetahRun (pass --env
# for another DM Control task). The single-env algorithms keep their published update-to-data
# ratio as updates_per_step / num_envs over 16 envs. A CPU run (`jaxrl bench --suite
# dmc_algos`) changes the env count and the budget, keeping that ratio; where it must change
# more, the suite says what and why (benchmarks/suites.py).
_DMC = {
    "env": "playground/CheetahRun",
    "total_steps": 1_000_000,
    "num_envs": 16,
    "updates_per_step": 16,  # UTD 1
    "batch_size": 256,
    "buffer_size": 1_000_000,
    "eval_every": 20_000,
}
# TD3 as its author's code runs it (sfujimoto/TD3 main.py): batch 256, 25,000 uniform warm-up
# steps, exploration noise 0.1, target noise 0.2 clipped to 0.5, policy delay 2, tau 0.005,
# Adam 3e-4, 256x256 networks (the agent's defaults), one update per env step.
PRESETS["td3_dmc"] = {"algo": "td3", "train": {**_DMC, "learning_starts": 25_000}, "agent": {}}
# CrossQ as SBX runs it (araffin/sbx `sbx/crossq`, the authors' JAX code adityab/CrossQ):
# UTD 1, 2048-wide BatchRenorm critics and a 256-wide BatchRenorm actor, the log-std clipped
# to [-20, 2], Adam lr 1e-3 with b1 0.5, policy delay 3, momentum 0.99, BatchRenorm's warm-up
# 100,000 updates, 5,000 warm-up steps (the agent's defaults). One departure: each hidden layer
# is Dense -> BatchRenorm -> ReLU, where theirs is Dense -> ReLU -> BatchRenorm
# (`--bn-after-relu`), which learned CartpoleSwingup in 1 of 5 seeds here against 5 of 5
# (docs/ALGORITHMS.md, DM Control).
PRESETS["crossq_dmc"] = {"algo": "crossq", "train": {**_DMC, "learning_starts": 5_000}, "agent": {}}
# DroQ and REDQ (Hiraoka et al. 2022; Chen et al. 2021): UTD 20 (20 updates per env step: 320
# per step of 16 envs), 5,000 warm-up steps, the actor once per env step (policy delay 20),
# 256x256 networks and Adam 3e-4 (the agents' defaults: DroQ's dropout 0.01 and LayerNorm,
# REDQ's 10 critics and min over 2).
_HIGH_UTD = {**_DMC, "updates_per_step": 16 * 20, "learning_starts": 5_000}
PRESETS["droq_dmc"] = {"algo": "droq", "train": dict(_HIGH_UTD), "agent": {}}
PRESETS["redq_dmc"] = {"algo": "redq", "train": dict(_HIGH_UTD), "agent": {}}
# DSAC-T (Duan et al. 2023, its hyperparameter table: the agent's defaults, 3x256 networks, lr
# 1e-4, policy delay 2): UTD 1, batch 256, 10,000 warm-up steps.
PRESETS["dsac_t_dmc"] = {
    "algo": "dsac_t",
    "train": {**_DMC, "learning_starts": 10_000},
    "agent": {},
}
# FastSAC: its reference's loop (amazon-far/holosoma, as fast_sac_playground) with 1,024 envs,
# FastTD3's DM Control count: batch 8192, 8 updates per step of all envs, gamma 0.97, a replay
# of 1,024 steps per env, the policy's own actions from the first step, observation
# normalisation. The agent's defaults are that implementation's, but its C51 support: at gamma
# 0.97 DM Control's rewards in [0, 1] give returns in [0, 33.3], which [-20, 20] clips above
# 20; [-10, 40] covers them, atoms 0.5 apart.
PRESETS["fast_sac_dmc"] = {
    "algo": "fast_sac",
    "train": {
        "env": "playground/CheetahRun",
        "total_steps": 20_000_000,
        "num_envs": 1024,
        "batch_size": 8192,
        "updates_per_step": 8,
        "gamma": 0.97,
        "buffer_size": 1024 * 1024,
        "learning_starts": 1024 * 10,
        "warmup_actions": "policy",
        "eval_every": 200_000,
        "normalize_observations": True,
    },
    "agent": {"v_min": -10.0, "v_max": 40.0},
}
# PQL: its reference's settings (pql_published) with FastTD3's 1,024 DM Control envs: batch
# 8192, 8 critic updates per step of all envs, critic:actor 2, 3-step returns, tau 0.05, lr
# 5e-4, no target actor, mixed exploration over [0.05, 0.8], observation normalisation.
PRESETS["pql_dmc"] = {
    "algo": "pql",
    "train": {
        **PRESETS["pql_published"]["train"],
        "env": "playground/CheetahRun",
        "total_steps": 20_000_000,
        "num_envs": 1024,
        "learning_starts": 1024 * 8,
        "eval_every": 200_000,
    },
    "agent": {},
}

# LB-SAC (Nikulin et al. 2022, "Q-Ensemble for Offline RL: Don't Scale the Ensemble, Scale the
# Batch Size"; its code tinkoff-ai/lb-sac, as CORL's lb_sac.py keeps it): SAC-N with the batch
# scaled from 256 to 10,000 and the three learning rates from 3e-4 to 0.0018 (about
# 3e-4 x sqrt(10,000 / 256)), 10 critics (fewer on some datasets: 4 on halfcheetah-medium),
# 3 x 256 layers without LayerNorm, tau 0.005, gamma 0.99, 300 x 1,000 updates. The length and
# the data are the user's: --dataset ID --offline-updates 300000 --steps 0 (docs/OFFLINE.md).
# One difference: its critics' loss is the mean over the ensemble, jaxrl's SAC-N the sum; Adam
# takes either to nearly the same step.
PRESETS["lb_sac"] = {
    "algo": "sac_n",
    "train": {"batch_size": 10_000, "offline_eval_every": 10_000},
    "agent": {"num_critics": 10, "actor_lr": 0.0018, "critic_lr": 0.0018, "alpha_lr": 0.0018},
}

# ReBRAC (Tarasov et al. 2023; tinkoff-ai/ReBRAC, as CORL's rebrac.py keeps it): its agent
# settings are ReBRACConfig's defaults; the loop's are batch 1,024 and 1,000 x 1,000 updates,
# evaluated every 5,000 (--dataset ID --offline-updates 1000000 --steps 0, docs/OFFLINE.md).
# The two penalties' weights are per dataset in the paper: --actor-bc-coef, --critic-bc-coef.
PRESETS["rebrac_d4rl"] = {
    "algo": "rebrac",
    "train": {"batch_size": 1024, "offline_eval_every": 5_000},
    "agent": {},
}

# SAC-RND (Nikulin et al. 2023; tinkoff-ai/sac-rnd's per-dataset MuJoCo configs): its agent
# settings are SACRNDConfig's defaults; the loop's are batch 1,024 and 3,000 x 1,000 updates
# (--dataset ID --offline-updates 3000000 --steps 0, docs/OFFLINE.md), evaluated every 50,000.
# The penalties' weights are per dataset in the paper: --actor-beta, --critic-beta.
PRESETS["sac_rnd_d4rl"] = {
    "algo": "sac_rnd",
    "train": {"batch_size": 1024, "offline_eval_every": 50_000},
    "agent": {},
}
