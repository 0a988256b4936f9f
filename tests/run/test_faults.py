"""Faults during a run: the process killed at any moment (resumed from its last complete
checkpoint, to the numbers of a run never killed); NaN or infinity in what a chunk computes
(stop, or roll back to the last good checkpoint), with nothing kept before it lost."""

import json
import random
import signal
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

from jaxrl import checkpoint, envs
from jaxrl.agents.sac import SACConfig
from jaxrl.config.options import RunOptions
from jaxrl.errors import ConfigError
from jaxrl.loops.base import summarize_chunk
from jaxrl.run import driver
from jaxrl.run.health import NonFiniteError
from jaxrl.run.rows import learning_metrics
from jaxrl.run.state import RUN_ONCE_OPTIONS, run_once
from tests import tiny
from tests.devices import ROOT

PER_CHUNK = 128  # env steps per chunk of both configs below


def _sac(**overrides):
    """tiny.off_policy with normalised observations, 5 chunks long."""
    return tiny.off_policy(**{"total_steps": 640, "normalize_observations": True, **overrides})


def _ppo(**overrides):
    """tiny.on_policy with normalised observations, 5 chunks of 128 env steps."""
    settings = {"total_steps": 640, "eval_every": PER_CHUNK, "normalize_observations": True}
    return tiny.on_policy(**{**settings, **overrides})


class Strike:
    """The pendulum, with a fault the test arms from the host: once armed, the next training
    step's rewards (or observations) of every env are NaN. It strikes once (`times`: more), so
    a run rolled back past it goes on cleanly. Armed through `progress`, which the driver calls
    after each chunk (its evaluation included), so the first step struck is the first of the
    next chunk."""

    def __init__(self, after_chunks: int, quantity: str = "reward", times: int = 1):
        self.env = envs.make("classic/pendulum")
        self.observation_size, self.action_size = self.env.observation_size, 1
        self.episode_length = 200
        self.after_chunks, self.quantity, self.times = after_chunks, quantity, times
        self.chunks_seen = 0
        self.armed = False
        self.lines: list[str] = []

    def progress(self, line: str) -> None:
        self.lines.append(line)
        if " steps |" in line:  # a chunk's line (N/M steps | ... | eval ...)
            self.chunks_seen += 1
            self.armed = self.chunks_seen >= self.after_chunks and self.times > 0

    def _poison(self):
        if not self.armed:
            return np.float32(0.0)
        self.armed = False
        self.times -= 1
        return np.float32(np.nan)

    def reset(self, key):
        return self.env.reset(key)

    def step(self, state, action):
        state = self.env.step(state, action)
        # io_callback: a side effect, so XLA neither drops it nor hoists it out of the loop.
        poison = io_callback(self._poison, jax.ShapeDtypeStruct((), jnp.float32))
        if self.quantity == "reward":
            return state.replace(reward=state.reward + poison)
        return state.replace(obs=state.obs + poison)


def test_summary_names_the_iteration_each_quantity_first_turned_non_finite():
    nan = np.nan
    metrics = {
        "updated": jnp.array([0.0, 1.0, 1.0, 1.0]),
        "critic_loss": jnp.array([0.0, 1.0, nan, nan]),
        "actor_loss": jnp.array([0.0, 1.0, 2.0, 3.0]),
        "episodes": jnp.zeros(4),
        "episode_return_sum": jnp.zeros(4),
        "episode_length_sum": jnp.zeros(4),
        "nonfinite_reward": jnp.array([0.0, 3.0, 0.0, 1.0]),
        "nonfinite_observation": jnp.zeros(4),
    }
    agent = {"w": jnp.array([1.0, jnp.inf]), "step": jnp.array(3)}
    # Rows of 2 iterations each, the chunk ending at iteration 20: rows end at 14, 16, 18, 20.
    summary = summarize_chunk(
        dict(metrics), 1, jnp.array(20), iterations_per_row=2, agent_state=agent
    )
    assert int(summary["nonfinite_reward"]) == 16
    assert int(summary["nonfinite_update"]) == 18
    assert int(summary["nonfinite_observation"]) == -1
    assert int(summary["nonfinite_parameters"]) == 20
    assert np.isnan(summary["critic_loss"])
    assert float(summary["actor_loss"]) == 2.0
    clean = summarize_chunk(dict(metrics), 1, jnp.array(20), agent_state={"w": jnp.ones(2)})
    assert int(clean["nonfinite_parameters"]) == -1


