"""The store of compiled programs (`jaxrl.run.programs`, issue 39): a re-run that changes only
settings that are data in the program (learning rates, tau, gamma, ...), the seed or (off
policy) the step count loads the first run's chunk and reset programs without tracing them,
and trains as a run without the store would; a run that changes anything else compiles its
own. The suite runs with the store off (tests/conftest.py); these tests turn it on over a
folder of their own."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import types

import jax
import numpy as np
import pytest

from jaxrl import agents, envs
from jaxrl.config import TrainConfig
from jaxrl.errors import ConfigError
from jaxrl.loops import make_train
from jaxrl.run import background, chunks, driver, executables, program_key, programs
from jaxrl.run import state as state_module
from jaxrl.run.chunks import compile_chunk
from jaxrl.run.rows import learning_metrics
from jaxrl.run.state import initial_state
from tests import codegen, tiny


@pytest.fixture(scope="session")
def jax_cache(tmp_path_factory) -> pathlib.Path:
    """One folder of JAX's persistent cache for this worker's store tests."""
    return tmp_path_factory.mktemp("jax-cache")


@pytest.fixture
def store(tmp_path, monkeypatch, jax_cache):
    """The store on, over tmp_path/store; `compiles` counts the programs XLA is asked for.

    JAX's persistent cache is on over one folder for these tests (`driver.train`'s default
    turns it on; its folder moved here): the tests run the same tiny programs again and again,
    and a program it gives is stored from its entry's bytes (`executables.serialize`). The first
    test of a worker's session compiles with XLA and stores what XLA gave; tests/
    test_compile_cache.py and benchmarks/rerun.py's test check both sources in new processes.
    JAX decides once per process whether it uses its cache: reset_cache makes it decide again."""
    folder = tmp_path / "store"
    monkeypatch.setattr(programs, "folder", lambda: folder)
    monkeypatch.setattr(driver, "DEFAULT_CACHE_DIR", jax_cache)
    from jax._src import compilation_cache

    was = jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir
    compilation_cache.reset_cache()
    compiles = []
    real = jax.stages.Lowered.compile

    def counting(self, *args, **kwargs):
        compiles.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Lowered, "compile", counting)
    yield folder, compiles
    jax.config.update("jax_enable_compilation_cache", was[0])
    jax.config.update("jax_compilation_cache_dir", was[1])
    compilation_cache.reset_cache()


# The step-0 evaluation (`RunOptions.eval_at_start`), loaded on the main thread where stored.
EVAL = ("start-evaluation", False)


def _train(config, agent_config):
    return learning_metrics(driver.train(config, agent_config, progress=None).history)


def test_a_rerun_with_other_data_seed_and_steps_loads_its_programs_and_trains_the_same(
    store, monkeypatch
):
    folder, compiles = store
    lines = []
    driver.train(tiny.off_policy(), tiny.SAC, progress=lines.append)
    assert lines[0].endswith("compiling (a re-run of these settings loads the stored program)")
    # The reset, the rest of the first state, the step-0 evaluation, the chunk.
    assert len(compiles) == 4
    assert sorted(p.name.split("-")[0] for p in folder.iterdir() if not _hint(p)) == [
        "chunk",
        "reset",
        "start",
    ]

    changed = tiny.off_policy(seed=3, gamma=0.95, total_steps=384)
    changed_agent = dataclasses.replace(tiny.SAC, actor_lr=1e-3, tau=0.02, init_alpha=0.5)
    compiles.clear()
    lines.clear()
    result = driver.train(changed, changed_agent, progress=lines.append)
    rows = learning_metrics(result.history)
    assert len(compiles) == 1, "the re-run traced and compiled its chunk or reset again"
    assert len(rows) == 3
    # Its progress says so: loading, then loaded (not "compiling", "compiled").
    name = "[sac classic/pendulum]"
    assert lines[0] == f"{name} loading the program an earlier run stored"
    assert lines[1].startswith(f"{name} step 0, untrained | eval ")
    assert lines[2].startswith(f"{name} loaded in ")

    monkeypatch.setattr(programs, "folder", lambda: None)  # the same run, nothing stored
    assert rows == _train(changed, changed_agent)


@pytest.mark.parametrize(
    "run, agent_config",
    [
        (tiny.off_policy(batch_size=8), tiny.SAC),  # the program's shapes stay the same
        (tiny.off_policy(), dataclasses.replace(tiny.SAC, temperature_loss="alpha")),
        (tiny.off_policy(num_envs=8, eval_envs=2), tiny.SAC),
        # Fewer steps, so fewer iterations per chunk (25 instead of 32): another loop length.
        (tiny.off_policy(total_steps=200), tiny.SAC),
    ],
    ids=["batch-size", "agent-setting", "env-count", "chunk-length"],
)
def test_a_run_that_changes_the_program_compiles_its_own(store, run, agent_config, monkeypatch):
    folder, compiles = store
    _train(tiny.off_policy(), tiny.SAC)
    compiles.clear()
    rows = _train(run, agent_config)
    assert len(compiles) >= 2, "a stored program of other settings was loaded"
    monkeypatch.setattr(programs, "folder", lambda: None)
    assert rows == _train(run, agent_config)


def test_an_unreadable_entry_is_compiled_again_and_replaced(store):
    folder, compiles = store
    rows = _train(tiny.off_policy(), tiny.SAC)
    for entry in folder.iterdir():
        entry.write_bytes(b"not a program")
    compiles.clear()
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    assert len(compiles) == 4
    assert all(entry.stat().st_size > 1000 for entry in folder.iterdir() if not _hint(entry))


def _hint(path: pathlib.Path) -> bool:
    """Whether `path` is a hint naming a run's last entry of a kind (`programs._last`)."""
    return path.name.startswith("last-")


