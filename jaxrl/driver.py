"""The host driver: compiles one training chunk, runs it repeatedly, and between chunks only
logs, checks for NaNs and checkpoints; resumes a run from its newest checkpoint. Nothing here
runs per environment step."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import pathlib
import platform
import shutil
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import agents, checkpoint, envs, grid, logs, sharding
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.errors import Interrupted, JaxrlError
from jaxrl.loops import make_train
from jaxrl.loops.base import NONFINITE
from jaxrl.version import version

DEFAULT_CACHE_DIR = pathlib.Path(
    os.environ.get("JAXRL_CACHE_DIR", pathlib.Path.home() / ".cache" / "jaxrl" / "xla")
)


class RunDirError(JaxrlError, ValueError):
    pass


class NonFiniteError(JaxrlError, FloatingPointError):
    pass


def configure_compile_cache(enabled: bool = True, path: str | os.PathLike | None = None) -> None:
    """JAX's persistent compilation cache: a second run of the same program skips XLA
    compilation. On by default; `enabled=False` (CLI `--no-compile-cache`, or the environment
    variable JAXRL_COMPILE_CACHE=0) turns it off."""
    if not enabled or os.environ.get("JAXRL_COMPILE_CACHE", "1") == "0":
        jax.config.update("jax_enable_compilation_cache", False)
        return
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path or DEFAULT_CACHE_DIR))
    # Cache every program that took over a second to compile (JAX's default threshold).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)


def versions() -> dict[str, str]:
    import brax
    import flax
    import mujoco
    import optax

    return {
        "jaxrl": version(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
        "brax": brax.__version__,
        "mujoco": mujoco.__version__,
        "backend": jax.default_backend(),
        "devices": str(jax.devices()),
    }


def check_run_dir(out_dir: str | os.PathLike | None) -> pathlib.Path | None:
    """Refuses a folder that already holds a run, so no earlier result is overwritten."""
    if out_dir is None:
        return None
    path = pathlib.Path(out_dir)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"--out {path} is a file, not a folder; pick another --out.")
    # The folder is made only once the program compiled: check now that it can be.
    existing = path.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirError(f"--out {path} cannot be made: {existing} is a file; pick another --out.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunDirError(
            f"--out {path} cannot be written: {existing} is not writable by this user; pick "
            "another --out."
        )
    held = []
    metrics = path / "metrics.jsonl"
    if metrics.is_file() and metrics.stat().st_size > 0:
        held.append("metrics.jsonl")
    if checkpoint.steps(path / "checkpoints"):
        held.append("checkpoints")
    if (path / "summary.json").exists():
        held.append("summary.json")
    if held:
        raise RunDirError(
            f"{path} already holds a run ({', '.join(held)}); pick another --out or remove "
            "that folder first."
        )
    # A config.json alone is a run that stopped before finishing its first chunk: nothing of
    # it can be resumed, so the folder is taken over (its files are rewritten).
    return path


@dataclasses.dataclass
class RunResult:
    state: Any  # the loop's state (jaxrl.loops: OffPolicyState or OnPolicyState)
    history: list[dict[str, Any]]
    compile_seconds: float
    train_seconds: float
    out_dir: pathlib.Path | None

    @property
    def final_eval_return(self) -> float:
        return self.history[-1]["eval_return"]


ON_NAN = ("stop", "rollback")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is kept, apart from what it learns: saved in config.json ("run") so a resume
    keeps them. `checkpoint_every`: chunks between checkpoints (0: only the final one, and on
    Ctrl-C); `keep_checkpoints`: the newest K stay (0: all); `checkpoint_buffer`: whether
    checkpoints hold the replay buffer (without it, a resumed run refills its buffer before
    learning again, so it is not identical to one that never stopped); `stop_at_return`: the
    run ends (with its final checkpoint) after the first evaluation returning at least this.
    `on_nan`: what a chunk that saw a NaN or infinity (in a loss or other update metric, the
    agent's parameters, observations or rewards) does: "stop" the run, its checkpoints and
    metrics before that chunk kept; or "rollback": go on from the newest checkpoint (the
    start of the run where there is none yet) with a fresh key, at most `max_rollbacks` times
    in one process, then stop."""

    checkpoint_every: int = 0
    keep_checkpoints: int = 3
    checkpoint_buffer: bool = True
    tensorboard: bool = True
    wandb: str | None = None  # a Weights & Biases project to log to (needs `pip install wandb`)
    stop_at_return: float | None = None
    on_nan: str = "stop"
    max_rollbacks: int = 3

    def __post_init__(self):
        if self.on_nan not in ON_NAN:
            raise ConfigError(
                f"on_nan must be one of {', '.join(ON_NAN)} (what a chunk that saw a NaN or "
                f"infinity does), got {self.on_nan!r}"
            )
        if (
            isinstance(self.max_rollbacks, bool)
            or not isinstance(self.max_rollbacks, int)
            or self.max_rollbacks < 0
        ):
            raise ConfigError(f"max_rollbacks must be an integer >= 0, got {self.max_rollbacks!r}")
        if not isinstance(self.checkpoint_every, int) or self.checkpoint_every < 0:
            raise ConfigError(
                f"checkpoint_every must be an integer >= 0 (chunks; 0: only the final "
                f"checkpoint), got {self.checkpoint_every!r}"
            )
        if not isinstance(self.keep_checkpoints, int) or self.keep_checkpoints < 0:
            raise ConfigError(
                f"keep_checkpoints must be an integer >= 0 (0: keep all), got "
                f"{self.keep_checkpoints!r}"
            )
        target = self.stop_at_return
        if target is not None and (
            isinstance(target, bool)
            or not isinstance(target, int | float)
            or not math.isfinite(target)
        ):
            raise ConfigError(f"stop_at_return must be a finite number, got {target!r}")


