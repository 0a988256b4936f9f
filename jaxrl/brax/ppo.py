"""`train`: Brax 0.14's `ppo.train`, by the same signature and return value, over jaxrl's PPO.

    from jaxrl.brax import ppo      # was: from brax.training.agents.ppo import train as ppo
    make_policy, params, metrics = ppo.train(environment=env, num_timesteps=..., ...)

Every Brax argument is honoured or refused by name (`ConfigError`) before anything compiles.
jaxrl's PPO runs with every implementation choice of Brax's (`benchmarks.brax_parity
.ppo_parity_flags`, docs/PARITY.md): advantages inside the loss per unroll, V-trace-style
advantages, truncation masked, finished envs back at their first state, the normaliser fed
the rollout before the update, the factory's weights. `jaxrl_choices=True` (`JAXRL_CHOICES`)
puts jaxrl's own in place of the first four (the advantages over the whole rollout, GAE,
truncation bootstrapped, fresh random restarts). Brax's units are kept: `num_timesteps`,
`episode_length` and the steps given to `progress_fn` count physics steps (`action_repeat`
in them); `num_evals` counts the evaluation at step 0. What is returned is Brax's:
`params = (normalizer_params, policy_params, value_params)` in the trees Brax's
`network_factory` builds, and `make_policy` is Brax's own `make_inference_fn` of the networks
that factory makes, so Brax's and Playground's tools take both as they are.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from brax.training.agents.ppo import networks as ppo_networks

from jaxrl.brax import arguments, factories
from jaxrl.brax import metrics as brax_metrics
from jaxrl.errors import ConfigError

# The values a refused argument may take (Brax's defaults, or what changes nothing here), and
# why any other is refused.
_REFUSED = {
    "vision": (False, "pixel observations are not supported by jaxrl's PPO"),
    "augment_pixels": (False, "pixel observations are not supported by jaxrl's PPO"),
    "wrap_env": (
        True,
        "jaxrl wraps the env itself (time limit, action repeat, batch, auto-reset); pass the "
        "unwrapped env",
    ),
    "clipping_epsilon_value": (None, "the value loss is not clipped by a separate epsilon"),
    "bootstrap_on_timeout": (
        False,
        "Brax's time-out bootstrap (r + gamma V(s_t)) is not jaxrl's; truncations are masked",
    ),
    "use_distributional_critic": (False, "no distributional PPO critic"),
}

# Brax's PPO choices that jaxrl makes otherwise (docs/PARITY.md), at jaxrl's own values, which
# `jaxrl_choices=True` trains with: TrainConfig's ("train") and PPOConfig's ("agent") fields.
# The weight initialiser is the network factory's, so it stays Brax's lecun_uniform (or the
# factory's own). `jaxrl bench --suite ppo_choices_16` measures each choice; docs/BRAX.md
# gives what they gain.
JAXRL_CHOICES = {
    "train": {"autoreset": "random"},
    "agent": {
        "advantage_in_loss": False,
        "gae_horizon": 0,
        "advantage_estimator": "gae",
        "truncation": "bootstrap",
    },
}


def train(
    environment: Any,
    num_timesteps: int,
    max_devices_per_host: int | None = None,
    wrap_env: bool = True,
    vision: bool = False,
    augment_pixels: bool = False,
    num_envs: int = 1,
    episode_length: int | None = None,
    action_repeat: int = 1,
    wrap_env_fn: Callable[[Any], Any] | None = None,
    randomization_fn: Callable | None = None,
    learning_rate: float = 1e-4,
    entropy_cost: float = 1e-4,
    discounting: float = 0.9,
    unroll_length: int = 10,
    batch_size: int = 32,
    num_minibatches: int = 16,
    num_updates_per_batch: int = 2,
    num_resets_per_eval: int = 0,
    normalize_observations: bool = False,
    normalize_observations_std_eps: float = 0.0,
    normalize_observations_mode: str = "welford",
    normalize_until_count: int | None = None,
    reward_scaling: float = 1.0,
    clipping_epsilon: float = 0.3,
    clipping_epsilon_value: float | None = None,
    gae_lambda: float = 0.95,
    max_grad_norm: float | None = None,
    normalize_advantage: bool = True,
    vf_loss_coefficient: float = 0.5,
    bootstrap_on_timeout: bool = False,
    use_distributional_critic: bool = False,
    desired_kl: float = 0.01,
    learning_rate_schedule: Any = None,
    learning_rate_schedule_min_lr: float = 1e-5,
    learning_rate_schedule_max_lr: float = 1e-2,
    network_factory: Callable = ppo_networks.make_ppo_networks,
    seed: int = 0,
    use_pmap_on_reset: bool = True,
    num_evals: int = 1,
    eval_env: Any = None,
    num_eval_envs: int = 128,
    deterministic_eval: bool = False,
    log_training_metrics: bool = False,
    training_metrics_steps: int | None = None,
    progress_fn: Callable[[int, dict], None] = lambda *args: None,
    policy_params_fn: Callable[..., None] = lambda *args: None,
    save_checkpoint_path: str | None = None,
    restore_checkpoint_path: str | None = None,
    restore_params: Any = None,
    restore_value_fn: bool = True,
    run_evals: bool = True,
    *,
    jaxrl_choices: bool = False,
):
    """Brax's `ppo.train` (brax/training/agents/ppo/train.py, 0.14.2): the same arguments, by
    name and default, the same `(make_policy, params, metrics)`; docs/BRAX.md lists what each
    argument means here. One more, keyword only: `jaxrl_choices=True` trains with jaxrl's own
    choices where Brax's differ (`JAXRL_CHOICES`), the rest (arguments, returns, checkpoints,
    metrics) Brax's as ever. Not used here, as they change nothing in jaxrl's program:
    `use_pmap_on_reset` (jaxrl resets in one program), `desired_kl` and the schedule's
    `_min_lr`/`_max_lr` without Brax's adaptive-KL schedule, `restore_value_fn` without
    parameters to restore."""
    settings = dict(locals())
    plan = make_plan(settings)  # every check, before anything compiles
    return run_plan(plan, progress_fn, policy_params_fn)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What `train` runs: jaxrl's configs, the env, and Brax's units to report in."""

    config: Any  # TrainConfig
    agent_config: Any  # PPOConfig
    env: Any
    trainer_env: Any  # env, or envs.WithEvalEnv of env and Brax's eval_env
    randomization_fn: Any
    networks: Any  # factories.NetworkSettings of the caller's factory (make_policy, checkpoints)
    injected: Any  # the factory's own networks as jaxrl's PPO runs them, or None (translated)
    action_repeat: int
    brax_episode_length: int | None  # Brax's argument, physics steps (None: the env's)
    num_evals: int
    run_evals: bool
    std_eps: float
    normalizer_mode: str  # Brax's "welford" or "ema": how its checkpoints hold the statistics
    untrained: bool
    restored: Any  # Brax's (normalizer, policy, value) to start from, or None
    restore_value_fn: bool
    save_checkpoint_path: Any
    # log_training_metrics: (env steps between two logs, Brax's unroll_length), or None.
    training_log: tuple[int, int] | None = None


