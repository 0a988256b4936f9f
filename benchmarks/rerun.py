"""What a re-run costs to start (issue 39): each preset's first run and its re-runs, each a
fresh `jaxrl train` process over one fresh cache folder, by their compile clocks.

    python -m jaxrl.benchmarks.rerun sac_dmc ppo_dmc fast_td3_playground \
        --env playground/CheetahRun --steps 4096 --out rerun.jsonl [--libraries cusolver,cublas]

Per preset: the first run (its programs compiled, and kept in the store of compiled programs,
`jaxrl.run.programs`), then `--reruns` re-runs with other seeds (loaded from the store where it
kept them, the chunk on a thread of its own beside the first state: `programs.prefetch`; with
`--unprefetched`, each followed by the same re-run with the store's hints removed, so its chunk
loads after the first state, as without the prefetch), and, with `--libraries`, two more with
`JAXRL_PROGRAM_STORE_LIBRARIES` set to those (the first stores, the second loads), and two more
such over a second, empty cache folder (the program stored then is XLA's, not JAX's cache's),
for programs that call those libraries (MJX on a GPU calls cuSOLVER; the store keeps only
programs whose libraries it knows to be ready, so there the runs before it show the
trace-and-cache path).
With `--from-cache`, two runs more after the store's folder is emptied (as a change to jaxrl's
source leaves JAX's cache valid and the store's keys stale): "from_cache", whose programs come
from JAX's cache and are stored from its entries' bytes, then "from_store", which loads them.
`--train-args` adds `jaxrl train` options to every run. One JSON line per preset: each run's
compile clock and whole process's wall-clock seconds (imports and training included), the
store's entries after it, what the store did with each of its programs and why
(`JAXRL_PROGRAM_STORE_LOG`), the device, and any run's error. `--timeout` bounds each run, so a
slow preset still leaves the others.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time


def _run(argv: list[str], cache: pathlib.Path, out: pathlib.Path, env: dict, timeout: float):
    """(compile clock, the process's wall-clock seconds, error) of one `jaxrl train` process,
    which notes what the store did with each program in `out`.store.jsonl (`_store_log`)."""
    log = {"JAXRL_PROGRAM_STORE_LOG": str(out.with_suffix(".store.jsonl"))}
    env = {**os.environ, **env, **log, "JAXRL_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "jaxrl.cli", "train", *argv, "--out", str(out), "--quiet"]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    if done.returncode:
        return None, wall, done.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())["compile_seconds"], wall, None


def measure(
    preset: str,
    env: str,
    steps: int,
    libraries: str,
    timeout: float,
    from_cache: bool = False,
    reruns: int = 1,
    extra: tuple[str, ...] = (),
    unprefetched: bool = False,
) -> dict:
    import jax

    argv = ["--preset", preset, "--env", env, "--steps", str(steps), "--eval-every", str(steps)]
    argv += extra
    # (name, more options, environment, what is removed from the store before it, the cache
    # folder: "cache", or "fresh" for a second one that starts empty)
    runs = [("first", [], {}, None, "cache")]
    for i in range(1, reruns + 1):
        suffix = f"_{i}" if i > 1 else ""
        runs.append((f"rerun{suffix}", ["--seed", str(i)], {}, None, "cache"))
        if unprefetched:  # the same re-run, its chunk loaded after the first state
            runs.append((f"unprefetched{suffix}", ["--seed", str(i)], {}, "last-*", "cache"))
    lib_env = {"JAXRL_PROGRAM_STORE_LIBRARIES": libraries} if libraries else {}
    if libraries:  # the first stores what JAX's cache gives, the second loads it; then the
        # same over an empty cache folder, so that the program stored is XLA's own
        runs += [("rerun_libraries", ["--seed", "2"], lib_env, None, "cache"),
                 ("rerun_libraries_2", ["--seed", "3"], lib_env, None, "cache"),
                 ("fresh_libraries", [], lib_env, None, "fresh"),
                 ("fresh_libraries_2", ["--seed", "1"], lib_env, None, "fresh")]  # fmt: skip
    if from_cache:  # the store emptied first, then two runs over JAX's cache
        runs += [("from_cache", ["--seed", "4"], lib_env, "*", "cache"),
                 ("from_store", ["--seed", "5"], lib_env, None, "cache")]  # fmt: skip
    record = {"preset": preset, "env": env, "steps": steps, "libraries": libraries}
    record["device"] = str(jax.devices()[0].device_kind)
    with tempfile.TemporaryDirectory() as folder:
        for name, more, env_vars, removed, cache_name in runs:
            cache = pathlib.Path(folder) / cache_name
            store = cache / "jaxrl-programs"
            for path in store.glob(removed) if removed else ():
                path.unlink()
            clock, wall, error = _run(
                [*argv, *more], cache, pathlib.Path(folder) / name, env_vars, timeout
            )
            record[f"{name}_compile_seconds"] = clock
            record[f"{name}_wall_seconds"] = wall
            record[f"{name}_stored"] = sorted(
                p.name.split("-")[0] for p in store.glob("*")
                if "." not in p.name and not p.name.startswith("last-")  # the hints
            ) if store.exists() else []  # fmt: skip
            record[f"{name}_store_log"] = _store_log(pathlib.Path(folder) / f"{name}.store.jsonl")
            if error:
                record[f"{name}_error"] = error
                break
    return record


def _store_log(path: pathlib.Path) -> list[dict]:
    """What the store did with each of a run's programs (`jaxrl.run.programs.note`): loaded,
    stored, or why not (on a GPU, the libraries a program calls, say)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("presets", nargs="+")
    parser.add_argument("--env", default=None, help="the presets' own env when left out")
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--libraries", default="")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument(
        "--from-cache", action="store_true", help="two more runs, over JAX's cache, store emptied"
    )
    parser.add_argument("--reruns", type=int, default=1, help="re-runs, seeds 1 to N")
    parser.add_argument(
        "--unprefetched", action="store_true",
        help="after each re-run, the same one with the store's hints removed (no prefetch)",
    )  # fmt: skip
    parser.add_argument(
        "--train-args", default="", help='more `jaxrl train` options for every run, e.g. '
        '"--num-envs 16 --learning-starts 1024"'
    )  # fmt: skip
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    for preset in args.presets:
        env = args.env or _preset_env(preset)
        record = measure(preset, env, args.steps, args.libraries, args.timeout, args.from_cache,
                         args.reruns, tuple(shlex.split(args.train_args)),
                         args.unprefetched)  # fmt: skip
        record["train_args"] = args.train_args
        with open(args.out, "a") as file:
            file.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)


def _preset_env(preset: str) -> str:
    import jaxrl

    return jaxrl.preset(preset)[0].env


if __name__ == "__main__":
    main()