def _watch_loads(monkeypatch) -> tuple[list, list]:
    """From now on: (kind, whether `programs.prefetch`'s thread loaded it; None where it was
    compiled) of every program `load_or_compile` gives, and in order, each `prefetch` of a
    kind, each ask of `load_or_compile` for a kind and each deserialization (XLA's half of
    it, `executables.rebuild`), by its thread."""
    given, events = [], []
    load, prefetch = programs.load_or_compile, programs.prefetch
    deserialize = executables.rebuild

    def watching(program_id, kind, *args, **kwargs):
        events.append(("ask", kind))
        out = load(program_id, kind, *args, **kwargs)
        given.append((kind, getattr(out, "prefetched", None)))
        return out

    def prefetching(program_id, kind):
        events.append(("prefetch", kind))
        return prefetch(program_id, kind)

    def deserializing(*args, **kwargs):
        events.append(("deserialize", threading.current_thread().name))
        return deserialize(*args, **kwargs)

    monkeypatch.setattr(programs, "load_or_compile", watching)
    monkeypatch.setattr(programs, "prefetch", prefetching)
    monkeypatch.setattr(executables, "rebuild", deserializing)
    return given, events


def _on_prefetch_thread(events: list) -> int:
    return events.count(("deserialize", "jaxrl-prefetch"))


def test_a_rerun_loads_the_chunk_it_last_used_beside_building_its_first_state(store, monkeypatch):
    """`programs.prefetch`: the chunk a run of these settings last stored or loaded (a hint
    file names it) starts loading on a thread of its own before the first state is built (the
    reset asked for); the run takes it and trains as a run without the store."""
    rows = _train(tiny.off_policy(), tiny.SAC)
    given, events = _watch_loads(monkeypatch)
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    # The step-0 evaluation loads on the main thread while the chunk loads on its own.
    assert given == [("reset", False), ("start-evaluation", False), ("chunk", True)]
    asks = [e for e in events if e[0] in ("prefetch", "ask")]
    assert asks == [
        ("prefetch", "chunk"),
        ("ask", "reset"),
        ("ask", "start-evaluation"),
        ("ask", "chunk"),
    ]
    assert _on_prefetch_thread(events) == 1  # the chunk; the reset and evaluation on the main
    assert events.count(("deserialize", "MainThread")) == 2
    assert not programs._PREFETCHED


def test_a_prefetched_chunk_of_other_shapes_is_dropped_and_the_hint_follows_the_run(
    store, monkeypatch
):
    """A run whose chunk has other shapes under the same settings (a grid of 2 seeds after one
    of 3: the seed count is not in the settings' key) drops the prefetched program and loads
    its own, which the hint then names for the next run."""

    def grid(seeds: int) -> list:
        run = driver.train(tiny.off_policy(), tiny.SAC, progress=None, seeds=seeds)
        return learning_metrics(run.history)

    two = grid(2)
    grid(3)
    given, _ = _watch_loads(monkeypatch)
    assert grid(2) == two  # the prefetched program was of 3 seeds' shapes
    evaluation = ("start-evaluation-vmapped", False)  # loaded on the main thread
    assert given == [("reset-vmapped", False), evaluation, ("chunk-vmapped", False)]
    given.clear()
    assert grid(2) == two
    assert given == [("reset-vmapped", False), evaluation, ("chunk-vmapped", True)]


def test_nothing_is_prefetched_from_a_bad_hint_or_a_failed_entry_nor_kept_unasked(
    store, monkeypatch, tmp_path
):
    """A hint that is not text, or names an entry of another kind, loads nothing; nor does one
    naming an entry whose first call raised (`.failed`: compiled from then on). A run that ends
    before asking for its chunk (a resume of a complete run) drops what it prefetched."""
    folder, compiles = store
    rows = _train(tiny.off_policy(), tiny.SAC)
    (hint,) = folder.glob("last-chunk-*")
    (reset,) = folder.glob("reset-*")
    given, events = _watch_loads(monkeypatch)
    for text in (b"\xff\xfe not text", reset.name.encode()):
        hint.write_bytes(text)
        given.clear(), events.clear()
        assert _train(tiny.off_policy(), tiny.SAC) == rows
        assert given == [("reset", False), EVAL, ("chunk", False)] and not _on_prefetch_thread(
            events
        )
    (chunk,) = folder.glob("chunk-*")
    chunk.with_suffix(".failed").touch()
    given.clear(), events.clear()
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    # The chunk compiles on a thread of its own (`EarlyChunk`), beside the evaluation's load.
    assert sorted(given) == sorted([("reset", False), EVAL, ("chunk", None)])
    assert not _on_prefetch_thread(events)

    chunk.with_suffix(".failed").unlink()
    out = tmp_path / "run"
    driver.train(tiny.off_policy(), tiny.SAC, out, progress=None)
    events.clear()
    with pytest.raises(driver.ResumeError, match="complete"):
        driver.resume(out, progress=None)
    assert _on_prefetch_thread(events) == 1 and not programs._PREFETCHED


def _early(monkeypatch, folder: pathlib.Path) -> None:
    """`programs.prefetch_early` on (tests/conftest.py turns the store off), its hints in the
    store's folder."""
    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "1")
    monkeypatch.delenv("JAXRL_COMPILE_CACHE", raising=False)
    monkeypatch.setattr(programs, "default_cache_dir", lambda: folder.parent)
    monkeypatch.setattr(programs, "FOLDER", folder.name)
    monkeypatch.setattr(programs, "_EARLY", {"id": None, "load": None})


COMMAND = ["--preset", "sac_pendulum", "--num-envs", "4"]  # a command line: only its id counts


def test_the_early_id_leaves_out_the_seed_the_folder_and_quiet_only(monkeypatch):
    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "1")
    monkeypatch.delenv("JAXRL_COMPILE_CACHE", raising=False)
    same = programs.early_id(COMMAND)
    assert same == programs.early_id([*COMMAND, "--seed", "4", "--out=runs/x", "--quiet"])
    assert same == programs.early_id(["--seed=9", *COMMAND, "--out", "runs/y"])
    for other in (["--num-envs", "8"], ["--seeds", "3"], ["--actor-lr", "1e-3"]):
        assert programs.early_id([*COMMAND, *other]) not in (same, None)
    never = (["--resume", "x"], ["--no-compile-cache"], ["--coordinator=h:1"], ["--help"])
    assert all(programs.early_id([*COMMAND, *flags]) is None for flags in never)
    monkeypatch.setattr(programs.socket, "gethostname", lambda: "another-machine")
    assert programs.early_id(COMMAND) not in (same, None)
    monkeypatch.setenv("JAXRL_COORDINATOR", "host:1234")  # several processes
    assert programs.early_id(COMMAND) is None
    monkeypatch.delenv("JAXRL_COORDINATOR")
    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "0")
    assert programs.early_id(COMMAND) is None


