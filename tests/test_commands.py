"""The run commands end to end through the CLI: train, Ctrl-C, resume, eval, sweep."""

import dataclasses
import json
import os
import signal
import subprocess
import sys

import pytest

from jaxrl import checkpoint, cli
from jaxrl.run.rows import learning_metrics
from tests import tiny

# tiny.OFF_POLICY and tiny.SAC as flags, but for the steps and the evaluation period.
TINY = tiny.cli_flags(
    {
        **{k: v for k, v in tiny.OFF_POLICY.items() if k not in ("total_steps", "eval_every")},
        "actor_hidden": tiny.SAC.actor_hidden,
        "critic_hidden": tiny.SAC.critic_hidden,
    }
)


def _run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ctrl_c_saves_a_checkpoint_and_resume_finishes_the_run(tmp_path):
    out = tmp_path / "run"
    argv = [*TINY, "--steps", "409600", "--eval-every", "2048", "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jaxrl.cli", "train", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    for line in process.stdout:  # the first chunk's progress line: training is under way
        if "env-steps/s" in line:
            break
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "checkpoint saved" in err and "--resume" in err
    (saved,) = checkpoint.steps(out / "checkpoints")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    assert rows[-1]["env_steps"] == saved  # nothing logged past the checkpoint
    assert not (out / "summary.json").exists()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxrl.cli",
            "train",
            "--resume",
            str(out),
            "--steps",
            str(saved + 4096),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    assert [r["env_steps"] for r in rows] == [0, *range(2048, saved + 4096 + 1, 2048)]
    assert json.loads((out / "summary.json").read_text())["env_steps"] == saved + 4096


def test_train_resume_and_eval_commands(capsys, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = _run(
        capsys,
        "train",
        *TINY,
        "--steps",
        "256",
        "--eval-every",
        "128",
        "--out",
        str(out),
        "--quiet",
        "--normalize-observations",
    )
    assert code == 0, err
    assert "train " in stdout and "in this process" not in stdout  # one process: its time alone
    code, _, err = _run(capsys, "train", "--resume", str(out))
    assert code == 2 and "is complete (256 env steps); pass --steps" in err
    code, stdout, err = _run(capsys, "train", "--resume", str(out), "--steps", "512", "--quiet")
    assert code == 0, err
    assert checkpoint.steps(out / "checkpoints") == [256, 512]
    both = json.loads((out / "summary.json").read_text())["train_seconds"]
    assert f"train {both:.1f}s (" in stdout and "s of it in this process); run folder" in stdout
    code, stdout, _ = _run(capsys, "eval", str(out), "--episodes", "3", "--json")
    assert code == 0
    report = json.loads(stdout)
    assert report["checkpoint"] == 512 and report["episodes"] == 3 and len(report["returns"]) == 3
    code, stdout, _ = _run(capsys, "eval", str(out), "--episodes", "3", "--checkpoint", "256")
    assert code == 0 and "@ 256 env steps: return" in stdout
    code, _, err = _run(capsys, "eval", str(tmp_path / "nothing"))
    assert code == 2 and "no such folder" in err
    code, _, err = _run(capsys, "train", "--resume", str(out), "--steps", "512", "--seed", "3")
    assert code == 2 and "--seed cannot change on resume" in err


def test_sweep_trains_the_grid_and_summarises(capsys, tmp_path):
    out = tmp_path / "sweep"
    code, stdout, err = _run(
        capsys,
        "sweep",
        *TINY,
        "--steps",
        "256",
        "--eval-every",
        "256",
        "--quiet",
        "--grid",
        "actor_lr=1e-3,3e-4",
        "--seeds",
        "0,1",
        "--out",
        str(out),
    )
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(r["setting"] for r in summary) == ["actor_lr=0.0003", "actor_lr=0.001"]
    for row in summary:
        assert len(row["returns"]) == 2
        assert row["mean"] == pytest.approx(sum(row["returns"]) / 2)
        for seed in (0, 1):
            saved = json.loads((out / row["setting"] / f"s{seed}" / "config.json").read_text())
            assert saved["train"]["seed"] == seed
            assert saved["agent"]["actor_lr"] == float(row["setting"].split("=")[1])
    assert "actor_lr=0.001" in stdout and (out / "summary.md").exists()


def test_a_sweep_stopped_part_way_goes_on_with_resume_to_the_numbers_of_one_never_stopped(
    capsys, tmp_path, monkeypatch
):
    """Ctrl-C in the second of four runs (after its first chunk), then `jaxrl sweep --resume`:
    the first run is read, not trained again; the second resumes from its checkpoint to the
    metrics an uninterrupted run of its settings gives; the last two train. The same command
    again, without --resume, is refused naming --resume; a finished sweep is refused."""
    from jaxrl.run import driver

    out = tmp_path / "sweep"
    argv = [*TINY, "--steps", "768", "--eval-every", "256", "--quiet"]
    grid = ["--grid", "actor_lr=1e-3,3e-4", "--seeds", "0,1", "--out", str(out)]
    real, runs = driver.train, []

    def train(config, agent_config, run_dir, **kwargs):
        runs.append(run_dir)
        if len(runs) == 2:  # Ctrl-C as the first chunk's row is logged (not step 0's)
            kwargs["progress_fn"] = lambda step, _: step and os.kill(os.getpid(), signal.SIGINT)
        return real(config, agent_config, run_dir, **kwargs)

    monkeypatch.setattr(driver, "train", train)
    code, _, err = _run(capsys, "sweep", *argv, *grid)
    stopped = out / "actor_lr=0.001" / "s1"
    assert code == 130 and runs == [out / "actor_lr=0.001" / "s0", stopped]
    assert f"run 2 of 4 ({stopped}) interrupted at 256 env steps" in err
    assert f"jaxrl sweep --resume {out}" in err
    assert checkpoint.steps(stopped / "checkpoints") == [256]
    code, _, err = _run(capsys, "sweep", *argv, *grid)
    assert code == 2 and "(2 of its 4 runs begun)" in err and f"--resume {out}" in err
    code, _, err = _run(capsys, "sweep", *argv, "--grid", "tau=0.02", "--out", str(out))
    assert code == 2 and f"{out} holds another sweep, begun with: jaxrl sweep " in err
    code, _, err = _run(capsys, "sweep", "--resume", str(out), "--steps", "1024")
    assert code == 2 and "--steps cannot change" in err
    code, _, err = _run(capsys, "sweep", "--resume", str(out), str(whole_dir := tmp_path / "w"))
    assert code == 2 and f"--resume takes one sweep's folder; also given: {whole_dir}" in err

    code, stdout, err = _run(capsys, "sweep", "--resume", str(out), "--quiet")
    assert code == 0, err
    assert len(runs) == 4  # the two not begun, trained; the first read, the second resumed
    assert "[sweep 1/4] actor_lr=0.001 seed 0: finished earlier" in stdout
    assert f"[sweep 2/4] actor_lr=0.001 seed 1 -> {stopped} (resumed)" in stdout
    summary = {r["setting"]: r for r in json.loads((out / "summary.json").read_text())}
    assert sorted(summary) == ["actor_lr=0.0003", "actor_lr=0.001"]
    whole = tmp_path / "whole"
    code, _, err = _run(capsys, "train", *argv, "--actor-lr", "1e-3", "--seed", "1",
                        "--out", str(whole))  # fmt: skip
    assert code == 0, err
    metrics = [
        learning_metrics([json.loads(line) for line in (run / "metrics.jsonl").open()])
        for run in (stopped, whole)
    ]
    assert metrics[0] == metrics[1] and len(metrics[0]) == 4  # step 0 and three chunks
    final = json.loads((whole / "summary.json").read_text())["final_eval_return"]
    assert summary["actor_lr=0.001"]["returns"][1] == final
    # Resumed again once finished: every run read, the same summary written and shown.
    code, stdout, err = _run(capsys, "sweep", "--resume", str(out / "sweep.json"), "--quiet")
    assert code == 0 and stdout.count("finished earlier") == 4 and len(runs) == 5, err
    assert json.loads((out / "summary.json").read_text()) == list(summary.values())
    code, _, err = _run(capsys, "sweep", *argv, *grid)
    assert code == 2 and "already holds a finished sweep" in err
    code, _, err = _run(capsys, "sweep", "--resume", str(tmp_path / "whole"))
    assert code == 2 and "is not a sweep to resume: it has no sweep.json" in err
    code, _, err = _run(capsys, "train", "--resume", str(out), "--steps", "2048")
    assert code == 2 and f"(a sweep's folder: go on with it by jaxrl sweep --resume {out})" in err
    code, _, err = _run(capsys, "sweep", "--resume", str(tmp_path / "nowhere"))
    assert code == 2 and "--resume " in err and "no such folder; give the sweep's folder" in err
    # A run is not trained into a sweep's folder, nor into one of its settings' folders.
    code, _, err = _run(capsys, "train", *argv, "--out", str(out))
    assert code == 2 and "holds a sweep or scale grid" in err
    code, _, err = _run(capsys, "train", *argv, "--out", str(stopped.parent))
    assert code == 2 and "holds runs in its folders (s0, s1)" in err


def test_ctrl_c_in_a_sweep_run_s_last_chunk_stops_the_sweep_after_that_run(
    capsys, tmp_path, monkeypatch
):
    """The run under way finishes (Ctrl-C came in its last chunk) and the sweep stops there,
    exit 130; --resume trains the rest. One seed: the summary's std and stderr are none."""
    from jaxrl.run import driver

    out = tmp_path / "sweep"
    argv = ["sweep", *TINY, "--steps", "512", "--eval-every", "256", "--quiet", "--out", str(out)]
    argv += ["--grid", "tau=0.005,0.01"]
    real, runs = driver.train, []

    def train(config, agent_config, run_dir, **kwargs):
        runs.append(run_dir)
        if len(runs) == 1:  # Ctrl-C as the last chunk's row is logged
            kwargs["progress_fn"] = lambda steps, _: (
                steps == 512 and os.kill(os.getpid(), signal.SIGINT)
            )
        return real(config, agent_config, run_dir, **kwargs)

    monkeypatch.setattr(driver, "train", train)
    code, _, err = _run(capsys, *argv)
    first = out / "tau=0.005" / "s0"
    assert code == 130 and f"run 1 of 2 ({first}) finished as Ctrl-C came" in err
    assert len(runs) == 1 and (first / "summary.json").exists()
    code, _, err = _run(capsys, "sweep", "--resume", str(out), "--quiet")
    assert code == 0 and len(runs) == 2, err
    rows = json.loads((out / "summary.json").read_text())
    assert [(r["std"], r["stderr"], len(r["returns"])) for r in rows] == [(None, None, 1)] * 2
    assert "| - | - |" in (out / "summary.md").read_text()


def test_a_sweep_resumed_from_another_folder_reads_its_relative_paths_from_its_own(
    tmp_path, monkeypatch
):
    """sweep.json keeps the folder the sweep began in: a --config given relative to it still
    names that file when the sweep is resumed from elsewhere."""
    from jaxrl.config import resolve
    from jaxrl.experiments import sweep

    began, elsewhere = tmp_path / "began", tmp_path / "elsewhere"
    (began / "base").mkdir(parents=True)
    elsewhere.mkdir()
    train, agent, _ = resolve.build_configs(["--preset", "sac_pendulum"])
    saved = {"train": dataclasses.asdict(train), "agent": dataclasses.asdict(agent)}
    (began / "base" / "config.json").write_text(json.dumps(saved))
    argv = ["--config", "base/config.json", "--steps", "2048", "--grid", "tau=0.005,0.01"]
    out = began / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"argv": argv, "cwd": str(began)}))
    monkeypatch.chdir(elsewhere)
    planned_out, plan, seeds, _ = sweep.plan_sweep(["--resume", "../began/sweep"])
    assert planned_out == out and len(plan) == 2 and seeds == [0]
    assert [config.total_steps for _, _, config, _ in plan] == [2048, 2048]


