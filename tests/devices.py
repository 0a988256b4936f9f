"""Running a check in a fresh process whose CPU is split into 4 devices (or with other XLA
flags): XLA flags only take effect before JAX starts, which pytest's own process has already
done. Shared by tests/test_sharding.py, tests/loops/test_split.py and tests/test_learning.py."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOUR_DEVICES = {
    **os.environ,
    "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4",
    "JAX_PLATFORMS": "cpu",
}


def run_python(*args: str, env: dict, timeout: int = 600) -> str:
    """`python ARGS` from the repository root in a fresh process with environment `env`; its
    stdout, asserted to have exited 0."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result.stdout


def run_on_four_devices(*args: str, timeout: int = 600) -> str:
    """`python ARGS` from the repository root over 4 CPU devices; its stdout, asserted to
    have exited 0."""
    return run_python(*args, env=FOUR_DEVICES, timeout=timeout)
