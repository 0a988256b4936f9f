"""The host driver behind `jaxrl train` and `resume`, and the public facade of the run layer
(`jaxrl.run`): `train` and `resume` check their input, build the trainer and the run's first (or
restored) state, and hand a `Plan` to the runner (`jaxrl.run.runner`), which compiles one
training chunk, runs it repeatedly, and between chunks only logs, checks for NaNs and
checkpoints. Nothing here runs per environment step. What the run layer's other modules
define is imported from them (`jaxrl.run.plan.RunOptions`, `jaxrl.run.rows.learning_metrics`,
...), not from here."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import time
from collections.abc import Callable
from typing import Any

import jax

from jaxrl import agents, checkpoint, envs, grid, logs, sharding
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.config.options import RunOptions
from jaxrl.errors import JaxrlError
from jaxrl.loops import Trainer, make_train
from jaxrl.loops.base import registry_env
from jaxrl.run import programs
from jaxrl.run.chunks import readying
from jaxrl.run.folder import (
    check_run_dir,
    newest_readable,
    run_config,
    run_meta,
    write_summary,
)
from jaxrl.run.plan import Plan, RunResult
from jaxrl.run.runner import execute
from jaxrl.run.state import check_init_from, initial_state, initialized_from, member_settings

__all__ = [
    "DEFAULT_CACHE_DIR",
    "ResumeError",
    "check_setting",
    "configure_compile_cache",
    "parse_seeds",
    "resume",
    "train",
    "with_algorithm",
]

DEFAULT_CACHE_DIR = programs.default_cache_dir()  # $JAXRL_CACHE_DIR, else ~/.cache/jaxrl/xla


class ResumeError(JaxrlError, ValueError):
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
    # Which programs are kept is JAX's own setting, left as it is: those that took over a second
    # to compile by default, or JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS (the test suite keeps
    # those over 0.1 s: tests/conftest.py).


def parse_seeds(spec: str | int | Any, first: int = 0) -> tuple[int, ...]:
    """`--seeds` as seeds: a count N (seeds first..first+N-1, `first` being --seed) or a
    comma-separated list of distinct seeds >= 0. Raises ConfigError naming the input."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        parts = [str(spec)]
    elif isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
    else:
        parts = [str(s) for s in spec]
    if not all(p.isdigit() for p in parts):
        raise ConfigError(
            f"--seeds {spec!r}: give a count (--seeds 8: 8 seeds from --seed, 0 to 7 by "
            "default) or seeds joined by commas (--seeds 0,3,7), each an integer >= 0"
        )
    if len(parts) == 1 and not isinstance(spec, list | tuple):
        count = int(parts[0])
        if count < 1:
            raise ConfigError(f"--seeds {spec!r}: the count of seeds must be >= 1")
        return tuple(range(first, first + count))
    seeds = tuple(int(p) for p in parts)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"--seeds {spec!r}: a seed is listed twice")
    return seeds


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
        envs.split_eval_env(env)  # the env, and the evaluation env where one is given
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


def check_setting(
    config: TrainConfig,
    agent_config: Any,
    env: Any = None,
    randomization_fn: Any = None,
    networks: Any = None,
) -> Trainer:
    """The checks `train` makes of a run's settings before compiling anything: the agent's
    config, the env's name and options (the env is built), the run's sizes against the agent's
    and the algorithm's loop defaults. Raises ConfigError (or the env's own error). Returns the
    trainer it built (nothing of it compiled), over `randomization_fn`'s physics where given,
    with `networks` (`train`'s) where given."""
    config = with_algorithm(config, agent_config)
    agent_config = _check_agent_config(config, agent_config, env)
    agent = agents.build(config.algo, agent_config, networks)
    return make_train(config, agent, env, randomization_fn)


