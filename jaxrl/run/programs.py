"""A store of compiled programs, so that a re-run skips tracing as well as compiling (issue 39).

JAX's persistent compilation cache keys a program on its lowered text, so a cache hit still
pays for tracing the program and lowering it: for an MJX preset on CPU, tens of seconds before
the cache is even asked. This store keys a program instead on everything that goes into its
trace, and keeps the compiled executable (`jax.experimental.serialize_executable`): a hit loads
it without tracing, lowering or asking XLA.

What goes into the key (`identity`, then `program_key.key` per program; `jaxrl.run.program_key`
computes each part):
- the run's config and the agent's, less the fields that are data in the program's state
  (`TrainConfig.ARRAY_FIELDS` and the agent config's: learning rates, tau, gamma, noise
  scales, ...), the seed (the state's key) and, for loops whose chunk never reads it, the step
  count (`FREE_FIELDS`);
- the source of jaxrl (its envs included), of a user's `--env-imports` modules, agent config
  and env (its classes' modules, a registered env's factory's), and of any of flax, optax,
  chex, brax, MuJoCo and Playground that is not an installed release (`program_key.sources`);
  releases by their versions;
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
(`last-early-...`), from which that command starts the load as soon as it has parsed its
flags (`prefetch_early`). An entry keeps the executable's bytes apart from the trees of its
arguments and outputs, so a thread can load the one while the main thread imports the modules
the other names. Entries are made and read by `jaxrl.run.executables`, the part that reaches
into jax's private modules.

Written here rather than taken from a library: JAX's own cache is the library, and its key is
the lowered program, which is what a re-run should not have to build."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import pickle
import re
import socket
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxrl.files import write_atomically
from jaxrl.run import background, executables, program_key

STORE_VERSION = 2  # 2: the executable's bytes and its trees apart (`executables.read`)
FOLDER = "jaxrl-programs"


def folder() -> pathlib.Path | None:
    """The store's folder, or None where it is off: JAX's compilation cache is off, it has no
    folder, or JAXRL_PROGRAM_STORE=0."""
    if os.environ.get("JAXRL_PROGRAM_STORE", "1") == "0":
        return None
    if not jax.config.jax_enable_compilation_cache:
        return None
    base = jax.config.jax_compilation_cache_dir
    return pathlib.Path(base) / FOLDER if base else None


def identity(trainer: Any, agent_config: Any) -> str | None:
    """The part of every program's key that comes from the run (see the module's docstring);
    None where the store is not used for it: it is off, the run has more than one device or
    process, its chunk is several programs (an actor/learner split), or its env's code has no
    file to key it by (`program_key.sources`)."""
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
        "versions": program_key.versions(),
        "jax_config": program_key.jax_config(),
        "environment": {k: os.environ.get(k, "") for k in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")},
        "device": [jax.default_backend(), device.platform, device.device_kind],
        "settings": program_key.settings(trainer.config, trainer.agent.on_policy, agent_config),
        "sources": program_key.sources(trainer.config, agent_config, trainer.env),
    }
    if parts["sources"] is None:
        return noted(None, "run", "off: an env or config module has no file to key it by")
    return program_key.digest(parts)


class Store(NamedTuple):
    """The store of compiled programs as one run sees it: what the run layer compiles through
    (`chunks`, `state`; the runner sees it only inside the Plan's `chunks.Chunks`). `program_id`:
    the run's part of its programs' keys (`identity`), or None (`NONE`): nothing is stored or
    loaded, every program compiles. The module's functions of the same names, bound to it."""

    program_id: str | None = None

    @property
    def keeps(self) -> bool:
        """Whether the run's programs are stored (and a re-run's loaded)."""
        return self.program_id is not None

    def load_or_compile(self, kind: str, args: tuple, lower: Callable, compile: Callable) -> Any:
        return load_or_compile(self.program_id, kind, args, lower, compile)

    def stored(self, kind: str, args: tuple) -> bool:
        return stored(self.program_id, kind, args)

    def prefetch(self, kind: str) -> None:
        prefetch(self.program_id, kind)

    def prefetching(self, kind: str) -> bool:
        return prefetching(self.program_id, kind)

    def drop_prefetched(self, kind: str) -> None:
        drop_prefetched(self.program_id, kind)


NONE = Store()


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
    sources = program_key.sources(config, None, env)
    if sources is None or "observation_size" in vars(env):
        return
    parts = {"store": STORE_VERSION, "versions": program_key.versions(), "sources": sources,
             "env": config.env, "options": config.env_options}  # fmt: skip
    path = where / f"observation_size-{program_key.digest(parts)}.pkl"
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
    (`executables.compile_watching_cache`): XLA:CPU re-serialises an executable it loaded
    without its code. What is not stored: such a program where those bytes cannot be had (a
    jax whose cache module differs), one calling into a library other than LAPACK (its kernels
    may be registered only as a program using them is lowered, which a loaded one is not),
    and any entry that failed before (`_Guarded`). An entry that cannot be read is compiled
    again and replaced."""
    where = folder()
    if program_id is None or where is None:
        return compile(lower())
    path = where / program_key.key(program_id, kind, args)
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
            loaded = executables.load(path)
        if loaded is not None:
            _remember(program_id, kind, path)
            note(kind, "loaded", prefetched=prefetched)
            return _Guarded(loaded, running, failed, prefetched)
    lowered = lower()
    compiled, source, cached = executables.compile_watching_cache(lambda: compile(lowered))
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
        executable, in_tree, out_tree = executables.serialize(compiled, cached)
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
    return folder() / f"last-{kind}-{program_key.digest({'id': program_id, 'kind': kind})[:40]}"


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
        self._thread = background.start("jaxrl-prefetch", self._load, entry)

    def _load(self, entry: dict) -> None:
        self._executable = executables.rebuild(entry)

    def take(self) -> Any:
        """The loaded program, once its thread is done; None where it could not be loaded
        (then loaded again, or compiled, by `load_or_compile`)."""
        self._thread.join()
        return executables.finish(self._entry, self._executable)


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
    entry = executables.read(path)
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
    path = where / program_key.key(program_id, kind, args)
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
    return program_key.digest(
        {"argv": kept, "jax": jax.__version__, "host": socket.gethostname(), **seen}
    )


def _early_hint(early: str) -> pathlib.Path:
    return default_cache_dir() / FOLDER / f"last-early-{early[:40]}"


def prefetch_early(argv: list[str]) -> None:
    """Called by `jaxrl train` once it has parsed its command line: starts loading the chunk
    program that the last process of the same command line (`early_id`: another seed or
    folder counts as the same) ran, on a thread of its own, while the main thread imports
    the simulator, checks the configs and builds the trainer (about 1 s on this CPU, ahead of
    the run's own `prefetch`). A guess only: the run's `prefetch` keeps the load where its own
    hint names the same entry, and drops it where not. Either way the loaded program is
    still `load_or_compile`'s to check against the run's key."""
    early = early_id(argv)
    _EARLY["id"], _EARLY["load"] = early, None
    if early is None:
        return
    hint = _early_hint(early)
    path = _named(hint, "chunk") or _named(hint, "chunk-vmapped")
    entry = (
        None if path is None else executables.read(path)
    )  # bytes only: quick, and imports nothing
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


def loaded(program: Any) -> bool:
    """Whether `program` (`load_or_compile`'s) was loaded from the store, not compiled."""
    return isinstance(program, _Guarded)


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
