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


def test_mutants_md_lists_every_mutant_as_the_script_defines_it():
    """tests/MUTANTS.md is what `python -m tests.mutants --report` writes: every mutant the
    script defines, in order, with its file, description and tests as they are now, and a
    result only where a run checked the mutant as it is defined now ("not run" elsewhere)."""
    from tests import mutants

    written = mutants.REPORT.read_text()
    rows = [mutants._cells(line) for line in written.splitlines() if line.startswith("| ")]
    assert rows[0] == list(mutants.COLUMNS)
    rows = rows[1:]
    assert [row[0] for row in rows] == [mutant.name for mutant in mutants.MUTANTS]
    for row, mutant in zip(rows, mutants.MUTANTS, strict=True):
        assert row[1:4] == [mutant.path, mutant.description, ", ".join(mutant.tests)], row
        verdict, date, seconds, row_id = row[4], row[5], row[7], row[8]
        assert row_id == mutants.mutant_id(mutant), f"{mutant.name}: edited since its row"
        if verdict == mutants.NOT_RUN:
            assert not date and not row[6] and not seconds, row
        else:
            assert verdict in mutants.VERDICTS and date, row
    assert written == mutants.render(mutants.read_report()), (
        "tests/MUTANTS.md is not what the script writes: python -m tests.mutants --report"
    )


def test_test_folders_mirror_the_package():
    """Each folder of tests/ holds the tests of the package folder of its name: jaxrl/NAME/,
    or a folder installed as jaxrl.NAME (envs/, experiments/, benchmarks/)."""
    tests = ROOT / "tests"
    folders = {path.parent.relative_to(tests) for path in tests.rglob("test_*.py")}
    unmatched = sorted(
        str(folder)
        for folder in folders - {pathlib.Path(".")}
        if not any((base / folder / "__init__.py").is_file() for base in (ROOT / "jaxrl", ROOT))
    )
    assert not unmatched, f"tests/ folders with no package folder of their name: {unmatched}"


def test_test_modules_have_unique_names():
    """The test folders have no __init__.py, so pytest imports each test file by its base name:
    two files of one name (tests/agents/test_registry.py beside tests/envs/test_registry.py)
    stop the collection of the whole suite."""
    names: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}


def test_no_module_reads_another_module_s_private_names():
    """No module of jaxrl/, envs/, experiments/ or benchmarks/ imports another module's private
    name (`from jaxrl.run.folder import _meta`) or reads one off a module of ours
    (`resolve._field_docstrings`): what one module needs of another is that module's public
    face (issue 73). Tests may reach in; the package may not."""
    import ast

    found = []
    for folder in ("jaxrl", "envs", "experiments", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            ours: set[str] = set()  # local names bound to modules (or names) of jaxrl
            where = path.relative_to(ROOT)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jaxrl"):
                    for alias in node.names:
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            found.append(f"{where}:{node.lineno} imports {alias.name}")
                        ours.add(alias.asname or alias.name)
                elif isinstance(node, ast.Import):
                    ours |= {
                        alias.asname or alias.name.split(".")[0]
                        for alias in node.names
                        if alias.name.startswith("jaxrl")
                    }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ours
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                ):
                    found.append(f"{where}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not found, found


def test_every_test_the_fast_tier_leaves_out_exists():
    """tests/tiers.py names tests by path and function: a renamed or moved one would fall back
    into the fast tier unseen, so every entry must name a file and a test function it holds."""
    import ast

    from tests import tiers

    missing = []
    for entry in tiers.NOT_UNIT:
        path, _, function = entry.partition("::")
        file = ROOT / path
        if not file.is_file():
            missing.append(entry)
            continue
        names = {
            node.name
            for node in ast.walk(ast.parse(file.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        if function and function not in names:
            missing.append(entry)
    assert not missing, missing