def make_plan(s: dict) -> _Plan:
    """The configs of Brax's arguments `s`, or a ConfigError naming the argument."""
    from jaxrl.agents.ppo import PPOConfig
    from jaxrl.config import TrainConfig

    _refuse(s)
    env = arguments.checked_env(s["environment"])
    repeat = arguments.positive(s, "action_repeat")
    s = dict(s)  # its sizes as ints (Brax takes numpy integers too)
    for name in ("num_envs", "batch_size", "num_minibatches", "unroll_length",
                 "num_updates_per_batch"):  # fmt: skip
        s[name] = arguments.positive(s, name)
    if s["batch_size"] * s["num_minibatches"] % s["num_envs"]:
        raise ConfigError(
            f"batch_size x num_minibatches ({s['batch_size']} x {s['num_minibatches']}) must be "
            f"a multiple of num_envs ({s['num_envs']}), as Brax asserts"
        )
    if s["num_timesteps"] < 0 or s["num_evals"] < 0 or s["num_resets_per_eval"] < 0:
        raise ConfigError("num_timesteps, num_evals and num_resets_per_eval must be >= 0")
    dict_obs = isinstance(getattr(env, "observation_size", None), dict)
    net = factories.ppo_settings(s["network_factory"], dict_obs)
    autoreset = factories.autoreset_of(s["wrap_env_fn"])
    unrolls = s["batch_size"] * s["num_minibatches"] // s["num_envs"]
    per_step = s["batch_size"] * s["num_minibatches"] * s["unroll_length"]  # control steps
    epochs, steps_per_epoch = _epochs(s, per_step * repeat)
    total = epochs * steps_per_epoch * per_step
    mode, until = _normalizer(s)
    training_log = None
    if s["log_training_metrics"]:  # Brax's default: a log every training step
        every = s["training_metrics_steps"]
        every = (
            per_step * repeat if every is None else arguments.positive(s, "training_metrics_steps")
        )
        training_log = (every, s["unroll_length"])
    try:
        config = TrainConfig(
            algo="ppo",
            env=f"brax/{type(env).__name__}",
            seed=int(s["seed"]),
            total_steps=max(total, per_step),
            num_envs=s["num_envs"],
            episode_length=arguments.episode_length(s, env, repeat),
            action_repeat=repeat,
            unroll_length=s["unroll_length"] * unrolls,
            eval_every=steps_per_epoch * max(s["num_resets_per_eval"], 1) * per_step,
            eval_envs=s["num_eval_envs"] if s["run_evals"] else 1,
            eval_actions="greedy" if s["deterministic_eval"] else "sampled",
            eval_simulator="own",  # Brax's evaluator steps envs of its own
            eval_env_metrics=True,
            randomize_eval=s["randomization_fn"] is not None,  # Brax randomizes its evaluator's
            normalize_observations=bool(s["normalize_observations"]),
            obs_clip=0.0,
            obs_std_eps=float(s["normalize_observations_std_eps"]),
            obs_stats_until=until,
            gamma=s["discounting"],
            renormalize_rollout=True,
            autoreset=autoreset,
            reset_every=steps_per_epoch if s["num_resets_per_eval"] else 0,
            devices=arguments.devices(s["max_devices_per_host"]),
            **net.train,
        )
        agent_config = PPOConfig(
            learning_rate=s["learning_rate"],
            num_epochs=s["num_updates_per_batch"],
            num_minibatches=s["num_minibatches"],
            clip_epsilon=s["clipping_epsilon"],
            value_coef=s["vf_loss_coefficient"],
            entropy_coef=s["entropy_cost"],
            max_grad_norm=0.0 if s["max_grad_norm"] is None else s["max_grad_norm"],
            gae_lambda=s["gae_lambda"],
            advantage_estimator="vtrace",
            gae_horizon=s["unroll_length"],
            truncation="mask",
            advantage_in_loss=True,
            normalize_advantages=bool(s["normalize_advantage"]),
            reward_scale=s["reward_scaling"],
            softplus_std=True,
            **net.agent,
        )
        if _jaxrl_choices(s):
            config = dataclasses.replace(config, **JAXRL_CHOICES["train"])
            agent_config = dataclasses.replace(agent_config, **JAXRL_CHOICES["agent"])
    except ValueError as error:  # a field's own check: its message names the field
        raise ConfigError(str(error)) from None
    return _Plan(
        config=config,
        agent_config=agent_config,
        env=env,
        trainer_env=arguments.checked_envs(env, s["eval_env"] if s["run_evals"] else None),
        randomization_fn=s["randomization_fn"],
        networks=net,
        injected=(
            factories.ppo_networks(net, env.observation_size, env.action_size)
            if net.injected
            else None
        ),
        action_repeat=repeat,
        brax_episode_length=s["episode_length"],
        num_evals=s["num_evals"],
        run_evals=bool(s["run_evals"]),
        std_eps=float(s["normalize_observations_std_eps"]),
        normalizer_mode=mode,
        untrained=s["num_timesteps"] == 0,
        restored=_restored(s),
        restore_value_fn=bool(s["restore_value_fn"]),
        save_checkpoint_path=s["save_checkpoint_path"],
        training_log=training_log,
    )


