"""`jaxrl bench`: runs a suite, each case in its own process, appending one JSON record per case
to ./benchmarks/results/<suite>-<backend>.jsonl under the current folder, then writes the
markdown summary RESULTS.md and the plots from every records file in that folder; nothing is
written inside the installed package.

Where: by default the repository's layout, ./benchmarks/RESULTS.md over ./benchmarks/results/
(records and plots). `--results DIR` or `--out DIR/FILE.jsonl` name another records folder,
which then holds everything: records, plots and its own RESULTS.md. Bad input (a filter that
matches no case, --out outside --results, --report-only without records) exits 2 before
anything is written.

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

import jaxrl
from jaxrl.benchmarks import report
from jaxrl.benchmarks.suites import SUITES
from jaxrl.config import ConfigError

# Where the case processes import jaxrl from: the folder holding the `jaxrl` package this
# process runs (a source checkout's root, or site-packages), so they run the same code.
ROOT = pathlib.Path(jaxrl.__file__).resolve().parents[1]


def default_results() -> pathlib.Path:
    """Under the current folder: run from the repository, this is its committed results folder."""
    return pathlib.Path.cwd() / "benchmarks" / "results"


def _print(line: str) -> None:
    print(line, flush=True)  # progress shows as it happens, also when piped to a file


def select(suite: str, only: list[str]):
    """The suite's cases whose name contains one of the filters (all cases without filters)."""
    cases = [c for c in SUITES[suite]() if not only or any(f in c.name for f in only)]
    if not cases:
        names = ", ".join(c.name for c in SUITES[suite]())
        raise ConfigError(f"no case of suite {suite!r} matches --only {only}; its cases: {names}")
    return cases


def failed_record(case, suite: str, detail: str, output: str = "") -> dict:
    """A failed case's record: which case it is (as a finished one's), why it failed, and the
    evaluations it had printed (`report.partial_evals`), where it printed any."""
    from jaxrl.benchmarks.case import identity

    record = {**identity(case), "suite": suite, "error": detail}
    partial = report.partial_evals(output)
    return record | ({"partial_evals": partial} if partial else {})


def _run_case(
    case, out: pathlib.Path, env: dict, timeout: float
) -> tuple[bool, str, list[str], str]:
    """One case in its own process, writing its record to the new file `out`: (failed,
    detail, the file's lines, its error output). A timed-out case's detail ends with the last
    lines it wrote (its compile events and progress, `case.CompileClock`), so the record says
    where its time went."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "jaxrl.benchmarks.case", case.to_json(), str(out)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = proc.stderr
        failed, detail = proc.returncode != 0, output[-2000:]
    except subprocess.TimeoutExpired as error:
        output = error.stderr or ""
        output = output.decode(errors="replace") if isinstance(output, bytes) else output
        tail = [
            line
            for line in output.splitlines()
            if line.startswith("[case]") and not report.EVALUATION.match(line)
        ][-20:]
        failed, detail = True, "\n".join([*tail, f"timed out after {timeout:.0f} s"])
    lines = out.read_text().splitlines() if out.exists() else []
    return failed, detail, lines, output


def run_suite(
    suite: str,
    out: pathlib.Path,
    only: list[str],
    timeout: float,
    progress=_print,
    jobs: int = 1,
) -> list[dict]:
    """Every case of the suite, one process each, each writing its own part file whose record
    is appended to `out` as it ends; with jobs > 1, that many at once (records carry
    `concurrent_jobs`: their timings shared the machine, their learning did not)."""
    cases = select(suite, only)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if jobs > 1:  # processes share one accelerator: no process takes most of its memory
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

    def one(index_case):
        """Runs a case into its own part file, then appends its record (or an error record)."""
        index, case = index_case
        part = out.with_name(f"{out.name}.part{index}")
        part.unlink(missing_ok=True)
        tick = time.perf_counter()
        failed, detail, lines, output = _run_case(case, part, env, timeout)
        part.unlink(missing_ok=True)
        if failed:
            record = failed_record(case, suite, detail, output)
            last = detail.strip().splitlines()[-1] if detail.strip() else "?"
            progress(f"    {case.name} failed: {last}")
        else:
            record = json.loads(lines[-1])
            seconds = time.perf_counter() - tick
            progress(f"    {case.name}: {report.one_line(record)} ({seconds:.0f} s)")
        if jobs > 1:
            record["concurrent_jobs"] = jobs
        with out.open("a") as f:
            f.write(json.dumps(record) + "\n")
        return record

    numbered = list(enumerate(cases, 1))
    for index, case in numbered:
        progress(f"[{index}/{len(cases)}] {case.name}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if jobs == 1:
        return [one(item) for item in numbered]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(jobs) as pool:  # threads only wait on their processes
        return list(pool.map(one, numbered))


def locations(
    results: str | None, out: str | None
) -> tuple[pathlib.Path, pathlib.Path | None, pathlib.Path]:
    """(records folder, records file if --out names one, summary file). The summary covers
    every records file in the folder, so --out must be in the --results folder where both are
    given. The default folder keeps the repository's layout (RESULTS.md beside it); any other
    folder holds its own RESULTS.md, so nothing is written outside the folder named."""
    folder = pathlib.Path(results).resolve() if results else None
    file = pathlib.Path(out).resolve() if out else None
    if file is not None:
        if file.is_dir():
            raise ConfigError(f"--out {out} is a folder; it names the records file (.jsonl)")
        if folder is not None and file.parent != folder:
            raise ConfigError(
                f"--out {out} is not in --results {results}: the summary covers the records "
                "files in one folder; give --out a file name in that folder, or only one of them"
            )
        folder = file.parent
    folder = folder or default_results()
    summary = folder.parent if folder == default_results() else folder
    return folder, file, summary / "RESULTS.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxrl bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke", choices=sorted(SUITES))
    parser.add_argument("--only", action="append", default=[], help="case-name filter")
    parser.add_argument(
        "--out",
        default=None,
        help="records file (default: <suite>-<backend>.jsonl in the results folder); its "
        "folder is then the results folder",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="cases run at once (default 1: timings are only comparable one at a time)",
    )
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--results",
        default=None,
        help="folder of records, plots and RESULTS.md (default: ./benchmarks/results, with "
        "RESULTS.md in ./benchmarks as the repository keeps it)",
    )
    args = parser.parse_args(argv)
    try:
        results, out, summary = locations(args.results, args.out)
        if args.report_only:
            if args.only:
                raise ConfigError("--only picks cases to run; --report-only runs none")
            if not (results.is_dir() and any(results.glob("*.jsonl"))):
                raise ConfigError(f"--report-only: no records (*.jsonl) in {results}")
        else:
            select(args.suite, args.only)  # a filter that matches nothing fails here
            if not args.timeout > 0:
                raise ConfigError(f"--timeout must be > 0 seconds, got {args.timeout}")
            if args.jobs < 1:
                raise ConfigError(f"--jobs must be >= 1, got {args.jobs}")
    except ConfigError as error:
        print(f"jaxrl bench: error: {error}", file=sys.stderr)
        return 2
    # Checked: from here on, files are written.
    results.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        import jax

        out = out or results / f"{args.suite}-{jax.default_backend()}.jsonl"
        run_suite(args.suite, out, args.only, args.timeout, jobs=args.jobs)
    print(f"summary: {report.write(results, summary)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