@pytest.mark.parametrize(
    "algo,quantity",
    [("sac", "reward"), ("sac", "observation"), ("ppo", "reward")],
)
def test_a_nan_after_good_chunks_stops_the_run_naming_step_and_quantity(tmp_path, algo, quantity):
    env = Strike(after_chunks=2, quantity=quantity)
    config, agent = (_sac(), tiny.SAC) if algo == "sac" else (_ppo(), tiny.PPO)
    options = RunOptions(checkpoint_every=1, keep_checkpoints=0)
    run = tmp_path / "run"
    with pytest.raises(NonFiniteError) as raised:
        driver.train(config, agent, run, options=options, env=env, progress=env.progress)
    message = str(raised.value)
    # By the end of chunk 2's first iteration (SAC: one step of the 4 envs; PPO: a rollout).
    first = 2 * PER_CHUNK + (config.num_envs if algo == "sac" else 64)
    name = "rewards" if quantity == "reward" else "observations"
    assert message.startswith(f"non-finite {name} (first by env step {first:,})"), message
    assert "in chunk 2 (env step 384)" in message
    assert "checkpoints and metrics before it were kept" in message
    # What the good chunks wrote is all there, and nothing of the bad one.
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["env_steps"] for r in rows] == [0, 128, 256]  # the step-0 evaluation first
    assert checkpoint.steps(run / "checkpoints") == [128, 256]
    assert not (run / "summary.json").exists()
    if (algo, quantity) == ("sac", "reward"):  # (each resume compiles the chunk again)
        # The last good checkpoint resumes (the fault struck once): the run finishes.
        resumed = driver.resume(run, progress=None, env=env)
        assert [r["env_steps"] for r in resumed.history] == [128, 256, 384, 512, 640]


def test_rollback_goes_on_from_the_last_checkpoint_with_a_fresh_key(tmp_path):
    clean = driver.train(_sac(), tiny.SAC, tmp_path / "clean", progress=None, env=Strike(99))
    env = Strike(after_chunks=3)
    options = RunOptions(checkpoint_every=2, keep_checkpoints=0, on_nan="rollback")
    run = tmp_path / "run"
    result = driver.train(_sac(), tiny.SAC, run, options=options, env=env, progress=env.progress)
    # Chunk 3 saw the NaN; the newest checkpoint was chunk 1's (env step 256).
    rolled = [line for line in env.lines if "rolled back" in line]
    assert len(rolled) == 1 and "non-finite rewards (first by env step 388)" in rolled[0]
    assert "rolled back to the checkpoint at env step 256 with a fresh key" in rolled[0]
    steps = [r["env_steps"] for r in result.history]
    assert steps == [128, 256, 384, 512, 640]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # Rewritten: chunk 2's first take is gone, the step-0 evaluation kept.
    assert [r["env_steps"] for r in rows] == [0, *steps]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rollbacks"] == 1 and summary["env_steps"] == 640
    assert all(np.isfinite(r["critic_loss"]) for r in result.history)
    strip = learning_metrics
    # Up to the checkpoint, the run is the clean one; after it, another key's.
    assert strip(result.history[:2]) == strip(clean.history[:2])
    assert strip(result.history[2:3]) != strip(clean.history[2:3])


def test_rollback_stops_after_max_rollbacks_and_starts_over_without_a_checkpoint(tmp_path):
    env = Strike(after_chunks=1, times=10)  # every chunk after the first strikes
    options = RunOptions(on_nan="rollback", max_rollbacks=2)  # only a final checkpoint
    with pytest.raises(NonFiniteError, match="training stopped after 2 rollbacks"):
        driver.train(
            _sac(), tiny.SAC, tmp_path / "run", options=options, env=env, progress=env.progress
        )
    rolled = [line for line in env.lines if "rolled back" in line]
    assert len(rolled) == 2
    assert all("rolled back to the start of the run" in line for line in rolled)
    with pytest.raises(ConfigError, match="on_nan must be one of stop, rollback"):
        RunOptions(on_nan="ignore")
    with pytest.raises(ConfigError, match="max_rollbacks must be an integer >= 0"):
        RunOptions(max_rollbacks=-1)


# -- killed with SIGKILL ---------------------------------------------------------------------