def test_a_sweep_resumed_over_a_run_of_other_settings_is_refused_before_training(capsys, tmp_path):
    """A run folder of the sweep holding another seed's or setting's run (moved in by hand,
    another sweep's): --resume names the folder and what differs, and trains nothing."""
    out = tmp_path / "sweep"
    argv = [*TINY, "--steps", "256", "--grid", "actor_lr=1e-3,3e-4", "--seeds", "0,1"]
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"argv": argv}))
    stray = out / "actor_lr=0.0003" / "s1"
    stray.mkdir(parents=True)
    (stray / "config.json").write_text(
        json.dumps({"train": {"seed": 1}, "agent": {"actor_lr": 0.001}})
    )
    code, _, err = _run(capsys, "sweep", "--resume", str(out))
    assert code == 2 and f"{stray} holds a run of other settings than the sweep's" in err
    assert "actor_lr 0.001 (the sweep's: 0.0003)" in err and "seed" not in err.split(":")[-1]
    assert sorted(p.name for p in out.iterdir()) == ["actor_lr=0.0003", "sweep.json"]
    # A grid value the algorithm resolves (None: its own choice) is compared as the run's
    # config.json keeps it, resolved: the sweep's own run is not taken for another's.
    from jaxrl.experiments import sweep

    grid = ["--grid", "normalize_observations=none,true"]
    (out / "sweep.json").write_text(json.dumps({"argv": [*TINY, "--steps", "256", *grid]}))
    own = out / "normalize_observations=None" / "s0"
    own.mkdir(parents=True)
    (own / "config.json").write_text(
        json.dumps({"train": {"seed": 0, "normalize_observations": False}, "agent": {}})
    )
    _, plan, _, _ = sweep.plan_sweep(["--resume", str(out)])
    assert [point for point, *_ in plan] == [
        {"normalize_observations": None},
        {"normalize_observations": True},
    ]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--grid", "actor_lrr=1e-3"], "not a field of the run or sac config"),
        (["--grid", "actor_lr=1e-3,0"], "actor_lr must be > 0"),
        (["--grid", "seed=1,2"], "(seeds: --seeds)"),
        (["--seeds", "0,0"], "a seed is listed twice"),
        (["--seeds", "0"], "the count of seeds must be >= 1"),
        (["--grid", "env=classic/pendulum,classic/pendulumm"], "env=classic/pendulumm"),
        (["--grid", "buffer_size=512,8"], "grid setting buffer_size=8"),
        (["--grid", "actor_lr=abc"], "--grid actor_lr: expected a number, got 'abc'"),
        (["--grid", "num_envs=1.5"], "--grid num_envs: expected an integer, got '1.5'"),
        (["--grid", "critic_hidden=64x64,6a"], "--grid critic_hidden:"),
        (["--grid", "actor_lr=1e-3,0.001"], "--grid actor_lr repeats a value: 0.001"),
        (["--grid", "tau=0.01", "--grid", "tau=0.02"], "--grid tau is given twice"),
        (["--grid", "tau=0.01,0.02", "--vmap", "gamma=0.9,0.99"], "takes no --vmap"),
        (["--grid", "critic_layer_norm=yes"], "--grid critic_layer_norm: expected true or false"),
    ],
)
def test_sweep_checks_every_setting_before_training(capsys, tmp_path, argv, message):
    out = tmp_path / "sweep"
    code, _, err = _run(capsys, "sweep", *TINY, "--steps", "256", "--out", str(out), *argv)
    assert code == 2 and message in err
    assert not out.exists()


