"""MuJoCo Menagerie, the robot assets Playground's locomotion and manipulation tasks load:
where Playground looks for them, how to point it at a checkout of one's own
(`--env-option menagerie_path=...` or JAXRL_MENAGERIE_PATH), and the one-line help where they
are missing (Playground would otherwise try to clone them, which fails without network)."""

from __future__ import annotations

import os
from typing import Any

from jaxrl.errors import EnvOptionError

# Playground's locomotion and manipulation tasks load robot assets from a git clone of MuJoCo
# Menagerie, which Playground makes on first use (network needed) under its own package folder.
# An existing checkout elsewhere is passed on through this environment variable or the env
# option `menagerie_path`.
MENAGERIE_ENV = "JAXRL_MENAGERIE_PATH"
MENAGERIE_URL = "https://github.com/google-deepmind/mujoco_menagerie"


def path() -> Any:
    """Where Playground looks for Menagerie now (an etils path)."""
    from mujoco_playground._src import mjx_env

    return mjx_env.MENAGERIE_PATH


def available() -> bool:
    """Whether Playground would find Menagerie where it looks."""
    return path().exists()


def use(folder_path: str | os.PathLike) -> None:
    """Makes Playground load robot assets from the Menagerie checkout at `path` (for this
    process: Playground reads the location from a module attribute when it builds a task)."""
    from etils import epath
    from mujoco_playground._src import mjx_env

    folder = epath.Path(os.path.expanduser(os.fspath(folder_path)))
    if not folder.is_dir():
        raise EnvOptionError(f"menagerie_path {os.fspath(folder_path)!r} is not a folder")
    mjx_env.MENAGERIE_PATH = folder


def help_for(task: str) -> str:
    from mujoco_playground._src import mjx_env

    commit = getattr(mjx_env, "MENAGERIE_COMMIT_SHA", None)
    checkout = f" && git -C mujoco_menagerie checkout {commit}" if commit else ""
    return (
        f"playground/{task} needs the MuJoCo Menagerie robot assets, not found at "
        f"{path()}. Either run it once on a machine with network access "
        f"(Playground then clones {MENAGERIE_URL} there itself), or point jaxrl to a "
        f"checkout you have (git clone {MENAGERIE_URL}{checkout}): --env-option "
        f"menagerie_path=/path/to/mujoco_menagerie, or {MENAGERIE_ENV}=/path/to/mujoco_menagerie "
        "in the environment. The DM Control Suite tasks (`jaxrl list playground`) need no assets."
    )


def load_robot(registry: Any, task: str, overrides: dict) -> Any:
    """Playground's robot task, or an error saying how to get its assets: without them,
    Playground tries to clone Menagerie (which fails without network access); with a
    checkout that lacks the robot's folder, MuJoCo fails to open a file."""
    import subprocess

    if not available():
        try:
            return registry.load(task, config_overrides=overrides)
        except (subprocess.CalledProcessError, OSError) as error:
            raise EnvOptionError(f"{help_for(task)} (download failed: {error})") from None
    try:
        return registry.load(task, config_overrides=overrides)
    except ValueError as error:
        if "file" not in str(error).lower() and "resource" not in str(error).lower():
            raise
        first = str(error).strip().splitlines()[0]
        raise EnvOptionError(
            f"playground/{task}: the Menagerie checkout at {path()} lacks an asset "
            f"this task loads ({first}); use a full checkout of {MENAGERIE_URL}"
        ) from None
