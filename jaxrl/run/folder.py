"""The run folder: the checks before a run takes one, config.json and summary.json, what a
checkpoint must share with the run that restores it, and reading back the newest checkpoint
that can be read."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import platform
import uuid
from typing import Any

import jax

from jaxrl import checkpoint, grid
from jaxrl.errors import JaxrlError
from jaxrl.files import SCALE_GRID, SWEEP_PLAN, write_atomically
from jaxrl.version import version


class RunDirError(JaxrlError, ValueError):
    pass


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
    if (path / SWEEP_PLAN).is_file() or (path / SCALE_GRID).is_file():
        raise RunDirError(f"{path} holds a sweep or scale grid; pick another --out.")
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
    # One of a sweep's settings' folders: runs one level down.
    inner = sorted(p.parent.name for p in path.glob("*/config.json")) if path.is_dir() else []
    if inner:
        raise RunDirError(
            f"{path} holds runs in its folders ({', '.join(inner[:3])}"
            f"{', ...' if len(inner) > 3 else ''}); pick another --out."
        )
    # A config.json alone is a run that stopped before finishing its first chunk: nothing of
    # it can be resumed, so the folder is taken over (its files are rewritten).
    return path


def run_config(config, agent_config, options, trainer, run_grid, env, randomization_fn) -> dict:
    """config.json of a new run: its configs (`config` with the algorithm's loop defaults filled
    in), how it is kept, what its env gives, the versions it ran with and a run id."""
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
    return saved


def _qualified_name(thing: Any) -> str:
    """An object's class, or a function, by module and name (recorded, never imported)."""
    named = thing if callable(thing) and hasattr(thing, "__qualname__") else type(thing)
    return f"{getattr(named, '__module__', None) or '?'}.{named.__qualname__}"


def run_meta(trainer, run_grid: grid.Grid | None = None) -> dict:
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


def write_summary(out_path, row, compile_seconds, reached, rollbacks, run_grid) -> None:
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
    write_atomically(out_path / "summary.json", json.dumps(summary, indent=2))


def newest_readable(directory, like, expected: dict, say) -> tuple[int | None, list, Any]:
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
