"""A re-run that changes only continuous settings, the seed or the step count compiles nothing
(issue 39): its programs come from JAX's persistent compilation cache, so its compile clock is a
fraction of the first run's. Each run is a fresh `jaxrl train` process over a fresh cache folder,
as a user's second command is; the clocks are compared as a ratio, never as absolute times."""

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


def _train(cache: pathlib.Path, out: pathlib.Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXRL_CACHE_DIR": str(cache)}
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


def _programs(cache: pathlib.Path) -> set[str]:
    """The training programs in the cache (`jit_chunk-<key>`). The initial state's program is
    left out: it holds the settings as constants, compiles in about a second with options for
    speed (`jaxrl.run.state.RUN_ONCE_CPU_OPTIONS`), and is cached only when a loaded machine
    makes it take longer than JAX's threshold of 1 s."""
    return {path.name for path in cache.iterdir() if path.name.startswith("jit_chunk")}


def _rerun(tmp_path, first: list[str], changed: list[str]) -> tuple[float, float, set, set]:
    cache = tmp_path / "cache"
    before = _train(cache, tmp_path / "first", first)
    programs = _programs(cache)
    after = _train(cache, tmp_path / "second", [*first, *changed])
    return before, after, programs, _programs(cache)


def test_a_rerun_with_other_rates_discount_reward_scale_seed_and_steps_compiles_nothing(tmp_path):
    before, after, programs, programs_after = _rerun(tmp_path, SAC, SAC_CHANGED)
    assert len(programs) == 1
    assert programs_after == programs, "the second run compiled a training program of its own"
    assert after < 0.5 * before, (before, after)


def test_a_rerun_with_other_noise_scales_compiles_nothing(tmp_path):
    before, after, programs, programs_after = _rerun(tmp_path, TD3, TD3_CHANGED)
    assert len(programs) == 1
    assert programs_after == programs, "the second run compiled a training program of its own"
    assert after < 0.5 * before, (before, after)
