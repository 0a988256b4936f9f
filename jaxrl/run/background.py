"""Threads a run starts beside its main work: a stored program's load (`programs.prefetch`,
`prefetch_early`) and a chunk's compile (`chunks.EarlyChunk`). One registry knows them, so that
the command line can end a `jaxrl` process at once where a run left one running
(`cli._ended`) without knowing which module started it. Imports no JAX."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_THREADS: list[threading.Thread] = []
_LOCK = threading.Lock()


def start(name: str, target: Callable[..., Any], *args: Any) -> threading.Thread:
    """`target(*args)` started on a thread of its own called `name`, and registered."""
    thread = threading.Thread(target=target, args=args, name=name)
    with _LOCK:  # the finished ones forgotten: the list stays as short as what runs
        _THREADS[:] = [*(t for t in _THREADS if t.is_alive()), thread]
    thread.start()
    return thread


def left_running() -> bool:
    """Whether a thread `start` started still runs. Asked once a command has ended, when the
    run has taken (joined) every one it needed: any still alive is work no one will take."""
    with _LOCK:
        return any(thread.is_alive() for thread in _THREADS)