def _normalizer(s: dict) -> tuple[str, int]:
    """(Brax's normaliser mode, jaxrl's `obs_stats_until`). Both modes learn the same moments
    (`normalization.update`); the mode says how Brax's checkpoints hold them. Brax applies
    `normalize_until_count` in its "ema" mode only, and so does the door."""
    mode, until = s["normalize_observations_mode"], s["normalize_until_count"]
    if mode not in ("welford", "ema"):
        raise ConfigError(f"normalize_observations_mode must be 'welford' or 'ema', got {mode!r}")
    if until is not None and (not arguments.is_integer(until) or until < 1):
        raise ConfigError(f"normalize_until_count must be None or an integer >= 1, got {until!r}")
    std_eps = s["normalize_observations_std_eps"]
    if not isinstance(std_eps, (int, float, np.floating, np.integer)) or not std_eps >= 0:
        raise ConfigError(f"normalize_observations_std_eps must be a number >= 0, got {std_eps!r}")
    return mode, int(until) if mode == "ema" and until is not None else 0


def _jaxrl_choices(s: dict) -> bool:
    """`jaxrl_choices`, a bool (True or False, numpy's included), else a ConfigError."""
    value = s.get("jaxrl_choices", False)
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"jaxrl_choices must be True or False, got {value!r}")
    return bool(value)