def test_a_rerun_of_the_command_line_with_another_seed_loads_its_chunk_before_parsing_it(
    store, monkeypatch
):
    """`programs.prefetch_early` (what `jaxrl train` calls first): the chunk that the last
    run of the same command line, less --seed, --out and --quiet, ran starts loading on a
    thread before the configs are even built; the run's own `prefetch` takes that load, and
    the run trains as one without the store."""
    folder, _ = store
    _early(monkeypatch, folder)
    programs.prefetch_early([*COMMAND, "--seed", "0"])
    assert programs._EARLY["load"] is None  # nothing stored yet
    rows = _train(tiny.off_policy(), tiny.SAC)
    (chunk,) = folder.glob("chunk-*")
    given, events = _watch_loads(monkeypatch)
    programs.prefetch_early([*COMMAND, "--seed", "3", "--out", "runs/3", "--quiet"])
    assert programs._EARLY["load"].path == chunk
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    assert given == [("reset", False), ("start-evaluation", False), ("chunk", True)]
    assert _on_prefetch_thread(events) == 1 and not programs._PREFETCHED
    assert programs._EARLY == {"id": None, "load": None}
    programs.prefetch_early([*COMMAND, "--num-envs", "8"])  # another command line
    assert programs._EARLY["load"] is None


def test_an_early_load_of_another_runs_chunk_is_dropped_and_the_hint_follows_the_last_run(
    store, monkeypatch
):
    """The command line is a guess: where the same one last ran another program (its env's
    code or an imported module changed), the run's own `prefetch` drops the early load and
    starts its own, and the command line's hint then names this run's chunk."""
    folder, _ = store
    _early(monkeypatch, folder)
    wide = tiny.off_policy(batch_size=32)
    programs.prefetch_early(COMMAND)
    rows = _train(tiny.off_policy(), tiny.SAC)
    programs.prefetch_early(COMMAND)
    assert _train(wide, tiny.SAC) != rows  # a program of its own, compiled
    (hint,) = folder.glob("last-early-*")
    stored = {path.name for path in folder.glob("chunk-*")}
    assert len(stored) == 2
    given, events = _watch_loads(monkeypatch)
    programs.prefetch_early(COMMAND)
    early = programs._EARLY["load"].path.name
    assert early == hint.read_text()
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    assert given == [("reset", False), EVAL, ("chunk", True)]  # its own, by its own prefetch
    assert _on_prefetch_thread(events) == 2  # the early load too, dropped
    assert hint.read_text() != early and hint.read_text() in stored


def test_jaxrl_train_parses_its_command_line_before_it_starts_the_early_load(monkeypatch):
    """`jaxrl train` parses its command line first (no JAX, no simulator imported), so a bad
    flag stops it before any load starts; the early load then starts before the env's name is
    checked (which imports the simulator) and the configs are built."""
    import subprocess
    import sys

    from jaxrl import cli
    from jaxrl.config import resolve

    bare = "from jaxrl.config import resolve; import sys; resolve.parse(['--preset', 'sac_dmc'])"
    bare += "; print(sorted({'jax', 'brax', 'mujoco'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # the parse imports no JAX and no simulator
    calls = []
    monkeypatch.setattr(programs, "prefetch_early", lambda argv: calls.append(("early", argv)))
    parse = resolve.parse

    def parsing(argv):
        calls.append(("parse", argv))
        return parse(argv)

    def configs_of(parsed):
        calls.append(("configs", None))
        raise ConfigError("stopped here")

    monkeypatch.setattr(resolve, "parse", parsing)
    monkeypatch.setattr(resolve, "configs_of", configs_of)
    argv = ["--preset", "sac_pendulum", "--seed", "2"]
    assert cli.main(["train", *argv]) == 2
    assert calls == [("parse", argv), ("early", argv), ("configs", None)]
    calls.clear()
    assert cli.main(["train", *argv, "--no-such-flag", "1"]) == 2  # tyro's exit: no load
    assert calls == [("parse", [*argv, "--no-such-flag", "1"])]


def test_a_command_that_stops_before_taking_its_early_load_exits_without_waiting(monkeypatch):
    """`cli._ended`: a `jaxrl` process whose command stopped (bad input, Ctrl-C) while the
    chunk `prefetch_early` started is still loading ends at once, with its code, instead of
    waiting for that load; a finished load, or `cli.main` called in-process, never; nor a
    command that succeeded (a resume with nothing left to train drops its own load unfinished:
    Python's shutdown waits for it, and runs its exit hooks)."""
    from jaxrl import cli

    release = threading.Event()
    load = background.start("jaxrl-prefetch", release.wait)  # as `programs._Prefetch` starts it
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    try:
        assert cli._ended(2, whole_process=False) == 2 and exits == []
        assert cli._ended(0, whole_process=True) == 0 and exits == []
        cli._ended(2, whole_process=True)
        assert exits == [2]
    finally:
        release.set()
        load.join()
    assert cli._ended(2, whole_process=True) == 2 and exits == [2]


@pytest.mark.parametrize("half", ["rebuild", "_compiled"])
def test_where_jaxs_private_loading_differs_the_program_loads_the_public_way(
    store, monkeypatch, half
):
    """The store splits `deserialize_and_load` in two with jax 0.10's private pieces (its
    unpickler, on the prefetch thread, and `Compiled`'s constructor); where a jax's differ,
    either half failing, the program still loads whole through the public function and the
    run trains as without the store."""
    rows = _train(tiny.off_policy(), tiny.SAC)
    given, _ = _watch_loads(monkeypatch)
    public = []
    load = executables.serialize_executable.deserialize_and_load

    def loading(*args, **kwargs):
        public.append(threading.current_thread().name)
        return load(*args, **kwargs)

    def differs(*args, **kwargs):
        if half == "_compiled":
            raise TypeError("Compiled.__init__() takes other arguments")
        return None  # rebuild's answer where the unpickler differs

    monkeypatch.setattr(executables.serialize_executable, "deserialize_and_load", loading)
    monkeypatch.setattr(executables, half, differs)
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    assert given == [("reset", False), EVAL, ("chunk", True)]
    assert public == ["MainThread"] * 3  # the reset's, the step-0 evaluation's, the chunk's


