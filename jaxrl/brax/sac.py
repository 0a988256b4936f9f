"""`train`: Brax 0.14's `sac.train`, by the same signature and return value, over jaxrl's SAC.

    from jaxrl.brax import sac      # was: from brax.training.agents.sac import train as sac
    make_policy, params, metrics = sac.train(environment=env, num_timesteps=..., ...)

Every Brax argument is honoured or refused by name (`ConfigError`) before anything compiles.
jaxrl's SAC runs with every choice of Brax's SAC (`benchmarks.brax_parity.sac_parity_flags`,
docs/PARITY.md): target entropy -|A|/2, the temperature's loss in alpha on a draw of its own
(lr 3e-4, alpha 1 at first), the softplus std head, the actor against the critics the update
started from, truncated rows masked out of the critic loss, LayerNorm after the ReLU where the
factory asks, finished envs back at their first state, the normaliser fed the observations
acted on, lecun_uniform weights. As in Brax, the untrained policy first fills the replay with
ceil(min_replay_size / num_envs) steps of every env (a program of its own, no update in it),
then each evaluation interval is `ceil((num_timesteps - prefill) / (intervals x num_envs x
action_repeat))` training steps, each one env step and `grad_updates_per_step` updates; the
steps reported are Brax's (physics steps, the prefill in them). Returned: Brax's `(make_policy,
(normalizer_params, policy_params), metrics)`, `make_policy` Brax's own `make_inference_fn` of
the caller's factory's networks.

Departures (docs/BRAX.md): Brax samples a batch from however few rows the prefill stored;
jaxrl's first update waits for `batch_size` rows (`jaxrl.loops.offpolicy.Parts.ready`), which
with Brax's defaults (min_replay_size 0, one env) delays it by batch_size - 1 steps. Without
normalize_observations the returned normaliser is a fresh one (Brax's counts the observations
it never applies).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from brax.training.agents.sac import networks as sac_networks

from jaxrl.brax import arguments, factories
from jaxrl.brax import metrics as brax_metrics
from jaxrl.errors import ConfigError

DOOR = "jaxrl.brax.sac"
_REFUSED = {
    "wrap_env": (
        True,
        "jaxrl wraps the env itself (time limit, action repeat, batch, auto-reset); pass the "
        "unwrapped env",
    ),
}


def train(
    environment: Any,
    num_timesteps: int,
    episode_length: int,
    wrap_env: bool = True,
    wrap_env_fn: Callable[[Any], Any] | None = None,
    action_repeat: int = 1,
    num_envs: int = 1,
    num_eval_envs: int = 128,
    learning_rate: float = 1e-4,
    discounting: float = 0.9,
    seed: int = 0,
    batch_size: int = 256,
    num_evals: int = 1,
    normalize_observations: bool = False,
    max_devices_per_host: int | None = None,
    reward_scaling: float = 1.0,
    tau: float = 0.005,
    min_replay_size: int = 0,
    max_replay_size: int | None = None,
    grad_updates_per_step: int = 1,
    deterministic_eval: bool = False,
    network_factory: Callable = sac_networks.make_sac_networks,
    progress_fn: Callable[[int, dict], None] = lambda *args: None,
    eval_env: Any = None,
    randomization_fn: Callable | None = None,
    checkpoint_logdir: str | None = None,
    restore_checkpoint_path: str | None = None,
    *,
    num_resets_per_eval: int = 0,
):
    """Brax's `sac.train` (brax/training/agents/sac/train.py, 0.14.2): the same arguments, by
    name and default, the same `(make_policy, params, metrics)`; docs/BRAX.md lists what each
    means here. `num_resets_per_eval`, which MuJoCo Playground's `brax_sac_config` passes and
    Brax's `sac.train` refuses, is accepted; jaxrl's off-policy loop does not hard-reset its
    training envs, so a value above 0 is ignored with a warning."""
    settings = dict(locals())
    plan = make_plan(settings)  # every check, before anything compiles
    return run_plan(plan, progress_fn)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What `train` runs: jaxrl's configs, the env, the prefill, and Brax's units."""

    config: Any  # TrainConfig
    agent_config: Any  # SACConfig
    env: Any
    trainer_env: Any  # env, or envs.WithEvalEnv of env and Brax's eval_env
    randomization_fn: Any
    networks: Any  # factories.NetworkSettings of the caller's factory, for make_policy
    injected: Any  # SAC: the factory's own networks as jaxrl's SAC runs them, or None
    action_repeat: int
    brax_episode_length: int | None  # Brax's argument, physics steps (None: the env's)
    prefill: int  # Brax's prefill: loop iterations (env steps of every env) before learning
    steps_per_interval: int  # training steps (iterations) per evaluation interval
    num_evals: int
    restored: Any  # Brax's (normalizer, policy) to start from, or None
    checkpoint_logdir: Any