def parse_seeds(spec: str | int | Any) -> tuple[int, ...]:
    """`--seeds` as seeds: a count N (seeds 0..N-1) or a comma-separated list of distinct
    seeds >= 0. Raises ConfigError naming the input."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        parts = [str(spec)]
    elif isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
    else:
        parts = [str(s) for s in spec]
    if not all(p.isdigit() for p in parts):
        raise ConfigError(
            f"--seeds {spec!r}: give a count (--seeds 8: seeds 0 to 7) or seeds joined by "
            "commas (--seeds 0,3,7), each an integer >= 0"
        )
    if len(parts) == 1 and not isinstance(spec, list | tuple):
        count = int(parts[0])
        if count < 1:
            raise ConfigError(f"--seeds {spec!r}: the count of seeds must be >= 1")
        return tuple(range(count))
    seeds = tuple(int(p) for p in parts)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds {spec!r}: a seed is listed twice")
    return seeds


def seed_summary(returns: Any) -> dict:
    """Mean, interquartile mean (the middle 50% of seeds, scipy's trim_mean) and a 95%
    percentile-bootstrap interval of the mean (scipy.stats.bootstrap, fixed resampling seed)
    of one evaluation's per-seed returns."""
    import scipy.stats

    values = np.asarray(returns, np.float64)
    mean = float(values.mean())
    low = high = mean
    if values.size > 1 and np.ptp(values) > 0:
        interval = scipy.stats.bootstrap(
            (values,), np.mean, n_resamples=2000, method="percentile", random_state=0
        ).confidence_interval
        low, high = float(interval.low), float(interval.high)
    return {
        "eval_return_mean": mean,
        "eval_return_iqm": float(scipy.stats.trim_mean(values, 0.25)),
        "eval_return_ci_low": low,
        "eval_return_ci_high": high,
    }


def _seeds_row(rows: list[dict], seeds: tuple[int, ...]) -> dict:
    """The aggregate row of one chunk of several seeds: times, steps and rates of one seed
    (they run together), each seed's return and their summary; `eval_return` is the mean."""
    first = rows[0]
    returns = [r["eval_return"] for r in rows]
    trained = [r["train_episode_return"] for r in rows if r["train_episode_return"] is not None]
    summary = seed_summary(returns)
    row = {k: first[k] for k in ("chunk", "env_steps", "train_seconds", "wall_seconds")}
    if "updates" in first:  # gradient updates of one seed (each does the same)
        row["updates"] = first["updates"]
    row.update(
        chunk_seconds=first["chunk_seconds"],
        env_steps_per_second=first["env_steps_per_second"],
        chunk_env_steps_per_second=first["chunk_env_steps_per_second"],
        all_seeds_env_steps_per_second=first["env_steps_per_second"] * len(seeds),
        seeds=list(seeds),
        eval_returns=returns,
        eval_return=summary["eval_return_mean"],
        eval_return_std=float(np.std(returns)),
        best_seed=seeds[int(np.argmax(returns))],
        train_episode_return=float(np.mean(trained)) if trained else None,
    )
    row.update(summary)
    return row


def _grid_row(rows: list[dict], run_grid: grid.Grid) -> dict:
    """The aggregate row of one chunk of a grid: seeds alone give `_seeds_row`; with settings,
    each setting's summary over its seeds (`settings`, best first by mean eval return), the
    best setting, and that setting's row (its mean is the row's `eval_return`, which
    stop_at_return reads)."""
    if not run_grid.axes:
        return _seeds_row(rows, run_grid.seeds)
    per = len(run_grid.seeds)
    settings = []
    for i, setting in enumerate(run_grid.settings):
        one = _seeds_row(rows[i * per : (i + 1) * per], run_grid.seeds)
        settings.append((setting, one))
    best_setting, best = max(settings, key=lambda item: item[1]["eval_return"])
    row = dict(best)
    row.update(
        all_seeds_env_steps_per_second=rows[0]["env_steps_per_second"] * len(rows),
        eval_returns=[r["eval_return"] for r in rows],
        best_setting=grid.Grid.label(best_setting),
        settings=sorted(
            (
                {
                    "setting": grid.Grid.label(setting),
                    **setting,
                    "eval_returns": one["eval_returns"],
                    **{k: one[k] for k in one if k.startswith("eval_return_")},
                }
                for setting, one in settings
            ),
            key=lambda s: -s["eval_return_mean"],
        ),
    )
    return row


def _row(
    chunk: int,
    metrics: dict,
    config: TrainConfig,
    chunk_seconds: float,
    train_seconds: float,
    wall_seconds: float,
) -> dict:
    metrics = {k: np.asarray(v).item() for k, v in metrics.items() if not k.startswith(NONFINITE)}
    env_steps = int(metrics.pop("iteration")) * config.env_steps_per_iteration
    episodes = metrics.pop("episodes")
    return_sum = metrics.pop("episode_return_sum")
    length_sum = metrics.pop("episode_length_sum")
    row = {
        "chunk": chunk,
        "env_steps": env_steps,
        "train_seconds": round(train_seconds, 4),
        # Training plus compile time since the run began (every process of a resumed run).
        "wall_seconds": round(wall_seconds, 4),
        "chunk_seconds": round(chunk_seconds, 6),
        "env_steps_per_second": env_steps / max(train_seconds, 1e-9),
        # This chunk's own rate: what the progress display and its ETA use.
        "chunk_env_steps_per_second": config.env_steps_per_chunk / max(chunk_seconds, 1e-9),
        "train_episodes": int(episodes),
        # None where no episode finished during the chunk.
        "train_episode_return": return_sum / episodes if episodes else None,
        "train_episode_length": length_sum / episodes if episodes else None,
    }
    row.update(metrics)
    return row


def _nonfinite(metrics: dict, config: TrainConfig) -> dict[str, int]:
    """Of one member's chunk metrics: each quantity that turned NaN or infinite in the chunk
    (observation, reward, update, parameters), with the env step by which it first did."""
    steps = {
        k[len(NONFINITE) :]: int(np.asarray(v)) * config.env_steps_per_iteration
        for k, v in metrics.items()
        if k.startswith(NONFINITE)
    }
    return {name: step for name, step in steps.items() if step >= 0}


def _nonfinite_message(row: dict, first: dict[str, int], index: int, which: str) -> str | None:
    """What a chunk's row and its `_nonfinite` say, or None where all is finite."""
    named = [k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)]
    if not named and not first:
        return None
    seen = [
        f"{QUANTITIES.get(name, name)} (first by env step {step:,})"
        for name, step in sorted(first.items(), key=lambda item: item[1])
    ]
    if named:
        seen.append("metrics " + ", ".join(named))
    return f"non-finite {'; '.join(seen)}{which} in chunk {index} (env step {row['env_steps']:,})"


