"""Where the suite's time goes: a pytest plugin that records every XLA compile of the test
workers (its cache key, program name and seconds) and JAX's compile events per test, and a
report of them (docs/TESTING.md, "Where the suite's time goes").

    JAXRL_PROBE_DIR=/tmp/probe python -m pytest tests -p tests.compile_probe
    python -m tests.compile_probe /tmp/probe

One JSON-lines file per worker. Subprocesses (the CLI tests, several devices) are not recorded:
their time shows as a test's seconds outside any compile. Written for this suite, not a library:
pytest's own `--durations` gives no split between tracing, compiling and running, and JAX's
profiler records one process at a time.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import sys
import time

import pytest

from jaxrl.benchmarks.case import COMPILE_EVENTS

# JAX's events for tracing, lowering and XLA compiling (the benchmarks' compile clock reads the
# same three), and its persistent cache's.
EVENTS = {
    **dict(zip(("trace", "lower", "compile"), COMPILE_EVENTS, strict=True)),
    "cache_read": "/jax/compilation_cache/cache_retrieval_time_sec",
    "cache_saved": "/jax/compilation_cache/compile_time_saved_sec",
}

_current: dict = {"test": None, "file": None}
_sums: collections.Counter = collections.Counter()


def _write(record: dict) -> None:
    if _current["file"] is None:
        folder = os.environ.get("JAXRL_PROBE_DIR", "compile-probe")
        os.makedirs(folder, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _current["file"] = open(os.path.join(folder, f"{worker}.jsonl"), "a")  # noqa: SIM115
    _current["file"].write(json.dumps(record) + "\n")
    _current["file"].flush()


def pytest_configure(config) -> None:
    from jax._src import cache_key, compiler, monitoring

    def listener(event: str, duration: float, **_: object) -> None:
        if event.startswith(("/jax/core/compile/", "/jax/compilation_cache/")):
            _sums[event] += duration

    monitoring.register_event_duration_secs_listener(listener)
    original = compiler.compile_or_get_cached

    def timed(backend, computation, devices, compile_options, *args, **kwargs):
        try:
            key = cache_key.get(computation, devices, compile_options, backend)[-24:]
        except Exception as error:  # the key's inputs change between jax versions
            key = f"error:{type(error).__name__}"
        name = str(computation.operation.attributes["sym_name"]).strip('"')
        tick = time.perf_counter()
        result = original(backend, computation, devices, compile_options, *args, **kwargs)
        seconds = time.perf_counter() - tick
        test = _current["test"]
        _write({"kind": "compile", "test": test, "name": name, "key": key, "s": seconds})
        return result

    compiler.compile_or_get_cached = timed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001
    _current["test"] = item.nodeid
    _sums.clear()
    tick = time.perf_counter()
    yield
    seconds = time.perf_counter() - tick
    _write({"kind": "test", "test": item.nodeid, "s": seconds, "events": dict(_sums)})


def report(folder: str, top: int = 25) -> str:
    """Seconds per test file (trace, lower, compile, cache reads, the rest), and the programs
    that took the most compiling, by name."""
    records = [json.loads(line) for path in glob.glob(f"{folder}/*.jsonl") for line in open(path)]
    files: dict = collections.defaultdict(collections.Counter)
    for r in (r for r in records if r["kind"] == "test"):
        row = files[r["test"].split("::")[0]]
        row["tests"] += 1
        row["seconds"] += r["s"]
        for short, event in EVENTS.items():
            row[short] += r["events"].get(event, 0.0)
    lines = [f"{'file':50s} {'tests':>5s} {'s':>7s} " + " ".join(f"{k:>11s}" for k in EVENTS)]
    by_time = sorted(files.items(), key=lambda kv: -kv[1]["seconds"])
    for name, row in by_time[:top]:
        parts = " ".join(f"{row[k]:11.1f}" for k in EVENTS)
        lines.append(f"{name[:50]:50s} {row['tests']:5d} {row['seconds']:7.1f} {parts}")
    total = sum(row["seconds"] for row in files.values())
    lines.append(f"{'all':50s} {sum(r['tests'] for r in files.values()):5d} {total:7.1f}")
    programs: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    for r in (r for r in records if r["kind"] == "compile"):
        programs[r["name"]] += r["s"]
        counts[r["name"]] += 1
    lines.append("\nprograms by compile seconds (cache reads included):")
    for name, seconds in programs.most_common(top // 2):
        lines.append(f"{name[:50]:50s} {counts[name]:5d} {seconds:7.1f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(sys.argv[1] if len(sys.argv) > 1 else "compile-probe"))
