"""One benchmark case, measured in this process: a jaxrl algorithm, one of Brax's own trainers,
or the simulator's random-action limit. `python -m jaxrl.benchmarks.case '<case JSON>' OUT.jsonl`
appends its record; `jaxrl.benchmarks.run` starts one such process per case, so compile caches and
memory never leak from one system into the next.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import platform
import resource
import sys
import time
from typing import Any

import jax

from jaxrl.benchmarks.suites import Case


def append_records(path: str | os.PathLike, records: list[dict]) -> None:
    """Appends `records` to the JSON-lines file `path`, one per line (folders made)."""
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def machine() -> dict:
    """Facts stored with every record."""
    import brax
    import mujoco

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    devices = jax.devices()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "backend": jax.default_backend(),
        "device_count": len(devices),
        "devices": sorted({d.device_kind for d in devices}),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "brax": brax.__version__,
        "mujoco": mujoco.__version__,
        **({"xla_flags": os.environ["XLA_FLAGS"]} if os.environ.get("XLA_FLAGS") else {}),
    }


def memory() -> dict:
    """Peak host RSS of this process; peak device memory where the backend reports it."""
    # ru_maxrss is in KiB on Linux.
    out: dict[str, Any] = {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    out["peak_device_mb"] = peak / 2**20 if peak is not None else None
    return out


# JAX's own compile events: tracing to a jaxpr, lowering to MLIR, XLA's compile. Their sum over
# every program the process builds is the compile time of any system, Brax's trainers included,
# with no instrumentation of their code.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileClock:
    """Seconds JAX spends compiling in this process, from its monitoring events, per event.
    With `log` (a text stream), each event of a second or more is also written there as it
    ends, so a case killed by its timeout still shows where its time went."""

    def __init__(self, log=None):
        self.seconds = dict.fromkeys(COMPILE_EVENTS, 0.0)
        self.events: list[tuple[float, float]] = []  # (perf_counter at its end, seconds)
        self.log, self.started = log, time.perf_counter()
        jax.monitoring.register_event_duration_secs_listener(self._record)

    def _record(self, event: str, duration: float, **_) -> None:
        if event in self.seconds:
            self.seconds[event] += duration
            self.events.append((time.perf_counter(), duration))
            if self.log is not None and duration >= 1.0:
                name = ("trace", "lower", "xla")[COMPILE_EVENTS.index(event)]
                at = time.perf_counter() - self.started
                print(f"[case] {at:.1f} s: {name} {duration:.1f} s", file=self.log, flush=True)

    def mark(self, evals: list[dict], started: float) -> None:
        """Adds to each evaluation point the compile seconds spent before it (`wall_seconds`
        counts from `started`), so that rates between two points leave out compilation that
        happened between them (Brax compiles some programs only when first called)."""
        for point in evals:
            point["compile_seconds_before"] = sum(
                seconds for end, seconds in self.events if end - started <= point["wall_seconds"]
            )

    def record(self) -> dict:
        trace, lower, backend = (self.seconds[e] for e in COMPILE_EVENTS)
        return {
            "compile_total_seconds": trace + lower + backend,
            "compile_parts": {"trace": trace, "lower": lower, "xla": backend},
        }


def simulator_limit(env_name: str, num_envs: int, steps: int | None = None, **options) -> dict:
    """env-steps/s of the env as the trainers step it (vectorised, episode limit, auto-reset),
    with uniform random actions inside one compiled scan and no learning. `steps` (scan
    length) defaults to 1,000 steps, on a CPU to about 256k env steps (100 at least)."""
    from jaxrl import envs

    if steps is None:  # a CPU steps thousands of envs slowly: about 256k env steps there
        cpu = jax.default_backend() == "cpu"
        steps = min(max(256_000 // num_envs, 100), 1000) if cpu else 1000

    from jaxrl.benchmarks.profile import random_steps

    env = envs.wrap(envs.make(env_name, **options), num_envs)
    steps_from = random_steps(env, num_envs, steps)

    def run(key):
        return steps_from(env.reset(key), key)

    tick = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.PRNGKey(0)).compile()
    compile_seconds = time.perf_counter() - tick
    jax.block_until_ready(compiled(jax.random.PRNGKey(1)))  # warm-up
    tick = time.perf_counter()
    jax.block_until_ready(compiled(jax.random.PRNGKey(2)))
    seconds = time.perf_counter() - tick
    return {
        "compile_seconds": compile_seconds,
        "env_steps_per_second": steps * num_envs / seconds,
    }


def summarize(case: Case, evals: list[dict], updates: float | None) -> dict:
    """Time and steps to the threshold, compile time (to the first finished chunk after the
    start of training), steady-state throughput, from the evaluation points
    [{env_steps, wall_seconds, eval_return}] of any system."""
    trained = [e for e in evals if e["env_steps"] > 0]
    hit = next((e for e in trained if e["eval_return"] >= case.threshold), None)
    first, last = trained[0], trained[-1]
    steady = None
    # Compilation between the two points (where recorded) is not training time.
    compiling = last.get("compile_seconds_before", 0.0) - first.get("compile_seconds_before", 0.0)
    seconds = last["wall_seconds"] - first["wall_seconds"] - compiling
    if len(trained) > 1 and seconds > 0:
        steady = (last["env_steps"] - first["env_steps"]) / seconds
    out = {"final_returns": last["eval_returns"]} if "eval_returns" in last else {}
    return out | {
        "compile_seconds": first["wall_seconds"],
        "steady_compile_seconds": compiling,
        "seconds_to_threshold": hit["wall_seconds"] if hit else None,
        "steps_to_threshold": hit["env_steps"] if hit else None,
        "final_return": last["eval_return"],
        "total_seconds": last["wall_seconds"],
        "env_steps": last["env_steps"],
        "env_steps_per_second": steady,
        "updates_per_second": updates / last["wall_seconds"] if updates else None,
    }


def jaxrl_argv(case: Case) -> list[str]:
    """The `jaxrl train` flags of a jaxrl (or profile) case."""
    argv = ["--algo", case.algo, "--env", case.env, "--num-envs", str(case.num_envs)]
    argv += ["--seed", str(case.seed), "--steps", str(case.total_steps)]
    if case.preset:
        argv += ["--preset", case.preset]
    return argv + list(case.options)


def run_profile(case: Case) -> dict:
    from jaxrl import agents
    from jaxrl.benchmarks.profile import profile
    from jaxrl.config import resolve
    from jaxrl.loops import make_train

    argv = jaxrl_argv(case)
    train_config, agent_config, _ = resolve.build_configs(argv)
    trainer = make_train(train_config, agents.get(case.algo).make(agent_config))
    return {"profile": profile(trainer, case.seed), "config": argv}


# The memory the `speed` cases size the env count for: an 80 GB card under JAX's default
# preallocation of 75% of it (XLA_PYTHON_CLIENT_MEM_FRACTION).
SPEED_MEMORY_BUDGET = 0.75 * 80e9


def _matmul_peaks() -> dict:
    """This device's measured product rate in both precisions, the yardstick of a speed record."""
    from jaxrl.benchmarks import speed

    return {d: speed.matmul_peak(d) for d in ("bfloat16", "float32")}


