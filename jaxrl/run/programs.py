"""A store of compiled programs, so that a re-run skips tracing as well as compiling (issue 39).

JAX's persistent compilation cache keys a program on its lowered text, so a cache hit still
pays for tracing the program and lowering it: for an MJX preset on CPU, tens of seconds before
the cache is even asked. This store keys a program instead on everything that goes into its
trace, and keeps the compiled executable (`jax.experimental.serialize_executable`): a hit loads
it without tracing, lowering or asking XLA.

What goes into the key (`identity`, then `key` per program):
- the run's config and the agent's, less the fields that are data in the program's state
  (`TrainConfig.ARRAY_FIELDS` and the agent config's: learning rates, tau, gamma, noise
  scales, ...), the seed (the state's key) and, for loops whose chunk never reads it, the step
  count (`FREE_FIELDS`);
- the source of jaxrl (its envs included), of a user's `--env-imports` modules, agent config
  and env (its classes' modules, a registered env's factory's), and of any of flax, optax,
  chex, brax, MuJoCo and Playground that is not an installed release (`_sources`); releases
  by their versions;
- the versions of Python and of the packages, jax's config, XLA_FLAGS, the backend and its
  devices;
- the program's kind and its arguments' structure, shapes, dtypes and placement.

Used only where all of that is known: runs from the registry's envs and algorithms (not an env
object or randomization function handed to `train`, nor an env whose code has no file), on one
device of one process, and with the compilation cache on. JAXRL_PROGRAM_STORE=0 turns it off
alone. The store lives beside the cache's own entries (`<cache dir>/jaxrl-programs`); deleting
that folder empties it; JAXRL_PROGRAM_STORE_LOG=FILE appends to FILE why each program was or
was not stored (`note`). It also keeps the observation size of the registry's Brax and
Playground envs, which they read off a trace of their reset (`remember_observation_size`), and
per run key and kind a hint naming the entry last stored or loaded (`last-KIND-...`), from
which a run starts loading its chunk on a thread of its own before it asks for it (`prefetch`),
and per `jaxrl train` command line (less its seed and folder) one naming its last chunk
(`last-early-...`), from which that command starts the load before it even parses its
arguments (`prefetch_early`). An entry keeps the executable's bytes apart from the trees of its
arguments and outputs, so a thread can load the one while the main thread imports the modules
the other names.

Written here rather than taken from a library: JAX's own cache is the library, and its key is
the lowered program, which is what a re-run should not have to build."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import pathlib
import pickle
import re
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import serialize_executable

from jaxrl.files import write_atomically

STORE_VERSION = 2  # 2: the executable's bytes and its trees apart (`_read`)
FOLDER = "jaxrl-programs"
# Settings that never reach a chunk program: the seed is the state's key (but with domain
# randomization, whose physics are drawn from it when the envs are built: `_settings`); the
# off-policy loop reads the step count only to know how many chunks to run and how long each
# is, and the key holds that length, `iterations_per_chunk`, itself (256 steps in chunks of 32
# iterations and 200 steps in chunks of 25 are two programs; 256 and 512 are one). The
# on-policy loop's schedules read the step count, so there it stays in the key.
# tests/test_program_store.py lowers the chunks both ways to hold this true.
FREE_FIELDS = {"off-policy": ("seed", "total_steps"), "on-policy": ("seed",)}
PACKAGES = ("jax", "jaxlib", "numpy", "scipy", "ml_dtypes", "flax", "optax", "chex", "brax",
            "mujoco", "mujoco-mjx", "playground", "orbax-checkpoint")  # fmt: skip
# jax config entries that cannot change a program (caching, logging, debugging output).
_CONFIG_SKIP = ("cache", "log", "dump", "pprint", "traceback", "timeout", "transfer_guard",
                "explain", "profil", "source_url", "thread_guard", "captured")  # fmt: skip


def folder() -> pathlib.Path | None:
    """The store's folder, or None where it is off: JAX's compilation cache is off, it has no
    folder, or JAXRL_PROGRAM_STORE=0."""
    if os.environ.get("JAXRL_PROGRAM_STORE", "1") == "0":
        return None
    if not jax.config.jax_enable_compilation_cache:
        return None
    base = jax.config.jax_compilation_cache_dir
    return pathlib.Path(base) / FOLDER if base else None


def _versions() -> dict[str, str]:
    found = {"python": sys.version}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = ""
    return found


def _sources(config: Any, agent_config: Any, env: Any = None) -> str | None:
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
    registration = registry._REGISTERED.get(config.env)
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


def _jax_config() -> dict[str, str]:
    return {
        name: repr(value)
        for name, value in sorted(jax.config.values.items())
        if not any(part in name for part in _CONFIG_SKIP)
    }


def _settings(config: Any, on_policy: bool, agent_config: Any) -> dict:
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


def identity(trainer: Any, agent_config: Any) -> str | None:
    """The part of every program's key that comes from the run (see the module's docstring);
    None where the store is not used for it: it is off, the run has more than one device or
    process, its chunk is several programs (an actor/learner split), or its env's code has no
    file to key it by (`_sources`)."""
    if folder() is None:
        return noted(None, "run", "off: JAX's cache is off or JAXRL_PROGRAM_STORE=0")
    if jax.process_count() > 1 or jax.device_count() > 1:
        return noted(None, "run", "off: more than one device or process")
    if trainer.compile_chunk is not None or trainer.place is not None:
        return noted(None, "run", "off: an actor/learner split's several programs")
    if trainer.data.mesh is not None:
        return noted(None, "run", "off: a run over a device mesh")
    device = jax.devices()[0]
    parts = {
        "store": STORE_VERSION,
        "versions": _versions(),
        "jax_config": _jax_config(),
        "environment": {k: os.environ.get(k, "") for k in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")},
        "device": [jax.default_backend(), device.platform, device.device_kind],
        "settings": _settings(trainer.config, trainer.agent.on_policy, agent_config),
        "sources": _sources(trainer.config, agent_config, trainer.env),
    }
    if parts["sources"] is None:
        return noted(None, "run", "off: an env or config module has no file to key it by")
    return _digest(parts)


def _digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


def remember_observation_size(env: Any, config: Any) -> None:
    """Gives the base env `env` of `config.env` the observation size an earlier process of the
    same env, options, sources and versions read, or reads it and keeps it for the next. Brax's
    and Playground's envs (`jaxrl.envs.registry`) read it off a trace of their reset: 1.6 s for
    Playground's CheetahRun on this CPU, before any program, at every start of a run. Only envs
    whose `observation_size` is a `functools.cached_property` (the registry's Brax and
    Playground envs) take it; the store off or the env's code unkeyable, nothing is done."""
    cached = getattr(type(env), "observation_size", None)
    where = folder()
    if where is None or not isinstance(cached, functools.cached_property):
        return
    sources = _sources(config, None, env)
    if sources is None or "observation_size" in vars(env):
        return
    parts = {"store": STORE_VERSION, "versions": _versions(), "sources": sources,
             "env": config.env, "options": config.env_options}  # fmt: skip
    path = where / f"observation_size-{_digest(parts)}.pkl"
    try:
        vars(env)["observation_size"] = pickle.loads(path.read_bytes())
        return
    except Exception:  # noqa: BLE001 - none kept (or unreadable): read it, keep it
        pass
    _write(path, pickle.dumps(env.observation_size))


