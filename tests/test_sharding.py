"""Several devices (`--devices`, jaxrl.sharding), on this CPU split into 4 devices.

XLA_FLAGS=--xla_force_host_platform_device_count=4 only takes effect before JAX starts, so
each case runs in a fresh process (tests/sharding_worker.py holds the checks themselves):
- the per-env arrays and the replay buffer really are split (each device holds a quarter),
  parameters replicated, and the compiled program reduces gradients and never moves the
  replay buffer between devices (SAC, CrossQ, PPO);
- one update on a batch split over 4 devices equals it on one device (SAC; CrossQ, whose
  BatchRenorm statistics must be the whole batch's);
- a mesh of one device gives exactly the unsharded run's numbers;
- seeds under vmap over 4 devices, checkpointed, resumed on 2;
- SAC learns the classic pendulum over 2 of the devices from the CLI;
- two processes of 2 devices each (jax.distributed) train one run to identical parameters;
- device counts, sizes and distributed flags that cannot work exit 2 before compiling.
"""

import json
import socket
import subprocess
import sys

import pytest

from jaxrl import cli, sharding
from jaxrl.config import ConfigError, TrainConfig
from tests.devices import FOUR_DEVICES, ROOT
from tests.devices import run_on_four_devices as _run


def test_sharded_programs():
    """Layouts (SAC, CrossQ, PPO), updates equal to one device's (SAC, CrossQ), a mesh of one
    device equal to none (SAC): one process, its checks in order."""
    out = _run("-m", "tests.sharding_worker", "programs")
    assert out.count("layout ok") == 3 and out.count("update ok") == 2, out
    assert out.count("one device ok") == 1, out


def test_seeds_over_devices_checkpoint_and_resume_on_fewer(tmp_path):
    out = _run("-m", "tests.sharding_worker", "grid_resume", str(tmp_path / "run"))
    assert "grid and resume ok" in out


def test_sac_learns_over_two_devices_from_the_cli(tmp_path):
    # SAC over 2 devices: CrossQ's programs over 4 (checked above against one device, update
    # by update) took 80 s of this suite's 2 cores to learn the same thing from a cold cache.
    run = tmp_path / "run"
    argv = ["-m", "jaxrl.cli", "train", "--preset", "sac_pendulum", "--devices", "2"]
    _run(*argv, "--stop-at-return", "-250", "--out", str(run), "--quiet")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["eval_return"] >= -250 > rows[0]["eval_return"], rows
    assert json.loads((run / "config.json").read_text())["train"]["devices"] == 2


def test_device_counts_that_cannot_work_are_refused_before_compiling():
    with pytest.raises(ConfigError, match="devices 8 but this machine has 1 cpu device"):
        sharding.data_axis(8, num_envs=16, batch_size=256)
    with pytest.raises(ConfigError, match='devices must be a count >= 0 .* or "all"'):
        TrainConfig(devices=-2)
    with pytest.raises(ConfigError, match="xla_force_host_platform_device_count=2"):
        sharding.data_axis(2, num_envs=16)
    assert sharding.data_axis(0, num_envs=3).mesh is None  # no mesh: the default device
    assert sharding.data_axis("all", num_envs=3).size == 1


def test_envs_or_batch_that_do_not_divide_over_the_devices_exit_2_and_write_nothing(tmp_path):
    for flags, name in (
        (["--num-envs", "6"], "--num-envs 6"),  # the command line's errors name its flags
        (["--batch-size", "30"], "--batch-size 30"),
    ):
        run = tmp_path / name.replace(" ", "_")
        argv = ["-m", "jaxrl.cli", "train", "--devices", "4", "--steps", "8000", *flags]
        result = subprocess.run(
            [sys.executable, *argv, "--out", str(run)],
            cwd=ROOT,
            env=FOUR_DEVICES,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 2, result.stderr[-3000:]
        assert f"{name} does not divide over 4 devices" in result.stderr
        assert "Traceback" not in result.stderr and not run.exists()


def test_two_processes_train_one_run_and_end_with_the_same_parameters(tmp_path):
    """Two processes of 2 CPU devices each (jax.distributed, CPU collectives) train one SAC
    run over the 4 devices: identical parameters and rows in both, one set of files."""
    with socket.socket() as probe:  # a free port for the coordinator
        probe.bind(("localhost", 0))
        port = str(probe.getsockname()[1])
    env = {**FOUR_DEVICES, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    run = tmp_path / "run"
    worker = [sys.executable, "-m", "tests.sharding_worker", "distributed"]
    processes = [
        subprocess.Popen(
            [*worker, str(i), port, str(run)],
            cwd=ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in processes]
    for p, (out, err) in zip(processes, outputs, strict=True):
        assert p.returncode == 0, out + err[-5000:]
    lines = [out.strip().splitlines()[-1].split(" ", 2)[2] for out, _ in outputs]
    assert lines[0] == lines[1], lines  # the same digest of parameters, the same rows
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 3  # the step-0 evaluation and two chunks, written once, by process 0
    assert (run / "checkpoints" / "1024").is_dir()


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--num-processes", "2", "--process-id", "0"], "need --coordinator HOST:PORT"),
        (["--coordinator", "localhost:1", "--num-processes", "2"], "needs --num-processes N and"),
        (
            ["--coordinator", "localhost:1", "--num-processes", "2", "--process-id", "2"],
            "need 0 <= --process-id < --num-processes",
        ),
        (["--coordinator", "host0", "--num-processes", "2", "--process-id", "0"], "HOST:PORT"),
    ],
)
def test_bad_distributed_flags_exit_2_before_starting(flags, message, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", "--steps", "8000", "--out", str(out), *flags]) == 2
    assert message in capsys.readouterr().err and not out.exists()
