"""Test-session settings, before anything imports JAX."""

import os

# The suite runs in two pytest-xdist workers (pyproject.toml): on a GPU, JAX's default of
# preallocating 75% of device memory per process would leave the second worker none.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# Most of a cold run is XLA:CPU compiling programs that then run for seconds. Its fusion
# emitters (jaxlib 0.10's default) make that compilation about twice as slow for these
# programs: the whole suite from an empty cache took 19:33 with them, 14:54 without. The tests
# check what the programs compute, which the code generator changes only in rounding; the CLI
# and the benchmarks keep XLA's defaults, and so does a test that runs long enough for the
# generated code's speed to matter (`DEFAULT_XLA_FLAGS`), or that requires two programs to
# agree bit for bit (tests/codegen.py). Set only on jaxlib versions where the flag was checked
# to exist: XLA aborts the process on a flag it does not know. Subprocesses inherit it.
from tests.codegen import FAST_COMPILE_FLAG  # noqa: E402

FAST_COMPILE_JAXLIB = ("0.10.",)


def _fast_compile_flags(flags: str, jaxlib_version: str) -> str:
    if "xla_cpu_use_fusion_emitters" in flags or not jaxlib_version.startswith(FAST_COMPILE_JAXLIB):
        return flags
    return f"{flags} {FAST_COMPILE_FLAG}".strip()


def _jaxlib_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return ""


# The store of compiled programs (jaxrl.run.programs) keys a program on the source files it was
# traced from; a test that monkeypatches a function inside a program would load another test's
# program of the same settings. Off here; tests/run/test_program_store.py and the re-run test of
# tests/run/test_compile_cache.py turn it on over folders of their own.
os.environ.setdefault("JAXRL_PROGRAM_STORE", "0")

DEFAULT_XLA_FLAGS = "JAXRL_TESTS_DEFAULT_XLA_FLAGS"  # the flags the suite was started with
os.environ.setdefault(DEFAULT_XLA_FLAGS, os.environ.get("XLA_FLAGS", ""))
os.environ["XLA_FLAGS"] = _fast_compile_flags(os.environ.get("XLA_FLAGS", ""), _jaxlib_version())

# JAX's persistent compilation cache from the suite's first compile, in the folder `jaxrl train`
# uses ($JAXRL_CACHE_DIR, else ~/.cache/jaxrl/xla), for every program over 0.1 s to compile
# (JAX's default keeps those over 1 s, and `driver.train` turned the cache on only at a worker's
# first training run). Measured on 2 cores, a fresh clone: the whole suite with a warm cache
# took 18:24 before, 15:33 after; from an empty cache, 25:56 and 25:39 (docs/TESTING.md). In the
# workers only: subprocesses keep their own settings, which the command tests check. A cache
# entry is keyed on the program's text and XLA's flags, so a test that patches a function
# inside a program reads no other test's entry.
SUITE_CACHE_MIN_COMPILE_SECONDS = 0.1


def _suite_compile_cache() -> None:
    if os.environ.get("JAXRL_COMPILE_CACHE", "1") == "0":  # off, as for `jaxrl train`
        return
    import jax

    from jaxrl.run.programs import default_cache_dir

    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(default_cache_dir()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", SUITE_CACHE_MIN_COMPILE_SECONDS)


_suite_compile_cache()

# Tests that import Brax or Playground directly, before jaxrl's envs, skip MJX's Warp import
# too (seconds per process; envs/skip_warp.py).
from jaxrl.envs import skip_warp  # noqa: E402

skip_warp.install()


# The longest tests first (seconds to minutes each: learning runs, subprocesses over several
# devices or killed on purpose), so that the two workers do not end on one long test while
# the other waits; the rest keep their order.
LONG_FIRST = (
    "tests/test_learning.py",
    "tests/test_sharding.py",
    "tests/run/test_faults.py::test_every_algorithm",
    "tests/run/test_faults.py::test_sac_killed",
    "tests/run/test_faults.py::test_ppo_killed",
    "tests/loops/test_split.py",
    "tests/benchmarks/test_bench.py",
    "tests/test_readme.py",
    "tests/envs/test_randomization.py",
    "tests/test_commands.py",
    "tests/experiments/test_scale.py::test_scale_trains_fits_and_goes_on_after_a_kill",
)


def pytest_collection_modifyitems(session, config, items):
    import pytest

    from tests import tiers

    def rank(item):
        found = [i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)]
        return found[0] if found else len(LONG_FIRST)

    items.sort(key=rank)
    for item in items:  # the fast tier, `-m unit` (tests/tiers.py)
        if item.get_closest_marker("slow") is None and tiers.unit(item.nodeid):
            item.add_marker(pytest.mark.unit)