QUANTITIES = {
    "observation": "observations",
    "reward": "rewards",
    "update": "losses (update metrics)",
    "parameters": "agent parameters",
}


TIMING_KEYS = (
    "train_seconds",
    "wall_seconds",
    "chunk_seconds",
    "env_steps_per_second",
    "chunk_env_steps_per_second",
    "all_seeds_env_steps_per_second",
)


def learning_metrics(rows: list[dict]) -> list[dict]:
    """`rows` without their timings: what two runs of the same seed must agree on exactly
    (a run of several seeds: its seeds' own rows too)."""
    kept = []
    for row in rows:
        row = {k: v for k, v in row.items() if k not in TIMING_KEYS}
        if "per_seed" in row:
            row["per_seed"] = learning_metrics(row["per_seed"])
        kept.append(row)
    return kept


def _check_agent_config(config: TrainConfig, agent_config: Any, env: Any = None) -> Any:
    spec = agents.get(config.algo)
    agent_config = spec.config_cls() if agent_config is None else agent_config
    if not isinstance(agent_config, spec.config_cls):
        raise ConfigError(
            f"algo {config.algo!r} takes a {spec.config_cls.__name__}, "
            f"got {type(agent_config).__name__}"
        )
    cross_check = getattr(agent_config, "check_train", None)
    if cross_check is not None:  # sizes the agent needs of the run (PPO: minibatches)
        cross_check(config)
    if env is None:
        envs.import_modules(config.env_imports)
        envs.check_name(config.env)
    else:
        envs.check_env_object(env)
        if config.env_options:
            raise ConfigError(
                f"env_options {config.env_options} go to the registry's env maker; with an "
                "env object passed in (env=...), make it with those options yourself"
            )
    return agent_config


def with_algorithm(config: TrainConfig, agent_config: Any) -> TrainConfig:
    """`config` naming its algorithm: left at None, the one `agent_config` is the config of
    (SAC's without one), so `train(TrainConfig(env=...), TD3Config())` names it once. The
    config's own checks of the run's sizes (those that depend on the algorithm) run here."""
    if config.algo is not None:
        return config
    algo = "sac" if agent_config is None else agents.algorithm_of(agent_config)
    try:
        return dataclasses.replace(config, algo=algo)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def check_setting(config: TrainConfig, agent_config: Any, env: Any = None) -> None:
    """The checks `train` makes of a run's settings before compiling anything: the agent's
    config, the env's name and options (the env is built), the run's sizes against the agent's
    and the algorithm's loop defaults. Raises ConfigError (or the env's own error)."""
    config = with_algorithm(config, agent_config)
    agent_config = _check_agent_config(config, agent_config, env)
    make_train(config, agents.get(config.algo).make(agent_config), env)


def _meta(trainer, run_grid: grid.Grid | None = None) -> dict:
    """What a checkpoint must share with the run that restores it."""
    meta = {
        "algo": trainer.config.algo,
        "env": trainer.config.env,
        "num_envs": trainer.config.num_envs,
        "observation_size": trainer.observation.actor_size,
        "action_size": int(trainer.env.action_size),
    }
    if trainer.observation.asymmetric:  # absent otherwise: older checkpoints stay readable
        meta["critic_observation_size"] = trainer.observation.critic_size
    if run_grid is not None:  # a state of several members stacked
        meta["seeds"] = list(run_grid.seeds)
        if run_grid.axes:  # absent otherwise: checkpoints of seeds alone stay readable
            meta["vmap"] = run_grid.as_json()["vmap"]
    return meta


