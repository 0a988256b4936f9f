"""What the key of a stored program holds (`jaxrl.run.programs`): every setting, source file,
version and option that goes into a program's trace, so that two runs share a stored program
only where they would trace the same one. `programs.identity` puts the run's part together;
`key` adds one program's kind and arguments."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import pathlib
import re
import sys
from typing import Any

import jax
import numpy as np

# Settings that never reach a chunk program: the seed is the state's key (but with domain
# randomization, whose physics are drawn from it when the envs are built: `settings`); the
# off-policy loop reads the step count only to know how many chunks to run and how long each
# is, and the key holds that length, `iterations_per_chunk`, itself (256 steps in chunks of 32
# iterations and 200 steps in chunks of 25 are two programs; 256 and 512 are one). The
# on-policy loop's schedules read the step count, so there it stays in the key.
# tests/run/test_program_store.py lowers the chunks both ways to hold this true.
FREE_FIELDS = {"off-policy": ("seed", "total_steps"), "on-policy": ("seed",)}
PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "ml_dtypes", "flax", "optax", "chex", "brax",
            "mujoco", "mujoco-mjx", "playground", "orbax-checkpoint")  # fmt: skip
# jax config entries that cannot change a program (caching, logging, debugging output).
_CONFIG_SKIP = ("cache", "log", "dump", "pprint", "traceback", "timeout", "transfer_guard",
                "explain", "profil", "source_url", "thread_guard", "captured")  # fmt: skip


def versions() -> dict[str, str]:
    found = {"python": sys.version}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = ""
    return found


def sources(config: Any, agent_config: Any, env: Any = None) -> str | None:
    """A hash of the Python source a run's programs are traced from: every file of jaxrl
    (its envs included), of each package of PACKAGES that is not an installed release (an
    editable or source checkout; a release is keyed by its version), and of the user's modules
    (`config.env_imports`, an agent config's own module, and the modules of `env`'s classes and
    of its registered factory: `_env_modules`) with the code they import (`_user_files`).
    About 150 files, 30 ms. None where one of the user's modules has no file to read (an env
    defined in a notebook): its code cannot be keyed, so nothing of the run is stored."""
    folders = [_package_folder("jaxrl"), _package_folder("jaxrl.envs")]
    for name in _IMPORT_NAMES:
        folder = _package_folder(name)
        if folder is not None and not _released(folder):
            folders.append(folder)
    files = [f for folder in folders if folder is not None for f in sorted(folder.rglob("*.py"))]
    modules = list(config.env_imports or ())
    if agent_config is not None:
        modules.append(type(agent_config).__module__)
    modules += _env_modules(config, env)
    for name in dict.fromkeys(modules):
        found = _user_files(name)
        if found is None:
            return None
        files += found
    digest = hashlib.sha256()
    for path in dict.fromkeys(files):
        try:
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            continue
    return digest.hexdigest()


def _user_files(name: str) -> list[pathlib.Path] | None:
    """The files of the user's module `name` for the key, with the code it may import from them:
    in a package, every file of its top-level package (a task importing its rewards' module);
    a module of its own (a script, `__main__`), it and the modules loaded from its folder (the
    script's helpers beside it). An installed module too, unless its package's version is in
    the key already (PACKAGES, keyed by version) or its source is (jaxrl's). None where it has
    no file (a notebook's): its code cannot be keyed."""
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if file is None:
        return None
    top = name.partition(".")[0]
    if top in ("jaxrl", *_IMPORT_NAMES, *_VERSIONED_IMPORTS):
        return []
    path = pathlib.Path(file)
    if top != name or hasattr(module, "__path__"):
        folder = _package_folder(top)
        if folder is not None:
            return sorted(folder.rglob("*.py"))
    beside = {path}
    for other in list(sys.modules.values()):
        other_file = getattr(other, "__file__", None)
        if (
            other_file
            and other_file.endswith(".py")
            and pathlib.Path(other_file).parent == path.parent
        ):
            beside.add(pathlib.Path(other_file))
    return sorted(beside)


# The import names of PACKAGES not in _IMPORT_NAMES (mujoco-mjx imports as mujoco.mjx, under
# "mujoco"): keyed by their versions alone.
_VERSIONED_IMPORTS = ("jax", "jaxlib", "numpy", "scipy", "ml_dtypes", "orbax")


def _released(path: pathlib.Path) -> bool:
    """Whether `path` is an installed release's (keyed by its version, not its source)."""
    return bool({"site-packages", "dist-packages"} & set(path.parts))


def _env_modules(config: Any, env: Any) -> list[str]:
    """The modules `env`'s code comes from: the class of every layer of its wrappers (a user's
    Brax or Playground env class, a registered env's own class) and, for an env added with
    `jaxrl.envs.register`, its factory's. Without them the key would not see a user's env
    defined outside `--env-imports` (in the script that calls `train`), and a re-run after
    an edit of its reward would load the program traced from the old one."""
    from jaxrl.envs import registry

    modules = []
    registration = registry.registration(config.env)
    if registration is not None:
        factory = getattr(registration.factory, "func", registration.factory)  # a partial's
        modules.append(getattr(factory, "__module__", None) or "")
    layer, seen = env, set()
    while layer is not None and id(layer) not in seen:
        seen.add(id(layer))
        modules.append(type(layer).__module__)
        layer = vars(layer).get("env") if hasattr(layer, "__dict__") else None
    return modules  # a class made by exec() has "builtins", no file: the run is not stored


# The import names of PACKAGES' code that a program can be traced from.
_IMPORT_NAMES = ("flax", "optax", "chex", "brax", "mujoco", "mujoco_playground")


def _package_folder(name: str) -> pathlib.Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def jax_config() -> dict[str, str]:
    return {
        name: repr(value)
        for name, value in sorted(jax.config.values.items())
        if not any(part in name for part in _CONFIG_SKIP)
    }


def settings(config: Any, on_policy: bool, agent_config: Any) -> dict:
    free = set(FREE_FIELDS["on-policy" if on_policy else "off-policy"])
    if config.randomize:  # the envs' physics are drawn from the seed, constants in the programs
        free.discard("seed")
    run = {
        name: value
        for name, value in dataclasses.asdict(config).items()
        if name not in type(config).ARRAY_FIELDS and name not in free
    }
    # The chunk's loop length, which the step count sets with eval_every (`FREE_FIELDS`).
    run["iterations_per_chunk"] = config.iterations_per_chunk
    agent = {}
    if agent_config is not None:
        data = set(getattr(type(agent_config), "ARRAY_FIELDS", ()))
        agent = {k: v for k, v in dataclasses.asdict(agent_config).items() if k not in data}
        agent["type"] = f"{type(agent_config).__module__}.{type(agent_config).__qualname__}"
    return {"run": run, "agent": agent}


def digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


def key(program_id: str, kind: str, args: tuple) -> str:
    """The key of one program of the run `program_id`: its kind (e.g. "chunk") and its
    arguments' structure, shapes, dtypes and placement."""
    leaves, tree = jax.tree.flatten(args)
    shapes = [
        (
            tuple(getattr(x, "shape", ())),
            str(getattr(x, "dtype", type(x).__name__)),
            bool(getattr(x, "weak_type", False)),
            str(getattr(x, "sharding", "")),
        )
        for x in leaves
    ]
    text = json.dumps([program_id, kind, _describe(tree), shapes], default=repr)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"


def _describe(tree: Any) -> Any:
    """A tree structure as plain data that is the same in every process: its repr can hold
    object addresses (MJX keeps numpy arrays in its nodes' static data, in wrappers)."""
    data = tree.node_data()
    if data is None:
        return "*"
    kind, aux = data
    name = f"{kind.__module__}.{kind.__qualname__}"
    return [name, _stable(aux), [_describe(child) for child in tree.children()]]


def _stable(value: Any) -> Any:
    """`value` (a node's static data) as plain data, arrays by their contents' hash."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return ["ndarray", value.shape, str(value.dtype), digest]
    if isinstance(value, list | tuple):
        return [type(value).__name__, [_stable(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[_stable(k), _stable(v)] for k, v in value.items()]]
    if isinstance(value, str | int | float | bool | type(None) | np.generic):
        return repr(value)
    if hasattr(value, "__dict__"):
        return [type(value).__qualname__, _stable(vars(value))]
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))