def _restored(s: dict) -> Any:
    """The parameters to start from, as Brax takes them: `restore_params`, else the
    checkpoint at `restore_checkpoint_path` (a `<step>/` folder Brax's `ppo.train` wrote), read
    by Brax's own loader; None to start afresh."""
    if s["restore_params"] is not None:
        return s["restore_params"]
    from brax.training.agents.ppo import checkpoint

    return arguments.load_checkpoint(s["restore_checkpoint_path"], checkpoint)


def _refuse(s: dict) -> None:
    arguments.refuse(s, _REFUSED, "jaxrl.brax.ppo")
    schedule = s["learning_rate_schedule"]
    if schedule is not None and str(getattr(schedule, "value", schedule)).upper() != "NONE":
        raise ConfigError(
            f"learning_rate_schedule={schedule!r} cannot be honoured by jaxrl.brax.ppo: only a "
            "constant learning rate (None) is supported, not Brax's adaptive-KL schedule"
        )


def _epochs(s: dict, physics_per_step: int) -> tuple[int, int]:
    """(training epochs, training steps per epoch) as Brax's `ppo.train` counts them: each
    evaluation interval after the first evaluation holds max(num_resets_per_eval, 1) epochs of
    ceil(num_timesteps / (intervals x epochs x physics steps per training step)) steps."""
    intervals = max(s["num_evals"] - 1, 1)
    resets = max(s["num_resets_per_eval"], 1)
    steps = math.ceil(s["num_timesteps"] / (intervals * physics_per_step * resets))
    return intervals * resets, max(steps, 1)


