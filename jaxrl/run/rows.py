"""A run's metric rows: one chunk's row of its metrics and times, the aggregate rows of several
seeds or of a grid of settings (with their seed summaries), and what two runs of the same seed
must agree on exactly."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxrl import grid
from jaxrl.config import TrainConfig
from jaxrl.loops.base import NONFINITE


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
    for key in ("updates", *OFFLINE_KEYS):  # of one seed (each does the same)
        if key in first:
            row[key] = first[key]
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


def grid_row(rows: list[dict], run_grid: grid.Grid) -> dict:
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


# The keys of a run with offline updates: its rows' phase ("offline" or "online"), the
# offline updates done, the step (those plus the env steps: what checkpoints, TensorBoard and
# the progress display count) and an offline chunk's rate.
OFFLINE_KEYS = ("phase", "offline_updates", "step", "offline_updates_per_second")


def step_of(row: dict) -> int:
    """A row's step: its env steps, plus its offline updates in a run that has some."""
    return row.get("step", row["env_steps"])


def where(row: dict) -> str:
    """A row's place in its run, for a message: "12,000 env steps" (or "8,000 offline
    updates", or "8,000 offline updates and 12,000 env steps")."""
    steps = f"{row['env_steps']:,} env steps"
    if "offline_updates" not in row:
        return steps
    updates = f"{row['offline_updates']:,} offline updates"
    return updates if row["phase"] == "offline" else f"{updates} and {steps}"


def _offline_fields(chunk: int, config: TrainConfig, env_steps: int, seconds: float) -> dict:
    """The OFFLINE_KEYS of chunk `chunk`'s row of a run with offline updates (none without)."""
    if not config.offline_updates:
        return {}
    per_chunk = config.offline_updates_per_chunk
    updates = min(chunk + 1, config.offline_chunks) * per_chunk
    offline = chunk < config.offline_chunks
    return {
        "phase": "offline" if offline else "online",
        "offline_updates": updates,
        "step": updates + env_steps,
        "offline_updates_per_second": per_chunk / max(seconds, 1e-9) if offline else 0.0,
    }


def chunk_row(
    chunk: int,
    metrics: dict,
    config: TrainConfig,
    chunk_seconds: float,
    train_seconds: float,
    wall_seconds: float,
) -> dict:
    metrics = {k: np.asarray(v).item() for k, v in metrics.items() if not k.startswith(NONFINITE)}
    env_steps = int(metrics.pop("iteration")) * config.env_steps_per_iteration
    online = chunk >= config.offline_chunks  # an offline chunk steps no env
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
        "chunk_env_steps_per_second": (
            config.env_steps_per_chunk / max(chunk_seconds, 1e-9) if online else 0.0
        ),
        **_offline_fields(chunk, config, env_steps, chunk_seconds),
        "train_episodes": int(episodes),
        # None where no episode finished during the chunk.
        "train_episode_return": return_sum / episodes if episodes else None,
        "train_episode_length": length_sum / episodes if episodes else None,
    }
    row.update(metrics)
    return row


def start_row(metrics: dict, config: TrainConfig, eval_seconds: float, wall_seconds: float) -> dict:
    """The row of the evaluation before the first chunk (`RunOptions.eval_at_start`): step 0,
    no chunk (`chunk` None), nothing trained, the evaluation's metrics (`metrics`, one member's)
    and its time, compile included (`eval_seconds`)."""
    evaluated = {
        k: np.asarray(v).item()
        for k, v in metrics.items()
        if np.ndim(v) == 0 and not k.startswith(NONFINITE)
    }
    row = {
        "chunk": None,
        "env_steps": 0,
        "train_seconds": 0.0,
        "wall_seconds": round(wall_seconds, 4),
        "chunk_seconds": 0.0,
        "env_steps_per_second": 0.0,
        "chunk_env_steps_per_second": 0.0,
    }
    if config.offline_updates:
        phase = "offline" if config.offline_chunks else "online"
        row.update(phase=phase, offline_updates=0, step=0, offline_updates_per_second=0.0)
    row.update(train_episodes=0, train_episode_return=None, train_episode_length=None)
    row.update(evaluated, eval_seconds=round(eval_seconds, 4))
    return row


TIMING_KEYS = (
    "train_seconds",
    "wall_seconds",
    "chunk_seconds",
    "env_steps_per_second",
    "chunk_env_steps_per_second",
    "all_seeds_env_steps_per_second",
    "offline_updates_per_second",
    "eval_seconds",
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


def member_metrics(metrics: dict, i: int) -> dict:
    """Member `i`'s metrics of a grid's chunk."""
    return jax.tree.map(lambda x: x[i], metrics)


def without_seeds(row: dict) -> dict:
    """A row as the run's own metrics files keep it: without its seeds' own rows."""
    return {k: v for k, v in row.items() if k != "per_seed"}


def rounding_note(config: TrainConfig) -> str | None:
    """Says how a run's length was rounded up (None where it was not): every chunk runs the
    same whole loop iterations, each a step (or a rollout) of every env."""
    updates = config.offline_chunks * config.offline_updates_per_chunk
    if updates != config.offline_updates:
        return (
            f"{config.offline_updates:,} offline updates rounded up to {updates:,}: "
            f"{_count(config.offline_chunks, 'evaluation chunk')} of "
            f"{_count(config.offline_updates_per_chunk, 'update')}"
        )
    total = config.num_chunks * config.env_steps_per_chunk
    if total == config.total_steps:
        return None
    per_iteration = config.env_steps_per_iteration
    what = _count(config.num_envs, "env") + (
        f" x {config.steps_per_iteration} steps" if config.steps_per_iteration > 1 else ""
    )
    return (
        f"{config.total_steps:,} env steps rounded up to {total:,}: "
        f"{_count(config.num_chunks, 'evaluation chunk')} of "
        f"{_count(config.iterations_per_chunk, 'loop iteration')}, each "
        f"{per_iteration:,} env steps ({what})"
    ) + (
        f"; {total / config.total_steps:.1f}x the steps asked for"
        if total >= 2 * config.total_steps
        else ""
    )


def evaluation_note(config: TrainConfig, episode_length: int) -> str | None:
    """Says what the evaluations cost where they may step the envs more than training does
    (each runs eval_envs episodes of up to `episode_length` steps), with how to evaluate less
    often; None otherwise. On-policy runs only: their training is mostly env steps, where an
    off-policy run's is mostly updates, beside which its evaluations' steps are cheap."""
    trained = config.num_chunks * config.env_steps_per_chunk
    evaluated = config.num_chunks * config.eval_envs * episode_length
    if not config.on_policy or not trained or evaluated <= trained:
        return None
    return (
        f"{_count(config.num_chunks, 'evaluation')} of {config.eval_envs} episodes, up to "
        f"{evaluated:,} env steps, {evaluated / trained:.1f}x the {trained:,} of training; "
        "--num-evals or --eval-every evaluates less often"
    )


def _count(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"
