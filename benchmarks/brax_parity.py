"""Brax's trainer settings as the benchmark suites use them, and their translation into jaxrl
flags: Brax's own settings for its envs (its training notebook) and MuJoCo Playground's for its DM
Control tasks (`playground_sac`, `playground_ppo`), the parity and identical suites' task tables
(PARITY_*, SPEED_*), and `sac_parity_flags` / `ppo_parity_flags`, the `jaxrl train` flags that
give jaxrl's SAC and PPO exactly Brax's hyperparameters and implementation choices
(docs/PARITY.md). The suites that use them: `benchmarks.suites`.
"""

from __future__ import annotations

# Brax SAC as MuJoCo Playground runs it on the DM Control Suite (docs/ALGORITHMS.md): 128 envs,
# batch 512, 8 gradient updates per step, lr 1e-3, gamma 0.99, replay warm-up 8192,
# observation normalisation, LayerNorm in the Q-network. Evaluation on 16 envs, as jaxrl's.
BRAX_SAC = {
    "num_envs": 128,
    "batch_size": 512,
    "grad_updates_per_step": 8,
    "learning_rate": 1e-3,
    "discounting": 0.99,
    "min_replay_size": 8192,
    "normalize_observations": True,
    "q_network_layer_norm": True,
    "num_eval_envs": 16,
    "episode_length": 1000,
}
# Brax PPO on inverted_pendulum as Brax's training notebook sets it: 2048 envs, batch 1024,
# 32 minibatches, 4 updates per batch, unroll 5, gamma 0.97, lr 3e-4, entropy 1e-2, reward
# scaling 10, 2M steps, 20 evaluations.
BRAX_PPO_INVERTED_PENDULUM = {
    "num_envs": 2048,
    "batch_size": 1024,
    "num_minibatches": 32,
    "num_updates_per_batch": 4,
    "unroll_length": 5,
    "discounting": 0.97,
    "learning_rate": 3e-4,
    "entropy_cost": 1e-2,
    "reward_scaling": 10.0,
    "normalize_observations": True,
    "num_eval_envs": 16,
    "episode_length": 1000,
}


# Brax PPO as MuJoCo Playground runs it on the DM Control Suite (docs/ALGORITHMS.md).
BRAX_PPO_DMC = {
    "num_envs": 2048,
    "batch_size": 1024,
    "num_minibatches": 32,
    "num_updates_per_batch": 16,
    "unroll_length": 30,
    "discounting": 0.995,
    "learning_rate": 1e-3,
    "entropy_cost": 1e-2,
    "reward_scaling": 10.0,
    "normalize_observations": True,
    "num_eval_envs": 128,
    "episode_length": 1000,
    "policy_hidden_layer_sizes": (32, 32, 32, 32),
    "value_hidden_layer_sizes": (256, 256, 256, 256, 256),
}


# --- Learning parity: jaxrl configured exactly as Brax's trainer, side by side. ---------------
# Settings come from the source the users' runs come from: MuJoCo Playground's own DM Control
# configs (`mujoco_playground.config.dm_control_suite_params`) for its tasks, Brax's training
# notebook for Brax's envs. Only the budget (env steps) and the number of evaluations are
# scaled to a 2-core CPU; both systems get the same ones, evaluate greedily (Brax's trainers
# default to sampling actions at evaluation: `deterministic_eval=True` here) on 128 envs.
# Budgets: Playground's SAC does 8 gradient updates per 128-env step, so 100,352 env steps
# (784 iterations) are only 6,272 updates, about 1.5 minutes per run on 2 cores: enough for
# CartpoleBalance and ReacherEasy; CartpoleSwingup needs three times that to leave zero.
# FingerSpin and BallInCup stayed at 0 for both trainers at 100,352 steps (RESULTS.md keeps
# those rows); they need millions of steps, GPU work, and are not in this CPU suite.
# Task: (settings, env steps); settings None means Playground's `brax_sac_config` for it.
PARITY_SAC_TASKS: dict[str, tuple[dict | None, int]] = {
    "playground/CartpoleBalance": (None, 100_352),
    "playground/CartpoleSwingup": (None, 301_056),
    "playground/ReacherEasy": (None, 100_352),
}
PARITY_EVALS = 8  # evaluations after the start, for both systems


