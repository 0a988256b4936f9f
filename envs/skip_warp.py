"""MuJoCo's MJX imports NVIDIA Warp and its own Warp port (mujoco_warp) when `mujoco.mjx` is first
imported, whether or not Warp is used. jaxrl never uses it: every Playground env is built with
`impl="jax"`. On a 2-core CPU that import alone took seconds of every process's start-up
(benchmarks/notes/2026-12-06-code-figures.md), paid by each `jaxrl` command that builds an env
and by each test subprocess.

`install()` adds an import hook that refuses `warp` while MJX is being imported, so MJX records
Warp as missing (its `WARP_INSTALLED = False`, the state it is in on a machine without Warp)
and goes on with its JAX implementation. MJX prints a line for each refused import; the hook
silences `mujoco.mjx.warp`'s output, and only that module's. Set `JAXRL_WARP=1` to import Warp as
usual (MJX's `impl="warp"` in the same process as jaxrl). Warp imported before jaxrl's envs, or
after MJX, is left alone.

An import hook (importlib's MetaPathFinder) rather than a dependency change: Warp is installed
by MuJoCo Playground's requirements, and MJX offers no switch to skip it."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import io
import os
import sys

_MJX_WARP = "mujoco.mjx.warp"


class _QuietLoader(importlib.abc.Loader):
    """Runs `mujoco.mjx.warp`'s own loader with its stdout discarded and Warp refused."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        _SkipWarp.refusing = True
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                self._loader.exec_module(module)
        finally:
            _SkipWarp.refusing = False


class _SkipWarp(importlib.abc.MetaPathFinder):
    refusing = False  # True while mujoco.mjx.warp runs: then, and only then, Warp is refused

    def find_spec(self, name, path, target=None):
        if name == _MJX_WARP:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _QuietLoader(spec.loader)
            return spec
        if self.refusing and (name == "warp" or name.startswith("warp.")):
            raise ImportError(
                "jaxrl skips NVIDIA Warp while MJX imports (it runs MJX with impl='jax'); "
                "set JAXRL_WARP=1 to import it"
            )
        return None


def install() -> None:
    """Adds the hook once, unless JAXRL_WARP=1, Warp is already imported, or MJX is."""
    if os.environ.get("JAXRL_WARP") == "1" or "warp" in sys.modules or _MJX_WARP in sys.modules:
        return
    if not any(isinstance(finder, _SkipWarp) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SkipWarp())
