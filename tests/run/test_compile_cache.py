"""A re-run that changes only continuous settings, the seed or the step count compiles nothing
(issue 39): its programs come from JAX's persistent compilation cache, so its compile clock is a
fraction of the first run's. Each run is a fresh `jaxrl train` process over a fresh cache folder,
as a user's second command is; the clocks are compared as a ratio, never as absolute times.

The ratio is a timing, and the suite runs in two pytest-xdist workers on two cores: a second run
that happens to overlap the other worker's compiles can take twice its time (seen in CI: 10.3 s,
then 5.2 s, where the machine alone gives 7.3 s, then 2.2 s). So the second run is repeated, up
to `TRIES` times, until its clock is under half the first's. What a re-run compiles is not a
timing and is checked on every try: the cache's training programs stay the same."""

import json
import os
import pathlib
import subprocess
import sys

import jaxrl

ROOT = pathlib.Path(jaxrl.__file__).resolve().parent.parent

SAC = ["--preset", "sac_pendulum", "--steps", "1024", "--eval-every", "512"]
SAC_CHANGED = [
    "--actor-lr", "5e-4", "--critic-lr", "2e-3", "--alpha-lr", "2e-4", "--tau", "0.01",
    "--init-alpha", "0.5", "--gamma", "0.98", "--reward-scale", "2", "--seed", "7",
    "--steps", "2048",
]  # fmt: skip
TD3 = ["--preset", "td3_pendulum", "--steps", "1024", "--eval-every", "512"]
TD3_CHANGED = [
    "--exploration-noise", "0.3", "--target-noise", "0.1", "--actor-lr", "3e-4", "--seed", "2",
]  # fmt: skip