def run_speed(case: Case) -> dict:
    """An update's cost against the device's matmul peak, and the env count that fits."""
    from jaxrl import agents
    from jaxrl.benchmarks import speed
    from jaxrl.config import resolve
    from jaxrl.loops import make_train

    argv = jaxrl_argv(case)
    train_config, agent_config, _ = resolve.build_configs(argv)
    trainer = make_train(train_config, agents.get(case.algo).make(agent_config))
    return {  # evaluated in order: the memory peak is the update's, before the yardstick's
        "speed": speed.update_speed(trainer, case.seed),
        **memory(),
        "matmul_peak": _matmul_peaks(),
        "memory_estimate": speed.memory_per_env(argv, SPEED_MEMORY_BUDGET),
        "config": argv,
    }


def run_brax_speed(case: Case) -> dict:
    """Brax's PPO update alone at a `brax` case's settings (`speed.brax_ppo_update_speed`),
    beside jaxrl's `speed` case at the same settings: the peer's side of issue 39's question
    whether jaxrl's update, not its loop, is where it loses time to Brax's."""
    from jaxrl import envs
    from jaxrl.benchmarks import speed

    if case.algo != "ppo":
        raise ValueError(f"brax-speed times Brax's PPO update only, not {case.algo!r}")
    env = envs.make(case.env)
    settings = dict(case.peer)
    return {  # evaluated in order, as run_speed's
        "speed": speed.brax_ppo_update_speed(
            settings, env.observation_size, env.action_size, case.seed
        ),
        **memory(),
        "matmul_peak": _matmul_peaks(),
        "peer_settings": settings,
    }


