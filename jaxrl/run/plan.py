"""What a run gives back (`RunResult`) and the `Plan` that `train` and `resume` both build and
hand to the runner (`jaxrl.run.runner`); how it is kept is `jaxrl.config.options.RunOptions`.
Imports nothing of JAX."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any

from jaxrl.config.options import RunOptions


@dataclasses.dataclass
class RunResult:
    state: Any  # the loop's state (jaxrl.loops: OffPolicyState or OnPolicyState)
    history: list[dict[str, Any]]
    compile_seconds: float
    train_seconds: float
    out_dir: pathlib.Path | None
    # Ctrl-C came during the last chunk: the run finished all the same, and a caller running
    # several (a sweep) stops after it.
    interrupted: bool = False
    # The row of the evaluation before the first chunk (`RunOptions.eval_at_start`; at step
    # 0, `chunk` None, kept in the metrics files ahead of `history`'s chunks); None without.
    start_row: dict[str, Any] | None = None

    @property
    def final_eval_return(self) -> float:
        return self.history[-1]["eval_return"]


@dataclasses.dataclass(frozen=True)
class Plan:
    """A run ready to compile and train: `train` (a new run) and `resume` build it, the runner
    (`jaxrl.run.runner.execute`) runs the chunks after `history`'s last one. `state`: the state
    to go on from (of every member stacked where `run_grid` is set); `out_path`: the run folder
    (None: nothing written); `start`: `time.perf_counter()` when the run's setup began (compile
    time counts from it); `saved`: config.json's content; `initial()`: the run's first state,
    the template a rollback restores into (or starts again from)."""

    trainer: Any
    state: Any
    history: list[dict[str, Any]]
    out_path: pathlib.Path | None
    options: RunOptions
    progress: Any
    progress_fn: Callable[[int, dict[str, float]], Any] | None
    start: float
    saved: dict[str, Any] | None
    run_grid: Any  # jaxrl.grid.Grid, or None for a run of one seed
    initial: Callable[[], Any]
    chunks: Any = None  # chunks.Chunks: the run's chunk programs, compiled or loaded
    dataset: Any = None  # an offline run's dataset on the device (`jaxrl.loops.offline`)
    # state_fn(step, state): the state the run starts from (before its first chunk) and the one
    # after every chunk, on the process that reports (`driver.train`'s `state_fn`).
    state_fn: Callable[[int, Any], Any] | None = None
    # The evaluation before the first chunk, where an earlier process of the run made it (a
    # resume's, from its checkpoint); the runner makes it where this is None and no chunk ran.
    start_row: dict[str, Any] | None = None
