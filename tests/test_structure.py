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


def test_every_mutant_applies_to_the_code_as_it_is():
    """Each mutant of tests/mutants.py names text found exactly once in its file: a refactor
    that moves or rewrites the code leaves no mutant silently "stale" (never run)."""
    from tests import mutants

    names = [mutant.name for mutant in mutants.MUTANTS]
    assert len(names) == len(set(names)), "mutant names repeat"
    stale = {
        mutant.name: (mutant.path, (ROOT / mutant.path).read_text().count(mutant.old))
        for mutant in mutants.MUTANTS
        if (ROOT / mutant.path).read_text().count(mutant.old) != 1
    }
    assert not stale, f"mutants whose text is not found exactly once (path, count): {stale}"
