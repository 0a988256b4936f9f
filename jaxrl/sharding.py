"""Several devices in one run: a `jax.sharding.Mesh` with one data axis (see docs/DESIGN.md).

The training program is written for one device and stays so: its arrays carry shardings and
XLA's SPMD partitioner (jit's "computation follows data") splits the work. What is split
along the data axis is what is per env or per sample: the env states, the per-env noise
scales, the replay buffer (laid out [time, env], so each device keeps its own envs' rows and
samples them without communication) and each update's batch. Parameters, optimiser states,
observation statistics and counters are replicated. The losses are means over the whole
batch, so their gradients come out averaged over the devices, and BatchRenorm's batch
statistics (CrossQ) are those of the whole batch: XLA inserts the all-reduces.

Chosen over `shard_map` with hand-written `pmean`s because the agents need no change (a
forgotten `pmean` in one of nine update functions would silently desynchronise devices),
and one device gives exactly the unsharded program.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrl.errors import ConfigError

DATA = "data"


@dataclasses.dataclass(frozen=True)
class DataAxis:
    """Where the per-env and per-sample arrays of a run live: `mesh` None is the unsharded
    program on the default device; else its data axis divides them."""

    mesh: Mesh | None = None

    @property
    def size(self) -> int:
        """Devices along the data axis (1 without a mesh): the replay buffer's shards."""
        return 1 if self.mesh is None else self.mesh.shape[DATA]

    def split(self, tree: Any, axis: int = 0, size: int | None = None) -> Any:
        """`tree`'s arrays constrained to be divided along `axis` over the data axis (inside
        a traced program; under vmap `axis` counts the unbatched dimensions). With `size`,
        only those whose `axis` has that length: an env state's per-env arrays, not the
        auto-reset key beside them."""
        if self.mesh is None:
            return tree
        sharding = NamedSharding(self.mesh, PartitionSpec(*([None] * axis), DATA))
        constrain = jax.lax.with_sharding_constraint
        return jax.tree.map(lambda x: constrain(x, sharding) if _along(x, axis, size) else x, tree)

    def sharding(self, spec: PartitionSpec | None = None) -> NamedSharding | None:
        """`spec` (default: replicated) on this mesh; None without one."""
        return None if self.mesh is None else NamedSharding(self.mesh, spec or PartitionSpec())


UNSHARDED = DataAxis()


def device_count(devices: int | str) -> int:
    """The devices `TrainConfig.devices` asks for: 0 (no mesh) stays 0, "all" is every one."""
    return len(jax.devices()) if devices == "all" else int(devices)


def data_axis(devices: int | str, num_envs: int, batch_size: int | None = None) -> DataAxis:
    """The run's data axis: UNSHARDED for `devices` 0, else a mesh over the first `devices`
    devices (all of them for "all"), checked against the envs and batch it must divide."""
    count = device_count(devices)
    if count == 0:
        return UNSHARDED
    available = first_devices(count)
    check_shares(count, "devices", num_envs=num_envs, batch_size=batch_size)
    return DataAxis(Mesh(np.asarray(available), (DATA,)))


def check_shares(count: int, what: str, detail: str = "", **sizes: int | None) -> None:
    """The one check that the run's sizes (num_envs, batch_size) split into `count` equal
    shares, one per device: for the data axis (`what` "devices") and for the learners of the
    actor/learner split (`jaxrl.loops.split`). ConfigError naming the first size that does not."""
    for name, value in sizes.items():
        if value is not None and value % count:
            raise ConfigError(
                f"{name} {value} does not divide over {count} {what}{detail}; make it a "
                f"multiple of {count} (each device takes an equal share)"
            )


def first_devices(count: int) -> list:
    """The first `count` devices, or ConfigError where the machine has fewer."""
    available = jax.devices()
    if count > len(available):
        hint = ""
        if available[0].platform == "cpu":
            hint = (
                f"; on a CPU, XLA_FLAGS=--xla_force_host_platform_device_count={count} "
                "(set before Python starts) splits it into that many devices"
            )
        raise ConfigError(
            f"devices {count} but this machine has {len(available)} "
            f"{available[0].platform} device(s){hint}"
        )
    return available[:count]


def over(devices: Any) -> DataAxis:
    """A data axis over exactly `devices` (a list of devices), e.g. one side of a split."""
    return DataAxis(Mesh(np.asarray(devices), (DATA,)))


def _along(x: Any, axis: int, size: int | None) -> bool:
    return x.ndim > axis and (size is None or x.shape[axis] == size)


def state_shardings(state: Any, data: DataAxis, num_envs: int, members: bool = False) -> Any:
    """The shardings of a loop state (arrays or shapes): the env states' per-env arrays and
    the per-env noise scales split along their env axis, the replay buffer along its env axis
    (axis 1 of [time, env, ...]), everything else replicated. `members`: the state holds a
    leading member axis (seeds or settings under vmap), kept whole on every device."""
    if data.mesh is None:
        return None
    lead = 1 if members else 0
    replicated = data.sharding()

    def env_part(tree, axis, size=None):
        spec = PartitionSpec(*([None] * (lead + axis)), DATA)
        pick = lambda x: data.sharding(spec) if _along(x, lead + axis, size) else replicated  # noqa: E731
        return jax.tree.map(pick, tree)

    shardings = jax.tree.map(lambda _: replicated, state)
    replace = {"env_state": env_part(state.env_state, 0, num_envs)}
    # Off-policy states only (jaxrl.loops.OffPolicyState): per-env noise and the replay buffer.
    if getattr(state, "noise_scale", None) is not None:
        replace["noise_scale"] = env_part(state.noise_scale, 0)
    if getattr(state, "buffer", None) is not None:
        replace["buffer"] = shardings.buffer.replace(data=env_part(state.buffer.data, 1))
    return shardings.replace(**replace)


def initialize_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> bool:
    """Joins this process to a run over several hosts (`jax.distributed.initialize`), from the
    arguments or else the environment variables JAXRL_COORDINATOR (host:port of process 0),
    JAXRL_NUM_PROCESSES and JAXRL_PROCESS_ID; False (nothing done) where neither names a
    coordinator. Afterwards `jax.devices()` lists every process's devices, so `devices="all"`
    makes one global mesh. Must run before anything else touches a device."""
    coordinator = coordinator or os.environ.get("JAXRL_COORDINATOR")
    if not coordinator:
        if num_processes is not None or process_id is not None:
            raise ConfigError("--num-processes and --process-id need --coordinator HOST:PORT")
        return False
    try:
        count = int(num_processes or os.environ["JAXRL_NUM_PROCESSES"])
        index = int(process_id if process_id is not None else os.environ["JAXRL_PROCESS_ID"])
    except (KeyError, ValueError):
        raise ConfigError(
            "--coordinator needs --num-processes N and --process-id I (0 <= I < N), or "
            "JAXRL_NUM_PROCESSES and JAXRL_PROCESS_ID"
        ) from None
    if count < 1 or not 0 <= index < count:
        raise ConfigError(f"need 0 <= process_id < num_processes, got {index} and {count}")
    if ":" not in coordinator:
        raise ConfigError(f"--coordinator takes HOST:PORT (process 0's), got {coordinator!r}")
    jax.distributed.initialize(coordinator, num_processes=count, process_id=index)
    return True


def is_primary() -> bool:
    """Whether this process writes the run's files (process 0; every process checkpoints)."""
    return jax.process_index() == 0