def test_sweep_reads_seeds_as_jaxrl_train_does(tmp_path):
    """--seeds N is a count from --seed (a user's `--seeds 2` trained seed 2 alone), a list is
    the seeds themselves."""
    from jaxrl.experiments import sweep

    base = [*TINY, "--steps", "256", "--grid", "tau=0.01,0.02", "--out", str(tmp_path / "s")]
    for more, seeds in (
        ([], [0]),
        (["--seeds", "2"], [0, 1]),
        (["--seeds", "2", "--seed", "3"], [3, 4]),
        (["--seed", "5"], [5]),
        (["--seeds", "4,7"], [4, 7]),
    ):
        _, plan, planned, _ = sweep.plan_sweep([*base, *more])
        assert planned == seeds, more
        assert sorted({config.seed for _, _, config, _ in plan}) == seeds, more


def test_render_command_draws_a_classic_run_into_its_folder(capsys, tmp_path):
    """`jaxrl render RUN` of a classic/pendulum run (no MuJoCo model): RUN/policy.mp4."""
    out = tmp_path / "run"
    argv = [*TINY, "--steps", "256", "--eval-every", "256"]
    code, _, err = _run(capsys, "train", *argv, "--out", str(out), "--quiet")
    assert code == 0, err
    code, stdout, err = _run(
        capsys, "render", str(out), "--steps", "10", "--width", "64", "--height", "48"
    )
    assert code == 0, err
    assert f"wrote {out / 'policy.mp4'}: 11 frames of 64x48" in stdout
    assert (out / "policy.mp4").stat().st_size > 0


@pytest.mark.slow
def test_render_command_writes_a_video_of_the_saved_policy(capsys, tmp_path):
    """`jaxrl render RUN` on a Brax task: the saved policy's greedy episode, read back."""
    from tests.test_render import _pixels_moved, _read_video

    out = tmp_path / "run"
    argv = [*TINY, "--env", "brax/inverted_pendulum", "--steps", "256", "--eval-every", "256"]
    code, _, err = _run(capsys, "train", *argv, "--out", str(out), "--quiet")
    assert code == 0, err
    video = tmp_path / "policy.mp4"
    code, stdout, err = _run(
        capsys,
        "render",
        str(out),
        "--out",
        str(video),
        "--steps",
        "30",
        "--width",
        "64",
        "--height",
        "48",
    )
    assert code == 0, err
    frames, _ = _read_video(video)
    assert 2 <= len(frames) <= 31 and frames.shape[1:] == (48, 64, 3)
    assert f"wrote {video}: {len(frames)} frames of 64x48" in stdout
    assert _pixels_moved(frames) >= 6  # codec noise: 0-2 (test_render.py); the fall moves 12
    code, _, err = _run(capsys, "render", str(tmp_path / "nothing"))
    assert code == 2 and "no such folder" in err
