"""Threads a run starts beside its main work: a stored program's load (`programs.prefetch`,
`prefetch_early`), a chunk's compile (`chunks.EarlyChunk`) and other programs' (`Compiling`).
One registry knows them, so that the command line can end a `jaxrl` process at once where a
run left one running (`cli._ended`) without knowing which module started it. Imports no JAX."""

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


class Compiling:
    """`jitted.lower(*args)` on the calling thread (JAX traces on one thread at a time here),
    then compiled by XLA on a thread of its own called `name`, which holds no lock of Python's
    meanwhile; `take()` waits for it and gives the compiled program (called with the arguments
    that are not static), or raises its error."""

    def __init__(self, name: str, jitted: Any, *args: Any, compile: Callable | None = None):
        """`compile(lowered)`: how it compiles (default: XLA's defaults)."""
        self._result: Any = None
        self._error: BaseException | None = None
        self._how = compile or (lambda lowered: lowered.compile())
        self._thread = start(name, self._compile, jitted.lower(*args))

    def _compile(self, lowered: Any) -> None:
        try:
            self._result = self._how(lowered)
        except BaseException as error:  # noqa: BLE001 - raised again on the thread that takes it
            self._error = error

    def take(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result
