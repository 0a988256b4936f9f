"""`jaxrl bench`: runs a suite, each case in its own process, appending one JSON record per case
to ./benchmarks/results/<suite>-<backend>.jsonl under the current folder (or --results), then
writes the markdown summary and plots beside it; nothing is written inside the installed package.

    jaxrl bench --suite smoke                 # CPU, under 15 minutes
    jaxrl bench --suite smoke --only brax/    # cases whose name contains a filter
    jaxrl bench --report-only                 # summary and plots from the records there
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

from benchmarks import report
from benchmarks.suites import SUITES
from jaxrl.config import ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[1]  # where the case processes import from


def default_results() -> pathlib.Path:
    """Under the current folder: run from the repository, this is its committed results folder."""
    return pathlib.Path.cwd() / "benchmarks" / "results"


def _print(line: str) -> None:
    print(line, flush=True)  # progress shows as it happens, also when piped to a file


def run_suite(
    suite: str, out: pathlib.Path, only: list[str], timeout: float, progress=_print
) -> list[dict]:
    cases = [c for c in SUITES[suite]() if not only or any(f in c.name for f in only)]
    if not cases:
        names = ", ".join(c.name for c in SUITES[suite]())
        raise ConfigError(f"no case of suite {suite!r} matches --only {only}; its cases: {names}")
    records = []
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for index, case in enumerate(cases, 1):
        progress(f"[{index}/{len(cases)}] {case.name}")
        tick = time.perf_counter()
        before = out.read_text().count("\n") if out.exists() else 0
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.case", case.to_json(), str(out)],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            failed = proc.returncode != 0
            detail = proc.stderr[-2000:]
        except subprocess.TimeoutExpired:
            failed, detail = True, f"timed out after {timeout:.0f} s"
        if failed:
            record = {"case": case.name, "suite": suite, "error": detail}
            with out.open("a") as f:
                f.write(json.dumps(record) + "\n")
            progress(f"    failed: {detail.strip().splitlines()[-1] if detail.strip() else '?'}")
        else:
            lines = out.read_text().splitlines()[before:]
            record = json.loads(lines[-1])
            progress(f"    {report.one_line(record)} ({time.perf_counter() - tick:.0f} s)")
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxrl bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke", choices=sorted(SUITES))
    parser.add_argument("--only", action="append", default=[], help="case-name filter")
    parser.add_argument("--out", default=None, help="records file (default: by suite)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--results",
        default=None,
        help="folder of records, summary and plots (default: ./benchmarks/results); "
        "RESULTS.md is written to its parent",
    )
    args = parser.parse_args(argv)
    results = pathlib.Path(args.results).resolve() if args.results else default_results()
    results.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        import jax

        name = f"{args.suite}-{jax.default_backend()}.jsonl"
        out = pathlib.Path(args.out).resolve() if args.out else results / name
        run_suite(args.suite, out, args.only, args.timeout)
    summary = report.write(results)
    print(f"summary: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
