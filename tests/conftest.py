"""Test-session settings, before anything imports JAX."""

import os

# The suite runs in two pytest-xdist workers (pyproject.toml): on a GPU, JAX's default of
# preallocating 75% of device memory per process would leave the second worker none.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