def playground_sac(task: str) -> dict:
    """Playground's Brax SAC settings for a DM Control task (its `brax_sac_config`)."""
    from mujoco_playground.config import dm_control_suite_params

    config = dm_control_suite_params.brax_sac_config(task).to_dict()
    layer_norm = config.pop("network_factory")["q_network_layer_norm"]
    for unused in ("num_timesteps", "num_evals", "num_resets_per_eval"):
        config.pop(unused)
    return {**config, "q_network_layer_norm": layer_norm}


def playground_ppo(task: str) -> dict:
    """Playground's Brax PPO settings for a DM Control task (its `brax_ppo_config`; Brax's
    default networks: policy 4x32, value 5x256, swish)."""
    from mujoco_playground.config import dm_control_suite_params

    config = dm_control_suite_params.brax_ppo_config(task).to_dict()
    for unused in ("num_timesteps", "num_evals", "num_resets_per_eval", "network_factory"):
        config.pop(unused, None)
    return config


# Brax SAC on Brax's hopper as Brax's training notebook sets it (its 6.5M-step budget scaled
# to 100,352 steps: 784 iterations of 128 envs, 50,176 gradient updates of batch 512).
BRAX_SAC_HOPPER = {
    "num_envs": 128,
    "batch_size": 512,
    "grad_updates_per_step": 64,
    "max_replay_size": 1_048_576,
    "min_replay_size": 8192,
    "learning_rate": 6e-4,
    "discounting": 0.997,
    "reward_scaling": 30,
    "episode_length": 1000,
    "action_repeat": 1,
    "normalize_observations": True,
    "q_network_layer_norm": False,
}
PARITY_SAC_TASKS["brax/hopper"] = (BRAX_SAC_HOPPER, 100_352)


def brax_sac_first_update_rows(settings: dict) -> int:
    """The replay rows stored when Brax's SAC makes its first gradient step (`jaxrl.brax.sac
    .first_update_rows`)."""
    from jaxrl.brax import sac

    return sac.first_update_rows(settings["num_envs"], settings["min_replay_size"])