def first_update_rows(num_envs: int, min_replay_size: int) -> int:
    """The replay rows stored when Brax's SAC makes its first gradient step: its prefill
    (whole steps of every env, ceil(min_replay_size / num_envs) of them) and one more step."""
    return (-(-min_replay_size // num_envs) + 1) * num_envs


def make_plan(s: dict, algo: str = "sac", options: dict | None = None) -> _Plan:
    """The configs of Brax's arguments `s` for `algo` (SAC, or another off-policy algorithm
    through `jaxrl.brax.offpolicy`, with its own `options`), or a ConfigError naming the
    argument."""
    from jaxrl.config import TrainConfig

    door = f"jaxrl.brax.{algo}"
    arguments.refuse(s, _REFUSED, door)
    if algo != "sac":
        for name in ("checkpoint_logdir", "restore_checkpoint_path"):
            if s[name]:
                raise ConfigError(
                    f"{name} cannot be honoured by {door}: Brax has no checkpoint format for "
                    f"{algo}'s networks (jaxrl.train's run folders keep {algo}'s checkpoints)"
                )
    env = arguments.checked_env(s["environment"])
    repeat = arguments.positive(s, "action_repeat")
    envs = arguments.positive(s, "num_envs")
    s = dict(s)
    for name in ("batch_size", "grad_updates_per_step", "num_eval_envs"):
        s[name] = arguments.positive(s, name)
    prefill, per_interval = _steps(s, envs, repeat)
    if s["num_resets_per_eval"]:
        warnings.warn(
            f"num_resets_per_eval={s['num_resets_per_eval']} is ignored by {door}: jaxrl's "
            "off-policy loop does not hard-reset its training envs between evaluations",
            stacklevel=3,
        )
    intervals = max(s["num_evals"] - 1, 1)
    rows = (prefill + intervals * per_interval) * envs  # every row the run stores
    if s["max_replay_size"] is None:
        replay = max(s["num_timesteps"], s["batch_size"])
    elif (replay := arguments.integer(s, "max_replay_size")) < max(s["batch_size"], envs):
        raise ConfigError(
            f"max_replay_size={replay!r} must hold a batch (batch_size={s['batch_size']}) and a "
            f"step of every env (num_envs={envs})"
        )
    net = None
    if s["network_factory"]:  # SAC runs a factory its settings cannot build as it is
        net = factories.sac_settings(s["network_factory"], algo == "sac", algo)
    if isinstance(getattr(env, "observation_size", None), dict):
        raise ConfigError(f"environment: dictionary observations are not implemented in {algo}")
    try:
        config = TrainConfig(
            algo=algo,
            env=f"brax/{type(env).__name__}",
            seed=int(s["seed"]),
            total_steps=intervals * per_interval * envs,
            num_envs=envs,
            episode_length=arguments.episode_length(s, env, repeat),
            action_repeat=repeat,
            batch_size=s["batch_size"],
            updates_per_step=s["grad_updates_per_step"],
            # The run never stores more than `rows`: a larger buffer would never wrap either.
            buffer_size=min(replay, max(rows, s["batch_size"])),
            # The prefill runs apart (Trainer.prefill), so the chunks learn from their first
            # iteration on: Brax's first update, one training step after the prefill.
            learning_starts=0,
            eval_every=per_interval * envs,
            eval_envs=s["num_eval_envs"],
            eval_actions=_eval_actions(s["deterministic_eval"], algo),
            eval_simulator="own",  # Brax's evaluator steps envs of its own
            eval_env_metrics=True,
            randomize_eval=s["randomization_fn"] is not None,  # Brax randomizes its evaluator's
            normalize_observations=bool(s["normalize_observations"]),
            obs_clip=0.0,
            gamma=s["discounting"],
            renormalize_rollout=True,
            autoreset=factories.autoreset_of(s["wrap_env_fn"]),
            devices=arguments.devices(s["max_devices_per_host"]),
        )
        agent_config = _agent_config(s, algo, net, options or {})
    except ValueError as error:  # a field's own check: its message names the field
        raise ConfigError(str(error)) from None
    from brax.training.agents.sac import checkpoint

    return _Plan(
        config=config,
        agent_config=agent_config,
        env=env,
        trainer_env=arguments.checked_envs(env, s["eval_env"]),
        randomization_fn=s["randomization_fn"],
        networks=net,
        injected=(
            factories.sac_networks(
                net, env.observation_size, env.action_size, agent_config.num_critics
            )
            if net is not None and net.injected
            else None
        ),
        action_repeat=repeat,
        brax_episode_length=s["episode_length"],
        prefill=prefill,
        steps_per_interval=per_interval,
        num_evals=s["num_evals"],
        restored=arguments.load_checkpoint(s["restore_checkpoint_path"], checkpoint),
        checkpoint_logdir=s["checkpoint_logdir"],
    )


# The make_sac_networks options behind each network setting: a setting the algorithm lacks
# is refused where the caller's factory chose it, and left to the algorithm where Brax's
# default stands in.
_FACTORY_OPTIONS = {
    "actor_hidden": {"hidden_layer_sizes"},
    "critic_hidden": {"hidden_layer_sizes"},
    "activation": {"activation"},
    "kernel_init": {"policy_network_kernel_init_fn", "q_network_kernel_init_fn"},
    "critic_layer_norm": {"q_network_layer_norm"},
    "critic_norm_after_relu": {"q_network_layer_norm"},
}


def _eval_actions(deterministic: bool, algo: str) -> str:
    """Brax's `deterministic_eval` as jaxrl's eval_actions. FastTD3 and PQL spread their noise
    over the envs (scales up to 0.4 and 0.8 of a noise of std 1): a "sampled" evaluation acts at
    scale 1, a noise training never used, so they evaluate greedily."""
    from jaxrl import agents

    per_env = (agents.get(algo).make().loop_defaults or {}).get("noise_scale_max") is not None
    return "greedy" if deterministic or per_env else "sampled"


def _agent_config(s: dict, algo: str, net: Any, options: dict) -> Any:
    """SAC with every choice of Brax's SAC; another algorithm with its own defaults, Brax's
    learning rate, tau and reward scaling, the factory's networks where one is given, and the
    caller's `options` (fields of its config) over them."""
    from jaxrl import agents
    from jaxrl.agents.configs.sac import SACConfig

    if algo == "sac":
        net = net or factories.sac_settings(None)
        return SACConfig(
            actor_lr=s["learning_rate"],
            critic_lr=s["learning_rate"],
            alpha_lr=3e-4,
            init_alpha=1.0,
            target_entropy_scale=0.5,
            tau=s["tau"],
            reward_scale=s["reward_scaling"],
            softplus_std=True,
            actor_uses_updated_critic=False,
            temperature_loss="alpha",
            temperature_draw="own",
            truncation="mask",
            **net.agent,
        )
    cls = agents.get(algo).config_cls
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ConfigError(
            f"{', '.join(unknown)}: not an option of {algo} ({cls.__name__}); its options are "
            f"its config's fields ({', '.join(fields)})"
        )
    values = {"actor_lr": s["learning_rate"], "critic_lr": s["learning_rate"]}
    for argument, name in (("tau", "tau"), ("reward_scaling", "reward_scale")):
        if name in fields:
            values[name] = s[argument]
        elif s[argument] != inspect.signature(train).parameters[argument].default:
            raise ConfigError(f"{argument}={s[argument]!r}: {algo} has no {name}")
    given = set(factories.unwrapped(s["network_factory"])[1]) if net else set()
    for name, value in (net.agent if net else {}).items():
        if name in fields:
            values[name] = value
        elif _FACTORY_OPTIONS[name] & given and value != getattr(SACConfig(), name):
            raise ConfigError(f"network_factory: {algo}'s networks have no {name} (={value!r})")
    values = {k: v for k, v in values.items() if k in fields}
    return cls(**{**values, **options})


def _steps(s: dict, envs: int, repeat: int) -> tuple[int, int]:
    """(prefill iterations, training steps per evaluation interval) as Brax's `sac.train`
    counts them, with its checks."""
    total = arguments.integer(s, "num_timesteps")
    min_replay = arguments.integer(s, "min_replay_size")
    if min_replay < 0:
        raise ConfigError(f"min_replay_size must be an integer >= 0, got {min_replay!r}")
    if min_replay >= total:
        raise ConfigError(
            f"num_timesteps={total!r} with min_replay_size={min_replay}: no training would "
            "happen (Brax's sac.train needs min_replay_size < num_timesteps)"
        )
    if arguments.integer(s, "num_evals") < 0:
        raise ConfigError(f"num_evals must be an integer >= 0, got {s['num_evals']!r}")
    prefill = -(-min_replay // envs)
    left = total - prefill * envs * repeat
    if left < 0:
        raise ConfigError(
            f"the prefill ({prefill} steps of {envs} envs x action_repeat {repeat}) exceeds "
            f"num_timesteps={total}"
        )
    intervals = max(s["num_evals"] - 1, 1)
    return prefill, -(-left // (intervals * envs * repeat))


def run_plan(plan: _Plan, progress_fn: Callable):
    """Trains `plan` with jaxrl's driver and reports as Brax does: the evaluation at step 0
    (num_evals > 1, before the prefill), the prefill, then progress_fn after every interval,
    in physics steps, a checkpoint before it where checkpoint_logdir is given."""
    import jax

    from jaxrl.brax import params as brax_params
    from jaxrl.config.options import RunOptions
    from jaxrl.run import background, driver
    from jaxrl.run.state import RUN_ONCE_OPTIONS, compile_with_options

    config, repeat = plan.config, plan.action_repeat
    if config.algo == "sac":
        make_policy = factories.make_inference_fn(
            plan.networks or factories.sac_settings(None), plan.env, config.normalize_observations
        )
    else:
        make_policy = _jaxrl_make_policy(plan)
    report = brax_metrics.Report(config, plan.agent_config, repeat, True, plan.brax_episode_length)
    trainer = driver.check_setting(
        config, plan.agent_config, plan.trainer_env, plan.randomization_fn, plan.injected
    )
    prefill = jax.jit(trainer.prefill, static_argnums=1)
    evaluate = report.start_program(trainer) if plan.num_evals > 1 else None

    def start_fn(state):
        """Brax's order: restore, evaluate at step 0, prefill the replay. The prefill's program
        compiles on a thread of its own while the evaluation's compiles and runs (and the
        first chunk's, on the driver's thread), as a program that runs once (less compile, as
        fast to run: benchmarks/notes/2026-12-07-door-speed-step-0.md)."""
        state = _start_from(state, plan.restored, plan.injected is not None)
        if not plan.prefill:
            report.first(evaluate, state, progress_fn)
            return state
        once = functools.partial(compile_with_options, by_backend=RUN_ONCE_OPTIONS)
        filling = background.Compiling(
            "jaxrl-prefill-compile", prefill, state, plan.prefill, compile=once
        )
        report.first(evaluate, state, progress_fn)
        return filling.take()(state)

    save = _saver(plan)
    pending: list[dict] = []  # the interval's metrics, reported after its checkpoint

    def state_fn(step: int, state) -> None:
        if step and save is not None:  # Brax's order: the checkpoint, then progress_fn
            save(step * repeat, _brax_params(state))
        if pending:
            progress_fn(step * repeat, pending.pop())

    def on_row(step: int, row: dict) -> None:
        pending[:] = [report.row(row)]

    def _brax_params(state):
        if plan.injected is not None:  # the factory's own policy tree already
            return brax_params.normalizer_to_brax(state.obs_stats), state.agent.actor.params
        if config.algo == "sac":
            return brax_params.sac_to_brax(state.agent.actor.params, state.obs_stats)
        return _policy_params(plan, state)

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
    )
    return make_policy, _brax_params(result.state), report.row(result.history[-1])


def _policy_params(plan: _Plan, state) -> tuple:
    """(normalizer_params, policy_params) of an algorithm Brax has no networks for: Brax's
    normaliser, and the agent state's arrays its greedy and exploring actions read, by path
    (`jaxrl.run.runs.policy_arrays`), which `make_policy` puts back into the agent."""
    import jax

    from jaxrl.brax import params as brax_params
    from jaxrl.run import runs

    obs_like = jax.ShapeDtypeStruct((1, plan.env.observation_size), jax.numpy.float32)
    arrays = runs.policy_arrays(
        plan.config, plan.agent_config, state.agent, state.obs_stats, obs_like, exploring=True
    )
    return brax_params.normalizer_to_brax(state.obs_stats), arrays


def _jaxrl_make_policy(plan: _Plan) -> Callable:
    """Brax's `make_policy(params, deterministic=False) -> policy(obs, key) -> (action, {})`
    for an algorithm Brax has no networks for, from jaxrl's agent: greedy where
    `deterministic`, else the agent's exploring action (at `_exploring_scale`)."""
    import jax
    import jax.numpy as jnp

    from jaxrl import agents
    from jaxrl.brax import params as brax_params
    from jaxrl.loops.base import init_agent, make_observe, make_policy, resolve_config
    from jaxrl.observations import ObservationView, actor_part
    from jaxrl.run import runs

    agent = agents.get(plan.config.algo).make(plan.agent_config)
    config = resolve_config(plan.config, agent)
    noise = _exploring_scale(config)
    view = ObservationView(None, None, plan.env.observation_size, None)
    like = jax.eval_shape(
        lambda key: init_agent(agent, key, view, plan.env.action_size), jax.random.PRNGKey(0)
    )
    greedy, observe = make_policy(config, agent), make_observe(config)

    def make(params, deterministic: bool = False):
        normalizer, arrays = params
        state = runs.agent_state_from_arrays(like, arrays)
        stats = brax_params.normalizer_from_brax(normalizer)

        def policy(obs, key):
            if deterministic:
                return greedy(state, stats, obs), {}
            obs = jnp.asarray(obs, jnp.float32)
            batch = obs.reshape(-1, obs.shape[-1])
            action = agent.act(state, observe(actor_part(stats), batch), key, noise)
            return action.reshape(obs.shape[:-1] + action.shape[-1:]), {}

        return policy

    return make


def _exploring_scale(config: Any) -> float:
    """The noise scale of an exploring action: 1, or for an algorithm that spreads its noise
    over the envs (FastTD3, PQL: each env its scale in [noise_scale_min, noise_scale_max]) the
    middle of that range, which its training acted with on average."""
    if config.noise_scale_min is None or config.noise_scale_max is None:
        return 1.0
    return (config.noise_scale_min + config.noise_scale_max) / 2


def _start_from(state, restored, injected: bool = False):
    """`state` with Brax's (normalizer, policy) `restored` (None: as it is): the critics,
    the temperature and the optimisers fresh, as Brax's restore leaves them. `injected`: the
    agent runs the factory's own networks, whose policy tree is Brax's as it is."""
    if restored is None:
        return state
    from jaxrl.brax import params as brax_params

    if injected:
        policy, stats = restored[1], brax_params.normalizer_from_brax(restored[0])
    else:
        policy, stats = brax_params.sac_from_brax(tuple(restored))
    what = "restore_checkpoint_path"
    policy = arguments.cast_like(policy, state.agent.actor.params, what)
    stats = arguments.cast_like(stats, state.obs_stats, what)
    actor = state.agent.actor.replace(params=policy)
    return state.replace(agent=state.agent.replace(actor=actor), obs_stats=stats)


def _saver(plan: _Plan):
    """save(step, params): Brax's own `sac.checkpoint.save` of Brax's params at `step`
    (physics steps) under checkpoint_logdir, with the network config Brax's `sac.train`
    writes beside them; None without a folder."""
    if not plan.checkpoint_logdir:  # Brax saves only where it is given a folder
        return None
    from brax.training.agents.sac import checkpoint

    config = checkpoint.network_config(
        observation_size=plan.env.observation_size,
        action_size=plan.env.action_size,
        normalize_observations=plan.config.normalize_observations,
        network_factory=plan.networks.factory,
    )
    return lambda step, params: checkpoint.save(plan.checkpoint_logdir, step, params, config)
