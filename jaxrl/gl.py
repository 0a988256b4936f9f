"""MuJoCo's OpenGL backends as the MUJOCO_GL environment variable names them: which it takes,
the library each headless one loads, the system packages that hold it, and what is wrong with
the user's value. Standard library only: `jaxrl.cli` checks the value before any command
imports MuJoCo, and `jaxrl.render` names the same packages when no context can be made."""

from __future__ import annotations

import os

# mujoco/rendering/classic/gl_context.py's values: off, its words for "on", then the backends.
OFF = ("disable", "disabled", "off", "false", "0")
_ON = ("enable", "enabled", "on", "true", "1")
BACKENDS = {
    "Linux": ("glfw", "glx", "egl", "osmesa"),
    "Windows": ("glfw", "wgl"),
    "Darwin": ("glfw", "cgl"),
}
# The headless backends: the library each loads, and its Debian/Ubuntu packages.
NAMES = {"egl": "EGL", "osmesa": "OSMesa"}
PACKAGES = {"egl": "libegl1 libgl1-mesa-dri", "osmesa": "libosmesa6"}


def problem() -> str | None:
    """What is wrong with the user's MUJOCO_GL, if anything. MuJoCo sets its OpenGL backend up
    when it is imported, and every command but plot imports it (through brax): an unknown
    value, or a headless backend whose library is missing, ended each of them, rendering or
    not, in a traceback from inside MuJoCo."""
    import ctypes.util
    import platform

    value = os.environ.get("MUJOCO_GL", "").lower().strip()
    if not value or value in OFF or value in _ON:
        return None
    backends = BACKENDS.get(platform.system())
    if backends and value not in backends:
        return (
            f"MUJOCO_GL={value} is not one of MuJoCo's OpenGL backends here "
            f"({', '.join(backends)}); unset it, or use MUJOCO_GL=egl without a display"
        )
    if value in NAMES and not ctypes.util.find_library(NAMES[value]):
        other = "osmesa" if value == "egl" else "egl"
        return (
            f"MUJOCO_GL={value}, but its library ({NAMES[value]}) is not installed, and MuJoCo "
            f"sets its OpenGL up when imported: install it (Debian/Ubuntu packages: "
            f"{PACKAGES[value]}), use MUJOCO_GL={other} ({PACKAGES[other]}), or unset MUJOCO_GL"
        )
    return None