def test_an_early_load_is_dropped_by_a_split_run_and_a_failed_command_forgets_its_id(
    monkeypatch, tmp_path
):
    """An actor/learner split compiles its own programs: it drops what `prefetch_early`
    started. A `jaxrl train` that fails on its flags (a value tyro rejects, an unknown flag)
    starts no load; one that fails after (an unknown env) forgets its command line's id, so a
    later run in the process is not written under it. Each passes its exit code through
    `cli._ended` (which ends a process of its own at once while a load runs)."""
    from jaxrl import cli
    from jaxrl.run.chunks import readying

    load = types.SimpleNamespace(path=tmp_path / "chunk-x")
    monkeypatch.setattr(programs, "_EARLY", {"id": "command", "load": load})
    split = types.SimpleNamespace(compile_chunk=object())
    with readying(split, None, None, programs.NONE):
        assert programs._EARLY == {"id": None, "load": None}

    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "1")
    monkeypatch.delenv("JAXRL_COMPILE_CACHE", raising=False)
    monkeypatch.setattr(programs, "default_cache_dir", lambda: tmp_path)
    ended = []
    monkeypatch.setattr(cli, "_ended", lambda code, whole: ended.append(code) or code)
    with pytest.raises(SystemExit) as stop:  # a value tyro rejects: its own exit
        cli.main(["train", *COMMAND, "--num-envs", "many"])
    assert stop.value.code == 2 and ended == [2]
    assert programs._EARLY["id"] is None
    # An unknown flag is jaxrl's own error, before tyro and before any load: exit code 2.
    assert cli.main(["train", *COMMAND, "--no-such-flag"]) == 2 and ended == [2, 2]
    assert programs._EARLY == {"id": None, "load": None}
    # A command that fails once its load has started (an unknown env, checked after the
    # parse) forgets its command line's id too.
    started = []
    monkeypatch.setattr(programs, "_EARLY_IDS", {})
    real = programs.prefetch_early
    monkeypatch.setattr(programs, "prefetch_early", lambda argv: started.append(real(argv)))
    assert cli.main(["train", *COMMAND, "--env", "playground/NoSuchTask"]) == 2
    assert started == [None] and ended == [2, 2, 2] and programs._EARLY["id"] is None


