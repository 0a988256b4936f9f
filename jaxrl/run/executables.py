"""Compiled programs to bytes and back, and what JAX's persistent cache gave for a compile: the
parts of the program store (`jaxrl.run.programs`) that reach into jax's private modules
(`serialize_executable`'s pickler classes, `compilation_cache.extract_executable_and_time`,
`stages.Compiled`). Each falls back to the public way, or to not storing, where a jax differs;
a new jax is checked here first."""

from __future__ import annotations

import io
import pathlib
import pickle
import threading
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import serialize_executable


def load(path: pathlib.Path) -> Any:
    """The stored program at `path`, ready to run; None where it cannot be read."""
    entry = read(path)
    return None if entry is None else _deserialize(entry)


def _deserialize(entry: dict) -> Any:
    """The program of `entry` (`read`'s), ready to run; None where XLA cannot load it."""
    return finish(entry, rebuild(entry))


def rebuild(entry: dict) -> Any:
    """The first half of `_deserialize`, the one that takes time (XLA rebuilds the program):
    what `serialize_executable.deserialize_and_load` unpickles, from the executable's bytes,
    which name only jax's classes, so that a thread can run it while the main thread imports
    the modules of the trees' classes. None where that cannot be had (a jax whose private
    unpickler differs): then `finish` does the whole of it."""
    try:
        backend = jax.devices()[0].client
        reader = serialize_executable._JaxPjrtUnpickler
        return reader(io.BytesIO(entry["executable"]), backend, backend.devices()).load()
    except Exception:  # noqa: BLE001 - done again by `finish`, the public way
        return None


def finish(entry: dict, executable: Any) -> Any:
    """The second half of `_deserialize`: the program from `rebuild`'s output, with the
    trees of its arguments and outputs; None where it cannot be loaded."""
    try:
        in_tree, out_tree = pickle.loads(entry["trees"])
        if executable is not None:
            try:
                return _compiled(executable, in_tree, out_tree)
            except Exception:  # noqa: BLE001 - a jax whose Compiled differs: the public way
                pass
        program = (entry["executable"], in_tree, out_tree)
        return serialize_executable.deserialize_and_load(*program)
    except Exception:  # noqa: BLE001 - any unreadable entry is compiled again
        return None


def _compiled(executable: Any, in_tree: Any, out_tree: Any) -> Any:
    """deserialize_and_load's own last steps (jax 0.10's), after its unpickling."""
    unloaded, args_info, no_kwargs = executable
    args_info = in_tree.unflatten(args_info)
    return jax.stages.Compiled(unloaded.load(), [], args_info, out_tree, no_kwargs=no_kwargs)


def read(path: pathlib.Path) -> dict | None:
    """The entry at `path` as stored (its program and the trees of its arguments and outputs
    still serialized, so reading it imports nothing), with the LAPACK kernels it calls
    readied; None where it cannot be read."""
    try:
        entry = pickle.loads(path.read_bytes())
        if any(t.startswith("lapack_") for t in entry["targets"]):
            initialize_lapack()
        entry["executable"], entry["trees"]  # noqa: B018 - missing: an unreadable entry
        return entry
    except Exception:  # noqa: BLE001 - any unreadable entry is compiled again
        return None


def initialize_lapack() -> None:
    """jaxlib points its LAPACK kernels at SciPy's LAPACK when a program using them is first
    lowered; a program loaded from the store is not, and would call null pointers (a
    segmentation fault, seen with MJX's Cholesky solves). Lowering a 1x1 Cholesky does it."""
    if jax.default_backend() == "cpu":
        jax.jit(jnp.linalg.cholesky).lower(jax.ShapeDtypeStruct((1, 1), jnp.float32))


CACHE_HIT = "/jax/compilation_cache/cache_hits"  # the event JAX records on a persistent-cache hit


# `serialize` swaps a class of jax's for a moment: the lock keeps two threads' swaps apart.
_PATCHING = threading.Lock()
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # XLA compiled, or the cache gave