def train(
    config: TrainConfig,
    agent_config: Any = None,
    out_dir: str | os.PathLike | None = None,
    *,
    progress: Any = print,
    progress_fn: Callable[[int, dict[str, float]], Any] | None = None,
    checkpoint_every: int = 0,
    options: RunOptions | None = None,
    compile_cache: bool = True,
    env: Any = None,
    randomization_fn: Any = None,
    seeds: Any = None,
    vmap: Any = None,
) -> RunResult:
    """Trains `config.algo` on `config.env`, or on `env`: your own env object, with Brax's
    reset/step/observation_size/action_size (config.env is then only its label; the time
    limit, action repeat, auto-reset and batching wrap it as they do the registry's envs).
    `randomization_fn(model, rng) -> (models, in_axes)`: domain randomization of your own
    (`config.randomize` names the built-in ones); a resume needs it again.
    With `out_dir`: writes config.json, metrics
    (metrics.jsonl, metrics.csv, TensorBoard under tensorboard/), whole-run checkpoints under
    checkpoints/<env_steps> and summary.json; `resume(out_dir)` continues it.

    `progress`: None (silent), a callable taking one line per chunk (default: print), or
    "auto" / "bar" / "lines" (rich's progress bar on a terminal). `progress_fn(env_steps,
    metrics)` (as Brax's trainers call theirs): after every chunk, with that chunk's row of
    metrics.jsonl as a dict of floats (`eval_return`, `env_steps_per_second`, the losses, ...;
    entries that are not numbers left out), e.g. for a live plot in a notebook. `options`:
    how the run is kept (checkpoint cadence, retention, buffer, loggers); `checkpoint_every` is
    a shortcut for `RunOptions(checkpoint_every=...)`.

    `seeds` (a count, or a list of seeds; `--seeds` on the command line): those seeds train
    together in one compiled program (the chunk vmapped over them), each as the run with its
    seed alone would; `config.seed` is then ignored. Each seed's metrics go to
    seed_<seed>/metrics.*; the run's own rows give every seed's eval return, their mean
    (`eval_return`), interquartile mean and 95% bootstrap interval, and the best seed;
    `stop_at_return` reads the mean. Checkpoints hold all seeds; a resume continues them all.

    `vmap` (`{"actor_lr": [1e-4, 3e-4], "tau": [0.005, 0.01]}`, or ["actor_lr=1e-4,3e-4", ...];
    `--vmap` on the command line): every setting of the product of those values, times every
    seed, trains in the same one program (`jaxrl.grid`; only fields that are data can vary:
    TrainConfig.ARRAY_FIELDS and the agent config's). Members' metrics go to
    SETTING/seed_<seed>/; each row names the best setting (highest mean eval return over its
    seeds), whose mean is then the row's `eval_return`, and gives every setting's summary.
    """
    # Every check that can fail on bad input runs here, before anything is compiled.
    options = options or RunOptions(checkpoint_every=checkpoint_every)
    config = with_algorithm(config, agent_config)
    agent_config = _check_agent_config(config, agent_config, env)
    run_grid = None
    if seeds is not None or vmap is not None:
        run_grid = grid.Grid(
            parse_seeds(seeds) if seeds is not None else (config.seed,),
            grid.parse_vmap(vmap, config, agent_config),
        )
        _check_seeds(config, run_grid, randomization_fn)
        config = dataclasses.replace(config, seed=run_grid.seeds[0])
    # Over several processes, process 0 checks and writes the run folder (all checkpoint).
    primary = sharding.is_primary()
    out_path = check_run_dir(out_dir) if primary or out_dir is None else pathlib.Path(out_dir)
    if options.wandb and out_path is not None and primary:
        logs.check_wandb()
    configure_compile_cache(compile_cache)

    agent = agents.get(config.algo).make(agent_config)
    trainer = make_train(config, agent, env, randomization_fn)
    config = trainer.config  # with the algorithm's own loop defaults filled in
    if run_grid is not None and config.split:
        raise ConfigError(
            f"--seeds / --vmap with an actor/learner split (split_every {config.split_every} "
            f"over {config.devices} devices): members train inside one vmapped program, a "
            "split runs several; pass --split-every 0 (every device does everything, split by "
            "data) or train one seed"
        )
    members = _members(trainer, agent_config, run_grid)  # checked before compiling
    saved = None
    if out_path is not None:
        saved = {
            "train": dataclasses.asdict(config),
            "agent": dataclasses.asdict(agent_config),
            "run": dataclasses.asdict(options),
            "env_info": {
                "observation_size": trainer.observation.actor_size,
                # Asymmetric actor-critic: the critic's own input (None: the actor's).
                "critic_observation_size": trainer.observation.critic_size,
                "action_size": trainer.env.action_size,
                "episode_length": trainer.env.episode_length,
                "env_steps_per_chunk": config.env_steps_per_chunk,
                "num_chunks": config.num_chunks,
                # Set when the run trained on an env object: resume and eval need it again.
                "env_object": None if env is None else _qualified_name(env),
                "randomization_fn": (
                    None if randomization_fn is None else _qualified_name(randomization_fn)
                ),
            },
            "versions": versions(),
            # Names this run in loggers that outlive a process (W&B), the same on resume.
            "run_id": uuid.uuid4().hex[:12],
        }
        if run_grid is not None:
            saved.update(run_grid.as_json())

    start = time.perf_counter()
    state = _initial_state(trainer, run_grid, members)
    initial = lambda: _initial_state(trainer, run_grid, members)  # noqa: E731
    return _execute(
        trainer,
        state,
        [],
        out_path,
        options,
        progress,
        start,
        saved,
        run_grid,
        initial,
        progress_fn=progress_fn,
    )


def _members(trainer, agent_config: Any, run_grid: grid.Grid | None) -> list | None:
    """(agent, config) of each setting of the grid, checked: each config as its own run's
    would be, and each state of the same structure as the trainer's (a setting that would
    change the program, e.g. AdamW's decay against none, is refused by name)."""
    if run_grid is None:
        return None
    if not run_grid.axes:  # seeds alone
        return [(trainer.agent, trainer.config)]
    spec = agents.get(trainer.config.algo)
    key = jax.random.PRNGKey(0)
    like = jax.eval_shape(trainer.init, key)
    members = []
    for setting in run_grid.settings:
        config, member_agent_config = grid.member_configs(setting, trainer.config, agent_config)
        member = (spec.make(member_agent_config), config)
        shape = jax.eval_shape(lambda k, m=member: trainer.init(k, m), key)
        if jax.tree.structure(shape) != jax.tree.structure(like) or any(
            a.shape != b.shape or a.dtype != b.dtype
            for a, b in zip(jax.tree.leaves(shape), jax.tree.leaves(like), strict=True)
        ):
            raise ConfigError(
                f"--vmap setting {grid.Grid.label(setting)} changes the program (its state "
                "differs in structure, e.g. AdamW's weight decay against none), so it cannot "
                "train inside one program with the others; use jaxrl sweep for it"
            )
        members.append(member)
    return members


