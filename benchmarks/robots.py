"""Which of Playground's robot tasks load through jaxrl, and what they offer.

    python -m jaxrl.benchmarks.robots --menagerie /path/to/mujoco_menagerie   # real assets
    python -m jaxrl.benchmarks.robots --stand-in /tmp/menagerie               # no assets here
    python -m jaxrl.benchmarks.robots --stand-in /tmp/m --step Go1JoystickFlatTerrain

For each locomotion and manipulation task: whether `jaxrl.envs.make` builds it, its observation
entries (dict observations: what `--actor-obs` / `--critic-obs` can name), its action size and
whether `--joint-limit-actions` applies (with the bounds' range). `--step` also compiles and
times one reset and one step of the task through jaxrl's training wrappers, on the actor and
critic entries a robot run reads. `--out FILE` writes one JSON line per task.

`--stand-in DIR` builds a stand-in Menagerie checkout for machines without the assets: every
mesh or texture a task asks for is created as a tiny tetrahedron or a 1-pixel image, one at a
time, from the file names MuJoCo reports missing. The robot descriptions themselves (XML files
Menagerie holds, e.g. Panda's and Barkour's) cannot be stood in for, so those tasks are
reported as needing the real checkout. Stand-in meshes change contacts and inertias: they show
that jaxrl's side works (loading, observation entries, action bounds, the compiled step), not
how a policy would learn.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import struct
import sys
import time
import zlib
from typing import Any

MAX_STAND_INS = 300  # per task; Panda with Robotiq needs about 80


def tetrahedron_stl(size: float = 0.05) -> bytes:
    """A binary STL of one small tetrahedron: a stand-in mesh that MuJoCo accepts (its volume
    large enough for MuJoCo's inertia computation)."""
    points = [(0, 0, 0), (size, 0, 0), (0, size, 0), (0, 0, size)]
    faces = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]
    data = b"\0" * 80 + struct.pack("<I", len(faces))
    for face in faces:
        data += struct.pack("<3f", 0, 0, 0)
        for index in face:
            data += struct.pack("<3f", *points[index])
        data += struct.pack("<H", 0)
    return data


def tetrahedron_obj(size: float = 0.05) -> bytes:
    return (
        f"v 0 0 0\nv {size} 0 0\nv 0 {size} 0\nv 0 0 {size}\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    ).encode()


def pixel_png() -> bytes:
    """A 1x1 white RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\xff\xff"))
        + chunk(b"IEND", b"")
    )


STAND_INS = {".stl": tetrahedron_stl, ".obj": tetrahedron_obj, ".png": pixel_png}
# Tasks whose missing-file messages name the asset relative to the robot's own folder.
ASSET_FOLDERS = {
    "Aero": "tetheria_aero_hand_open",
    "Aloha": "aloha",
    "PandaRobotiq": "franka_emika_panda",
}
_MISSING = re.compile(r"(?:resource|file)[^'\"]*['\"]([^'\"]+)['\"]", re.IGNORECASE)


def _stand_in_for(task: str, message: str, root: pathlib.Path) -> pathlib.Path | None:
    """The stand-in file a load error asks for, or None where none can stand in."""
    match = _MISSING.search(message)
    if not match:
        return None
    name = match.group(1)
    if "mujoco_menagerie/" in name:
        relative = name.split("mujoco_menagerie/", 1)[1]
    else:
        folder = next((v for k, v in ASSET_FOLDERS.items() if task.startswith(k)), None)
        if folder is None or not name.startswith("assets/"):
            return None
        relative = f"{folder}/{name}"
    path = root / relative
    if path.suffix.lower() not in STAND_INS or path.exists():
        return None
    return path


def load(task: str, stand_in: pathlib.Path | None = None) -> tuple[Any, int]:
    """(jaxrl's env for playground/<task>, stand-in files created for it)."""
    from jaxrl import envs

    created = 0
    while True:
        try:
            return envs.make(f"playground/{task}"), created
        except envs.EnvOptionError as error:
            path = None if stand_in is None else _stand_in_for(task, str(error), stand_in)
            if path is None or created >= MAX_STAND_INS:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(STAND_INS[path.suffix.lower()]())
            created += 1


def describe(task: str, env: Any) -> dict:
    from jaxrl.envs import robots

    sizes = env.observation_size
    entries = {k: list(v) for k, v in sizes.items()} if isinstance(sizes, dict) else None
    row = {"task": task, "loads": True, "entries": entries, "action_size": env.action_size}
    try:
        low, high = robots.joint_limit_bounds(env, task)
        row["joint_limits"] = [float(low.min()), float(high.max())]
    except robots.JointLimitError:
        row["joint_limits"] = None
    return row


def time_step(task: str, env: Any, row: dict) -> dict:
    """Compile and run one reset and one step of 2 envs through jaxrl's wrappers."""
    import jax
    import jax.numpy as jnp

    from jaxrl import envs, observations

    entries = row["entries"] or {}
    critic = "privileged_state" if "privileged_state" in entries else None
    view = observations.view(env.observation_size, None, critic, task)
    batched = envs.wrap(env, 2, joint_limit_actions=row["joint_limits"] is not None)

    def run(key):
        state = batched.reset(key)
        state = batched.step(state, jnp.zeros((2, env.action_size)))
        return view(state.obs), state.reward

    tick = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.PRNGKey(0)).compile()
    compile_s = time.perf_counter() - tick
    tick = time.perf_counter()
    obs, reward = jax.block_until_ready(compiled(jax.random.PRNGKey(0)))
    shapes = jax.tree.map(lambda x: list(x.shape), obs)
    finite = bool(all(jnp.isfinite(x).all() for x in jax.tree.leaves((obs, reward))))
    return {
        "compile_s": round(compile_s, 1),
        "step_s": round(time.perf_counter() - tick, 3),
        "viewed_obs": shapes,
        "finite": finite,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxrl.benchmarks.robots", description=__doc__)
    parser.add_argument("tasks", nargs="*", help="Playground robot tasks (default: all)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--menagerie", help="a MuJoCo Menagerie checkout")
    where.add_argument("--stand-in", help="a folder for a stand-in checkout (created)")
    parser.add_argument("--step", action="store_true", help="compile and time reset and step")
    parser.add_argument("--out", help="write one JSON line per task here")
    args = parser.parse_args(argv)

    from jaxrl.envs import menagerie, registry

    stand_in = None
    if args.stand_in:
        stand_in = pathlib.Path(args.stand_in).absolute()
        stand_in.mkdir(parents=True, exist_ok=True)
    path = args.menagerie or (str(stand_in) if stand_in else None)
    if path:
        os.environ[menagerie.MENAGERIE_ENV] = path
    tasks = args.tasks or list(registry.robot_names())
    rows = []
    for task in tasks:
        try:
            env, created = load(task, stand_in)
        except Exception as error:  # reported per task: the check goes on with the next one
            row = {"task": task, "loads": False, "error": str(error).splitlines()[0][:300]}
        else:
            row = describe(task, env)
            row["stand_ins"] = created
            if args.step:
                row.update(time_step(task, env, row))
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        pathlib.Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = sum(r["loads"] for r in rows)
    print(f"{loaded} of {len(rows)} tasks load", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