def sac_parity_flags(
    settings: dict, total_steps: int, evals: int = PARITY_EVALS, eval_envs: int = 128
) -> tuple[str, ...]:
    """`jaxrl train` flags giving jaxrl's SAC exactly Brax SAC's hyperparameters: its fixed
    choices (target entropy -|A|/2, temperature lr 3e-4 and initial value 1, tau 0.005,
    256x256 networks), its implementation choices (softplus std head, LayerNorm after the
    ReLU, actor updated against the critics the step started from, buffer prefilled by the
    untrained policy, normalised observations not clipped, finished envs back at their first
    state, the temperature's loss in alpha rather than log alpha on a draw of its own,
    truncated rows masked out of the critic loss, the normaliser fed the observations acted on,
    uniform initial weights) and the run's settings (docs/PARITY.md)."""
    every = -(-total_steps // evals)
    flags = {
        "--batch-size": settings["batch_size"],
        "--updates-per-step": settings["grad_updates_per_step"],
        "--buffer-size": settings["max_replay_size"],
        # Brax prefills ceil(min_replay_size / num_envs) steps of every env, then learns from
        # its next step on; jaxrl learns from the iteration whose rows reach learning_starts.
        "--learning-starts": brax_sac_first_update_rows(settings),
        "--gamma": settings["discounting"],
        "--episode-length": settings["episode_length"],
        "--action-repeat": settings["action_repeat"],
        "--eval-envs": eval_envs,
        "--eval-every": every,
        "--actor-lr": settings["learning_rate"],
        "--critic-lr": settings["learning_rate"],
        "--alpha-lr": 3e-4,
        "--target-entropy-scale": 0.5,
        "--init-alpha": 1.0,
        "--tau": settings.get("tau", 0.005),
        "--reward-scale": settings["reward_scaling"],
        "--actor-hidden": "256,256",
        "--critic-hidden": "256,256",
    }
    argv = [str(x) for item in flags.items() for x in item]
    argv.append(
        "--normalize-observations"
        if settings["normalize_observations"]
        else "--no-normalize-observations"
    )
    argv.append(
        "--critic-layer-norm" if settings["q_network_layer_norm"] else "--no-critic-layer-norm"
    )
    argv += ["--softplus-std", "--critic-norm-after-relu", "--no-actor-uses-updated-critic"]
    argv += ["--warmup-actions", "policy", "--obs-clip", "0", "--autoreset", "first"]
    argv += ["--temperature-loss", "alpha", "--temperature-draw", "own", "--truncation", "mask"]
    argv += ["--renormalize-rollout", "--kernel-init", "lecun_uniform"]
    return tuple(argv)


# Brax PPO on Brax's own envs, with the settings of Brax's training notebook
# (notebooks/training.ipynb); tasks with action_repeat 1, so env steps mean the same to both.
_BRAX_PPO_COMMON = {
    "episode_length": 1000,
    "normalize_observations": True,
    "action_repeat": 1,
    "num_envs": 2048,
}
PARITY_PPO_TASKS = {  # task: (Brax PPO settings, env steps)
    "brax/inverted_double_pendulum": (
        {
            **_BRAX_PPO_COMMON,
            "reward_scaling": 10,
            "unroll_length": 5,
            "num_minibatches": 32,
            "num_updates_per_batch": 4,
            "discounting": 0.97,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-2,
            "batch_size": 1024,
        },
        2_000_000,
    ),
    "brax/inverted_pendulum": (BRAX_PPO_INVERTED_PENDULUM, 1_000_000),
}
# Brax's locomotion envs at 2048-4096 envs: tens of minutes per run on 2 cores (the notebook's
# budgets are 50M steps), so a suite of their own, `parity_long`, for a bigger machine.
PARITY_PPO_LONG_TASKS = {
    "brax/halfcheetah": (
        {
            **_BRAX_PPO_COMMON,
            "reward_scaling": 1,
            "unroll_length": 20,
            "num_minibatches": 32,
            "num_updates_per_batch": 8,
            "discounting": 0.95,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-3,
            "batch_size": 512,
        },
        2_000_000,
    ),
    "brax/pusher": (
        {
            **_BRAX_PPO_COMMON,
            "reward_scaling": 5,
            "unroll_length": 30,
            "num_minibatches": 16,
            "num_updates_per_batch": 8,
            "discounting": 0.95,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-2,
            "batch_size": 512,
        },
        2_000_000,
    ),
    "brax/ant": (
        {
            **_BRAX_PPO_COMMON,
            "num_envs": 4096,
            "reward_scaling": 10,
            "unroll_length": 5,
            "num_minibatches": 32,
            "num_updates_per_batch": 4,
            "discounting": 0.97,
            "learning_rate": 3e-4,
            "entropy_cost": 1e-2,
            "batch_size": 2048,
        },
        2_000_000,
    ),
}


def ppo_parity_flags(
    settings: dict,
    total_steps: int,
    evals: int = PARITY_EVALS,
    brax_mode: bool = True,
    eval_envs: int = 128,
) -> tuple[str, ...]:
    """`jaxrl train` flags giving jaxrl's PPO exactly Brax PPO's hyperparameters and, with
    `brax_mode`, every one of its implementation choices (docs/PARITY.md lists them).

    Brax collects batch_size x num_minibatches / num_envs consecutive unrolls of unroll_length
    steps per update: here one rollout of that many steps per env, cut back into the same
    unrolls (--gae-horizon). Brax's defaults: clip 0.3, GAE lambda 0.95, no gradient clipping,
    value loss 0.25 MSE (0.5 x our 0.5 MSE), advantages normalised per minibatch, softplus std,
    swish activations, normalised observations not clipped. Its choices (brax_mode): the
    advantages computed inside the loss with each gradient step's value parameters, per
    minibatch of whole unrolls (--advantage-in-loss); r + gamma v_{t+1} - V as the advantage
    (--advantage-estimator vtrace); truncated steps masked (--truncation mask); finished envs
    back at their first state (--autoreset first); the normaliser taking in the rollout's
    observations before the update reads it (--renormalize-rollout); lecun_uniform weights
    (--kernel-init); every env reset
    num_resets_per_eval times between evaluations (--reset-every). Without brax_mode:
    jaxrl's own choices at Brax's hyperparameters."""
    unrolls = settings["batch_size"] * settings["num_minibatches"] // settings["num_envs"]
    rollout = settings["unroll_length"] * unrolls
    every = -(-total_steps // evals)
    flags = {
        "--unroll-length": rollout,
        "--num-minibatches": settings["num_minibatches"],
        "--num-epochs": settings["num_updates_per_batch"],
        "--gamma": settings["discounting"],
        "--learning-rate": settings["learning_rate"],
        "--entropy-coef": settings["entropy_cost"],
        "--reward-scale": settings["reward_scaling"],
        "--clip-epsilon": 0.3,
        "--gae-lambda": 0.95,
        "--value-coef": 0.5,
        "--max-grad-norm": 0.0,
        "--episode-length": settings["episode_length"],
        "--action-repeat": settings.get("action_repeat", 1),
        "--eval-envs": eval_envs,
        "--eval-every": every,
        "--actor-hidden": "32,32,32,32",
        "--critic-hidden": "256,256,256,256,256",
    }
    argv = [str(x) for item in flags.items() for x in item]
    normalize = settings["normalize_observations"]
    argv.append("--normalize-observations" if normalize else "--no-normalize-observations")
    argv += ["--softplus-std", "--activation", "swish", "--obs-clip", "0"]
    if not brax_mode:
        return tuple(argv)
    argv += ["--renormalize-rollout", "--advantage-in-loss"]
    argv += ["--gae-horizon", str(settings["unroll_length"])]
    argv += ["--advantage-estimator", "vtrace", "--truncation", "mask", "--autoreset", "first"]
    argv += ["--kernel-init", "lecun_uniform"]
    resets = settings.get("num_resets_per_eval", 0)
    if resets:  # Brax: every (updates per evaluation) / resets updates
        updates = total_steps // (rollout * settings["num_envs"])
        argv += ["--reset-every", str(max(1, updates // evals // resets))]
    return tuple(argv)


def ppo_update_steps(settings: dict) -> int:
    """Env steps of one Brax PPO update at `settings`: batch_size x num_minibatches unrolls of
    unroll_length steps."""
    return settings["batch_size"] * settings["num_minibatches"] * settings["unroll_length"]


# --- Speed at identical settings (issue 19): the parity cases' exact settings, a short fixed
# budget, 3 seeds, one run. What it measures is the implementation: training env-steps/s,
# compile seconds (every program of the process: trace, lowering and XLA) and wall-clock to
# the fixed step count, as jaxrl / Brax ratios. Budgets: SAC 8,192 warm-up steps, then 320
# iterations of 128 envs with 6 evaluations after the warm-up (a steady window of 4 to 5
# evaluation intervals, 33k to 41k env steps: with 3, one or two intervals of about 5 s
# each moved the ratio by 0.2 between runs); PPO 2 whole Brax updates, an evaluation after
# each (the fewest that give a steady rate between two evaluations).
# Brax SAC as the issue ran it on a harder Brax task: 128 envs, batch 256, 16 updates per step,
# 256x256 networks (Brax's default), 128 evaluation envs.
BRAX_SAC_SPEED = {
    "num_envs": 128,
    "batch_size": 256,
    "grad_updates_per_step": 16,
    "max_replay_size": 1_048_576,
    "min_replay_size": 8192,
    "learning_rate": 6e-4,
    "discounting": 0.99,
    "reward_scaling": 1,
    "episode_length": 1000,
    "action_repeat": 1,
    "normalize_observations": True,
    "q_network_layer_norm": False,
}
SPEED_SAC_EVALS, SPEED_PPO_EVALS = 6, 2
SPEED_SAC_TASKS: dict[str, tuple[dict | None, int]] = {
    "playground/CartpoleBalance": (None, 49_152),
    "playground/ReacherEasy": (None, 49_152),
    "brax/inverted_double_pendulum": (BRAX_SAC_SPEED, 49_152),
}
# PPO: Brax's notebook settings on its pendulums (163,840 env steps per update), Playground's
# on CartpoleBalance (983,040 per update); budget 0: one whole update per evaluation.
SPEED_PPO_TASKS: dict[str, tuple[dict | None, int]] = {
    "brax/inverted_pendulum": (BRAX_PPO_INVERTED_PENDULUM, 0),
    "brax/inverted_double_pendulum": (PARITY_PPO_TASKS["brax/inverted_double_pendulum"][0], 0),
    "playground/CartpoleBalance": (None, 0),
}
