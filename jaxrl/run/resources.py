"""Memory and devices: the devices a run's state lives on, where each array of it goes, and
the check that it fits before anything of it is allocated."""

from __future__ import annotations

import os
from typing import Any

import jax

from jaxrl import grid, sharding
from jaxrl.errors import ConfigError


class ResourceError(ConfigError):
    """A run that cannot fit in the memory it would run in."""


def run_devices(trainer) -> list:
    mesh = trainer.data.mesh
    return list(mesh.devices.flat) if mesh is not None else [jax.devices()[0]]


def _host_available() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gigabytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6)):
        if count >= size / 10:
            return f"{count / size:,.2f} {unit}"
    return f"{count / 1e3:,.1f} KB"


STATE_PARTS = {"buffer": "replay buffer", "env_state": "env states", "agent": "agent"}


def check_memory(shapes: Any, devices: list) -> None:
    """Refuses a run whose state (`shapes`: the loop state's ShapeDtypeStructs) does not fit in
    the memory of `devices`: on a CPU the host's available memory, on accelerators each
    device's free memory times their count (envs and the replay buffer split over them).
    Names the size needed and its largest parts. A rough lower bound: a chunk needs working
    memory beyond its state."""
    needed = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))
    if devices[0].platform == "cpu":
        available, where = _host_available(), "this machine's available memory"
    else:
        free = []
        for device in devices:
            stats = device.memory_stats() or {}
            if "bytes_limit" in stats:
                free.append(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
        available = min(free) * len(devices) if len(free) == len(devices) else None
        where = f"the free memory of {len(devices)} {devices[0].platform} device(s)"
    if available is None or needed <= available:
        return
    parts = []
    for field, label in STATE_PARTS.items():
        part = getattr(shapes, field, None)
        if part is not None:
            size = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(part))
            parts.append(f"{label} {_gigabytes(size)}")
    raise ResourceError(
        f"the run's state needs {_gigabytes(needed)} ({', '.join(parts)}), more than "
        f"{where} ({_gigabytes(available)}); lower buffer_size or num_envs (the replay buffer "
        "holds buffer_size rows of observations, next observations, actions and flags)."
    )


def run_shardings(trainer, state, run_grid: grid.Grid | None = None):
    """Where each array of the state lives: None (the default device) without a mesh."""
    members = run_grid is not None
    return sharding.state_shardings(state, trainer.data, trainer.config.num_envs, members)