# Over 80 lines only by its docstring (the API reference of every argument); its code is ~45.
def train(
    config: TrainConfig,
    agent_config: Any = None,
    out_dir: str | os.PathLike | None = None,
    *,
    progress: Any = print,
    progress_fn: Callable[[int, dict[str, float]], Any] | None = None,
    state_fn: Callable[[int, Any], Any] | None = None,
    start_fn: Callable[[Any], Any] | None = None,
    checkpoint_every: int = 0,
    options: RunOptions | None = None,
    compile_cache: bool = True,
    env: Any = None,
    randomization_fn: Any = None,
    seeds: Any = None,
    vmap: Any = None,
    networks: Any = None,
    on_iteration: Callable[[dict, dict], Any] | None = None,
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
    entries that are not numbers left out), e.g. for a live plot in a notebook; first at step
    0, with the untrained policy's evaluation (`RunOptions.eval_at_start`; the result's
    `start_row`).
    `state_fn(env_steps, state)`: with the loop's state (`RunResult.state`'s kind) the run
    starts from, before its first chunk, and after every chunk (as Brax's `policy_params_fn`),
    e.g. to save or evaluate the policy. `start_fn(state) -> state`: the run's first state
    made from the one it would start from (parameters of your own, as Brax's
    `restore_params`); a rollback to the start makes it again. `options`:
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

    `on_iteration(finished, metrics)` (PPO, one member): called from inside the compiled
    chunk after every rollout's update, with the episodes that rollout ended and the update's
    metrics (`jaxrl.loops.onpolicy.make_train`; `jaxrl.brax.ppo`'s `log_training_metrics`).
    """
    # Every check that can fail on bad input runs here, before anything is compiled.
    options = options or RunOptions(checkpoint_every=checkpoint_every)
    config = with_algorithm(config, agent_config)
    agent_config = _check_agent_config(config, agent_config, env)
    config, run_grid = _run_grid(config, agent_config, seeds, vmap, randomization_fn)
    if networks is not None and out_dir is not None:
        raise ConfigError(
            "networks: a run with networks of the caller's keeps no run folder (out_dir): "
            "resume, eval and load_policy build jaxrl's own networks"
        )
    if on_iteration is not None and run_grid is not None:
        raise ConfigError("on_iteration: a run of several seeds or settings does not call it")
    # Over several processes, process 0 checks and writes the run folder (all checkpoint).
    primary = sharding.is_primary()
    out_path = check_run_dir(out_dir) if primary or out_dir is None else pathlib.Path(out_dir)
    if options.wandb and out_path is not None and primary:
        logs.check_wandb()
    configure_compile_cache(compile_cache)

    agent = agents.build(config.algo, agent_config, networks)
    trainer, store = _make_trainer(
        config, agent, agent_config, env, randomization_fn, networks, on_iteration
    )
    config = trainer.config  # with the algorithm's own loop defaults filled in
    _check_split(config, run_grid)
    members = member_settings(trainer, agent_config, run_grid, networks)  # checked before compiling
    dataset, about = _dataset(trainer)
    source = check_init_from(config)
    saved = None
    if out_path is not None:
        saved = run_config(config, agent_config, options, trainer, run_grid, env, randomization_fn)
        saved.update(about)

    start = time.perf_counter()
    # The stored chunk loads beside the first state's work (dropped if never asked for).
    with readying(trainer, run_grid, dataset, store) as chunks:
        state = initial_state(trainer, run_grid, members, chunks, store)
        state = initialized_from(source, state, run_grid)
        state = start_fn(state) if start_fn is not None else state
        return _execute(trainer, run_grid, members, state, [], chunks, out_path=out_path,
                        options=options, progress=progress, progress_fn=progress_fn,
                        start=start, saved=saved, dataset=dataset,
                        state_fn=state_fn, start_fn=start_fn)  # fmt: skip


def _dataset(trainer: Trainer, saved: dict | None = None) -> tuple[Any, dict]:
    """A run's dataset (`config.dataset`: learnt from offline, or mixed into its online
    batches), checked against the run and put on the device, with what config.json keeps of
    it ({"dataset": id, rows, fingerprint}); (None, {}) for a run without one. `saved`: a
    resumed run's config.json, whose dataset must be the same one (its rows' fingerprint)."""
    config = trainer.config
    if config.dataset is None:
        return None, {}
    from jaxrl.data import minari_format
    from jaxrl.loops import offline

    data = minari_format.load(config.dataset)
    offline.check_dataset(config, data, trainer.observation, trainer.env.action_size)
    about = {
        "dataset": {"id": data.dataset_id, "rows": data.rows, "fingerprint": data.fingerprint()}
    }
    kept = (saved or {}).get("dataset")
    if kept is not None and kept != about["dataset"]:
        raise ConfigError(
            f"--dataset {config.dataset}: not the data this run trained on ({kept['id']}, "
            f"{kept['rows']:,} rows, fingerprint {kept['fingerprint']}); a resumed run reads "
            "the same dataset"
        )
    return offline.dataset_buffer(data), about


def _execute(
    trainer, run_grid, members, state, history, chunks, start_fn=None, **fields
) -> RunResult:
    """`execute`s the plan of a run (`train`'s or `resume`'s) from `state` after `history`,
    its chunk programs from `chunks` (`readying`'s); `start_fn`: `train`'s; `fields`: the
    Plan's others."""
    source = check_init_from(trainer.config)
    store = chunks.store  # a rollback to the start builds the first state through it

    def initial():  # the run's first state, as a rollback without a checkpoint restarts it
        fresh = initial_state(trainer, run_grid, members, store=store)
        first = initialized_from(source, fresh, run_grid)
        return start_fn(first) if start_fn is not None else first

    plan = Plan(trainer=trainer, state=state, history=history, run_grid=run_grid,
                initial=initial, chunks=chunks, **fields)  # fmt: skip
    return execute(plan)


def _make_trainer(
    config: TrainConfig,
    agent: Any,
    agent_config: Any,
    env: Any,
    randomization_fn: Any,
    networks: Any = None,
    on_iteration: Any = None,
) -> tuple[Trainer, programs.Store]:
    """`make_train`'s trainer, as it is, and the store of compiled programs as its run sees
    it (`jaxrl.run.programs.Store`): keyed by the run where its programs can be stored, not
    for an env object, randomization function or networks of the caller's, whose code the key
    cannot see, nor for a run whose program calls back `on_iteration` (`programs.NONE`).
    With the store on, a registry env is built here, so that its
    observation size comes from the store (`programs.remember_observation_size`) instead of a
    trace of its reset."""
    base = env
    if env is None and programs.folder() is not None:
        base = registry_env(config)
        programs.remember_observation_size(base, config)
    trainer = make_train(config, agent, base, randomization_fn, on_iteration)
    if env is not None or randomization_fn is not None or networks is not None:
        programs.note("run", "off: an env, randomization or networks of the caller's")
        return trainer, programs.NONE
    if on_iteration is not None:
        programs.note("run", "off: a program that calls back on_iteration")
        return trainer, programs.NONE
    return trainer, programs.Store(programs.identity(trainer, agent_config))


def _run_grid(config: TrainConfig, agent_config: Any, seeds: Any, vmap: Any, randomization_fn):
    """(config, grid) of a run of several members (`seeds`, `vmap`), checked; `config` with its
    first seed. (config, None) for a run of one seed."""
    if seeds is None and vmap is None:
        return config, None
    run_grid = grid.Grid(
        parse_seeds(seeds, config.seed) if seeds is not None else (config.seed,),
        grid.parse_vmap(vmap, config, agent_config),
    )
    _check_seeds(config, run_grid, randomization_fn)
    return dataclasses.replace(config, seed=run_grid.seeds[0]), run_grid


def _check_split(config: TrainConfig, run_grid: grid.Grid | None) -> None:
    """Members of a grid train inside one vmapped program; an actor/learner split runs several."""
    if run_grid is not None and config.split:
        raise ConfigError(
            f"--seeds / --vmap with an actor/learner split (split_every {config.split_every} "
            f"over {config.devices} devices): members train inside one vmapped program, a "
            "split runs several; pass --split-every 0 (every device does everything, split by "
            "data) or train one seed"
        )


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
    from jaxrl.run import runs

    out_path = pathlib.Path(run_dir)
    saved = runs.read_config_json(out_path)
    config, agent_config, options, per_chunk = _saved_settings(
        saved, out_path, total_steps, devices, wandb, env, randomization_fn
    )
    agent_config = _check_agent_config(config, agent_config, env)
    if options.wandb:
        logs.check_wandb(resuming=True)
    configure_compile_cache(compile_cache)
    agent = agents.get(config.algo).make(agent_config)
    trainer, store = _make_trainer(config, agent, agent_config, env, randomization_fn)
    if trainer.config.env_steps_per_chunk != per_chunk:
        # Another device count turned an actor/learner split off, whose chunks were rounded up
        # to whole exchanges: the run's own chunks and evaluation points go on (as --steps
        # keeps them).
        length = {"total_steps": saved["env_info"]["num_chunks"] * per_chunk}
        length.update(eval_every=per_chunk, num_evals=None)
        if dataclasses.replace(trainer.config, **length).env_steps_per_chunk == per_chunk:
            config = dataclasses.replace(config, **length)
            trainer, store = _make_trainer(config, agent, agent_config, env, randomization_fn)
    if trainer.config.env_steps_per_chunk != per_chunk:
        iterations = per_chunk // trainer.config.env_steps_per_iteration
        raise ResumeError(
            f"the run's chunks are {per_chunk:,} env steps ({iterations} iterations), which "
            f"the resumed settings cannot keep ({trainer.config.env_steps_per_chunk:,}): "
            f"over {trainer.config.devices} devices an actor/learner split rounds chunks up "
            f"to whole exchanges of split_every {trainer.config.split_every} iterations, or "
            "config.json was edited. Resume on the devices the run had "
            f"({saved['train'].get('devices')}), or on one (--devices 0)."
        )
    config = trainer.config
    total = config.offline_chunks * config.offline_updates_per_chunk + config.num_chunks * per_chunk
    dataset, _ = _dataset(trainer, saved)
    run_grid = grid.Grid.from_json(saved)
    members = member_settings(trainer, agent_config, run_grid)
    say = None if progress is None else progress if callable(progress) else print
    if say and total_steps is not None and total != total_steps:
        say(f"{out_path}: --steps {total_steps:,} rounded up to {total:,}, whole chunks of "
            f"{per_chunk:,} env steps")  # fmt: skip
    start = time.perf_counter()
    with readying(trainer, run_grid, dataset, store) as chunks:
        like = initial_state(trainer, run_grid, members, chunks, store)
        step, history, state = _restored(out_path, like, run_meta(trainer, run_grid), say)
        start_row = _start_row(out_path, step)
        target = options.stop_at_return
        reached = target is not None and bool(history) and history[-1]["eval_return"] >= target
        finished = step >= total or (reached and total_steps is None)
        if finished and history and not (out_path / "summary.json").exists():
            # Killed after its final checkpoint, before its summary: nothing is left to train.
            return _summary_only(out_path, step, history, state, reached, run_grid, say)
        _check_resumable(out_path, step, total, reached, target, total_steps)
        if say and step:
            say(f"{out_path}: resuming from its checkpoint at {step:,} env steps, to {total:,}")
        if reached:
            options = dataclasses.replace(options, stop_at_return=None)
        if total_steps is not None:
            saved["train"] = dataclasses.asdict(trainer.config)
            saved["env_info"]["num_chunks"] = trainer.config.num_chunks
        saved["run"] = dataclasses.asdict(options)
        return _execute(trainer, run_grid, members, state, history, chunks, out_path=out_path,
                        options=options, progress=progress, progress_fn=progress_fn,
                        start=start, saved=saved, dataset=dataset,
                        start_row=start_row)  # fmt: skip


def _start_row(out_path: pathlib.Path, step: int) -> dict | None:
    """The evaluation before the first chunk that checkpoint `step` keeps (None: it has none,
    or there is no checkpoint: the run starts over and evaluates again)."""
    if not step:
        return None
    meta, _ = checkpoint.read_meta(out_path / "checkpoints", step)
    return meta.get("start_row")


def _saved_settings(saved, out_path, total_steps, devices, wandb, env, randomization_fn):
    """(config, agent_config, options, env steps per chunk) of the run in `out_path` (its
    config.json `saved`), as it goes on: over `total_steps` and `devices` where given, without
    W&B where `wandb` is False. Updates `saved`'s devices."""
    from jaxrl.run import runs

    config, agent_config = runs.configs_from_json(saved)
    runs.check_env_given(saved, env, out_path, randomization_fn)
    try:
        options = RunOptions(**saved.get("run", {}))
    except TypeError as error:
        raise ConfigError(f'{out_path / "config.json"}: bad "run" entry ({error})') from None
    if not wandb:
        options = dataclasses.replace(options, wandb=None)
    per_chunk = int(saved["env_info"]["env_steps_per_chunk"])
    if total_steps is not None:
        done = max(checkpoint.steps(out_path / "checkpoints"), default=0)
        chunks = -(-total_steps // per_chunk)
        if chunks * per_chunk < done:  # (one that rounds up to `done` ends the run there)
            raise ResumeError(
                f"--steps {total_steps:,} is below the {done:,} env steps the run has done."
            )
        # Same chunk length, more (or fewer) chunks: see TrainConfig.iterations_per_chunk.
        config = dataclasses.replace(
            config, total_steps=chunks * per_chunk, eval_every=per_chunk, num_evals=None
        )
    if devices is not None:
        config = dataclasses.replace(config, devices=devices)
        saved["train"]["devices"] = devices
    return config, agent_config, options, per_chunk


def _restored(out_path: pathlib.Path, like, meta: dict, say) -> tuple[int, list, Any]:
    """(step, history, state) of the run's newest readable checkpoint; (0, [], `like`) where
    it has none yet (stopped while compiling or before its first checkpoint)."""
    step, history, state = newest_readable(out_path / "checkpoints", like, meta, say)
    if step is None:
        step, history, state = 0, [], like
        if say:
            say(f"{out_path}: no complete checkpoint yet; starting the run over from step 0")
    return step, history, state


def _summary_only(out_path, step, history, state, reached, run_grid, say) -> RunResult:
    """A run killed after its final checkpoint, before its summary: writes summary.json."""
    row = history[-1]
    compile_seconds = row["wall_seconds"] - row["train_seconds"]  # of all its processes
    write_summary(out_path, row, compile_seconds, reached, 0, run_grid)
    if say:
        say(f"{out_path} had finished training ({step:,} env steps); summary.json written")
    return RunResult(state, history, compile_seconds, 0.0, out_path)


def _check_resumable(out_path, step: int, total: int, reached: bool, target, total_steps) -> None:
    """Refuses to resume a run with nothing left to train: complete, or ended at its
    stop_at_return target (`reached`) with no new --steps."""
    if step >= total:
        raise ResumeError(
            f"{out_path} is complete ({step:,} env steps); pass --steps N (N > {step:,}) to "
            "train it further."
        )
    if reached and total_steps is None:
        raise ResumeError(
            f"{out_path} ended when it reached its stop_at_return target {target:g} at "
            f"{step:,} env steps; pass --steps N to train it further."
        )