# What `compile_watching_cache` sees, per thread: two programs may compile at once (the chunk
# on a thread of its own beside the initial state's programs: `chunks.EarlyChunk`), and each
# must see only its own compile's events and cache bytes. So the listeners and the wrapper of
# the cache's unpacking are installed once per process (`_watch`), and record only into the
# calling thread's `_WATCHED.seen`, set while that thread compiles.
_WATCHED = threading.local()
_INSTALLING = threading.Lock()
_WATCH_INSTALLED: list[bool] = []


def _watch() -> None:
    """Installs, once per process, jax.monitoring listeners and a wrapper of the persistent
    cache's `extract_executable_and_time` (jax 0.10's private module) that record into the
    calling thread's `_WATCHED.seen` while it is set (`compile_watching_cache`)."""
    with _INSTALLING:
        if _WATCH_INSTALLED:
            return
        try:
            from jax._src import compilation_cache
        except ImportError:
            compilation_cache = None
        extract = getattr(compilation_cache, "extract_executable_and_time", None)

        def listen(event: str, **_: Any) -> None:
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None and event == CACHE_HIT:
                seen["hits"].append(event)

        def listen_durations(event: str, *_: Any, **__: Any) -> None:
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None and event == BACKEND_COMPILE:
                seen["compiles"].append(event)

        def reading(entry: bytes) -> Any:
            out = extract(entry)
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None:
                seen["unpacked"].append(out[0])
            return out

        jax.monitoring.register_event_listener(listen)
        jax.monitoring.register_event_duration_secs_listener(listen_durations)
        if extract is not None:
            compilation_cache.extract_executable_and_time = reading
        _WATCH_INSTALLED.append(True)


def compile_watching_cache(compile: Callable[[], Any]) -> tuple[Any, str, bytes | None]:
    """(`compile()`, where the program came from, and if from JAX's persistent cache the
    serialized executable its entry holds, as the compiling process wrote it; None where that
    cannot be had). Where: "xla" (compiled now), "cache" (JAX's persistent cache) or "memory"
    (jax's in-process cache of a program compiled earlier in this process, which records no
    compile: it may have come from the persistent cache then, so it is not stored).

    The bytes are read where JAX's cache unpacks an entry (`compilation_cache.
    extract_executable_and_time`, jax 0.10's private module): jax offers no public way to them,
    and without them a program the cache gave could never be stored. Where jax no longer has
    that function, the program is just not stored. Only this thread's compile is seen
    (`_watch`): jax records a compile's events, and unpacks its cache entry, on the thread
    that compiles."""
    _watch()
    seen = {"hits": [], "compiles": [], "unpacked": []}
    _WATCHED.seen = seen
    try:
        compiled = compile()
    finally:
        _WATCHED.seen = None
    hits, compiles, unpacked = seen["hits"], seen["compiles"], seen["unpacked"]
    source = "cache" if hits else "xla" if compiles else "memory"
    cached = unpacked[0] if hits and len(unpacked) == 1 else None
    return compiled, source, cached


def serialize(compiled: Any, cached: bytes | None) -> tuple:
    """`serialize_executable.serialize(compiled)`, its executable written as `cached` where
    given (the bytes JAX's cache held for it: `compile_watching_cache`). Its pickler's
    class is swapped for one that writes those bytes, the rest of `serialize` kept; a jax
    without that class raises, and the program is not stored. The swap is process-wide, so
    every serialization (with bytes or without) holds the lock: two threads store programs
    at once (`chunks.EarlyChunk`'s and the first state's), and one must neither write the
    other's bytes nor restore the other's class."""
    with _PATCHING:
        if cached is None:
            return serialize_executable.serialize(compiled)
        return _serialize_with(compiled, cached)


def _serialize_with(compiled: Any, cached: bytes) -> tuple:
    from jax._src.lib import xla_client

    base = serialize_executable._JaxPjrtPickler
    written = []

    class CachedBytes(base):
        def persistent_id(self, obj: Any) -> Any:
            if isinstance(obj, xla_client.LoadedExecutable):
                written.append(obj)
                return ("exec", cached)
            return super().persistent_id(obj)

    serialize_executable._JaxPjrtPickler = CachedBytes
    try:
        out = serialize_executable.serialize(compiled)
    finally:
        serialize_executable._JaxPjrtPickler = base
    if len(written) != 1:  # the executable was not where this jax keeps it: not stored
        raise ValueError("the cached bytes did not replace exactly one executable")
    return out