def run_jaxrl(case: Case) -> tuple[list[dict], float, dict]:
    from jaxrl.config import resolve
    from jaxrl.run import driver

    argv = jaxrl_argv(case)
    train_config, agent_config, _ = resolve.build_configs(argv)
    stamps: list[float] = []
    start = time.perf_counter()

    def progress(line: str) -> None:
        print(f"[case] {time.perf_counter() - start:.1f} s: {line}", file=sys.stderr, flush=True)

    def chunk_done(env_steps: int, metrics: dict) -> None:  # each chunk's wall-clock
        stamps.append(time.perf_counter() - start)
        # The evaluation as a line of its own: a case killed by its timeout leaves these in its
        # error record (`report.partial_evals`), the evidence its run had gathered.
        point = {"env_steps": env_steps, "wall_seconds": stamps[-1]}
        point |= {k: metrics[k] for k in EVALUATION_KEYS if k in metrics}
        progress(f"evaluation {json.dumps(point)}")

    result = driver.train(
        train_config,
        agent_config,
        None,
        progress=progress,
        progress_fn=chunk_done,
        compile_cache=False,
        seeds=tuple(range(case.seed, case.seed + case.seeds)) if case.seeds else None,
    )
    evals = [
        {
            "env_steps": row["env_steps"],
            "wall_seconds": t,
            "eval_return": row["eval_return"],
            "eval_return_std": row["eval_return_std"],
            # Mean return of the exploring policy's episodes that ended in the chunk.
            "train_episode_return": row["train_episode_return"],
            # Several seeds (Case.seeds): each one's return; eval_return is their mean.
            **({"eval_returns": row["eval_returns"]} if "eval_returns" in row else {}),
        }
        # The step-0 evaluation first (at env step 0, as Brax's first point; `summarize`
        # starts from the first chunk's).
        for row, t in zip([*filter(None, [result.start_row]), *result.history], stamps, strict=True)
    ]
    updates = sum(row["updates"] for row in result.history)
    extra = {"xla_compile_seconds": result.compile_seconds, "config": argv, "started": start}
    if hasattr(result.state, "buffer"):  # off-policy: what one stored transition costs
        from jaxrl import replay

        extra["replay_bytes_per_transition"] = replay.bytes_per_transition(result.state.buffer)
    return evals, updates, extra


# What a chunk's metrics say of its evaluation (with several seeds: their mean, spread and
# 95% bootstrap interval, `rows.seed_summary`).
EVALUATION_KEYS = (
    "eval_return",
    "eval_return_std",
    "eval_return_ci_low",
    "eval_return_ci_high",
    "train_episode_return",
)


def identity(case: Case) -> dict[str, Any]:
    """The fields that say which case a record is of; a failed case's record has them too."""
    # A variant (Case.label) gets its own rows in the report.
    return {"case": case.name, **dataclasses.asdict(case), "algo": case.variant}


def run(case: Case) -> dict:
    record = identity(case)
    record["machine"] = machine()
    if case.system == "limit":
        record.update(simulator_limit(case.env, case.num_envs))
    elif case.system == "profile":
        record.update(run_profile(case))
    elif case.system == "speed":
        record.update(run_speed(case))
    elif case.system == "brax-speed":
        record.update(run_brax_speed(case))
    else:
        clock = CompileClock(log=sys.stderr)
        if case.system == "jaxrl":
            evals, updates, extra = run_jaxrl(case)
        else:
            from jaxrl.benchmarks import peers

            evals, updates, extra = peers.run(case)
        clock.mark(evals, extra.pop("started"))
        record["evals"] = evals
        record.update(extra)
        record.update(summarize(case, evals, updates))
        record.update(clock.record())
    for key, value in memory().items():  # unless the case read its own (speed cases)
        record.setdefault(key, value)
    return record


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    case = Case.from_json(argv[0])
    append_records(argv[1], [run(case)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
