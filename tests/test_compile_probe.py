"""tests/compile_probe.py, the suite's timing probe (docs/TESTING.md): run as a plugin over a
test of two programs, it records each compile and the test's compile events, and its report
sums them per file and per program."""

import json
import os
import pathlib
import subprocess
import sys

from tests import compile_probe

ROOT = pathlib.Path(__file__).parents[1]

TWO_PROGRAMS = """
import jax, jax.numpy as jnp

def test_two_programs():
    assert float(jax.jit(lambda x: jnp.sin(x) * 2)(1.0)) > 0
    assert float(jax.jit(lambda x: jnp.cos(x) + 3)(1.0)) > 0
"""


def test_the_probe_records_each_compile_and_the_report_sums_them(tmp_path):
    (tmp_path / "test_two.py").write_text(TWO_PROGRAMS)
    probe = tmp_path / "probe"
    env = {**os.environ, "JAXRL_PROBE_DIR": str(probe), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)  # this test's worker, which names the file otherwise
    args = ["-p", "tests.compile_probe", "-p", "no:cacheprovider", "-n", "0", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path / "test_two.py"), *args, "-c", "/dev/null"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (probe / "main.jsonl").read_text().splitlines()]
    compiles = [r for r in records if r["kind"] == "compile"]
    assert {r["name"] for r in compiles} >= {"jit__lambda"}
    assert len({r["key"] for r in compiles if r["name"] == "jit__lambda"}) == 2
    assert all(not r["key"].startswith("error") and r["s"] > 0 for r in compiles)
    (test,) = [r for r in records if r["kind"] == "test"]
    assert test["test"].endswith("test_two.py::test_two_programs")
    assert test["events"][compile_probe.EVENTS["compile"]] > 0
    report = compile_probe.report(str(probe))
    row = next(line for line in report.splitlines() if "test_two.py" in line)
    assert row.split()[1] == "1"  # one test
    assert "jit__lambda" in report.split("programs by compile seconds")[1]