KILL_SAC = [
    "--algo", "sac", "--env", "classic/pendulum", "--steps", "1536", "--num-envs", "4",
    "--batch-size", "16", "--updates-per-step", "2", "--buffer-size", "512",
    "--learning-starts", "64", "--eval-every", "128", "--eval-envs", "2",
    "--actor-hidden", "16", "--critic-hidden", "16", "--checkpoint-every", "1",
    "--keep-checkpoints", "2", "--no-tensorboard", "--quiet",
]  # fmt: skip
KILL_PPO = [
    "--algo", "ppo", "--env", "classic/pendulum", "--steps", "384", "--num-envs", "4",
    "--unroll-length", "16", "--num-minibatches", "4", "--num-epochs", "2", "--eval-every",
    "128", "--eval-envs", "2", "--actor-hidden", "8", "--critic-hidden", "8",
    "--checkpoint-every", "1", "--no-tensorboard", "--quiet",
]  # fmt: skip


def _killed_at(point: str, *args: str) -> int:
    """`jaxrl ARGS` in a fresh process killed at `point` (tests/kill_worker.py): its exit
    code, -9 where the kill came first."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.kill_worker", point, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode in (0, -signal.SIGKILL), result.stderr[-4000:]
    return result.returncode


def _rows(run) -> list[dict]:
    text = (run / "metrics.jsonl").read_text()
    return learning_metrics([json.loads(line) for line in text.splitlines()])


def _reference(tmp_path, args: list[str]) -> list[dict]:
    from jaxrl import cli

    assert cli.main(["train", *args, "--out", str(tmp_path / "reference")]) == 0
    return _rows(tmp_path / "reference")


def test_sac_killed_at_each_point_of_a_checkpoint_resumes_to_the_unkilled_numbers(tmp_path):
    """Kills during the chunk's bookkeeping, the checkpoint write and after its commit, then
    at a random moment; each resume starts from the newest complete checkpoint (the replay
    buffer in it), and the finished run equals one never killed, bit for bit."""
    run = tmp_path / "run"
    reference = _reference(tmp_path, KILL_SAC)
    assert [r["env_steps"] for r in reference] == [0, *range(128, 1537, 128)]
    resume = ["train", "--resume", str(run), "--quiet"]
    # As the third save begins: chunk 2's rows are written, its checkpoint is not.
    assert _killed_at("save:3", "train", *KILL_SAC, "--out", str(run)) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints") == [128, 256]
    assert len(_rows(run)) == 4  # the step-0 evaluation's and three chunks'
    # Everything of checkpoint 384 written under orbax's temporary name, not yet committed.
    assert _killed_at("commit:1", *resume) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints") == [128, 256]
    # Committed (and the oldest dropped, keep 2), before training goes on.
    assert _killed_at("saved:2", *resume) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints") == [384, 512]
    # At a random moment after the first chunk began (seeded: 0.21 s, mid-run on 2 cores).
    moment = random.Random(0).uniform(0.0, 0.25)
    assert _killed_at(f"after:{moment:.2f}", *resume) == -signal.SIGKILL
    assert _killed_at("none", *resume) == 0
    assert _rows(run) == reference
    summary = json.loads((run / "summary.json").read_text())
    assert summary["env_steps"] == 1536


def test_ppo_killed_before_its_first_checkpoint_and_after_its_last_resumes_to_the_end(tmp_path):
    run = tmp_path / "run"
    reference = _reference(tmp_path, KILL_PPO)
    resume = ["train", "--resume", str(run), "--quiet"]
    # As the first save begins: a row written, no checkpoint; the resume starts over.
    assert _killed_at("save:1", "train", *KILL_PPO, "--out", str(run)) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints") == [] and len(_rows(run)) == 2  # step 0, one
    assert _killed_at("commit:2", *resume) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints") == [128]
    # After the final checkpoint, before summary.json: the resume only writes the summary.
    assert _killed_at("saved:2", *resume) == -signal.SIGKILL
    assert checkpoint.steps(run / "checkpoints")[-1] == 384
    assert not (run / "summary.json").exists()
    assert _killed_at("none", *resume) == 0
    assert json.loads((run / "summary.json").read_text())["env_steps"] == 384
    assert _rows(run) == reference


# -- damaged and foreign checkpoints ---------------------------------------------------------


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGE = {
    # The replay buffer's and env states' array data, cut in half.
    "loop data truncated": lambda step: [
        _truncate(f) for f in (step / "loop").rglob("*") if f.is_file() and f.parent.name == "d"
    ],
    "meta emptied": lambda step: (step / "meta" / "metadata").write_text(""),
    "agent metadata lost": lambda step: (step / "agent" / "_METADATA").unlink(),
}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A SAC run of 5 chunks with a checkpoint after each."""
    run = tmp_path_factory.mktemp("finished") / "run"
    options = RunOptions(checkpoint_every=1, keep_checkpoints=0)
    result = driver.train(_sac(), tiny.SAC, run, options=options, progress=None)
    return run, result