def _initial_state(trainer, run_grid: grid.Grid | None, members: list | None = None):
    """The run's first state: of `config.seed`, or of every member stacked (vmapped init of
    each setting's seeds, setting-major), placed on the run's devices (`_shardings`)."""
    if run_grid is None:
        init, key = trainer.init, jax.random.PRNGKey(trainer.config.seed)
    else:
        key = jnp.stack([jax.random.PRNGKey(seed) for seed in run_grid.seeds])

        def init(keys):
            states = [jax.vmap(lambda k, m=member: trainer.init(k, m))(keys) for member in members]
            return jax.tree.map(lambda *xs: jnp.concatenate(xs), *states)

    shapes = jax.eval_shape(init, key)
    check_memory(shapes, _devices(trainer))  # before anything of it is allocated
    if trainer.place is not None:  # an actor/learner split: parts on different devices
        return trainer.place(run_once(jax.jit(init), key))
    shardings = None  # the default device; over a mesh, derived from the state's shapes
    if trainer.data.mesh is not None:
        shardings = _shardings(trainer, shapes, run_grid)
    return run_once(jax.jit(init, out_shardings=shardings), key)


# XLA:CPU options for a program that runs once (the initial state), where compile time is all
# that counts: no fusion emitters, no LLVM optimisation. On Playground's CartpoleBalance the
# init program (MJX reset, agent and buffer init) then compiles in 1.8 s instead of 5.2 s and
# runs in 28 ms instead of 17 ms. The chunk program keeps XLA's defaults: these options slow
# its training steps by a third.
RUN_ONCE_CPU_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}


def run_once(jitted, *args):
    """Calls `jitted(*args)`, compiled with `RUN_ONCE_CPU_OPTIONS` on CPU; with XLA's defaults
    elsewhere, or where this XLA does not know the options."""
    lowered = jitted.lower(*args)
    if jax.default_backend() == "cpu":
        try:
            return lowered.compile(compiler_options=RUN_ONCE_CPU_OPTIONS)(*args)
        except Exception as error:  # an XLA without these options: its defaults, below
            if "option" not in str(error).lower():
                raise
    return lowered.compile()(*args)


class ResourceError(ConfigError):
    """A run that cannot fit in the memory it would run in."""


def _devices(trainer) -> list:
    mesh = trainer.data.mesh
    return list(mesh.devices.flat) if mesh is not None else [jax.devices()[0]]


def _host_available() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gigabytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6)):
        if count >= size / 10:
            return f"{count / size:,.2f} {unit}"
    return f"{count / 1e3:,.1f} KB"


STATE_PARTS = {"buffer": "replay buffer", "env_state": "env states", "agent": "agent"}


def check_memory(shapes: Any, devices: list) -> None:
    """Refuses a run whose state (`shapes`: the loop state's ShapeDtypeStructs) does not fit in
    the memory of `devices`: on a CPU the host's available memory, on accelerators each
    device's free memory times their count (envs and the replay buffer split over them).
    Names the size needed and its largest parts. A rough lower bound: a chunk needs working
    memory beyond its state."""
    needed = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))
    if devices[0].platform == "cpu":
        available, where = _host_available(), "this machine's available memory"
    else:
        free = []
        for device in devices:
            stats = device.memory_stats() or {}
            if "bytes_limit" in stats:
                free.append(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
        available = min(free) * len(devices) if len(free) == len(devices) else None
        where = f"the free memory of {len(devices)} {devices[0].platform} device(s)"
    if available is None or needed <= available:
        return
    parts = []
    for field, label in STATE_PARTS.items():
        part = getattr(shapes, field, None)
        if part is not None:
            size = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(part))
            parts.append(f"{label} {_gigabytes(size)}")
    raise ResourceError(
        f"the run's state needs {_gigabytes(needed)} ({', '.join(parts)}), more than "
        f"{where} ({_gigabytes(available)}); lower buffer_size or num_envs (the replay buffer "
        "holds buffer_size rows of observations, next observations, actions and flags)."
    )


def _shardings(trainer, state, run_grid: grid.Grid | None = None):
    """Where each array of the state lives: None (the default device) without a mesh."""
    members = run_grid is not None
    return sharding.state_shardings(state, trainer.data, trainer.config.num_envs, members)


def _check_seeds(config: TrainConfig, run_grid: grid.Grid, randomization_fn: Any) -> None:
    """Settings several members cannot share yet: domain randomization draws the envs'
    physics from `config.seed` once for the whole program, so the seeds would not each train as
    alone."""
    if config.randomize or randomization_fn is not None:
        raise ConfigError(
            f"--seeds {','.join(map(str, run_grid.seeds))} (or --vmap) with domain "
            "randomization: the randomized physics is drawn once from --seed for every member "
            "of the program, so the seeds would not each train as they do alone; train them one "
            "by one (--seed) for now"
        )


class ResumeError(JaxrlError, ValueError):
    pass


def _qualified_name(thing: Any) -> str:
    """An object's class, or a function, by module and name (recorded, never imported)."""
    named = thing if callable(thing) and hasattr(thing, "__qualname__") else type(thing)
    return f"{getattr(named, '__module__', None) or '?'}.{named.__qualname__}"


