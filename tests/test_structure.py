"""The package's structure as `tests/structure.py` measures it (issue 37): no import circles
among jaxrl's modules, function-local imports included, with envs/, experiments/ and
benchmarks/ as the subpackages they install as."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_no_import_circles():
    report = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "structure.py"), str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in ("import SCCs in `jaxrl/` (all edges): 0", "with mapped folders (all edges): 0"):
        assert line in report, report[:3000]