def _train(cache: pathlib.Path, out: pathlib.Path, argv: list[str], extra=None) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXRL_CACHE_DIR": str(cache)}
    env["JAXRL_PROGRAM_STORE"] = "1"  # a user's default (tests/conftest.py turns it off)
    env.update(extra or {})
    env.pop("JAXRL_COMPILE_CACHE", None)
    subprocess.run(
        [sys.executable, "-m", "jaxrl.cli", "train", *argv, "--out", str(out), "--quiet"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return json.loads((out / "summary.json").read_text())["compile_seconds"]


def _rows(out: pathlib.Path) -> list[dict]:
    """A run's metrics without its timings."""
    from jaxrl.run.rows import learning_metrics

    lines = (out / "metrics.jsonl").read_text().splitlines()
    return learning_metrics([json.loads(line) for line in lines])


def _programs(cache: pathlib.Path) -> set[str]:
    """The training programs in the cache (`jit_chunk-<key>`). The initial state's program is
    left out: it holds the settings as constants, compiles in about a second with options for
    speed (`jaxrl.run.state.RUN_ONCE_OPTIONS`), and is cached only when a loaded machine
    makes it take longer than JAX's threshold of 1 s."""
    return {path.name for path in cache.iterdir() if path.name.startswith("jit_chunk")}


TRIES = 3


def _check_rerun(tmp_path, first: list[str], changed: list[str]) -> None:
    cache = tmp_path / "cache"
    before = _train(cache, tmp_path / "first", first)
    programs = _programs(cache)
    assert len(programs) == 1
    clocks = []
    for attempt in range(TRIES):
        clocks.append(_train(cache, tmp_path / f"second-{attempt}", [*first, *changed]))
        assert _programs(cache) == programs, "the second run compiled a training program of its own"
        if clocks[-1] < 0.5 * before:
            return
    raise AssertionError(f"first run's compile clock {before:.2f} s, the re-runs' {clocks}")


def test_a_rerun_with_other_rates_discount_reward_scale_seed_and_steps_compiles_nothing(tmp_path):
    _check_rerun(tmp_path, SAC, SAC_CHANGED)


def test_a_rerun_with_other_noise_scales_compiles_nothing(tmp_path):
    _check_rerun(tmp_path, TD3, TD3_CHANGED)


def test_a_program_from_jaxs_cache_is_stored_from_its_bytes_and_loads_in_a_new_process(tmp_path):
    """XLA:CPU re-serialises an executable it loaded from JAX's persistent cache without its
    code (loaded again, it fails: "Function ... not found"). A chunk that came from that cache
    (here: the store emptied after a first run, as a code change that leaves the programs
    alone would miss it) is stored from the bytes the cache's entry holds, so the next run
    loads it from the store, runs it, and every run gives the same numbers."""
    import shutil

    cache = tmp_path / "cache"
    _train(cache, tmp_path / "first", SAC)
    assert _programs(cache), "JAX's cache holds no chunk: the path below would not be taken"
    store = cache / "jaxrl-programs"
    shutil.rmtree(store)
    _train(cache, tmp_path / "again-0", SAC)  # the chunk from JAX's cache, stored
    stored = {path.name: path.stat().st_mtime_ns for path in store.glob("chunk-*")}
    assert len(stored) == 1
    _train(cache, tmp_path / "again-1", SAC)  # the chunk loaded from the store
    assert {path.name: path.stat().st_mtime_ns for path in store.glob("chunk-*")} == stored
    assert not list(store.glob("*.failed")), "the stored chunk failed when loaded"
    rows = [_rows(tmp_path / name) for name in ("first", "again-0", "again-1")]
    assert rows[0] == rows[1] == rows[2]


# A program that calls LAPACK (MJX's constraint solver does, through jnp.linalg): stored by one
# process, loaded and run by another, which never lowers a LAPACK call of its own.
LAPACK_PROGRAM = """
import sys, jax, jax.numpy as jnp
from jaxrl.run import programs
programs.folder = lambda: __import__("pathlib").Path(sys.argv[1])
x = jnp.array([[4.0, 1.0], [1.0, 3.0]])
run = programs.load_or_compile("lapack-test", "solve", (x,), lambda: jax.jit(
    lambda a: jnp.linalg.solve(a, jnp.ones(2)) + jnp.linalg.cholesky(a)[1, 1]).lower(x))
print(type(run).__name__, [round(float(v), 5) for v in run(x)])
"""


def test_a_stored_program_calling_lapack_runs_in_a_new_process(tmp_path):
    """jaxlib points its LAPACK kernels at SciPy's only when a program using them is lowered;
    a program loaded from the store is not lowered, and ran into null pointers (a segmentation
    fault) until the store initialised them itself (`executables.initialize_lapack`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXRL_PROGRAM_STORE": "1"}
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", LAPACK_PROGRAM, str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout.split()[0])
        values = done.stdout.split(maxsplit=1)[1]
    assert outputs == ["Compiled", "_Guarded"]  # compiled and stored, then loaded
    # A^-1 [1, 1] = [2, 3] / 11, and L[1, 1] = sqrt(3 - (1/2)^2) for A = L L^T.
    assert values.strip() == "[1.84013, 1.93104]"


# One program under three store ids, JAX's persistent cache on: compiled by XLA ("a"), then,
# in another process, given by that cache ("b") and again by jax's in-process cache ("c").
SAME_PROGRAM = """
import sys, jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", sys.argv[1] + "/cache")
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
from jaxrl.run import programs
programs.folder = lambda: __import__("pathlib").Path(sys.argv[1]) / "store"
x = jnp.ones((8, 8))
f = jax.jit(lambda a: jnp.sin(a) @ a.T + 1)
for name in sys.argv[2:]:
    run = programs.load_or_compile(name, "p", (x,), lambda: f.lower(x))
    print(name, type(run).__name__, round(float(run(x).sum()), 3))
"""


def test_only_programs_compiled_or_read_from_jaxs_cache_are_stored(tmp_path):
    """A program jax's in-process cache gives records no compile: it may have come from the
    persistent cache, whose executables XLA:CPU re-serialises without their code, so it is not
    stored; one from the persistent cache is stored from its entry's bytes and runs when
    loaded in a new process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = []
    for names in (["a"], ["b", "c"], ["a", "b"]):
        done = subprocess.run(
            [sys.executable, "-c", SAME_PROGRAM, str(tmp_path), *names],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(done.stdout.split())
    stored = sorted(p.name.split("-")[0] for p in (tmp_path / "store").iterdir())
    assert stored == ["last", "last", "p", "p"]  # "a" and "b" (the key holds the id), not "c"
    assert [run[1::3] for run in runs] == [["Compiled"], ["Compiled", "Compiled"],
                                           ["_Guarded", "_Guarded"]]  # fmt: skip
    assert len({value for run in runs for value in run[2::3]}) == 1  # the same numbers


def test_turning_the_cache_on_keeps_jaxs_own_threshold_of_what_it_keeps():
    """`driver.configure_compile_cache` leaves which programs are kept to JAX's setting (a
    second by default; the suite's conftest keeps those over 0.1 s, a user may set
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS), and turns the cache on over the folder given."""
    import jax

    from jaxrl.run import driver

    was = (
        jax.config.jax_enable_compilation_cache,
        jax.config.jax_compilation_cache_dir,
        jax.config.jax_persistent_cache_min_compile_time_secs,
    )
    try:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.25)
        driver.configure_compile_cache(path=was[1] or driver.DEFAULT_CACHE_DIR)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.25
        assert jax.config.jax_enable_compilation_cache
        assert jax.config.jax_compilation_cache_dir == str(was[1] or driver.DEFAULT_CACHE_DIR)
    finally:
        jax.config.update("jax_enable_compilation_cache", was[0])
        jax.config.update("jax_compilation_cache_dir", was[1])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", was[2])