def resume(
    run_dir: str | os.PathLike,
    *,
    total_steps: int | None = None,
    devices: int | str | None = None,
    progress: Any = print,
    progress_fn: Callable[[int, dict[str, float]], Any] | None = None,
    compile_cache: bool = True,
    wandb: bool = True,
    env: Any = None,
    randomization_fn: Any = None,
) -> RunResult:
    """Continues the run in `run_dir` from its newest complete checkpoint (a run that has none
    yet, stopped while compiling or before its first checkpoint, starts over). Restored with the
    replay buffer (the default), it gives bit-identical parameters and metrics to a run that
    never stopped, on the same device. `total_steps` extends (or, if the run stopped early,
    still ends) the run at that many env steps, rounded up to whole chunks of the saved
    length; a decaying schedule (PPO's learning rate) then stretches over the new total, and a
    run that ended at its `stop_at_return` target trains on without it. `wandb=False` goes on
    without the run's Weights & Biases logging (e.g. where wandb is not installed). `env`,
    `randomization_fn`: those the run trained with, where it was given them (`train(...)`).
    `devices`: go on over that many devices (TrainConfig.devices) instead of the run's own
    (the state does not depend on it; the numbers after it do, as its batches split anew)."""
    from jaxrl import runs

    out_path = pathlib.Path(run_dir)
    saved = runs.read_config_json(out_path)
    config, agent_config = runs.configs_from_json(saved)
    runs.check_env_given(saved, env, out_path, randomization_fn)
    try:
        options = RunOptions(**saved.get("run", {}))
    except TypeError as error:
        raise ConfigError(f'{out_path / "config.json"}: bad "run" entry ({error})') from None
    if not wandb:
        options = dataclasses.replace(options, wandb=None)
    directory = out_path / "checkpoints"
    per_chunk = int(saved["env_info"]["env_steps_per_chunk"])
    if total_steps is not None:
        done = max(checkpoint.steps(directory), default=0)
        if total_steps < done:
            raise ResumeError(
                f"--steps {total_steps:,} is below the {done:,} env steps the run has done."
            )
        chunks = -(-total_steps // per_chunk)
        # Same chunk length, more (or fewer) chunks: see TrainConfig.iterations_per_chunk.
        config = dataclasses.replace(config, total_steps=chunks * per_chunk, eval_every=per_chunk)
    if devices is not None:
        config = dataclasses.replace(config, devices=devices)
        saved["train"]["devices"] = devices
    agent_config = _check_agent_config(config, agent_config, env)
    if options.wandb:
        logs.check_wandb(resuming=True)
    configure_compile_cache(compile_cache)
    agent = agents.get(config.algo).make(agent_config)
    trainer = make_train(config, agent, env, randomization_fn)
    if trainer.config.env_steps_per_chunk != per_chunk:
        raise ResumeError(
            f"the saved config gives {trainer.config.env_steps_per_chunk} env steps per chunk, "
            f"the run was made with {per_chunk}: config.json was edited, or --devices turns "
            "an actor/learner split on or off (its chunks are whole exchanges of split_every "
            "iterations); resume on as many devices as the run had, or pass --split-every 0"
        )
    total = trainer.config.num_chunks * per_chunk
    run_grid = grid.Grid.from_json(saved)
    members = _members(trainer, agent_config, run_grid)
    say = None if progress is None else progress if callable(progress) else print
    start = time.perf_counter()
    like = _initial_state(trainer, run_grid, members)
    step, history, state = _newest_readable(directory, like, _meta(trainer, run_grid), say)
    if step is None:
        step, history, state = 0, [], like
        if say:
            say(f"{out_path}: no complete checkpoint yet; starting the run over from step 0")
    target = options.stop_at_return
    reached = target is not None and bool(history) and history[-1]["eval_return"] >= target
    finished = step >= total or (reached and total_steps is None)
    if finished and history and not (out_path / "summary.json").exists():
        # Killed after its final checkpoint, before its summary: nothing is left to train.
        row = history[-1]
        compile_seconds = row["wall_seconds"] - row["train_seconds"]  # of all its processes
        _write_summary(out_path, row, compile_seconds, reached, 0, run_grid)
        if say:
            say(f"{out_path} had finished training ({step:,} env steps); summary.json written")
        return RunResult(state, history, compile_seconds, 0.0, out_path)
    if step >= total:
        raise ResumeError(
            f"{out_path} is complete ({step:,} env steps); pass --steps N (N > {step:,}) to "
            "train it further."
        )
    if reached:
        if total_steps is None:
            raise ResumeError(
                f"{out_path} ended when it reached its stop_at_return target {target:g} at "
                f"{step:,} env steps; pass --steps N to train it further."
            )
        options = dataclasses.replace(options, stop_at_return=None)
    if total_steps is not None:
        saved["train"] = dataclasses.asdict(trainer.config)
        saved["env_info"]["num_chunks"] = trainer.config.num_chunks
    saved["run"] = dataclasses.asdict(options)
    initial = lambda: _initial_state(trainer, run_grid, members)  # noqa: E731
    return _execute(
        trainer,
        state,
        history,
        out_path,
        options,
        progress,
        start,
        saved,
        run_grid,
        initial,
        progress_fn=progress_fn,
    )


def rounding_note(config: TrainConfig) -> str | None:
    """Says how a run's length was rounded up (None where it was not): every chunk runs the
    same whole loop iterations, each a step (or a rollout) of every env."""
    total = config.num_chunks * config.env_steps_per_chunk
    if total == config.total_steps:
        return None
    per_iteration = config.env_steps_per_iteration
    what = f"{config.num_envs} envs" + (
        f" x {config.steps_per_iteration} steps" if config.steps_per_iteration > 1 else ""
    )
    return (
        f"{config.total_steps:,} env steps rounded up to {total:,}: {config.num_chunks} "
        f"evaluation chunks of {config.iterations_per_chunk} loop iterations, each "
        f"{per_iteration:,} env steps ({what})"
    )


def _execute(
    trainer,
    state,
    history,
    out_path,
    options,
    progress,
    start,
    saved,
    run_grid,
    initial,
    progress_fn=None,
) -> RunResult:
    """Compiles the chunk program and runs the chunks after `history`'s last one; between
    chunks only logs, checks for non-finite values (`RunOptions.on_nan`) and checkpoints.
    `run_grid`: `state` holds its members stacked, trained together by the vmapped chunk; each
    gets its own metrics (under seed_<seed>/, or SETTING/seed_<seed>/) and the run's rows
    summarise them (`_seeds_row`, `_grid_row`). `initial()`: the run's first state, the
    template a rollback restores into (or starts again from)."""
    config = trainer.config
    if trainer.compile_chunk is not None:  # several programs (jaxrl.loops.split)
        chunk = trainer.compile_chunk(state)
    else:
        program = trainer.chunk if run_grid is None else jax.vmap(trainer.chunk)
        placed = {}
        if trainer.data.mesh is not None:  # the state keeps its shardings; metrics replicated
            placed["out_shardings"] = (
                _shardings(trainer, state, run_grid),
                trainer.data.sharding(),
            )
        chunk = jax.jit(program, donate_argnums=0, **placed).lower(state).compile()
    compile_seconds = time.perf_counter() - start
    # Over several processes (jaxrl.sharding.initialize_distributed) every one computes the
    # same rows; process 0 alone reports and writes them, all take part in checkpoints.
    primary = sharding.is_primary()
    if not primary:
        progress = None
    if out_path is not None and primary:
        # Written once the program compiled: input that fails in tracing or compilation leaves
        # no run folder behind (and a resume's new --steps only lands once it can run).
        out_path.mkdir(parents=True, exist_ok=True)
        if not history:
            shutil.rmtree(out_path / "tensorboard", ignore_errors=True)  # of a run with no rows
        _write_atomically(out_path / "config.json", json.dumps(saved, indent=2, default=str))
    total = config.num_chunks * config.env_steps_per_chunk
    done = history[-1]["env_steps"] if history else 0
    train_before = history[-1]["train_seconds"] if history else 0.0
    wall_before = history[-1]["wall_seconds"] if history else 0.0
    reporter = logs.make_progress(
        progress, f"{config.algo} {config.env}", total, done, progress_fn if primary else None
    )
    if reporter:
        rounded = rounding_note(config)
        if rounded:
            reporter.message(f"[{config.algo} {config.env}] {rounded}")
        reporter.message(f"[{config.algo} {config.env}] compiled in {compile_seconds:.1f}s")

    history = list(history)
    checkpoints = None
    loggers: list = []  # the run's own, then its members' (none where nothing is written)

    def open_loggers(history: list[dict]) -> list:
        """Loggers whose files hold exactly `history`'s rows (rewritten, as on a resume)."""
        if out_path is None or not primary:
            return []
        opened = [
            logs.RunLogger(
                out_path,
                history=[_without_seeds(r) for r in history],
                tensorboard=options.tensorboard,
                wandb_project=options.wandb,
                config=saved,
            )
        ]
        for i, (setting, seed) in enumerate(run_grid.members if run_grid else ()):
            member_dir = out_path / run_grid.member_dir(setting, seed)
            member_dir.mkdir(parents=True, exist_ok=True)
            opened.append(
                logs.RunLogger(
                    member_dir,
                    history=[r["per_seed"][i] for r in history],
                    tensorboard=options.tensorboard,
                )
            )
        return opened

    loggers = open_loggers(history)
    if loggers:  # TensorBoard's perf/compile_seconds, at the env steps this process starts from
        loggers[0].add_scalar("compile_seconds", compile_seconds, done)
    if out_path is not None:
        checkpoints = checkpoint.manager(
            out_path / "checkpoints", keep=options.keep_checkpoints or None
        )
    meta = _meta(trainer, run_grid)
    stop = _StopRequest(enabled=out_path is not None)
    train_seconds = 0.0
    row = history[-1] if history else None
    reached = False  # the run ended at its stop_at_return target
    rollbacks = 0
    try:
        with stop:
            index = len(history)
            while index < config.num_chunks:
                tick = time.perf_counter()
                state, metrics = chunk(state)
                metrics = jax.device_get(metrics)
                chunk_seconds = time.perf_counter() - tick
                train_seconds += chunk_seconds
                times = (
                    chunk_seconds,
                    train_before + train_seconds,
                    wall_before + compile_seconds + train_seconds,
                )
                if run_grid is None:
                    rows = [_row(index, metrics, config, *times)]
                    row = rows[0]
                else:
                    rows = [
                        _row(index, jax.tree.map(lambda x, i=i: x[i], metrics), config, *times)
                        for i in range(len(run_grid))
                    ]
                    row = {**_grid_row(rows, run_grid), "per_seed": rows}
                problems = []
                for i, one in enumerate(rows):
                    member = metrics if run_grid is None else _member(metrics, i)
                    which = "" if run_grid is None else f" of {run_grid.describe(i)}"
                    message = _nonfinite_message(one, _nonfinite(member, config), index, which)
                    if message:
                        problems.append(message)
                if problems:
                    problem = "; ".join(problems)
                    if options.on_nan == "rollback" and rollbacks < options.max_rollbacks:
                        rollbacks += 1
                        say = reporter.message if reporter else None
                        state, history, where = _roll_back(
                            out_path, initial, rollbacks, run_grid, meta, say
                        )
                        for logger in loggers:
                            logger.close()
                        loggers = open_loggers(history)
                        index = len(history)
                        row = history[-1] if history else None
                        if reporter:
                            reporter.message(
                                f"[{config.algo} {config.env}] {problem}: rolled back to "
                                f"{where} with a fresh key (rollback {rollbacks} of "
                                f"{options.max_rollbacks})"
                            )
                        continue
                    tried = (
                        f" after {rollbacks} rollback{'s' * (rollbacks != 1)} (max_rollbacks)"
                        if options.on_nan == "rollback"
                        else ""
                    )
                    raise NonFiniteError(
                        f"{problem}; training stopped{tried} and the checkpoints and metrics "
                        "before it were kept. Lower the learning rates, enable "
                        "normalize_observations, check the env's observations and rewards, or "
                        "pass --on-nan rollback to go on from the last checkpoint."
                    )
                history.append(row)
                if loggers:
                    loggers[0].write(_without_seeds(row))
                    for seed_logger, one in zip(loggers[1:], rows, strict=len(loggers) > 1):
                        seed_logger.write(one)
                if reporter:
                    reporter.chunk(row)
                target = options.stop_at_return
                reached = target is not None and row["eval_return"] >= target
                last = index == config.num_chunks - 1 or reached
                every = options.checkpoint_every
                due = last or (every and (index + 1) % every == 0) or stop.requested
                if checkpoints is not None and due:
                    checkpoint.save(
                        checkpoints,
                        state,
                        row["env_steps"],
                        history,
                        meta,
                        include_buffer=options.checkpoint_buffer,
                    )
                if stop.requested and not last:
                    result = RunResult(state, history, compile_seconds, train_seconds, out_path)
                    raise Interrupted(
                        f"interrupted at {row['env_steps']:,} env steps; checkpoint saved. "
                        f"Continue with: jaxrl train --resume {out_path}",
                        result,
                    )
                if reached:
                    if reporter:
                        reporter.message(
                            f"[{config.algo} {config.env}] eval return {row['eval_return']:.2f} "
                            f">= stop_at_return {target:g}: run ended at "
                            f"{row['env_steps']:,} env steps"
                        )
                    break
                index += 1
    finally:
        if reporter:
            reporter.close()
        for logger in loggers:
            logger.close()
        if checkpoints is not None:
            # After a failed save (disk full), closing may fail the same way: that first
            # error is the one to report.
            with contextlib.suppress(Exception):
                checkpoints.close()
    if out_path is not None and primary:
        _write_summary(out_path, row, compile_seconds, reached, rollbacks, run_grid)
    return RunResult(state, history, compile_seconds, train_seconds, out_path)


def _write_summary(out_path, row, compile_seconds, reached, rollbacks, run_grid) -> None:
    """summary.json: the run's totals and final returns, from its last row."""
    summary = {
        "compile_seconds": compile_seconds,
        "train_seconds": row["train_seconds"],
        "wall_seconds": row["wall_seconds"],
        "env_steps": row["env_steps"],
        "final_eval_return": row["eval_return"],
        "stopped_at_return": reached,
        "rollbacks": rollbacks,
    }
    if run_grid is not None:
        summary.update(
            seeds=list(run_grid.seeds),
            final_eval_returns=row["eval_returns"],
            best_seed=row["best_seed"],
            **{k: row[k] for k in ("eval_return_iqm", "eval_return_ci_low", "eval_return_ci_high")},
        )
        if run_grid.axes:
            summary.update(
                vmap=run_grid.as_json()["vmap"],
                best_setting=row["best_setting"],
                settings=row["settings"],
            )
    _write_atomically(out_path / "summary.json", json.dumps(summary, indent=2))


def _newest_readable(directory, like, expected: dict, say) -> tuple[int | None, list, Any]:
    """(step, history, state) of the newest checkpoint under `directory` that can be read,
    restored into `like`'s shapes and places; (None, [], None) where there is none (a run
    killed before its first checkpoint starts over). Damaged ones (a file truncated or lost
    since orbax committed them) newer than it are moved to damaged-checkpoints/ beside it, kept.
    One of another run (algorithm, env, sizes, arrays) is an error; so is finding none
    readable, and then nothing is moved (what fails everywhere is rather a fault of this
    machine or version than of the files)."""
    damaged = []
    for step in reversed(checkpoint.steps(directory)):
        where = f"{directory / str(step)}"
        try:
            meta, history = checkpoint.read_meta(directory, step)
            checkpoint.check_layout(meta, where)
            checkpoint.check_meta(meta, expected, where)
            state = checkpoint.restore_state(directory, step, like)
        except checkpoint.DamagedCheckpointError as error:
            damaged.append((step, error))
            continue
        for bad, error in damaged:
            aside = checkpoint.set_aside(directory, bad)
            if say:
                say(f"{error}; moved it to {aside} and went on from env step {step:,}")
        return step, history, state
    if damaged:
        raise checkpoint.CheckpointError(
            f"no checkpoint under {directory} can be read ({len(damaged)} tried, none moved); "
            f"the newest: {damaged[0][1]}"
        )
    return None, [], None


def _roll_back(out_path, initial, rollbacks: int, run_grid, meta, say) -> tuple[Any, list, str]:
    """(state, history, where) to go on from after a chunk that saw a NaN: the newest
    checkpoint's (the run's first state where there is none), its key folded with the rollback's
    number so the run does not repeat what it did (the same numbers for the same seed)."""
    like = initial()
    step = None
    if out_path is not None:
        step, history, state = _newest_readable(out_path / "checkpoints", like, meta, say)
    if step is not None:
        where = f"the checkpoint at env step {step:,}"
    else:
        state, history, where = like, [], "the start of the run"
    fold = lambda key: jax.random.fold_in(key, rollbacks)  # noqa: E731
    key = jax.jit(fold if run_grid is None else jax.vmap(fold))(state.key)
    return state.replace(key=jax.device_put(key, state.key.sharding)), history, where


def _member(metrics: dict, i: int) -> dict:
    """Member `i`'s metrics of a grid's chunk."""
    return jax.tree.map(lambda x: x[i], metrics)


def _without_seeds(row: dict) -> dict:
    """A row as the run's own metrics files keep it: without its seeds' own rows."""
    return {k: v for k, v in row.items() if k != "per_seed"}


def _write_atomically(path: pathlib.Path, text: str) -> None:
    """`path` holds either its old or its new text, never a partial one."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


class _StopRequest:
    """Ctrl-C (SIGINT) during training asks for a stop: the chunk under way finishes, a
    checkpoint is saved and `Interrupted` is raised. A second Ctrl-C stops at once (nothing is
    saved; the previous checkpoints stay). Only in the main thread, and only for runs that have
    a folder to save to."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nCtrl-C: finishing this chunk, then saving a checkpoint (Ctrl-C again to quit "
            "without saving)",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self):
        if self.enabled:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            signal.signal(signal.SIGINT, self._previous)
        return False
