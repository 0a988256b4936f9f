"""What a run is told: `RunOptions` (how it is kept), `RunResult` (what it gives back) and the
`Plan` that `train` and `resume` both build and hand to the runner (`jaxrl.run.runner`).
Imports nothing of JAX, so the config layer can build RunOptions without importing the driver."""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Callable
from typing import Any

from jaxrl.errors import ConfigError


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
    early: Any = None  # runner.EarlyChunk: the chunk compiling beside the initial state's work
    dataset: Any = None  # an offline run's dataset on the device (`jaxrl.loops.offline`)
    # state_fn(step, state): the state the run starts from (before its first chunk) and the one
    # after every chunk, on the process that reports (`driver.train`'s `state_fn`).
    state_fn: Callable[[int, Any], Any] | None = None
