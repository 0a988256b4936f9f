"""The host driver: compiles one training chunk, runs it repeatedly, and between chunks only
logs, checks for NaNs and checkpoints. Nothing here runs per environment step."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import platform
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

import envs
from jaxrl import agents
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.loop import LoopState, make_train

DEFAULT_CACHE_DIR = pathlib.Path(
    os.environ.get("JAXRL_CACHE_DIR", pathlib.Path.home() / ".cache" / "jaxrl" / "xla")
)


class RunDirError(ValueError):
    pass


class NonFiniteError(FloatingPointError):
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
    held = [
        name for name in ("config.json", "metrics.jsonl", "checkpoints") if (path / name).exists()
    ]
    if held:
        raise RunDirError(
            f"{path} already holds a run ({', '.join(held)}); pick another --out or remove "
            "that folder first."
        )
    return path


def save_checkpoint(directory: pathlib.Path, state: LoopState, env_steps: int) -> pathlib.Path:
    """Agent state, observation statistics and the loop counter (the replay buffer and env
    states are not saved), at checkpoints/<env_steps>. Written to a temporary name and renamed
    only when complete, so an interrupted save never replaces a good checkpoint."""
    import orbax.checkpoint as ocp

    tree = {"agent": state.agent, "obs_stats": state.obs_stats, "iteration": state.iteration}
    target = directory / str(env_steps)
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(target.absolute(), tree)
    return target


def load_checkpoint(path: str | os.PathLike, like: LoopState) -> dict:
    """Restores what `save_checkpoint` wrote, shaped like `like`'s fields."""
    import orbax.checkpoint as ocp

    abstract = {"agent": like.agent, "obs_stats": like.obs_stats, "iteration": like.iteration}
    abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), abstract)
    with ocp.StandardCheckpointer() as checkpointer:
        return checkpointer.restore(pathlib.Path(path).absolute(), abstract)


@dataclasses.dataclass
class RunResult:
    state: LoopState
    history: list[dict[str, Any]]
    compile_seconds: float
    train_seconds: float
    out_dir: pathlib.Path | None

    @property
    def final_eval_return(self) -> float:
        return self.history[-1]["eval_return"]


def _row(chunk: int, metrics: dict, config: TrainConfig, train_seconds: float, compile_s: float):
    metrics = {k: np.asarray(v).item() for k, v in metrics.items()}
    env_steps = int(metrics.pop("iteration")) * config.num_envs
    episodes = metrics.pop("episodes")
    return_sum = metrics.pop("episode_return_sum")
    length_sum = metrics.pop("episode_length_sum")
    row = {
        "chunk": chunk,
        "env_steps": env_steps,
        "train_seconds": round(train_seconds, 4),
        "wall_seconds": round(train_seconds + compile_s, 4),
        "env_steps_per_second": env_steps / max(train_seconds, 1e-9),
        "train_episodes": int(episodes),
        # None where no episode finished during the chunk.
        "train_episode_return": return_sum / episodes if episodes else None,
        "train_episode_length": length_sum / episodes if episodes else None,
    }
    row.update(metrics)
    return row


def _progress_line(row: dict, config: TrainConfig, compile_s: float) -> str:
    total = config.num_chunks * config.env_steps_per_chunk
    parts = [
        f"[{config.algo} {config.env}] {row['env_steps']:>9,}/{total:,} steps",
        f"{row['env_steps_per_second']:>8,.0f} env-steps/s",
        f"eval {row['eval_return']:9.2f} ± {row['eval_return_std']:.1f}",
    ]
    if row["train_episode_return"] is not None:
        parts.append(f"train ep {row['train_episode_return']:9.2f}")
    parts.append(f"{row['train_seconds']:7.1f}s (+{compile_s:.1f}s compile)")
    return " | ".join(parts)


def train(
    config: TrainConfig,
    agent_config: Any = None,
    out_dir: str | os.PathLike | None = None,
    *,
    progress: Callable[[str], None] | None = print,
    checkpoint_every: int = 0,
    compile_cache: bool = True,
) -> RunResult:
    """Trains `config.algo` on `config.env`; writes config.json, metrics.jsonl (one row per
    chunk) and checkpoints under `out_dir` when given. `checkpoint_every`: chunks between
    checkpoints (0: only the final one)."""
    # Every check that can fail on bad input runs here, before anything is compiled.
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
    envs.check_name(config.env)
    out_path = check_run_dir(out_dir)
    configure_compile_cache(compile_cache)

    trainer = make_train(config, spec.make(agent_config))
    config = trainer.config  # with the algorithm's own loop defaults filled in
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
        resolved = {
            "train": dataclasses.asdict(config),
            "agent": dataclasses.asdict(agent_config),
            "env_info": {
                "observation_size": trainer.env.observation_size,
                "action_size": trainer.env.action_size,
                "episode_length": trainer.env.episode_length,
                "env_steps_per_chunk": config.env_steps_per_chunk,
                "num_chunks": config.num_chunks,
            },
            "versions": versions(),
        }
        (out_path / "config.json").write_text(json.dumps(resolved, indent=2, default=str))

    start = time.perf_counter()
    state = jax.jit(trainer.init)(jax.random.PRNGKey(config.seed))
    chunk = jax.jit(trainer.chunk, donate_argnums=0).lower(state).compile()
    compile_seconds = time.perf_counter() - start
    if progress:
        progress(f"[{config.algo} {config.env}] compiled in {compile_seconds:.1f}s")

    history: list[dict[str, Any]] = []
    metrics_file = open(out_path / "metrics.jsonl", "a") if out_path else None  # noqa: SIM115
    train_seconds = 0.0
    try:
        for index in range(config.num_chunks):
            tick = time.perf_counter()
            state, metrics = chunk(state)
            metrics = jax.device_get(metrics)
            train_seconds += time.perf_counter() - tick
            row = _row(index, metrics, config, train_seconds, compile_seconds)
            bad = [k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v)]
            if bad:
                raise NonFiniteError(
                    f"non-finite {', '.join(bad)} in chunk {index} (env step {row['env_steps']}); "
                    "training stopped and the last checkpoint was kept. Lower the learning rates, "
                    "or enable normalize_observations."
                )
            history.append(row)
            if metrics_file:
                metrics_file.write(json.dumps(row) + "\n")
                metrics_file.flush()
            if progress:
                progress(_progress_line(row, config, compile_seconds))
            last = index == config.num_chunks - 1
            if out_path and (last or (checkpoint_every and (index + 1) % checkpoint_every == 0)):
                save_checkpoint(out_path / "checkpoints", state, row["env_steps"])
    finally:
        if metrics_file:
            metrics_file.close()
    if out_path is not None:
        summary = {
            "compile_seconds": compile_seconds,
            "train_seconds": train_seconds,
            "env_steps": history[-1]["env_steps"],
            "final_eval_return": history[-1]["eval_return"],
        }
        (out_path / "summary.json").write_text(json.dumps(summary, indent=2))
    return RunResult(state, history, compile_seconds, train_seconds, out_path)
