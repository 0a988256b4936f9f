"""Training a `jaxrl scale` grid: `train_grid` trains a `Plan`'s programs that are not done, in
order, each a `jaxrl train --seeds --vmap` run (or `--resume` of one), records a program that
stopped on a NaN (scale_failed.json) and goes on; Ctrl-C stops the grid where a rerun resumes it.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from jaxrl.errors import Interrupted
from jaxrl.experiments.scale_folder import FAILED_FILE, GRID_FILE
from jaxrl.experiments.scale_plan import Plan
from jaxrl.files import write_atomically
from jaxrl.run.health import NonFiniteError


def train_grid(
    the_plan: Plan,
    *,
    progress: Any = "auto",
    options: Any = None,
    compile_cache: bool = True,
    say=print,
) -> dict[str, str]:
    """Trains the programs that are not done, in order, each as `jaxrl train --seeds --vmap`
    would (new) or `jaxrl train --resume` (resume). A program that stops on a non-finite value
    is recorded (scale_failed.json) and the grid goes on. Returns each program's outcome."""
    from jaxrl.run import driver

    out = the_plan.out
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / GRID_FILE, the_plan.spec)
    outcome = {}
    total = len(the_plan.programs)
    for index, program in enumerate(the_plan.programs, 1):
        folder = out / program.name
        width = "" if program.width is None else f", critic width {program.width}"
        head = (
            f"[scale {index}/{total}] UTD {program.sigma:g} (updates_per_step "
            f"{program.config.updates_per_step}), batch {program.batch_size}{width}: "
            f"{len(the_plan.lrs)} {the_plan.lr_field} x {len(the_plan.seeds)} seeds"
        )
        if program.status in ("done", "failed"):
            say(f"{head}: {program.status}, skipped ({folder})")
            outcome[program.name] = program.status
            continue
        verb = "resuming" if program.status == "resume" else "training"
        say(f"{head}: {verb} -> {folder}")
        again = "run the same jaxrl scale command again to go on (it resumes the grid)"
        try:
            if program.status == "resume":
                result = driver.resume(folder, progress=progress, compile_cache=compile_cache)
            else:
                result = driver.train(
                    program.config,
                    program.agent_config or the_plan.agent_config,
                    folder,
                    progress=progress,
                    options=options,
                    compile_cache=compile_cache,
                    seeds=list(the_plan.seeds),
                    vmap={the_plan.lr_field: list(the_plan.lrs)},
                )
        except NonFiniteError as error:
            folder.mkdir(parents=True, exist_ok=True)
            _write_json(folder / FAILED_FILE, {"error": str(error)})
            say(f"{head}: stopped: {error}")
            outcome[program.name] = "failed"
            continue
        except Interrupted as stop:  # Ctrl-C: a checkpoint was saved
            raise Interrupted(f"program {index} of {total} ({folder}) {stop}; or {again}",
                              stop.result) from None  # fmt: skip
        if result.interrupted:  # Ctrl-C in its last chunk: it finished, the grid stops
            raise Interrupted(
                f"program {index} of {total} ({folder}) finished as Ctrl-C came; {again}", result
            )
        outcome[program.name] = "trained"
    return outcome


def _write_json(path: pathlib.Path, value: Any) -> None:
    write_atomically(path, json.dumps(value, indent=2) + "\n")