def run_plan(plan: _Plan, progress_fn: Callable, policy_params_fn: Callable):
    """Trains `plan` with jaxrl's driver and reports as Brax does: progress_fn at step 0
    (num_evals > 1) and after every evaluation interval, policy_params_fn at step 0 and
    after every interval, in physics steps."""
    import jax

    from jaxrl.brax import params as brax_params
    from jaxrl.config.options import RunOptions
    from jaxrl.run import driver

    config, repeat = plan.config, plan.action_repeat
    make_policy = factories.make_inference_fn(
        plan.networks, plan.env, config.normalize_observations
    )
    report = brax_metrics.Report(
        config, plan.agent_config, repeat, plan.run_evals, plan.brax_episode_length
    )
    evaluate = None
    if plan.num_evals > 1 and plan.run_evals:  # Brax evaluates the untrained policy first
        trainer = driver.check_setting(
            config, plan.agent_config, plan.trainer_env, plan.randomization_fn, plan.injected
        )
        evaluate = report.start_program(trainer)

    def brax_params_of(state):
        stats = brax_params.stats_by_key(state.obs_stats, _keys(plan), plan.env.observation_size)
        if plan.injected is not None:  # the factory's own trees already
            params = state.agent.params
            stats = brax_params.normalizer_to_brax(stats, plan.std_eps, plan.normalizer_mode)
            return stats, params["policy"], params["value"]
        return brax_params.ppo_to_brax(
            state.agent.params, stats, plan.std_eps, plan.normalizer_mode
        )

    def start_fn(state):
        """Brax's restore (the policy and normaliser, and value if asked), then its step-0
        evaluation: here, where the driver compiles the first chunk on a thread of its own
        meanwhile, the evaluation's compile runs beside it."""
        state = _start_from(
            state, plan.restored, plan.restore_value_fn, plan.injected is not None, _keys(plan)
        )
        report.first(evaluate, state, progress_fn)
        return state

    save = _saver(plan)

    pending: list[dict] = []  # the interval's metrics, reported after policy_params_fn

    def state_fn(step: int, state) -> None:
        params = brax_params_of(state)
        policy_params_fn(step * repeat, make_policy, params)
        if step and save is not None:
            save(step * repeat, params)
        if pending and plan.num_evals > 0:  # Brax's order: params, then progress
            progress_fn(step * repeat, pending.pop())

    def on_row(step: int, row: dict) -> None:
        pending[:] = [report.row(row)]

    on_iteration = None
    if plan.training_log is not None:
        on_iteration = training_episodes(plan, report, progress_fn)

    if plan.untrained:  # num_timesteps=0: Brax returns the first parameters, untrained
        trainer = driver.check_setting(config, plan.agent_config, plan.env, None, plan.injected)
        state = jax.jit(trainer.init)(jax.random.PRNGKey(config.seed))
        start = _start_from(
            state, plan.restored, plan.restore_value_fn, plan.injected is not None, _keys(plan)
        )
        return make_policy, brax_params_of(start), {}  # Brax returns before evaluating
    result = driver.train(
        config,
        plan.agent_config,
        None,
        progress=None,
        progress_fn=on_row,
        state_fn=state_fn,
        start_fn=start_fn,
        compile_cache=True,
        options=RunOptions(eval_at_start=False),  # evaluated in start_fn, as Brax orders it
        env=plan.trainer_env,
        randomization_fn=plan.randomization_fn,
        networks=plan.injected,
        on_iteration=on_iteration,
    )
    last = report.row(result.history[-1]) if plan.num_evals > 0 else {}
    return make_policy, brax_params_of(result.state), last