def _copy_stopped_after(run, tmp_path, env_steps: int):
    """A copy of `run` as a process killed after checkpoint `env_steps` would leave it."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    (copy / "summary.json").unlink()
    for step in checkpoint.steps(copy / "checkpoints"):
        if step > env_steps:
            shutil.rmtree(copy / "checkpoints" / str(step))
    return copy


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_newest_checkpoint_is_set_aside_and_the_one_before_resumes(
    finished_run, tmp_path, damage
):
    run, whole = finished_run
    copy = _copy_stopped_after(run, tmp_path, 512)
    DAMAGE[damage](copy / "checkpoints" / "512")
    # Evaluating it names the checkpoint and what failed, without a traceback from orbax (a
    # policy reads only the agent and statistics: the damaged buffer does not stop it).
    from jaxrl.run import runs

    if damage == "loop data truncated":
        assert runs.load_policy(copy, checkpoint_step=512).env_steps == 512
    else:
        with pytest.raises(checkpoint.DamagedCheckpointError, match=r"512 cannot be read"):
            runs.load_policy(copy, checkpoint_step=512)
    lines = []
    resumed = driver.resume(copy, progress=lines.append)
    assert any(
        "checkpoints/512 cannot be read" in line
        and "damaged-checkpoints/512" in line
        and "went on from env step 384" in line
        for line in lines
    ), lines
    assert (copy / "damaged-checkpoints" / "512" / "meta").is_dir()  # kept, out of the way
    assert checkpoint.steps(copy / "checkpoints") == [128, 256, 384, 512, 640]
    strip = learning_metrics
    assert strip(resumed.history) == strip(whole.history)  # from 384, as if never stopped


def test_running_out_of_memory_while_restoring_sets_no_checkpoint_aside(
    finished_run, tmp_path, monkeypatch
):
    """A device out of memory while the newest checkpoint restores is the machine's failure: the
    resume stops naming it, and no sound checkpoint is moved to damaged-checkpoints/ (the one
    before would have restored once memory came back)."""
    run, _ = finished_run
    copy = _copy_stopped_after(run, tmp_path, 512)
    calls, reader = [], checkpoint._reader

    class Full:  # orbax's reader, but the device is full when the arrays are put on it
        def __init__(self, directory):
            self.inner = reader(directory)

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def restore(self, step, *args, **kwargs):
            calls.append(step)
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4.0GiB")

    monkeypatch.setattr(checkpoint, "_reader", Full)
    with pytest.raises(checkpoint.CheckpointError, match=r"512 could not be restored: out of memo"):
        driver.resume(copy, progress=None)
    assert calls == [512]
    assert checkpoint.steps(copy / "checkpoints")[-1] == 512
    assert not (copy / "damaged-checkpoints").exists()


def test_no_readable_checkpoint_is_an_error_that_moves_none(finished_run, tmp_path, monkeypatch):
    run, _ = finished_run
    copy = _copy_stopped_after(run, tmp_path, 256)
    for step in (128, 256):
        DAMAGE["meta emptied"](copy / "checkpoints" / str(step))
    message = r"no checkpoint under .* can be read \(2 tried, none moved\); the newest: .*256"
    with pytest.raises(checkpoint.CheckpointError, match=message):
        driver.resume(copy, progress=None)
    assert checkpoint.steps(copy / "checkpoints") == [128, 256]
    assert not (copy / "damaged-checkpoints").exists()
    # Resumed from a relative path (as `jaxrl train --resume runs/NAME` is): the same reads.
    fine = _copy_stopped_after(run, tmp_path / "relative", 256)
    monkeypatch.chdir(fine.parent)
    assert [r["env_steps"] for r in driver.resume("copy", progress=None).history][-1] == 640


def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(finished_run, tmp_path):
    import shutil

    from jaxrl.run import runs

    run, _ = finished_run
    copy = _copy_stopped_after(run, tmp_path, 256)
    # Another network size: same algorithm, env and sizes in meta, other arrays.
    wider = SACConfig(actor_hidden=(32,), critic_hidden=(16,))
    other = tmp_path / "wider"
    driver.train(_sac(total_steps=384), wider, other, progress=None)
    shutil.copytree(other / "checkpoints" / "384", copy / "checkpoints" / "384")
    message = r"checkpoints/384 holds other arrays than this run's: agent/actor/params/.* is "
    with pytest.raises(checkpoint.CheckpointError, match=message + r"float32\[3, 32\]"):
        driver.resume(copy, progress=None)
    with pytest.raises(checkpoint.CheckpointError, match=message):
        runs.load_policy(copy)
    assert checkpoint.steps(copy / "checkpoints") == [128, 256, 384]  # nothing moved or lost
    # Another algorithm: named from the checkpoint's meta before any array is read.
    shutil.rmtree(copy / "checkpoints" / "384")
    td3 = tmp_path / "td3"
    from jaxrl.agents.td3 import TD3Config

    tiny_td3 = TD3Config(actor_hidden=(16,), critic_hidden=(16,))
    driver.train(_sac(algo="td3", total_steps=384), tiny_td3, td3, progress=None)
    shutil.copytree(td3 / "checkpoints" / "384", copy / "checkpoints" / "384")
    with pytest.raises(
        checkpoint.CheckpointError, match="is of another run: algo 'td3' .run: 'sac'"
    ):
        driver.resume(copy, progress=None)


def test_a_config_of_another_jaxrl_version_names_the_field_and_versions(finished_run, tmp_path):
    from jaxrl.run import runs

    run, _ = finished_run
    copy = _copy_stopped_after(run, tmp_path, 256)
    saved = json.loads((copy / "config.json").read_text())
    saved["train"]["replay_ratio"] = 4  # a field this version does not have
    saved["versions"].pop("jaxrl")  # written before configs recorded jaxrl's version
    (copy / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ConfigError) as raised:
        driver.resume(copy, progress=None)
    message = str(raised.value)
    assert "TrainConfig has no field(s) replay_ratio" in message
    assert "the config names no jaxrl version: if an older jaxrl wrote it" in message
    with pytest.raises(ConfigError, match="no field.s. replay_ratio"):
        runs.load_policy(copy)
    saved["versions"]["jaxrl"] = "0.0.9"
    (copy / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match="written by jaxrl 0.0.9, and this is jaxrl"):
        runs.load_policy(copy)


def test_a_wrong_value_in_a_config_blames_the_value_not_a_version(finished_run, tmp_path):
    """A config.json of this version (or with none, as if written by hand) with a wrong value:
    the field and the entry are named, and no version is blamed."""
    from jaxrl.run import runs
    from jaxrl.version import version

    run, _ = finished_run
    copy = _copy_stopped_after(run, tmp_path, 256)
    saved = json.loads((copy / "config.json").read_text())
    saved["train"]["num_envs"] = "many"
    for versions in ({"jaxrl": version()}, {}):
        saved["versions"] = versions
        (copy / "config.json").write_text(json.dumps(saved))
        with pytest.raises(ConfigError) as raised:
            runs.load_policy(copy)
        message = str(raised.value)
        assert "num_envs must be a positive integer, got 'many'" in message
        assert "(in the config's train entry)" in message and "version" not in message


# -- resources -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags,named",
    [
        (["--buffer-size", "2000000000"], "replay buffer 80.00 GB"),  # 2e9 rows of 40 bytes
        (["--num-envs", "1000000000", "--buffer-size", "1000000000"], "env states"),
    ],
)
def test_a_state_too_large_for_memory_fails_before_training_naming_its_size(
    tmp_path, capsys, flags, named
):
    from jaxrl import cli

    run = tmp_path / "run"
    code = cli.main(["train", *flags, "--batch-size", "16", "--out", str(run), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the run's state needs" in err and named in err
    assert "more than this machine's available memory" in err and "Traceback" not in err
    assert not run.exists()


def test_disk_full_while_checkpointing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    """The second save fails as a full disk fails it, after orbax wrote the arrays and before
    its commit: the run stops naming it, the first checkpoint stays (keep_checkpoints 1 would
    have dropped it after a good save), the partial one is removed, and the run resumes."""
    import errno

    from orbax.checkpoint._src.path import atomicity

    original = atomicity.AtomicRenameTemporaryPath.finalize

    async def full(self, *args, **kwargs):
        if self.get().name.startswith("256."):  # the step's own temporary folder
            raise OSError(errno.ENOSPC, "No space left on device")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize", full)
    run = tmp_path / "run"
    options = RunOptions(checkpoint_every=1, keep_checkpoints=1)
    with pytest.raises(checkpoint.CheckpointWriteError) as raised:
        driver.train(_sac(), tiny.SAC, run, options=options, progress=None)
    message = str(raised.value)
    assert "the checkpoint at env step 256 could not be written" in message
    assert "No space left on device" in message and "newest: env step 128" in message
    assert checkpoint.steps(run / "checkpoints") == [128]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["128"]
    monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize", original)
    resumed = driver.resume(run, progress=None)
    whole = driver.train(_sac(), tiny.SAC, tmp_path / "whole", progress=None)
    strip = learning_metrics
    assert strip(resumed.history) == strip(whole.history)


def test_two_writers_of_one_file_each_write_it_whole(tmp_path, monkeypatch):
    """Two processes writing one file at once (two scale grids' runs, the program store's
    entries, a run's summary read by `jaxrl plot`): the second writer starts between the
    first one's write and its rename. Each rename moves a whole file of its own (a temporary
    name shared by both would be moved by the second, and the first's rename would fail)."""
    import os

    from jaxrl import files

    path = tmp_path / "summary.json"
    path.write_text("old")
    replace = os.replace
    seen = []

    def interleaved(source, target):
        seen.append(os.path.basename(source))
        if len(seen) == 1:  # the other writer, in between
            assert path.read_text() == "old"
            files.write_atomically(path, "second")
            assert path.read_text() == "second"
        replace(source, target)

    monkeypatch.setattr(files.os, "replace", interleaved)
    files.write_atomically(path, "first")
    assert path.read_text() == "first" and len(set(seen)) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    plain = tmp_path / "plain"
    plain.write_text("")  # the mode any write gives under this umask, not the temporary's
    assert path.stat().st_mode == plain.stat().st_mode


def test_a_write_that_fails_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    import errno

    from jaxrl import files

    path = tmp_path / "scale.json"
    path.write_bytes(b"old")

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.pathlib.Path, "write_bytes", full)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomically(path, "new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["scale.json"]


# -- determinism -----------------------------------------------------------------------------


def test_every_algorithm_gives_the_same_bits_in_another_process():
    """The same seed and device: metric rows and every array of the final state (parameters,
    optimiser states, buffer, env states, key) agree bit for bit between this process and a
    fresh one, for each algorithm."""
    from tests.determinism_worker import fingerprints

    result = subprocess.run(
        [sys.executable, "-m", "tests.determinism_worker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    ours = fingerprints()
    algorithms = (
        "sac redq droq crossq dsac_t fast_sac td3 fast_td3 pql ppo sac_n edac td3_bc rebrac e2o "
        "sac_rnd"
    )
    assert set(ours) == set(algorithms.split())
    assert ours == theirs


def test_the_initial_state_compiles_for_compile_speed_and_falls_back_where_xla_refuses():

    def init(key):
        return jax.random.normal(key, (3,)) * jnp.arange(3.0)

    key = jax.random.PRNGKey(4)
    np.testing.assert_array_equal(run_once(jax.jit(init), key), jax.jit(init)(key))
    seen = []

    class Lowered:  # an XLA that does not know the options
        def compile(self, compiler_options=None):
            seen.append(compiler_options)
            if compiler_options:
                raise ValueError("No such compile option: 'xla_cpu_use_fusion_emitters'")
            return lambda key: "compiled with the defaults"

    class Jitted:
        def lower(self, key):
            return Lowered()

    assert run_once(Jitted(), key) == "compiled with the defaults"
    assert seen == [RUN_ONCE_OPTIONS["cpu"], None]

    class Failing(Lowered):  # any other failure is the program's own: raised, not retried
        def compile(self, compiler_options=None):
            seen.append(compiler_options)
            raise RuntimeError("RESOURCE_EXHAUSTED: out of memory")

    seen.clear()
    Jitted.lower = lambda self, key: Failing()
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
        run_once(Jitted(), key)
    assert seen == [RUN_ONCE_OPTIONS["cpu"]]  # one compile, not a second with defaults
