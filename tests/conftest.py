"""Test-session settings, before anything imports JAX."""

import os

# The suite runs in two pytest-xdist workers (pyproject.toml): on a GPU, JAX's default of
# preallocating 75% of device memory per process would leave the second worker none.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


# The longest tests first (seconds to minutes each: learning runs, subprocesses over several
# devices or killed on purpose), so that the two workers do not end on one long test while
# the other waits; the rest keep their order.
LONG_FIRST = (
    "tests/test_learning.py",
    "tests/test_sharding.py",
    "tests/test_faults.py::test_every_algorithm",
    "tests/test_faults.py::test_sac_killed",
    "tests/test_faults.py::test_ppo_killed",
    "tests/test_split.py",
    "tests/test_bench.py",
    "tests/test_readme.py",
    "tests/envs/test_randomization.py",
    "tests/test_commands.py",
)


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        found = [i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)]
        return found[0] if found else len(LONG_FIRST)

    items.sort(key=rank)
