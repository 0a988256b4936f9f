"""PQL's actor/learner split over 2 devices against PQL on one device, at identical settings.

    python -m jaxrl.benchmarks.pql_split --preset pql_pendulum --threshold -250 \
        --out benchmarks/results/pql-split-cpu.jsonl

Three layouts of the same run (the preset and flags given), each in its own process, one
after the other:
- `one`: one device, the one-program loop (`--devices 0`);
- `split`: 2 devices, the actor on the first and the learners on the second, at once
  (`--devices 2`, PQL's `split_every` 8; `jaxrl.loops.split`);
- `data`: 2 devices, each doing everything on half the envs and half of each batch
  (`--devices 2 --split-every 0`; `jaxrl.sharding`).
On a CPU, 2 devices are the host split in two (XLA_FLAGS=--xla_force_host_platform_device_
count=2), each running its programs on its own threads. One JSON line per layout: compile
seconds, env-steps/s of the chunks after the first (median), the eval return of each chunk,
and with `--threshold` the wall-clock (compile included) and env steps to the first
evaluation at or above it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

LAYOUTS = {
    "one": ["--devices", "0"],
    "split": ["--devices", "2"],
    "data": ["--devices", "2", "--split-every", "0"],
}


def worker(train_argv: list[str], threshold: float | None) -> dict:
    """One run of the given flags in this process: its timings and returns."""
    import jaxrl
    from jaxrl.config import resolve

    config, agent_config, _ = resolve.build_configs(train_argv)
    result = jaxrl.train(config, agent_config, progress=None, compile_cache=False)
    rows = result.history
    rates = [r["chunk_env_steps_per_second"] for r in rows[1:]]
    row = {
        "compile_seconds": round(result.compile_seconds, 2),
        "env_steps_per_second": round(statistics.median(rates), 1),
        "env_steps_per_chunk": rows[0]["env_steps"],
        "eval_return": [round(r["eval_return"], 1) for r in rows],
    }
    if threshold is not None:
        reached = [r for r in rows if r["eval_return"] >= threshold]
        row["threshold"] = threshold
        row["env_steps_to_threshold"] = reached[0]["env_steps"] if reached else None
        row["wall_seconds_to_threshold"] = round(reached[0]["wall_seconds"], 2) if reached else None
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default="one,split,data", help="of: one, split, data")
    parser.add_argument("--threshold", type=float, help="eval return to time the runs to")
    parser.add_argument("--out", help="JSON-lines file to append to")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a layout's own process
    args, train_argv = parser.parse_known_args(argv)
    if args.worker:
        print(json.dumps(worker(train_argv, args.threshold)), flush=True)
        return 0
    from jaxrl.benchmarks.case import append_records, machine

    rows = []
    for layout in args.layouts.split(","):
        env = dict(os.environ)
        if layout != "one":
            flags = env.get("XLA_FLAGS", "")
            env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=2"
        command = [sys.executable, "-m", "jaxrl.benchmarks.pql_split", "--worker", layout]
        if args.threshold is not None:
            command += ["--threshold", str(args.threshold)]
        command += [*train_argv, *LAYOUTS[layout]]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        row = {"layout": layout, **json.loads(done.stdout.strip().splitlines()[-1])}
        row.update(flags=" ".join(train_argv), machine=machine())
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "machine"}), flush=True)
    if args.out:
        append_records(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