def training_episodes(plan: _Plan, report: brax_metrics.Report, progress_fn: Callable):
    """`log_training_metrics`: the loop's `on_iteration` feeding Brax's own
    `EpisodeMetricsLogger`, as Brax's training step feeds it, so that `progress_fn` gets
    `episode/sum_reward`, `episode/length`, `episode/sps` and the losses (`episode/<loss>`) at
    Brax's steps and by Brax's averaging (the last 100 values of each). Each iteration's
    arrays are put in the order of Brax's training data (its unrolls' envs by rows, each
    unroll's steps along them), whose last 100 episodes the logger keeps; the losses, of which
    jaxrl's update gives each the mean over its gradient steps, enter once per gradient step.
    The env's own metrics come summed over each episode, as Brax's EpisodeWrapper sums them
    (the logger divides a `*_per_step` one by the episode's length)."""
    from brax.training import logger as metric_logger

    every, unroll = plan.training_log
    logger = metric_logger.EpisodeMetricsLogger(
        steps_between_logging=every, progress_fn=progress_fn
    )
    gradient_steps = plan.agent_config.num_epochs * plan.agent_config.num_minibatches

    def brax_order(x):  # [T, N], T = unrolls x unroll -> [unrolls x N, unroll]
        x = np.asarray(x)
        t, n = x.shape
        return x.reshape(t // unroll, unroll, n).transpose(0, 2, 1).reshape(-1, unroll)

    def on_iteration(finished: dict, metrics: dict) -> None:
        episodes = {
            "sum_reward": brax_order(finished["return"]),
            "length": brax_order(finished["length"]) * plan.action_repeat,
            **{k: brax_order(v) for k, v in finished["metrics"].items()},
        }
        losses = {
            name.removeprefix("training/"): np.full(gradient_steps, value, np.float32)
            for name, value in report.update_metrics(metrics).items()
        }
        logger.update_episode_metrics(episodes, brax_order(finished["done"]), losses)

    return on_iteration


def _keys(plan: _Plan) -> tuple[str, str]:
    """The env's observation entries the actor and the critic read (dict observations)."""
    actor = plan.config.actor_obs or "state"
    return actor, plan.config.critic_obs or actor


def _start_from(
    state, restored, restore_value_fn: bool, injected: bool = False, keys=("state", "state")
):
    """`state` with Brax's parameters `restored` (None: as it is); the value network's own
    fresh ones kept where `restore_value_fn` is False. Fresh optimiser state either way, as
    Brax's restore leaves it. `injected`: the agent runs the factory's own networks, whose
    trees are Brax's as they are; `keys`: the entries actor and critic read, where Brax's
    statistics are per entry of dict observations."""
    if restored is None:
        return state
    from jaxrl.brax import params as brax_params

    if injected:
        normalizer, policy, value = tuple(restored)
        agent_params = {"policy": policy, "value": value}
        stats = brax_params.normalizer_from_brax(normalizer)
    else:
        agent_params, stats = brax_params.ppo_from_brax(tuple(restored))
    stats = brax_params.stats_of_view(stats, keys)
    if not restore_value_fn:
        agent_params = {**agent_params, "value": state.agent.params["value"]}
    what = "restore_params / restore_checkpoint_path"
    agent_params = arguments.cast_like(agent_params, state.agent.params, what)
    stats = arguments.cast_like(stats, state.obs_stats, what)
    return state.replace(agent=state.agent.replace(params=agent_params), obs_stats=stats)


def _saver(plan: _Plan):
    """save(step, params): Brax's own `ppo.checkpoint.save` of Brax's params at `step`
    (physics steps) under save_checkpoint_path, with the network config Brax writes beside
    them, so that Brax's `checkpoint.load` and `load_policy` read it; None without a path."""
    if plan.save_checkpoint_path is None:
        return None
    import jax.numpy as jnp
    from brax.training.acme import specs
    from brax.training.agents.ppo import checkpoint

    size = plan.env.observation_size

    def spec(shape):  # as Brax's ppo.train writes it: each entry's shape and dtype
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        return specs.Array(shape, jnp.dtype("float32"))

    shapes = {k: spec(v) for k, v in size.items()} if isinstance(size, dict) else spec(size)
    config = checkpoint.network_config(
        observation_size=shapes,
        action_size=plan.env.action_size,
        normalize_observations=plan.config.normalize_observations,
        network_factory=plan.networks.factory,
    )
    return lambda step, params: checkpoint.save(plan.save_checkpoint_path, step, params, config)
