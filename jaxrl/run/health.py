"""Non-finite values in a chunk (NaN or infinity in its observations, rewards, losses or the
agent's parameters): finding and naming them, and rolling a run back to its newest checkpoint
(`RunOptions.on_nan`)."""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from jaxrl.config import TrainConfig
from jaxrl.errors import JaxrlError
from jaxrl.loops.base import NONFINITE
from jaxrl.run.folder import newest_readable
from jaxrl.run.rows import member_metrics


class NonFiniteError(JaxrlError, FloatingPointError):
    pass


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


def chunk_problem(
    rows: list[dict], metrics: dict, config: TrainConfig, index: int, run_grid
) -> str | None:
    """What chunk `index` saw that is not finite, over all its members (`rows`, one each, and
    the chunk's `metrics`); None where all is finite."""
    problems = []
    for i, one in enumerate(rows):
        member = metrics if run_grid is None else member_metrics(metrics, i)
        which = "" if run_grid is None else f" of {run_grid.describe(i)}"
        message = _nonfinite_message(one, _nonfinite(member, config), index, which)
        if message:
            problems.append(message)
    return "; ".join(problems) if problems else None


def stop_message(problem: str, rollbacks: int, on_nan: str) -> str:
    """The NonFiniteError of a run that stops at a non-finite chunk (`problem`)."""
    tried = (
        f" after {rollbacks} rollback{'s' * (rollbacks != 1)} (max_rollbacks)"
        if on_nan == "rollback"
        else ""
    )
    return (
        f"{problem}; training stopped{tried} and the checkpoints and metrics "
        "before it were kept. Lower the learning rates, enable "
        "normalize_observations, check the env's observations and rewards, or "
        "pass --on-nan rollback to go on from the last checkpoint."
    )


def roll_back(out_path, initial, rollbacks: int, run_grid, meta, say) -> tuple[Any, list, str]:
    """(state, history, where) to go on from after a chunk that saw a NaN: the newest
    checkpoint's (the run's first state where there is none), its key folded with the rollback's
    number so the run does not repeat what it did (the same numbers for the same seed)."""
    like = initial()
    step = None
    if out_path is not None:
        step, history, state = newest_readable(out_path / "checkpoints", like, meta, say)
    if step is not None:
        where = f"the checkpoint at env step {step:,}"
    else:
        state, history, where = like, [], "the start of the run"
    fold = lambda key: jax.random.fold_in(key, rollbacks)  # noqa: E731
    key = jax.jit(fold if run_grid is None else jax.vmap(fold))(state.key)
    return state.replace(key=jax.device_put(key, state.key.sharding)), history, where