def _write(path: pathlib.Path, blob: bytes) -> bool:
    """`blob` at `path`, whole or not at all (a concurrent run reads a whole entry or none);
    False where it cannot be written (a full disk, a folder not writable): the store is a
    cache, and a run that compiled its program goes on without storing it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, blob)
        return True
    except OSError as error:
        note(path.name.partition("-")[0], "not written", error=repr(error)[:300])
        return False


def _touch(path: pathlib.Path) -> None:
    """Makes the marker file `path`, where it can be made (`_write`)."""
    try:
        path.touch()
    except OSError as error:
        note(path.name.partition("-")[0], "not marked", error=repr(error)[:300])


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


def load_or_compile(
    program_id: str | None,
    kind: str,
    args: tuple,
    lower: Callable[[], Any],
    compile: Callable[[Any], Any] = lambda lowered: lowered.compile(),
):
    """The compiled program for `args`: loaded from the store where it holds it, else
    `compile(lower())`'s (a `jax.stages.Compiled`), written to the store for the next run.
    `program_id` None (`identity`): just `compile(lower())`.

    A program JAX's persistent cache gave is stored from that cache's own bytes
    (`_compile_watching_cache`): XLA:CPU re-serialises an executable it loaded without its
    code. What is not stored: such a program where those bytes cannot be had (a jax whose
    cache module differs), one calling into a library other than LAPACK (its kernels may be
    registered only as a program using them is lowered, which a loaded one is not), and any
    entry that failed before (`_Guarded`). An entry that cannot be read is compiled again and
    replaced."""
    where = folder()
    if program_id is None or where is None:
        return compile(lower())
    path = where / key(program_id, kind, args)
    running = path.with_name(f"{path.name}.running-{socket.gethostname()}-{os.getpid()}")
    failed = path.with_suffix(".failed")
    if _died_running(path):  # never again under this key
        _touch(failed)
        path.unlink(missing_ok=True)
    pending = _PREFETCHED.pop((program_id, kind), None)
    if path.exists() and not failed.exists():
        loaded = pending.take() if pending is not None and pending.path == path else None
        prefetched = loaded is not None
        if loaded is None:
            loaded = _load(path)
        if loaded is not None:
            _remember(program_id, kind, path)
            note(kind, "loaded", prefetched=prefetched)
            return _Guarded(loaded, running, failed, prefetched)
    lowered = lower()
    compiled, source, cached = _compile_watching_cache(lambda: compile(lowered))
    targets = sorted(set(re.findall(r"custom_call @([\w.$]+)", lowered.as_text())))
    unknown = [t for t in targets if not t.startswith(_libraries())]
    if source == "memory":
        return noted(compiled, kind, "not stored: compiled earlier in this process")
    if source == "cache" and cached is None:
        return noted(compiled, kind, "not stored: JAX's cache gave it, its bytes not to be had")
    if failed.exists():
        return noted(compiled, kind, "not stored: its entry failed before")
    if unknown:
        return noted(compiled, kind, "not stored: it calls libraries", calls=unknown)
    try:
        with _PATCHING:  # `_serialize`'s swap of a class of jax's is process-wide
            executable, in_tree, out_tree = _serialize(compiled, cached)
        trees = pickle.dumps((in_tree, out_tree))
        blob = pickle.dumps({"executable": executable, "trees": trees, "targets": targets})
    except Exception as error:  # noqa: BLE001 - a program XLA cannot serialize is not stored
        return noted(compiled, kind, "not stored: not serializable", error=repr(error)[:300])
    if not _write(path, blob):
        return noted(compiled, kind, "not stored: its file could not be written")
    _remember(program_id, kind, path)
    return noted(compiled, kind, "stored", source=source, bytes=len(blob))


def note(kind: str, outcome: str, **details: Any) -> None:
    """Appends what the store did with a program (or a run) as one JSON line to the file
    JAXRL_PROGRAM_STORE_LOG names, where it names one: how a machine where nothing is stored
    (a GPU's, `benchmarks/rerun.py`) says why. Nothing is written without it."""
    log = os.environ.get("JAXRL_PROGRAM_STORE_LOG")
    if not log:
        return
    line = json.dumps({"kind": kind, "outcome": outcome, **details}, default=str)
    try:
        with open(log, "a") as file:
            file.write(line + "\n")
    except OSError:  # a log that cannot be written never stops a run
        pass


def noted(value: Any, kind: str, outcome: str, **details: Any) -> Any:
    """`value`, once `note` has noted `outcome`."""
    note(kind, outcome, **details)
    return value


def _last(program_id: str, kind: str) -> pathlib.Path:
    """The file naming the entry of kind `kind` that the run `program_id` last stored or loaded
    (kept for every kind; `prefetch` reads the chunks')."""
    return folder() / f"last-{kind}-{_digest({'id': program_id, 'kind': kind})[:40]}"


def _remember(program_id: str, kind: str, path: pathlib.Path) -> None:
    early = _EARLY_IDS.get(program_id)
    if early is not None and kind.startswith("chunk") and _early_hint(early).parent == path.parent:
        _hint(_early_hint(early), path)
    _hint(_last(program_id, kind), path)


def _hint(hint: pathlib.Path, path: pathlib.Path) -> None:
    """Writes the hint file `hint`, naming the entry at `path`, where it names another."""
    try:
        if hint.read_text() == path.name:
            return
    except (OSError, ValueError):  # none yet, or unreadable (not text): written anew
        pass
    _write(hint, path.name.encode())


class _Prefetch:
    """One entry's load running on a thread of its own (`prefetch`)."""

    def __init__(self, path: pathlib.Path, entry: dict):
        self.path, self._entry, self._executable = path, entry, None
        self._thread = threading.Thread(target=self._load, args=(entry,), name="jaxrl-prefetch")
        self._thread.start()

    def _load(self, entry: dict) -> None:
        self._executable = _executable(entry)

    def take(self) -> Any:
        """The loaded program, once its thread is done; None where it could not be loaded
        (then loaded again, or compiled, by `load_or_compile`)."""
        self._thread.join()
        return _loaded(self._entry, self._executable)


# Loads `prefetch` started, by (program_id, kind): `load_or_compile` takes (or drops) them,
# and `drop_prefetched` drops one a run never asked for (it ended before compiling its chunk).
_PREFETCHED: dict[tuple[str, str], _Prefetch] = {}


def drop_prefetched(program_id: str | None, kind: str) -> None:
    _PREFETCHED.pop((program_id, kind), None)


def prefetch(program_id: str | None, kind: str) -> None:
    """Starts loading, on a thread of its own, the program of kind `kind` that the last
    process of the run `program_id` stored or loaded (`_last` names it), where the store has
    it; `load_or_compile` then takes it if it asks for that same entry. XLA rebuilds a loaded
    executable on one thread (Playground's CheetahRun: 2.3 to 3 s for a `fast_td3_playground`
    chunk on this CPU), which the main thread's work before the chunk (the reset's program
    loaded and run, the rest of the first state traced and compiled: about 2 s) can then run
    beside. Loading runs no program (a crash in a first call is `_Guarded`'s to catch); the
    LAPACK kernels are readied here, on the calling thread."""
    early, _EARLY["load"] = _EARLY["load"], None
    if program_id is not None and _EARLY["id"] is not None:  # this process's command line's
        _EARLY_IDS[program_id] = _EARLY["id"]
    _EARLY["id"] = None
    if program_id is None or folder() is None or (program_id, kind) in _PREFETCHED:
        return
    path = _named(_last(program_id, kind), kind)
    if path is None:
        return
    if early is not None and early.path == path:  # already loading since the command began
        _PREFETCHED[program_id, kind] = early
        return
    entry = _read(path)
    if entry is not None:
        _PREFETCHED[program_id, kind] = _Prefetch(path, entry)


def prefetching(program_id: str | None, kind: str) -> bool:
    """Whether `prefetch` is loading a stored program of kind `kind` for the run `program_id`
    (one `load_or_compile` has not taken yet)."""
    return program_id is not None and (program_id, kind) in _PREFETCHED


def stored(program_id: str | None, kind: str, args: tuple) -> bool:
    """Whether the store holds a program of kind `kind` for `args` of the run `program_id`
    that has not failed (so `load_or_compile` would load it, not compile it)."""
    where = folder()
    if program_id is None or where is None:
        return False
    path = where / key(program_id, kind, args)
    return path.exists() and not path.with_suffix(".failed").exists()


def _named(hint: pathlib.Path, kind: str) -> pathlib.Path | None:
    """The entry of kind `kind` that the hint file `hint` names, where it names one that has
    not failed (its first call raised once: compiled from now on)."""
    try:
        name = hint.read_text()
    except (OSError, ValueError):  # no hint, or an unreadable one
        return None
    if not re.fullmatch(rf"{kind}-[0-9a-f]{{40}}", name):
        return None
    path = hint.parent / name
    return None if path.with_suffix(".failed").exists() else path


# `prefetch_early`'s: the command line's id (`early_id`) and the load it started, until the
# run's `prefetch` takes them; then, by program_id, the ids whose hints `_remember` writes too.
_EARLY: dict[str, Any] = {"id": None, "load": None}
_EARLY_IDS: dict[str, str] = {}
# Options of `jaxrl train` that change nothing a chunk program holds (the seed is the state's
# key), left out of `early_id`: a re-run with another seed or folder starts loading at once.
_EARLY_FREE = ("--seed", "--out", "--quiet")
# Where the early load is not tried: several processes (their backends must not start before
# jax.distributed does), a resume (its settings come from the run folder), no store, --help.
_EARLY_NEVER = ("--coordinator", "--num-processes", "--process-id", "--resume",
                "--no-compile-cache", "-h", "--help")  # fmt: skip


def default_cache_dir() -> pathlib.Path:
    """The folder of JAX's persistent cache that `jaxrl train` uses (`driver.DEFAULT_CACHE_DIR`):
    $JAXRL_CACHE_DIR, else ~/.cache/jaxrl/xla."""
    default = pathlib.Path.home() / ".cache" / "jaxrl" / "xla"
    return pathlib.Path(os.environ.get("JAXRL_CACHE_DIR", default))


def early_id(argv: list[str]) -> str | None:
    """A `jaxrl train` command line's id for `prefetch_early`: its arguments less the
    `_EARLY_FREE` options (and their values), with jax's version, the host's name and the
    variables that choose devices; None where the early load is not tried (`_EARLY_NEVER`,
    several processes, or the store or cache turned off)."""
    if any(arg.split("=")[0] in _EARLY_NEVER for arg in argv):
        return None
    if "0" in (os.environ.get("JAXRL_PROGRAM_STORE"), os.environ.get("JAXRL_COMPILE_CACHE")):
        return None
    if os.environ.get("JAXRL_COORDINATOR"):  # several processes (`sharding.initialize_distributed`)
        return None
    kept, skip = [], False
    for arg in argv:
        name = arg.split("=")[0]
        if skip:
            skip = False
        elif name in _EARLY_FREE:
            skip = "=" not in arg and name != "--quiet"
        else:
            kept.append(arg)
    # The machine and the devices it may see, as a cache folder may be shared between machines.
    seen = {k: os.environ.get(k) for k in ("XLA_FLAGS", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES")}
    return _digest({"argv": kept, "jax": jax.__version__, "host": socket.gethostname(), **seen})


def _early_hint(early: str) -> pathlib.Path:
    return default_cache_dir() / FOLDER / f"last-early-{early[:40]}"


def prefetch_early(argv: list[str]) -> None:
    """Called by `jaxrl train` before it parses its command line: starts loading the chunk
    program that the last process of the same command line (`early_id`: another seed or
    folder counts as the same) ran, on a thread of its own, while the main thread imports
    Playground and builds the configs and the trainer (about 1 s on this CPU, ahead of the
    run's own `prefetch`). A guess only: the run's `prefetch` keeps the load where its own
    hint names the same entry, and drops it where not. Either way the loaded program is
    still `load_or_compile`'s to check against the run's key."""
    early = early_id(argv)
    _EARLY["id"], _EARLY["load"] = early, None
    if early is None:
        return
    hint = _early_hint(early)
    path = _named(hint, "chunk") or _named(hint, "chunk-vmapped")
    entry = None if path is None else _read(path)  # bytes only: quick, and imports nothing
    if entry is not None:
        jax.devices()  # the backend started here, not on the thread
        _EARLY["load"] = _Prefetch(path, entry)


def drop_early() -> None:
    """Forgets `prefetch_early`'s load and command line id, for a run that will not call
    `prefetch` (an actor/learner split compiles its own programs)."""
    _EARLY["id"], _EARLY["load"] = None, None


def command_ended() -> None:
    """Forgets the command line's id once its command ended, so that a later run in the same
    process (`cli.main` called in-process) is not taken for one of it."""
    _EARLY["id"] = None


def early_load_running() -> bool:
    """Whether the load `prefetch_early` started still runs, for a run that never took it."""
    load = _EARLY["load"]
    return load is not None and load._thread.is_alive()


def _died_running(path: pathlib.Path) -> bool:
    """Whether a process of this machine died in the first call of the entry at `path`: a
    `.running-HOST-PID` file of it is left with no process PID alive (its file is removed).
    Runs alive beside this one (a sweep's) are not deaths; another machine's files (a shared
    cache folder) cannot be judged here and are left."""
    host, died = socket.gethostname(), False
    for marker in path.parent.glob(f"{path.name}.running-*"):
        marker_host, _, pid = marker.name.partition(".running-")[2].rpartition("-")
        if marker_host != host or not pid.isdigit() or _alive(int(pid)):
            continue
        died = True
        marker.unlink(missing_ok=True)
    return died


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _libraries() -> tuple[str, ...]:
    """The custom-call targets (by prefix) a stored program may call: LAPACK's, which the
    store initialises itself, and those JAXRL_PROGRAM_STORE_LIBRARIES adds (comma-separated,
    e.g. "cusolver,cublas" for MJX on a GPU: not yet checked on one, so not by default;
    `jaxrl.benchmarks.rerun --libraries` checks it)."""
    extra = os.environ.get("JAXRL_PROGRAM_STORE_LIBRARIES", "")
    return ("lapack_", *(name.strip() for name in extra.split(",") if name.strip()))


def _load(path: pathlib.Path) -> Any:
    """The stored program at `path`, ready to run; None where it cannot be read."""
    entry = _read(path)
    return None if entry is None else _deserialize(entry)


def _deserialize(entry: dict) -> Any:
    """The program of `entry` (`_read`'s), ready to run; None where XLA cannot load it."""
    return _loaded(entry, _executable(entry))


def _executable(entry: dict) -> Any:
    """The first half of `_deserialize`, the one that takes time (XLA rebuilds the program):
    what `serialize_executable.deserialize_and_load` unpickles, from the executable's bytes,
    which name only jax's classes, so that a thread can run it while the main thread imports
    the modules of the trees' classes. None where that cannot be had (a jax whose private
    unpickler differs): then `_loaded` does the whole of it."""
    try:
        backend = jax.devices()[0].client
        reader = serialize_executable._JaxPjrtUnpickler
        return reader(io.BytesIO(entry["executable"]), backend, backend.devices()).load()
    except Exception:  # noqa: BLE001 - done again by `_loaded`, the public way
        return None


def _loaded(entry: dict, executable: Any) -> Any:
    """The second half of `_deserialize`: the program from `_executable`'s output, with the
    trees of its arguments and outputs; None where it cannot be loaded."""
    try:
        in_tree, out_tree = pickle.loads(entry["trees"])
        if executable is not None:
            try:
                return _compiled(executable, in_tree, out_tree)
            except Exception:  # noqa: BLE001 - a jax whose Compiled differs: the public way
                pass
        program = (entry["executable"], in_tree, out_tree)
        return serialize_executable.deserialize_and_load(*program)
    except Exception:  # noqa: BLE001 - any unreadable entry is compiled again
        return None


def _compiled(executable: Any, in_tree: Any, out_tree: Any) -> Any:
    """deserialize_and_load's own last steps (jax 0.10's), after its unpickling."""
    unloaded, args_info, no_kwargs = executable
    args_info = in_tree.unflatten(args_info)
    return jax.stages.Compiled(unloaded.load(), [], args_info, out_tree, no_kwargs=no_kwargs)


def _read(path: pathlib.Path) -> dict | None:
    """The entry at `path` as stored (its program and the trees of its arguments and outputs
    still serialized, so reading it imports nothing), with the LAPACK kernels it calls
    readied; None where it cannot be read."""
    try:
        entry = pickle.loads(path.read_bytes())
        if any(t.startswith("lapack_") for t in entry["targets"]):
            _initialize_lapack()
        entry["executable"], entry["trees"]  # noqa: B018 - missing: an unreadable entry
        return entry
    except Exception:  # noqa: BLE001 - any unreadable entry is compiled again
        return None


def _initialize_lapack() -> None:
    """jaxlib points its LAPACK kernels at SciPy's LAPACK when a program using them is first
    lowered; a program loaded from the store is not, and would call null pointers (a
    segmentation fault, seen with MJX's Cholesky solves). Lowering a 1x1 Cholesky does it."""
    if jax.default_backend() == "cpu":
        jax.jit(jnp.linalg.cholesky).lower(jax.ShapeDtypeStruct((1, 1), jnp.float32))


class _Guarded:
    """A loaded program whose first call is waited for: while it runs, a `running` file names
    this machine and process, and a later process that finds it with that process gone (it
    died in the call, e.g. of a crash inside XLA) marks the entry `failed` and compiles its
    own (`_died_running`). A first call that raises marks it too, but for running out of
    device memory (RESOURCE_EXHAUSTED), which says nothing of the entry. The file is made at the
    call, not at the load: a process that ends between the two (Ctrl-C while its first state
    is built, an error in the run's set-up) did not die running the program."""

    def __init__(
        self, compiled: Any, running: pathlib.Path, failed: pathlib.Path, prefetched: bool = False
    ):
        self._compiled, self._running, self._failed = compiled, running, failed
        self.prefetched = prefetched  # loaded by `prefetch`'s thread

    def __call__(self, *args):
        if self._running is None:
            return self._compiled(*args)
        try:
            _touch(self._running)
            out = jax.block_until_ready(self._compiled(*args))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:
            # Out of device memory (another process holds it, a larger batch beside) is no
            # fault of the entry: a program compiled afresh would fail alike, and one that
            # then fits should load again.
            if "RESOURCE_EXHAUSTED" not in str(error):
                _touch(self._failed)
            raise
        finally:
            self._running.unlink(missing_ok=True)
            self._running = None
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


CACHE_HIT = "/jax/compilation_cache/cache_hits"  # the event JAX records on a persistent-cache hit


# `_serialize` swaps a class of jax's for a moment: the lock keeps two threads' swaps apart.
_PATCHING = threading.Lock()
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # XLA compiled, or the cache gave

# What `_compile_watching_cache` sees, per thread: two programs may compile at once (the chunk
# on a thread of its own beside the initial state's programs: `runner.EarlyChunk`), and each
# must see only its own compile's events and cache bytes. So the listeners and the wrapper of
# the cache's unpacking are installed once per process (`_watch`), and record only into the
# calling thread's `_WATCHED.seen`, set while that thread compiles.
_WATCHED = threading.local()
_INSTALLING = threading.Lock()
_WATCH_INSTALLED: list[bool] = []


def _watch() -> None:
    """Installs, once per process, jax.monitoring listeners and a wrapper of the persistent
    cache's `extract_executable_and_time` (jax 0.10's private module) that record into the
    calling thread's `_WATCHED.seen` while it is set (`_compile_watching_cache`)."""
    with _INSTALLING:
        if _WATCH_INSTALLED:
            return
        try:
            from jax._src import compilation_cache
        except ImportError:
            compilation_cache = None
        extract = getattr(compilation_cache, "extract_executable_and_time", None)

        def listen(event: str, **_: Any) -> None:
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None and event == CACHE_HIT:
                seen["hits"].append(event)

        def listen_durations(event: str, *_: Any, **__: Any) -> None:
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None and event == BACKEND_COMPILE:
                seen["compiles"].append(event)

        def reading(entry: bytes) -> Any:
            out = extract(entry)
            seen = getattr(_WATCHED, "seen", None)
            if seen is not None:
                seen["unpacked"].append(out[0])
            return out

        jax.monitoring.register_event_listener(listen)
        jax.monitoring.register_event_duration_secs_listener(listen_durations)
        if extract is not None:
            compilation_cache.extract_executable_and_time = reading
        _WATCH_INSTALLED.append(True)


def _compile_watching_cache(compile: Callable[[], Any]) -> tuple[Any, str, bytes | None]:
    """(`compile()`, where the program came from, and if from JAX's persistent cache the
    serialized executable its entry holds, as the compiling process wrote it; None where that
    cannot be had). Where: "xla" (compiled now), "cache" (JAX's persistent cache) or "memory"
    (jax's in-process cache of a program compiled earlier in this process, which records no
    compile: it may have come from the persistent cache then, so it is not stored).

    The bytes are read where JAX's cache unpacks an entry (`compilation_cache.
    extract_executable_and_time`, jax 0.10's private module): jax offers no public way to them,
    and without them a program the cache gave could never be stored. Where jax no longer has
    that function, the program is just not stored. Only this thread's compile is seen
    (`_watch`): jax records a compile's events, and unpacks its cache entry, on the thread
    that compiles."""
    _watch()
    seen = {"hits": [], "compiles": [], "unpacked": []}
    _WATCHED.seen = seen
    try:
        compiled = compile()
    finally:
        _WATCHED.seen = None
    hits, compiles, unpacked = seen["hits"], seen["compiles"], seen["unpacked"]
    source = "cache" if hits else "xla" if compiles else "memory"
    cached = unpacked[0] if hits and len(unpacked) == 1 else None
    return compiled, source, cached


def _serialize(compiled: Any, cached: bytes | None) -> tuple:
    """`serialize_executable.serialize(compiled)`, its executable written as `cached` where
    given (the bytes JAX's cache held for it: `_compile_watching_cache`). Its pickler's
    class is swapped for one that writes those bytes, the rest of `serialize` kept; a jax
    without that class raises, and the program is not stored."""
    if cached is None:
        return serialize_executable.serialize(compiled)
    from jax._src.lib import xla_client

    base = serialize_executable._JaxPjrtPickler
    written = []

    class CachedBytes(base):
        def persistent_id(self, obj: Any) -> Any:
            if isinstance(obj, xla_client.LoadedExecutable):
                written.append(obj)
                return ("exec", cached)
            return super().persistent_id(obj)

    serialize_executable._JaxPjrtPickler = CachedBytes
    try:
        out = serialize_executable.serialize(compiled)
    finally:
        serialize_executable._JaxPjrtPickler = base
    if len(written) != 1:  # the executable was not where this jax keeps it: not stored
        raise ValueError("the cached bytes did not replace exactly one executable")
    return out