def test_no_program_is_stored_for_an_env_object_or_with_the_store_off(store, monkeypatch):
    folder, _ = store
    from jaxrl import envs

    log = folder.parent / "store.jsonl"
    monkeypatch.setenv("JAXRL_PROGRAM_STORE_LOG", str(log))
    driver.train(
        tiny.off_policy(),
        tiny.SAC,
        progress=None,
        env=envs.make("classic/pendulum"),
    )
    assert not folder.exists()
    (note,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert note == {
        "kind": "run",
        "outcome": "off: an env, randomization or networks of the caller's",
    }
    monkeypatch.undo()
    monkeypatch.setenv("JAXRL_PROGRAM_STORE", "0")
    assert programs.folder() is None


def _lowered(config: TrainConfig, agent_config) -> tuple[str, str, str]:
    """The chunk's and the reset's lowered text, and the key part of the chunk's state."""
    trainer = make_train(config, agents.get(config.algo).make(agent_config))
    key = jax.random.PRNGKey(config.seed)
    state = jax.eval_shape(trainer.init, key)
    chunk = jax.jit(trainer.chunk).lower(state).as_text()
    reset = jax.jit(trainer.reset).lower(key).as_text()
    return chunk, reset, program_key.key("", "chunk", (state,))


def _keyless(config, agent_config, zeros: bool = False) -> tuple[TrainConfig, object, set[str]]:
    """`config` and `agent_config` with every field the store's key leaves out changed (floats
    times 0.9, integers plus one, the step count doubled), and those fields' names. A float
    at zero is left (a zero can switch a mechanism off: AdamW's decay); with `zeros`, only
    those are changed, to 0.01."""
    loop = "on-policy" if agents.get(config.algo).on_policy else "off-policy"
    changed = {}
    for obj in (config, agent_config):
        fields = set(type(obj).ARRAY_FIELDS)
        if isinstance(obj, TrainConfig):
            fields |= set(program_key.FREE_FIELDS[loop])
        new = {}
        for name in fields:
            value = getattr(obj, name)
            if isinstance(value, bool) or value is None:
                continue
            if zeros != (isinstance(value, float) and value == 0.0):
                continue
            if name == "total_steps":
                new[name] = 2 * value
            elif isinstance(value, float):
                new[name] = 0.9 * value if value else 0.01
            elif isinstance(value, int):
                new[name] = value + 1
        changed[id(obj)] = new
    return (
        dataclasses.replace(config, **changed[id(config)]),
        dataclasses.replace(agent_config, **changed[id(agent_config)]),
        set(changed[id(config)]) | set(changed[id(agent_config)]),
    )


@pytest.mark.parametrize("algo", ["sac", "td3", "ppo"])
def test_what_the_key_leaves_out_never_changes_a_stored_program(algo):
    """The store's key omits the data fields, the seed and (off policy) the step count: each
    changed at once must leave the chunk and the reset programs as they were."""
    # PPO with a schedule that reads the step count: its key keeps it (FREE_FIELDS).
    schedule = {"lr_schedule": "linear"} if algo == "ppo" else {}
    config, agent_config = tiny.run(algo), tiny.agent(algo, **schedule)
    other, other_agent, fields = _keyless(config, agent_config)
    assert {"seed", "gamma"} <= fields and fields & {"actor_lr", "learning_rate"}
    assert ("total_steps" in fields) != agents.get(algo).on_policy
    base = _lowered(config, agent_config)
    assert _lowered(other, other_agent) == base
    # A zero made nonzero may change the program only with the state's structure, which the
    # key holds (TD3's weight_decay: Adam becomes AdamW, its state gains the decay).
    other, other_agent, _ = _keyless(config, agent_config, zeros=True)
    chunk, reset, key = _lowered(other, other_agent)
    assert reset == base[1]
    assert key != base[2] or chunk == base[0]


def test_the_step_count_shapes_the_on_policy_chunk_so_stays_in_its_key():
    """Why FREE_FIELDS leaves the step count in PPO's key: its learning-rate schedule reads
    it."""
    config, linear = tiny.on_policy(), dataclasses.replace(tiny.PPO, lr_schedule="linear")
    longer = dataclasses.replace(config, total_steps=2 * config.total_steps)
    assert _lowered(longer, linear)[0] != _lowered(config, linear)[0]


def test_the_key_follows_the_source_of_the_users_env_modules(tmp_path, monkeypatch):
    """A user's module in the key, and the code it imports: the modules loaded from its folder
    (a script's helpers), every file of its package, and the same for a module installed in a
    site-packages folder (no version of it is in the key, so its source is)."""
    module = tmp_path / "store_probe_module.py"
    module.write_text("import store_probe_helper\n\nSCALE = 1.0\n")
    helper = tmp_path / "store_probe_helper.py"
    helper.write_text("REWARD = 1.0\n")
    package = tmp_path / "store_probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tasks.py").write_text("from store_probe_pkg import rewards\n")
    rewards = package / "rewards.py"
    rewards.write_text("REWARD = 1.0\n")
    installed = tmp_path / "site-packages"
    installed.mkdir()
    lab = installed / "store_probe_lab.py"
    lab.write_text("REWARD = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(installed))
    names = ("store_probe_module", "store_probe_helper", "store_probe_pkg",
             "store_probe_pkg.tasks", "store_probe_pkg.rewards", "store_probe_lab")  # fmt: skip
    try:
        for imports, edited in (
            ("store_probe_module", module),
            ("store_probe_module", helper),
            ("store_probe_pkg.tasks", rewards),
            ("store_probe_lab", lab),
        ):
            importlib.import_module(imports)
            config = dataclasses.replace(tiny.off_policy(), env_imports=(imports,))
            before = program_key.sources(config, tiny.SAC)
            assert program_key.sources(tiny.off_policy(), tiny.SAC) != before
            edited.write_text(edited.read_text().replace("1.0", "2.0"))
            assert program_key.sources(config, tiny.SAC) != before, f"{edited.name} not keyed"
    finally:
        for name in names:
            sys.modules.pop(name, None)


def test_the_key_follows_the_code_of_a_registered_env_outside_env_imports(
    store, tmp_path, monkeypatch
):
    """An env registered by the user's own code (not named by --env-imports): its factory's
    module and its class's module are in the key, so an edit of either makes a re-run compile
    its own programs; an env whose code has no file (a notebook's) leaves the run unstored."""
    # In two folders: a module is keyed with the modules loaded from its own folder, and the
    # class's module must be keyed as the class's, not as the factory's neighbour.
    env_dir, factory_dir = tmp_path / "env_code", tmp_path / "factory_code"
    env_dir.mkdir()
    factory_dir.mkdir()
    (env_dir / "store_probe_env.py").write_text(
        "from jaxrl.envs import classic\n\n"
        "class ProbeEnv(classic.Pendulum):\n    SCALE = 1.0\n\n"
        "def make():\n    return ProbeEnv()\n"
    )
    (factory_dir / "store_probe_factory.py").write_text(
        "import store_probe_env\n\ndef make():\n    return store_probe_env.ProbeEnv()\n"
    )
    monkeypatch.syspath_prepend(str(env_dir))
    monkeypatch.syspath_prepend(str(factory_dir))
    probe_env = importlib.import_module("store_probe_env")
    probe_factory = importlib.import_module("store_probe_factory")
    notebook = types.ModuleType("store_probe_notebook")  # no __file__
    exec("from jaxrl.envs import classic\ndef make():\n    return classic.Pendulum()",
         notebook.__dict__)  # fmt: skip
    sys.modules["store_probe_notebook"] = notebook
    envs.register("probe/ByFactory", probe_factory.make)  # the class's module: not the factory's
    envs.register("probe/ByClass", functools.partial(probe_env.make))
    envs.register("probe/Notebook", notebook.make)
    made = {}  # a class made by exec(): its module is "builtins", which has no file
    exec("from jaxrl.envs import classic\nclass Exec(classic.Pendulum):\n    pass", made)
    envs.register("probe/Exec", functools.partial(made["Exec"]))

    def identity(env):
        config = tiny.off_policy(env=env)
        return programs.identity(make_train(config, agents.get("sac").make(tiny.SAC)), tiny.SAC)

    try:
        before = {name: identity(name) for name in ("probe/ByFactory", "probe/ByClass")}
        assert None not in before.values()
        (env_dir / "store_probe_env.py").write_text(
            (env_dir / "store_probe_env.py").read_text().replace("1.0", "2.0")
        )
        for name, was in before.items():
            assert identity(name) != was, f"{name}: the edit of its env's module is not keyed"
        was = identity("probe/ByFactory")
        (factory_dir / "store_probe_factory.py").write_text(
            (factory_dir / "store_probe_factory.py").read_text() + "SCALE = 3.0\n"
        )
        assert identity("probe/ByFactory") != was, "the factory's module is not keyed"
        assert identity("probe/Notebook") is None
        assert identity("probe/Exec") is None
    finally:
        for name in ("probe/ByFactory", "probe/ByClass", "probe/Notebook", "probe/Exec"):
            envs.unregister(name)
        for name in ("store_probe_env", "store_probe_factory", "store_probe_notebook"):
            sys.modules.pop(name, None)


def test_a_registry_envs_observation_size_is_read_once_per_env_options_and_sources(
    store, monkeypatch
):
    """Brax's and Playground's envs read their observation size off a trace of their reset;
    with the store on, the first run keeps it and a re-run reads it back without the trace.
    Other options make another entry."""
    folder, _ = store
    from jaxrl.envs import registry

    traces = []
    real = registry.TracedSize.observation_size.func

    def traced(self):
        traces.append(self)
        return real(self)

    monkeypatch.setattr(registry.TracedSize, "observation_size", functools.cached_property(traced))
    monkeypatch.setattr(registry.TracedSize.observation_size, "attrname", "observation_size")
    config = tiny.off_policy(env="brax/inverted_pendulum")
    sizes = []
    for _ in range(2):
        trainer, _ = driver._make_trainer(config, agents.get("sac").make(tiny.SAC), tiny.SAC,
                                          None, None)  # fmt: skip
        sizes.append(trainer.observation.actor_size)
    assert sizes == [4, 4] and len(traces) == 1, "the re-run traced the reset again"
    assert len(list(folder.glob("observation_size-*"))) == 1
    other = dataclasses.replace(config, env_options={"backend": "positional"})
    driver._make_trainer(other, agents.get("sac").make(tiny.SAC), tiny.SAC, None, None)
    assert len(traces) == 2 and len(list(folder.glob("observation_size-*"))) == 2


def test_the_stored_chunk_computes_what_the_traced_one_does(store):
    """One chunk from the same state, through the program loaded from the store and through
    a freshly traced one: the same parameters after it."""
    config = tiny.off_policy()
    trainer = make_train(config, agents.get("sac").make(tiny.SAC))
    kept = programs.Store(programs.identity(trainer, tiny.SAC))
    compile_chunk(trainer, initial_state(trainer, None), None, kept)  # stored
    loaded = compile_chunk(trainer, initial_state(trainer, None), None, kept)
    # Compiled with the same options as the stored one (`chunks.CHUNK_OPTIONS`); the next test
    # compares the chunk with and without them.
    state = initial_state(trainer, None)
    fresh = chunks.compile_chunk_lowered(jax.jit(trainer.chunk, donate_argnums=0).lower(state))
    a, _ = loaded(initial_state(trainer, None))
    b, _ = fresh(initial_state(trainer, None))
    for x, y in zip(jax.tree.leaves(a.agent), jax.tree.leaves(b.agent), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_cpu_chunk_copies_nothing_its_conds_pass_through_and_computes_the_same():
    """`chunks.CHUNK_OPTIONS`: the chunk compiled by `compile_chunk` (XLA's copy insertion by
    region analysis) holds fewer copies than XLA's default compile of it (a `cond` passing the
    env states or the agent's state through copied them every step), and returns the same
    state and metrics, bit for bit. On this CPU in the suite; on a GPU too where the suite runs
    there (XLA:GPU's option of the same name).

    Both compiled by XLA's own code generator, as a user's run compiles the chunk, not the
    suite's faster one, under which the two rounded differently (tests/codegen.py)."""
    backend = jax.default_backend()
    assert backend in chunks.CHUNK_OPTIONS
    generator = codegen.users()
    options = {**chunks.CHUNK_OPTIONS[backend], **generator}
    trainer = make_train(tiny.off_policy(), agents.get("sac").make(tiny.SAC))
    state = initial_state(trainer, None)
    lowered = jax.jit(trainer.chunk, donate_argnums=0).lower(state)
    plain = lowered.compile(compiler_options=generator)
    # A context, not the fixture: benchmarks/gpu/run.sh's `checks` calls this test as a plain
    # function on a GPU machine, where pytest does not run.
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(chunks.CHUNK_OPTIONS, backend, options)
        chunk = compile_chunk(trainer, state, None)

    def copies(compiled) -> int:
        return compiled.as_text().count(" copy(")

    assert copies(chunk) < copies(plain)
    ours = jax.device_get(chunk(initial_state(trainer, None)))
    xlas = jax.device_get(plain(initial_state(trainer, None)))
    for x, y in zip(jax.tree.leaves(ours), jax.tree.leaves(xlas), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_gpu_chunk_compiles_with_copy_insertion_by_region_analysis(monkeypatch):
    """On a GPU the chunk is compiled with XLA:GPU's copy insertion by region analysis (each
    copy a conditional's pass-through branch makes is a kernel launch there: 72 of PPO's 219
    per env step at Playground's CartpoleBalance settings, compiled for an H100), and with
    XLA's defaults where that XLA does not know the option."""
    seen = []

    class Lowered:
        def __init__(self, known: bool):
            self.known = known

        def compile(self, compiler_options=None):
            seen.append(compiler_options)
            if compiler_options and not self.known:
                raise ValueError("No such compile option: 'xla_gpu_copy_insertion_use_region'")
            return "compiled"

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert chunks.compile_chunk_lowered(Lowered(True)) == "compiled"
    assert seen == [{"xla_gpu_copy_insertion_use_region_analysis": True}]
    seen.clear()
    assert chunks.compile_chunk_lowered(Lowered(False)) == "compiled"
    assert seen == [{"xla_gpu_copy_insertion_use_region_analysis": True}, None]
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")  # none named: XLA's defaults
    seen.clear()
    assert chunks.compile_chunk_lowered(Lowered(True)) == "compiled"
    assert seen == [None]


def test_a_store_that_cannot_be_written_leaves_the_run_to_train_unstored(store, monkeypatch):
    """A full disk (or a folder not writable) under the store: the run trains as with the
    store off and stores nothing; the store is a cache, never a reason to stop a run."""
    folder, _ = store
    monkeypatch.setattr(programs, "folder", lambda: None)
    unstored = _train(tiny.off_policy(), tiny.SAC)
    monkeypatch.setattr(programs, "folder", lambda: folder)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(programs, "write_atomically", full)
    assert _train(tiny.off_policy(), tiny.SAC) == unstored
    assert not [p for p in folder.rglob("*") if p.is_file() and ".running-" not in p.name]


def test_an_entry_whose_process_died_running_it_is_dropped_for_good(store):
    """A `.running` file left by a process that died in the entry's first call (e.g. a crash
    inside XLA): the next run drops the entry, marks its key failed and compiles its own,
    which is not stored under that key again. A file of a process alive (a sweep's other
    run) is no death."""
    folder, compiles = store
    rows = _train(tiny.off_policy(), tiny.SAC)
    (chunk,) = folder.glob("chunk-*")
    # Loaded and never called, as by a process stopped before its first chunk (Ctrl-C while
    # its first state was built): no mark, since it did not die running the program.
    trainer = make_train(tiny.off_policy(), agents.get("sac").make(tiny.SAC))
    kept = programs.Store(programs.identity(trainer, tiny.SAC))
    loaded = compile_chunk(trainer, initial_state(trainer, None), None, kept)
    assert isinstance(loaded, programs._Guarded)
    assert not list(folder.glob("chunk-*.running-*"))
    # A first call under way (this process's, alive, as a sweep's other run) is no death.
    marker = chunk.with_name(f"{chunk.name}.running-{socket.gethostname()}-{os.getpid()}")
    marker.touch()
    compiles.clear()
    assert _train(tiny.off_policy(), tiny.SAC) == rows  # loaded again
    assert len(compiles) == 1 and chunk.exists()
    assert not marker.exists()  # the same process's name: its call cleared it
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    pathlib.Path(str(marker).rpartition("-")[0] + f"-{gone}").touch()  # ... a process gone
    for _ in range(2):
        compiles.clear()
        assert _train(tiny.off_policy(), tiny.SAC) == rows
        assert len(compiles) == 2  # the chunk and the rest of the first state: compiled
        assert chunk.with_suffix(".failed").exists() and not chunk.exists()
    assert not list(folder.glob("*.running-*"))


def test_a_guarded_first_call_that_raises_marks_its_entry_failed(tmp_path):
    """The `running` file exists during the first call only (a process that dies in it leaves
    it); a first call that raises marks the entry failed, but for running out of device
    memory."""
    running, failed = tmp_path / "x.running", tmp_path / "x.failed"
    with pytest.raises(ZeroDivisionError):
        programs._Guarded(lambda x: 1 / x, running, failed)(0)
    assert failed.exists() and not running.exists()
    failed.unlink()

    def out_of_memory(x):  # as XLA:GPU raises it: the entry is not to blame
        raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00GiB")

    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
        programs._Guarded(out_of_memory, running, failed)(0)
    assert not failed.exists() and not running.exists()
    seen = []

    def program(x):
        seen.append(running.exists())
        return x + 1

    guarded = programs._Guarded(program, running, tmp_path / "y.failed")
    assert not running.exists()  # not at the load
    assert guarded(1) == 2 and guarded(2) == 3
    assert seen == [True, False]  # during the first call, and only then
    assert not running.exists() and not (tmp_path / "y.failed").exists()


def test_a_run_of_more_seeds_compiles_its_own(store):
    """The seed count is no setting of the key's configs: only the state's shapes tell a
    program of 2 seeds from one of 3."""
    folder, compiles = store
    for seeds in (2, 3):
        compiles.clear()
        driver.train(tiny.off_policy(), tiny.SAC, progress=None, seeds=seeds)
        assert len(compiles) == 4  # the reset, the first state, the step-0 evaluation, the chunk
    assert len(list(folder.glob("chunk-*"))) == 2


def test_a_resumed_run_loads_its_programs_and_ends_as_one_that_never_stopped(
    store, tmp_path, monkeypatch
):
    folder, compiles = store
    whole = _train(tiny.off_policy(total_steps=384), tiny.SAC)
    out = tmp_path / "run"
    driver.train(tiny.off_policy(total_steps=128), tiny.SAC, out, progress=None)
    compiles.clear()
    given, _ = _watch_loads(monkeypatch)
    resumed = driver.resume(out, total_steps=384, progress=None)
    assert len(compiles) == 1  # the rest of the first state (restored over)
    # Its chunk prefetched too; no step-0 evaluation (the checkpoint kept the first one's).
    assert given == [("reset", False), ("chunk", True)]
    assert learning_metrics(resumed.history) == whole


def test_a_program_calling_an_unknown_library_is_not_stored(tmp_path, monkeypatch):
    """Only LAPACK (which the store readies itself) and JAXRL_PROGRAM_STORE_LIBRARIES' names
    may be called by a stored program: here a host callback, whose pointers a loaded program
    could not hold. (Its Python function cannot be pickled either, so this case has two
    guards; XLA:CPU offers no other library call to test the first alone: cuSOLVER's are
    GPU-only, `benchmarks/rerun.py`.) The same program without it is stored. The store's log
    (JAXRL_PROGRAM_STORE_LOG) names the call that kept it out."""
    monkeypatch.setattr(programs, "folder", lambda: tmp_path)
    log = tmp_path / "store.jsonl"
    monkeypatch.setenv("JAXRL_PROGRAM_STORE_LOG", str(log))
    x = jax.numpy.ones(4)
    shape = jax.ShapeDtypeStruct((4,), x.dtype)
    calling = jax.jit(lambda v: jax.pure_callback(lambda a: a * 2, shape, v) + 1)
    assert (
        list(programs.load_or_compile("t", "calling", (x,), lambda: calling.lower(x))(x))
        == [3.0] * 4
    )
    assert not list(tmp_path.glob("calling-*"))
    # A constant of its own: a program an earlier test or run left in JAX's persistent cache
    # would come from there ("cache"), not from XLA.
    fresh = float(int.from_bytes(os.urandom(3), "little")) / 2**24 + 0.5
    plain = jax.jit(lambda v: v * 2 + fresh)
    programs.load_or_compile("t", "plain", (x,), lambda: plain.lower(x))
    assert list(tmp_path.glob("plain-*"))
    calling_note, plain_note = [json.loads(line) for line in log.read_text().splitlines()]
    assert calling_note["kind"] == "calling"
    assert calling_note["outcome"] == "not stored: it calls libraries"
    assert calling_note["calls"] and all("callback" in t for t in calling_note["calls"])
    assert (plain_note["kind"], plain_note["outcome"], plain_note["source"]) == (
        "plain", "stored", "xla")  # fmt: skip


def test_with_domain_randomization_the_seed_stays_in_the_key():
    """Randomized physics are drawn from the seed when the envs are built
    (tests/envs/test_randomization.py), so they are constants of the programs: there a seed
    is a program of its own."""
    plain, randomized = tiny.off_policy(), tiny.off_policy(randomize="mass")
    assert "seed" not in program_key.settings(plain, False, tiny.SAC)["run"]
    assert program_key.settings(randomized, False, tiny.SAC)["run"]["seed"] == 0
    assert "seed" in program_key.settings(tiny.on_policy(randomize="mass"), True, tiny.PPO)["run"]


def _chunk_compiles(monkeypatch) -> list[str]:
    """From now on: the thread that compiles each chunk (`chunks.compile_chunk_lowered`)."""
    names = []
    real = chunks.compile_chunk_lowered

    def recording(lowered):
        names.append(threading.current_thread().name)
        return real(lowered)

    monkeypatch.setattr(chunks, "compile_chunk_lowered", recording)
    return names


def test_a_first_run_compiles_its_chunk_beside_its_first_state_and_trains_the_same(
    store, monkeypatch
):
    """`chunks.EarlyChunk`: where the chunk is not stored, it compiles on a thread of its own
    while the first state's programs compile on the calling thread; the run trains as one that
    compiles the chunk after the first state, or without the store; its stored chunk is the one
    a re-run then loads (`test_a_rerun_with_other_data_seed...`: keyed as the state is)."""
    folder, compiles = store
    begun, waited, alive = threading.Event(), [], []
    names = _chunk_compiles(monkeypatch)
    chunk = chunks.compile_chunk_lowered

    def after_the_reset_began(lowered):  # a chunk compiled before the reset waits in vain
        waited.append(begun.wait(timeout=60))
        return chunk(lowered)

    def reset_begins(lowered):  # the first state's programs: the reset first
        alive.append(any(t.name == "jaxrl-chunk-compile" for t in threading.enumerate()))
        begun.set()
        return state_module.compile_with_options(lowered, state_module.RUN_ONCE_OPTIONS)

    monkeypatch.setattr(chunks, "compile_chunk_lowered", after_the_reset_began)
    monkeypatch.setattr(state_module, "_compile_once", reset_begins)
    rows = _train(tiny.off_policy(), tiny.SAC)
    assert names == ["jaxrl-chunk-compile"] and waited == [True]
    # The reset begins while the chunk's thread lives; the rest of the first state may begin
    # after that thread has finished (the chunk waits only for the reset), so only its count.
    assert len(alive) == 2 and alive[0], "the reset compiled before the chunk's compile began"
    # The reset, the rest of the first state, the step-0 evaluation, the chunk: once each.
    assert len(compiles) == 4
    assert not background.left_running()

    monkeypatch.setattr(chunks, "compile_chunk_lowered", chunk)
    monkeypatch.setattr(chunks.EarlyChunk, "wanted", property(lambda self: False))
    for entry in folder.iterdir():
        entry.unlink()
    assert _train(tiny.off_policy(), tiny.SAC) == rows
    assert names[1:] == ["MainThread"]
    monkeypatch.setattr(programs, "folder", lambda: None)  # nothing stored: the same rows
    assert _train(tiny.off_policy(), tiny.SAC) == rows


def test_a_chunk_that_fails_to_compile_on_its_thread_fails_the_run(store, monkeypatch):
    """The error of the chunk's compile on its own thread is raised by the run, not lost to
    a second compile on the calling thread; nothing is stored for the chunk."""
    folder, _ = store
    real = chunks.compile_chunk_lowered

    def failing(lowered):
        if threading.current_thread().name == "jaxrl-chunk-compile":
            raise RuntimeError("RESOURCE_EXHAUSTED: out of memory while compiling the chunk")
        return real(lowered)

    monkeypatch.setattr(chunks, "compile_chunk_lowered", failing)
    with pytest.raises(RuntimeError, match="out of memory while compiling the chunk"):
        _train(tiny.off_policy(), tiny.SAC)
    assert not [p for p in folder.iterdir() if p.name.startswith("chunk")]


def test_a_compile_watched_for_the_cache_sees_only_its_own_threads_compiles():
    """`executables.compile_watching_cache`: another thread's compile at the same moment (the
    chunk's, beside the first state's) is not taken for this one's: a program that compiled
    nothing here is "memory", never stored; one that compiled here is "xla"."""
    import numpy as np

    def another_thread_compiles():
        thread = threading.Thread(
            target=lambda: jax.jit(lambda x: x * 3.0 + 0.25).lower(np.ones(7, np.float32)).compile()
        )
        thread.start()
        thread.join()
        return "compiled nothing here"

    _, source, cached = executables.compile_watching_cache(another_thread_compiles)
    assert (source, cached) == ("memory", None)
    # A program no earlier run can have left in JAX's persistent cache (a constant of its own):
    # one that had would be "cache", not "xla".
    fresh = float(int.from_bytes(os.urandom(3), "little")) / 2**24 + 0.5
    lowered = jax.jit(lambda x: x * 5.0 - fresh).lower(np.ones(9, np.float32))
    assert executables.compile_watching_cache(lowered.compile)[1] == "xla"


def test_a_command_whose_first_state_fails_while_its_chunk_compiles_exits_without_waiting(
    store, monkeypatch
):
    """A run that raised before taking the chunk compiling on its thread leaves it running
    (`background.left_running`); `cli._ended` then ends a `jaxrl` process at once with its
    code, instead of waiting minutes for that compile."""
    from jaxrl import cli

    release = threading.Event()
    real = chunks.compile_chunk_lowered

    def slow(lowered):
        release.wait(timeout=60)
        return real(lowered)

    def broken(lowered):
        raise RuntimeError("the reset failed")

    monkeypatch.setattr(chunks, "compile_chunk_lowered", slow)
    monkeypatch.setattr(state_module, "_compile_once", broken)
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    try:
        with pytest.raises(RuntimeError, match="the reset failed"):
            _train(tiny.off_policy(), tiny.SAC)
        (left,) = [t for t in threading.enumerate() if t.name == "jaxrl-chunk-compile"]
        assert background.left_running()
        assert cli._ended(1, whole_process=False) == 1 and exits == []
        cli._ended(1, whole_process=True)
        assert exits == [1]
    finally:
        release.set()
    left.join()
    assert not background.left_running()


def test_every_serialization_waits_while_another_thread_swaps_the_pickler(monkeypatch):
    """The swap of jax's pickler class for cache bytes is process-wide: a serialization without
    bytes on another thread (the early chunk's beside the first state's) must wait for it, or
    it would write the other program's bytes (and might restore the swapped class for good)."""
    seen = []
    monkeypatch.setattr(
        executables.serialize_executable,
        "serialize",
        lambda compiled: seen.append(executables.serialize_executable._JaxPjrtPickler) or "out",
    )
    with executables._PATCHING:  # a swap under way on this thread
        thread = threading.Thread(target=executables.serialize, args=("program", None))
        thread.start()
        thread.join(0.3)
        assert thread.is_alive() and not seen, "it serialized during the swap"
    thread.join(5)
    assert not thread.is_alive() and seen == [executables.serialize_executable._JaxPjrtPickler]
