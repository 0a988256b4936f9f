"""The arguments of `jaxrl train --resume`, `jaxrl eval` and `jaxrl render`, as dataclasses
that tyro parses. Their own module so that `jaxrl.cli` imports neither tyro nor any of jaxrl's
heavy modules until a command runs (`jaxrl --help` and `--version` stay fast); `jaxrl.cli`
re-exports them (`cli.ResumeArgs`, ...)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import tyro

from jaxrl.data.collect import CollectSettings


@dataclasses.dataclass
class ResumeArgs:
    resume: str
    """The run folder to continue."""
    steps: Annotated[int | None, tyro.conf.arg(aliases=("--total-steps",))] = None
    """Train on to this many env steps in all (rounded up to whole chunks)."""
    devices: int | Literal["all"] | None = None
    """Continue on this many devices (0: the default one alone) instead of the run's own:
    the state does not depend on the device count (a run of 8 GPUs goes on on one)."""
    compile_cache: bool = True
    """JAX's persistent compilation cache."""
    quiet: bool = False
    """No progress display."""
    wandb: bool = True
    """Go on logging to the run's W&B project, if it has one (--no-wandb: without it)."""
    coordinator: str | None = None
    """Several hosts: HOST:PORT of process 0 (as for jaxrl train)."""
    num_processes: int | None = None
    """Several hosts: how many processes take part."""
    process_id: int | None = None
    """Several hosts: this process's index."""


@dataclasses.dataclass
class EvalArgs:
    run: Annotated[str, tyro.conf.Positional]
    """The run folder."""
    episodes: int = 10
    """Greedy episodes to play (in parallel, one env each)."""
    checkpoint: int | None = None
    """The checkpoint's env steps (default: the newest)."""
    seed: int = 0
    """Seed of the episodes' initial states."""
    json: bool = False
    """Print the result as JSON."""
    member: int | None = None
    """Of a run of several seeds or settings: the member (index, as summary.json lists
    final_eval_returns); default: the one with the best eval return at the checkpoint."""


@dataclasses.dataclass
class RenderArgs:
    run: Annotated[str, tyro.conf.Positional]
    """The run folder."""
    out: str | None = None
    """Video file to write (.mp4 or .gif; default: policy.mp4 in the run folder)."""
    checkpoint: int | None = None
    """The checkpoint's env steps (default: the newest)."""
    steps: int | None = None
    """At most this many control steps (default: one whole episode)."""
    width: int = 320
    """Frame width in pixels."""
    height: int = 240
    """Frame height in pixels."""
    camera: str | None = None
    """A camera of the model, by name or index (default: the free camera)."""
    seed: int = 0
    """Seed of the episode's initial state."""


@dataclasses.dataclass(frozen=True)
class CollectArgs(CollectSettings):
    json: bool = False
    """Print the result as JSON."""


@dataclasses.dataclass
class ExportArgs:
    source: Annotated[str, tyro.conf.Positional]
    """A jaxrl run folder, a .policy file (Policy.save), or a Brax/Playground checkpoint
    (a <step>/ folder with ppo_network_config.json or sac_network_config.json, or its parent)."""
    out: str
    """The ONNX file to write."""
    checkpoint_step: int | None = None
    """The checkpoint's step (a jaxrl run's env steps; a Brax folder's step); default: the
    newest."""
    member: int | None = None
    """Of a run of several seeds or settings: the member (index); default: the one with the
    best eval return at the checkpoint."""
    opset: int = 11
    """The ONNX opset (11 loads in ONNX Runtime, Isaac Lab and Playground's examples)."""
    json: bool = False
    """Print the result as JSON."""
