"""Runs `jaxrl ARGS...` in this process and SIGKILLs it at a chosen moment, for
tests/run/test_faults.py. SIGKILL cannot be caught: nothing of jaxrl's runs after it, as when the
machine loses power or the job scheduler kills the job.

    python -m tests.kill_worker POINT ARGS...

POINT (N counts from 1, in this process):
- `save:N`: as the N-th checkpoint save begins (the chunk's metric rows are written; nothing
  of the checkpoint is);
- `commit:N`: inside the N-th save, once orbax has written every item under its temporary name
  and before the rename that commits it;
- `saved:N`: right after the N-th save returned (committed; the next chunk not begun);
- `after:SECONDS`: SECONDS after the first chunk began (whatever runs then);
- `none`: never.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time


def _die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str) -> None:
    from jaxrl import checkpoint, logs

    kind, _, count = point.partition(":")
    if kind == "none":
        return
    if kind == "after":
        seconds = float(count)
        original_init = logs.RunLogger.__init__

        def start_clock(self, *args, **kwargs):  # loggers open as the first chunk begins
            original_init(self, *args, **kwargs)
            if not getattr(start_clock, "started", False):
                start_clock.started = True
                timer = threading.Timer(seconds, _die)
                timer.daemon = True  # a process that finishes first exits unkilled
                timer.start()

        logs.RunLogger.__init__ = start_clock
        return
    target = int(count)
    saves = {"n": 0}
    original_save = checkpoint.save

    def save(*args, **kwargs):
        saves["n"] += 1
        if kind == "save" and saves["n"] == target:
            _die()
        original_save(*args, **kwargs)
        if kind == "saved" and saves["n"] == target:
            _die()

    checkpoint.save = save
    if kind == "commit":
        # orbax's commit: the temporary folder renamed to the step's (orbax 0.11 and later).
        from orbax.checkpoint._src.path import atomicity

        original_finalize = atomicity.AtomicRenameTemporaryPath.finalize

        async def finalize(self, *args, **kwargs):
            if saves["n"] == target:
                _die()
            return await original_finalize(self, *args, **kwargs)

        atomicity.AtomicRenameTemporaryPath.finalize = finalize
    elif kind not in ("save", "saved"):
        raise SystemExit(f"kill_worker: unknown point {point!r}")


def main(argv: list[str]) -> int:
    arm(argv[0])
    from jaxrl import cli

    started = time.perf_counter()
    code = cli.main(argv[1:])
    print(f"kill_worker: finished in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
