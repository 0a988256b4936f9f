"""How a run is kept and started, apart from what it learns (`jaxrl.config.train.TrainConfig`
is what it trains): `RunOptions`, what `jaxrl.train` takes and config.json's "run" keeps, and
`TrainOptions`, the command line's, which adds how the run starts. The fields' sections for
`jaxrl train --help` are in `jaxrl.config.train.SECTIONS`. No jax here."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Literal

import tyro

from jaxrl.errors import ConfigError

ON_NAN = ("stop", "rollback")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is kept, apart from what it learns: saved in config.json ("run") so a resume
    keeps them."""

    checkpoint_every: int = 0
    """Chunks (evaluations) between checkpoints; 0: only the final one (and on Ctrl-C)."""
    keep_checkpoints: int = 3
    """The newest K checkpoints stay on disk; 0 keeps all."""
    checkpoint_buffer: bool = True
    """Checkpoints hold the replay buffer, so a resumed run is exactly the uninterrupted one."""
    tensorboard: bool = True
    """Write TensorBoard event files under RUN/tensorboard."""
    wandb: str | None = None
    """Also log to this Weights & Biases project (optional: pip install wandb)."""
    stop_at_return: float | None = None
    """End the run (final checkpoint saved) at the first evaluation returning at least this."""
    on_nan: Literal["stop", "rollback"] = "stop"
    """A chunk that saw a NaN or infinity (losses, parameters, observations, rewards): stop the
    run (checkpoints and metrics before it kept), or roll back to the newest checkpoint and go
    on with a fresh key."""
    max_rollbacks: int = 3
    """With --on-nan rollback: stop after this many rollbacks in one process."""
    eval_at_start: bool = True
    """Evaluate the untrained policy before the first chunk, as Brax's trainers do: a row at
    step 0 in the metrics, so curves start where training does. Its own program, compiled
    beside the first chunk's; it draws nothing from the run's keys, so training is the same."""

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

    def kept(self) -> RunOptions:
        """The RunOptions part of these options (of a TrainOptions: what config.json keeps)."""
        names = [field.name for field in dataclasses.fields(RunOptions)]
        return RunOptions(**{name: getattr(self, name) for name in names})


@dataclasses.dataclass(frozen=True)
class TrainOptions(RunOptions):
    """How the run starts and is kept (apart from what it learns): RunOptions and the command
    line's own."""

    preset: str | None = None
    """Start from a preset of experiments/presets.py (`jaxrl list` names them)."""
    config: str | None = None
    """Start from a saved run's config.json (or its run folder); flags override it."""
    resume: str | None = None
    """Continue the run in this folder from its newest checkpoint (only --steps and
    --devices may change)."""
    out: str | None = None
    """Run folder (default: runs/ALGO-ENV-sSEED-TIME); it must not hold a run already."""
    env_option: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """An option of the env family as KEY=VALUE, e.g. backend=mjx for brax/*; repeatable."""
    seeds: str | None = None
    """Train several seeds in one compiled program: a count from --seed (8: seeds 0-7;
    --seed 3 --seeds 3: seeds 3, 4, 5) or a list (0,3,7, which --seed does not move).
    Each seed's metrics go to RUN/seed_<seed>/; the run's rows give their mean, IQM and 95%
    bootstrap interval."""
    vmap: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """A settings grid trained in the same one program: NAME=V1,V2 (repeatable; the product of
    all, times --seeds). Tied fields, A+B=V1,V2 (e.g. actor_lr+critic_lr), are one axis: each
    value sets every field named. Only fields that are data: learning rates, tau, gamma, scales,
    noise (an error lists them). Metrics per member under RUN/SETTING/seed_<seed>/; rows and
    summary.json name the best setting."""
    compile_cache: bool = True
    """JAX's persistent compilation cache and jaxrl's store of programs (~/.cache/jaxrl/xla):
    re-runs skip compilation, and tracing where only data settings, seed or step count change."""
    quiet: bool = False
    """No progress display."""
    coordinator: str | None = None
    """Several hosts: HOST:PORT of process 0, the same for every process (or JAXRL_COORDINATOR).
    With --num-processes and --process-id; every process runs the same command."""
    num_processes: int | None = None
    """Several hosts: how many processes take part (or JAXRL_NUM_PROCESSES)."""
    process_id: int | None = None
    """Several hosts: this process's index, 0 to num_processes - 1 (or JAXRL_PROCESS_ID)."""
