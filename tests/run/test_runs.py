"""Whole-run checkpoints, exact resume, the run's log files, `load_policy` and `evaluate_run`."""

import csv
import dataclasses
import json
import shutil

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl import checkpoint, envs, logs, sac
from jaxrl.config import ConfigError
from jaxrl.config.options import RunOptions
from jaxrl.loops import make_train
from jaxrl.run import driver, runs
from jaxrl.run.rows import learning_metrics, rounding_note, seed_summary
from tests import tiny

QUIET = dict(progress=None)


def _sac(**overrides):
    """tiny.off_policy, 512 env steps (4 chunks) with normalised observations."""
    return tiny.off_policy(**{"total_steps": 512, "normalize_observations": True, **overrides})


def _ppo(**overrides):
    """tiny.on_policy, 1,024 env steps (4 chunks) with normalised observations."""
    return tiny.on_policy(**{"total_steps": 1024, "normalize_observations": True, **overrides})


def _stop_after(run_dir, env_steps):
    """The run folder as a process killed after checkpoint `env_steps` leaves it: later
    checkpoints gone, and metric rows past the checkpoint written (to be dropped on resume)."""
    for step in checkpoint.steps(run_dir / "checkpoints"):
        if step > env_steps:
            shutil.rmtree(run_dir / "checkpoints" / str(step))
    (run_dir / "summary.json").unlink()


def _assert_same_run(resumed, full):
    chex.assert_trees_all_equal(resumed.state, full.state)
    assert learning_metrics(resumed.history) == learning_metrics(full.history)


def test_off_policy_resume_is_bit_identical(tmp_path):
    options = RunOptions(checkpoint_every=1, keep_checkpoints=0)
    full = driver.train(_sac(), tiny.SAC, tmp_path / "full", options=options, **QUIET)
    assert checkpoint.steps(tmp_path / "full" / "checkpoints") == [128, 256, 384, 512]
    for stopped_at in (128, 256, 384):  # after chunk k, for every k the run can stop at
        stopped = tmp_path / f"stopped-{stopped_at}"
        shutil.copytree(tmp_path / "full", stopped)
        _stop_after(stopped, stopped_at)
        resumed = driver.resume(stopped, **QUIET)
        _assert_same_run(resumed, full)
        # The metric files hold the step-0 evaluation (kept by the checkpoint) and each chunk
        # once, as the uninterrupted run's do.
        rows = [json.loads(line) for line in (stopped / "metrics.jsonl").open()]
        assert resumed.start_row == full.start_row
        assert learning_metrics(rows) == learning_metrics([full.start_row, *full.history])
        with open(stopped / "metrics.csv") as f:
            steps = [int(r["env_steps"]) for r in csv.DictReader(f)]
            assert steps == [0, 128, 256, 384, 512]


def test_a_resumed_run_s_progress_starts_where_it_stopped(tmp_path, monkeypatch):
    options = RunOptions(checkpoint_every=1)
    driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", options=options, **QUIET)
    _stop_after(tmp_path / "run", 128)
    calls, real = [], logs.make_progress
    monkeypatch.setattr(
        logs, "make_progress", lambda *args, **kw: calls.append(args) or real(*args, **kw)
    )
    lines = []
    driver.resume(tmp_path / "run", progress=lines.append)
    assert [call[2:4] for call in calls] == [(256, 128)]  # (total, done): the bar starts at 128
    # It says which checkpoint it goes on from, then compiles and trains the rest.
    assert lines[0] == f"{tmp_path / 'run'}: resuming from its checkpoint at 128 env steps, to 256"
    assert len(lines) == 4 and "compiling" in lines[1] and "256/256 steps" in lines[3]


def test_extending_a_short_run_equals_the_long_run(tmp_path):
    """A run of 2 chunks resumed with --steps for 4 is the 4-chunk run (same seed): the
    checkpoint carries buffer, env states, key and counters, and nothing reads total_steps."""
    long = driver.train(_sac(), tiny.SAC, tmp_path / "long", **QUIET)
    driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "short", **QUIET)
    with pytest.raises(driver.ResumeError, match="is complete"):
        driver.resume(tmp_path / "short", **QUIET)
    lines = []
    extended = driver.resume(tmp_path / "short", total_steps=500, progress=lines.append)
    assert lines[0].endswith("--steps 500 rounded up to 512, whole chunks of 128 env steps")
    _assert_same_run(extended, long)
    saved = json.loads((tmp_path / "short" / "config.json").read_text())
    assert saved["train"]["total_steps"] == 512
    with pytest.raises(driver.ResumeError, match=r"is complete \(512 env steps\); pass --steps"):
        driver.resume(tmp_path / "short", total_steps=500, **QUIET)  # rounds up to its end


def test_on_policy_resume_is_bit_identical(tmp_path):
    options = RunOptions(checkpoint_every=1, keep_checkpoints=0)
    full = driver.train(_ppo(), tiny.PPO, tmp_path / "full", options=options, **QUIET)
    shutil.copytree(tmp_path / "full", tmp_path / "stopped")
    _stop_after(tmp_path / "stopped", 256)
    resumed = driver.resume(tmp_path / "stopped", **QUIET)
    _assert_same_run(resumed, full)


def test_checkpoint_without_buffer_resumes_with_an_empty_one(tmp_path):
    options = RunOptions(checkpoint_every=1, checkpoint_buffer=False, keep_checkpoints=2)
    full = driver.train(_sac(), tiny.SAC, tmp_path / "run", options=options, **QUIET)
    assert checkpoint.steps(tmp_path / "run" / "checkpoints") == [384, 512]  # the newest 2
    _stop_after(tmp_path / "run", 384)
    resumed = driver.resume(tmp_path / "run", **QUIET)
    # 128 new env steps refill 128 rows, above learning_starts: it learned again, but from
    # another buffer than the uninterrupted run's.
    assert int(resumed.state.buffer.rows) == 128
    assert resumed.history[-1]["updates"] > 0
    assert not np.allclose(
        jax.tree.leaves(resumed.state.agent)[0], jax.tree.leaves(full.state.agent)[0]
    )


def test_resume_without_a_checkpoint_starts_over_and_refuses_a_folder_without_a_run(tmp_path):
    first = driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", **QUIET)
    shutil.rmtree(tmp_path / "run" / "checkpoints")  # as if killed before its first checkpoint
    lines = []
    again = driver.resume(tmp_path / "run", progress=lines.append)
    assert "no complete checkpoint yet; starting the run over from step 0" in lines[0]
    strip = learning_metrics
    assert strip(again.history) == strip(first.history)
    rows = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    # Evaluated at step 0 again, and nothing of the first take kept.
    assert [json.loads(r)["env_steps"] for r in rows] == [0, 128, 256]
    assert again.start_row["eval_return"] == first.start_row["eval_return"]
    with pytest.raises(runs.RunError, match="no config.json"):
        driver.resume(tmp_path, **QUIET)


def test_checkpoint_of_another_env_is_refused(tmp_path):
    driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", **QUIET)
    path = tmp_path / "run" / "config.json"
    saved = json.loads(path.read_text())
    saved["train"]["env"] = "classic/mountain_car_continuous"
    saved["env_info"]["observation_size"] = 2
    saved["env_info"]["action_size"] = 1
    path.write_text(json.dumps(saved))
    with pytest.raises(checkpoint.CheckpointError, match="another run: env 'classic/pendulum'"):
        driver.resume(tmp_path / "run", total_steps=512, **QUIET)


def test_checkpoint_of_an_older_state_layout_is_refused(tmp_path):
    driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", **QUIET)
    (meta,) = [
        f
        for f in (tmp_path / "run" / "checkpoints" / "256" / "meta").rglob("*")
        if f.is_file() and "state_layout" in f.read_text()
    ]
    saved = json.loads(meta.read_text())
    del saved["state_layout"]  # as jaxrl wrote it before hyperparameters were state
    meta.write_text(json.dumps(saved))
    with pytest.raises(checkpoint.CheckpointError, match="state of layout 1.*reads layout 4"):
        driver.resume(tmp_path / "run", total_steps=512, **QUIET)
    with pytest.raises(checkpoint.CheckpointError, match="layout 1"):
        runs.load_policy(tmp_path / "run")
    # Layout 3, before critic heads had a state (SAC's `mean_std` became `head_state`).
    meta.write_text(json.dumps({**saved, "state_layout": 3}))
    with pytest.raises(checkpoint.CheckpointError, match="state of layout 3.*critic heads"):
        driver.resume(tmp_path / "run", total_steps=512, **QUIET)


def test_the_step_0_evaluation_is_the_untrained_policy_s_and_leaves_training_alone(tmp_path):
    """`RunOptions.eval_at_start`: the first state's policy evaluated before the first chunk,
    with a key of its own (the state's folded), so the run trains exactly as without it."""
    config = _sac(total_steps=256)
    result = driver.train(config, tiny.SAC, tmp_path / "run", **QUIET)
    off = RunOptions(eval_at_start=False)
    without = driver.train(config, tiny.SAC, tmp_path / "off", options=off, **QUIET)
    assert without.start_row is None
    assert learning_metrics(result.history) == learning_metrics(without.history)
    chex.assert_trees_all_equal(result.state.agent, without.state.agent)
    steps = [json.loads(line)["env_steps"] for line in (tmp_path / "off" / "metrics.jsonl").open()]
    assert steps == [128, 256]
    # The untrained policy's: the evaluation of the run's first state, by its own key.
    from jaxrl.loops.base import START_EVALUATION

    trainer = driver.check_setting(config, tiny.SAC)
    first = jax.jit(trainer.init)(jax.random.PRNGKey(config.seed))
    key = jax.random.fold_in(first.key, START_EVALUATION)
    expected = jax.jit(trainer.evaluate)(first.agent, first.obs_stats, key)
    start = result.start_row
    # To float32 rounding: here a program of its own, compiled apart from the run's.
    assert start["eval_return"] == pytest.approx(float(expected["eval_return"]), rel=1e-5)
    assert start["eval_return_std"] == pytest.approx(float(expected["eval_return_std"]), rel=1e-5)
    assert start["eval_return"] != result.history[0]["eval_return"]
    assert start["env_steps"] == 0 and start["eval_seconds"] > 0 and start["train_seconds"] == 0


def test_log_files_and_tensorboard(tmp_path):
    result = driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", **QUIET)
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    # The evaluation before the first chunk leads: step 0, no chunk, no losses (their columns
    # empty: the header has every row's columns).
    start = result.start_row
    assert start["env_steps"] == 0 and start["chunk"] is None and "critic_loss" not in start
    kept = [start, *result.history]
    assert [float(r["eval_return"]) for r in rows] == [r["eval_return"] for r in kept]
    assert rows[0]["chunk"] == "" and rows[0]["critic_loss"] == "" and rows[0]["env_steps"] == "0"
    # The metric files keep the rows' own names; TensorBoard's tags are grouped.
    jsonl = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert jsonl[0] == start
    assert {"eval_return", "critic_loss", "env_steps_per_second"} <= set(rows[1]) & set(jsonl[1])
    (events,) = (tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*")
    scalars = _read_scalars(events)
    assert scalars["eval/return"] == [(r["env_steps"], r["eval_return"]) for r in kept]
    assert [step for step, _ in scalars["losses/critic_loss"]] == [128, 256]
    assert scalars["perf/env_steps_per_second"] == [
        (r["env_steps"], r["env_steps_per_second"]) for r in kept
    ]
    assert scalars["episode/count"] == [(r["env_steps"], r["train_episodes"]) for r in kept]
    assert [step for step, _ in scalars["train/alpha"]] == [128, 256]
    # Every tag is in a group, and each column of the rows has exactly one.
    assert all(tag.count("/") == 1 for tag in scalars), sorted(scalars)
    numeric = {
        k
        for r in kept[:2]
        for k, v in r.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k != "chunk"
    }
    assert sorted(scalars) == sorted([*map(logs.tensorboard_tag, numeric), "perf/compile_seconds"])
    assert scalars["perf/compile_seconds"] == [(0, result.compile_seconds)]


def test_tensorboard_drops_the_events_of_rows_a_resume_or_rollback_does_not_keep(tmp_path):
    """TensorBoard reads a SessionLog START at step S as "drop the events at S and after from
    the files before it": a resume from a row purges past it; a rollback to the start (no rows
    kept, events left) purges from 0; a fresh run has nothing to purge."""
    from tensorboardX.proto import event_pb2

    def starts(path):
        import struct

        data, found, offset = path.read_bytes(), [], 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            if event.session_log.status == event_pb2.SessionLog.START:
                found.append(event.step)
        return found

    rows = [{"chunk": i, "env_steps": 100 * (i + 1), "eval_return": float(i)} for i in range(2)]
    written = []
    for history in ([], rows[:1], []):  # a fresh run, a resume after one row, a rollback
        logger = logs.RunLogger(tmp_path, history=history)
        logger.write(rows[len(history)])
        logger.close()
        (new,) = set((tmp_path / "tensorboard").glob("events.out.tfevents.*")) - set(written)
        written.append(new)
    assert [starts(path) for path in written] == [[], [101], [0]]


def test_tensorboard_tags_are_grouped():
    expected = {
        "eval_return": "eval/return",
        "eval_return_std": "eval/return_std",
        "eval_length": "eval/length",
        "eval_return_iqm": "eval/return_iqm",
        "best_seed": "eval/best_seed",
        "train_episode_return": "episode/return",
        "train_episodes": "episode/count",
        "critic_loss": "losses/critic_loss",
        "policy_loss": "losses/policy_loss",
        "value_loss": "losses/value_loss",
        "chunk_env_steps_per_second": "perf/chunk_env_steps_per_second",
        "wall_seconds": "perf/wall_seconds",
        "alpha": "train/alpha",
        "updates": "train/updates",
        "env_steps": "train/env_steps",
    }
    assert {key: logs.tensorboard_tag(key) for key in expected} == expected


def _read_scalars(path) -> dict:
    """TensorBoard's event file read back: TFRecords (length, crc, Event proto, crc) parsed
    with tensorboardX's own protos (tensorboard itself is not a dependency)."""
    import struct

    from tensorboardX.proto import event_pb2

    data, scalars, offset = path.read_bytes(), {}, 0
    while offset < len(data):
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        event = event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length])
        offset += 12 + length + 4
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append(
                (event.step, pytest.approx(value.simple_value))
            )
    return scalars


def test_chunk_rate_is_the_chunks_own(tmp_path):
    result = driver.train(_sac(total_steps=256), tiny.SAC, None, **QUIET)
    for row in result.history:
        assert row["chunk_env_steps_per_second"] == pytest.approx(
            128 / row["chunk_seconds"], rel=1e-2
        )


def test_load_policy_applies_the_saved_normalisation(tmp_path):
    config = _sac(total_steps=256)
    result = driver.train(config, tiny.SAC, tmp_path / "run", **QUIET)
    policy = jaxrl.load_policy(tmp_path / "run")
    assert policy.env_steps == 256
    stats = result.state.obs_stats
    assert float(stats.count) > 0 and not np.allclose(stats.mean, 0)
    agent = sac.make(tiny.SAC)
    obs = jnp.array([[1.0, 0.0, 0.5], [0.0, 1.0, -2.0]])
    key = jax.random.PRNGKey(0)
    normalised = jnp.clip((obs - stats.mean) / jnp.sqrt(stats.var + 1e-8), -10, 10)
    expected = agent.act(result.state.agent, normalised, key, 0.0)
    np.testing.assert_allclose(policy(obs), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(policy(obs[0]), expected[0], rtol=1e-6, atol=1e-6)
    raw = agent.act(result.state.agent, obs, key, 0.0)  # what reading raw observations gives
    assert not np.allclose(policy(obs), raw, atol=1e-3)


@pytest.mark.parametrize("make_config,agent_config", [(_sac, tiny.SAC), (_ppo, tiny.PPO)])
def test_policy_saves_to_one_small_file_that_loads_without_the_run(
    tmp_path, make_config, agent_config
):
    """`policy.save(path)` then `jaxrl.load_policy(path)`: the same actions, normalisation
    included, with the run folder gone; the file is far smaller than a checkpoint (no
    optimiser states, no replay); a short repr; a wrong observation size named as such."""
    import shutil

    driver.train(make_config(total_steps=256), agent_config, tmp_path / "run", **QUIET)
    policy = jaxrl.load_policy(tmp_path / "run")
    obs = jax.random.normal(jax.random.PRNGKey(1), (5, 3)) * 3
    expected = np.asarray(policy(obs))
    path = policy.save(tmp_path / "policies" / "pendulum.policy")  # its folder made
    shutil.rmtree(tmp_path / "run")
    loaded = jaxrl.load_policy(path)
    np.testing.assert_array_equal(loaded(obs), expected)
    # One observation is a product of one row, which XLA:CPU may compute with another kernel
    # than the batch's: a float32 ulp apart on some CPUs (an Intel Xeon here, 2026-11-28).
    np.testing.assert_allclose(loaded(obs[2]), expected[2], rtol=1e-6, atol=1e-6)
    assert (loaded.config, loaded.agent_config) == (policy.config, policy.agent_config)
    assert loaded.env_steps == 256 and loaded.obs_stats.count > 0
    params = sum(x.size * 4 for x in jax.tree.leaves(loaded.agent_state))
    assert path.stat().st_size < 1.5 * params + 8192  # parameters and statistics, little else
    algo = "ppo" if agent_config is tiny.PPO else "sac"
    assert repr(loaded) == f"Policy({algo} on classic/pendulum, 256 env steps, obs 3 -> action 1)"
    with pytest.raises(ValueError, match=r"observations of size 3.*shape \(5, 4\)"):
        loaded(jnp.zeros((5, 4)))
    with pytest.raises(runs.RunError, match="policy file: it holds one policy"):
        jaxrl.load_policy(path, member=1)
    (tmp_path / "other.bin").write_bytes(b"not a policy")
    with pytest.raises(runs.RunError, match="neither a run folder nor a policy file"):
        jaxrl.load_policy(tmp_path / "other.bin")


def test_first_progress_line_says_how_the_run_was_rounded_up():
    """5,000 steps of 16 envs with an evaluation every 1,000: whole chunks of 63 iterations,
    5,040 env steps; the first line says so, before the compile time."""
    lines = []
    config = _sac(total_steps=5000, num_envs=16, eval_every=1000, buffer_size=2048)
    result = driver.train(config, tiny.SAC, progress=lines.append)
    assert result.history[-1]["env_steps"] == 5040
    assert lines[0] == (
        "[sac classic/pendulum] 5,000 env steps rounded up to 5,040: 5 evaluation chunks of 63 "
        "loop iterations, each 16 env steps (16 envs)"
    )
    assert lines[1] == "[sac classic/pendulum] compiling"  # the store off: nothing is kept
    assert lines[2].startswith("[sac classic/pendulum] step 0, untrained | eval ")
    assert "compiled in" in lines[3]
    one = _sac(total_steps=10, num_envs=16, eval_every=10)
    assert rounding_note(one) == (
        "10 env steps rounded up to 16: 1 evaluation chunk of 1 loop iteration, each 16 env "
        "steps (16 envs)"
    )
    assert rounding_note(_sac(total_steps=10, num_envs=64, eval_every=10)).endswith(
        "each 64 env steps (64 envs); 6.4x the steps asked for"
    )
    lines.clear()
    driver.train(_sac(total_steps=512), tiny.SAC, progress=lines.append)  # 4 x 128: exact
    assert "compiled in" in lines[2] and not any("rounded" in line for line in lines)
    # An on-policy run whose evaluations (4 x 2 episodes of up to 200 steps) may step the envs
    # more than its training does says so first.
    lines.clear()
    driver.train(_ppo(), tiny.PPO, progress=lines.append)
    assert lines[0] == (
        "[ppo classic/pendulum] 4 evaluations of 2 episodes, up to 1,600 env steps, 1.6x the "
        "1,024 of training; --num-evals or --eval-every evaluates less often"
    )
    assert "compiled in" in lines[3]  # after "compiling" and the step-0 evaluation's line


def test_the_evaluation_cadence_defaults_to_a_count_per_run():
    """Neither eval_every nor num_evals: 20 evaluations, none closer than 5,000 env steps (a
    short run evaluates as it always did, a long one not hundreds of times); num_evals spaces
    that many evenly; the two together are refused. Where evaluation may step the envs more
    than training does, the first lines say so (issue 73's PPO run: 300 evaluations)."""
    from jaxrl.config import resolve
    from jaxrl.run.rows import evaluation_note

    ppo = ["--algo", "ppo", "--env", "brax/inverted_pendulum", "--steps", "1500000"]
    configs = {
        "long": resolve.build_configs(ppo)[0],
        "every": resolve.build_configs([*ppo, "--eval-every", "5000"])[0],
        "short": resolve.build_configs(["--steps", "20000"])[0],
        "count": resolve.build_configs(["--steps", "20000", "--num-evals", "3"])[0],
    }
    chunks = {name: (c.num_chunks, c.env_steps_per_chunk) for name, c in configs.items()}
    # Whole iterations: PPO's of 320 env steps (16 envs x 20), SAC's of 16.
    assert chunks["long"] == (20, 75_200) and chunks["every"] == (300, 5_120)
    assert chunks["short"] == (4, 5008) and chunks["count"] == (3, 6672)
    assert evaluation_note(configs["long"], 1000) is None
    note = evaluation_note(configs["every"], 1000)
    assert note.startswith(f"{chunks['every'][0]} evaluations of 16 episodes, up to ")
    assert note.endswith("--num-evals or --eval-every evaluates less often")
    with pytest.raises(ConfigError, match="eval_every .5000. and num_evals .3. both set"):
        _sac(eval_every=5000, num_evals=3)
    with pytest.raises(ConfigError, match="num_evals must be a positive integer, got 0"):
        _sac(eval_every=None, num_evals=0)


def test_a_run_with_num_evals_extended_keeps_its_chunks(tmp_path):
    """--steps on resume keeps the evaluation points of a run spaced by num_evals: the run
    of 2 evaluations over 256 steps, extended to 512, is the run of 4 over 512."""
    long = driver.train(_sac(eval_every=None, num_evals=4), tiny.SAC, tmp_path / "long", **QUIET)
    short = _sac(total_steps=256, eval_every=None, num_evals=2)
    driver.train(short, tiny.SAC, tmp_path / "short", **QUIET)
    extended = driver.resume(tmp_path / "short", total_steps=512, **QUIET)
    _assert_same_run(extended, long)


def test_progress_fn_gets_each_chunk_s_row_as_numbers(tmp_path):
    """Brax's convention, progress_fn(env_steps, metrics): called once per chunk, on resume
    too, with the row metrics.jsonl holds, as floats (nothing that is not a number)."""
    calls = []
    result = driver.train(
        _sac(), tiny.SAC, tmp_path / "run", progress=None, progress_fn=lambda *a: calls.append(a)
    )
    assert [step for step, _ in calls] == [0, 128, 256, 384, 512]  # step 0: untrained
    assert "critic_loss" not in calls[0][1]
    for (_, metrics), row in zip(calls, [result.start_row, *result.history], strict=True):
        assert all(type(v) is float for v in metrics.values())
        assert metrics["eval_return"] == row["eval_return"]
        assert "critic_loss" in metrics or row is result.start_row
        assert metrics["env_steps"] == row["env_steps"]
    resumed = []
    driver.resume(
        tmp_path / "run", total_steps=768, progress=None, progress_fn=lambda *a: resumed.append(a)
    )
    assert [step for step, _ in resumed] == [640, 768]


def test_evaluate_run_matches_the_trainers_evaluation(tmp_path, monkeypatch):
    config = _sac(total_steps=256, eval_envs=4)
    result = driver.train(config, tiny.SAC, tmp_path / "run", **QUIET)
    report = jaxrl.evaluate_run(tmp_path / "run", episodes=4, seed=3)
    trainer = make_train(config, sac.make(tiny.SAC))
    expected = jax.jit(trainer.evaluate)(
        result.state.agent, result.state.obs_stats, jax.random.PRNGKey(3)
    )
    assert report["mean"] == pytest.approx(float(expected["eval_return"]), rel=1e-6)
    returns = np.array(report["returns"])
    assert report["std"] == pytest.approx(returns.std(ddof=1))
    assert report["stderr"] == pytest.approx(returns.std(ddof=1) / 2)
    assert report == jaxrl.evaluate_run(tmp_path / "run", episodes=4, seed=3)
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint at env step 100"):
        jaxrl.evaluate_run(tmp_path / "run", checkpoint_step=100)
    # It builds the evaluation envs alone: a run's training envs (thousands, each with physics
    # of its own where randomized) are not needed to play its policy.
    from jaxrl import envs

    widths, wrap = [], envs.wrap
    monkeypatch.setattr(envs, "wrap", lambda base, n, **kw: widths.append(n) or wrap(base, n, **kw))
    jaxrl.evaluate_run(tmp_path / "run", episodes=3)
    assert widths == [3] and config.num_envs != 3


class _EmptyLeafPendulum:
    """classic/pendulum whose state carries a zero-size array, as an MJX state does
    (`data.act` of a model without actuator activations): orbax refuses to write such arrays."""

    def __init__(self):
        from jaxrl import envs

        self.env = envs.make("classic/pendulum")
        self.observation_size, self.action_size = self.env.observation_size, self.env.action_size
        self.episode_length = 200

    def reset(self, key):
        state = self.env.reset(key)
        return state.replace(info={**state.info, "act": jnp.zeros((0,))})

    def step(self, state, action):
        return self.env.step(state, action)


def test_checkpoint_keeps_states_with_zero_size_arrays(tmp_path):
    trainer = make_train(_sac(total_steps=256), sac.make(tiny.SAC), env=_EmptyLeafPendulum())
    state, _ = jax.jit(trainer.chunk)(trainer.init(jax.random.PRNGKey(0)))
    assert state.env_state.info["act"].shape == (4, 0)
    manager = checkpoint.manager(tmp_path / "checkpoints")
    checkpoint.save(manager, state, 128, [], {"algo": "sac"})
    restored = checkpoint.restore_state(
        tmp_path / "checkpoints", 128, like=trainer.init(jax.random.PRNGKey(1))
    )
    chex.assert_trees_all_equal(restored, state)


def test_stop_at_return_ends_the_run_with_a_checkpoint(tmp_path):
    options = RunOptions(stop_at_return=-1e9)  # reached by the first evaluation
    result = driver.train(_sac(), tiny.SAC, tmp_path / "run", options=options, **QUIET)
    assert [row["env_steps"] for row in result.history] == [128]
    assert checkpoint.steps(tmp_path / "run" / "checkpoints") == [128]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["stopped_at_return"]
    with pytest.raises(driver.ResumeError, match="reached its stop_at_return target"):
        driver.resume(tmp_path / "run", **QUIET)
    # --steps trains it further, without the target: it runs to the end.
    resumed = driver.resume(tmp_path / "run", total_steps=384, **QUIET)
    assert [row["env_steps"] for row in resumed.history] == [128, 256, 384]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["run"]["stop_at_return"] is None
    # A target never reached leaves the run whole.
    options = RunOptions(stop_at_return=1e9)
    whole = driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "b", options=options, **QUIET)
    assert len(whole.history) == 2
    with pytest.raises(jaxrl.ConfigError, match="stop_at_return must be a finite number"):
        RunOptions(stop_at_return=float("nan"))


class _BrokenStep:
    """The pendulum, whose step fails while the program is traced (a bug in a user's env)."""

    def __init__(self):
        from jaxrl import envs

        self.env = envs.make("classic/pendulum")
        self.observation_size, self.action_size = self.env.observation_size, 1
        self.episode_length = 200

    def reset(self, key):
        return self.env.reset(key)

    def step(self, state, action):
        raise TypeError("broken step")


def test_a_run_that_fails_to_compile_leaves_no_run_behind(tmp_path):
    """An env whose step fails while the program is traced: nothing is written, so the same
    --out can be used again. (An env option of the wrong kind fails earlier still, before
    the env is built: tests/test_cli.py.)"""
    with pytest.raises(TypeError, match="broken step"):
        driver.train(_sac(), tiny.SAC, tmp_path / "run", env=_BrokenStep(), **QUIET)
    assert not (tmp_path / "run").exists()
    with pytest.raises(envs.EnvOptionError, match="max_torque takes a number"):
        driver.train(_sac(env_options={"max_torque": "abc"}), tiny.SAC, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    # A folder whose run stopped before its first chunk (config.json, empty metrics, no
    # checkpoint) holds nothing to resume: a new run takes it over.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    result = driver.train(_sac(total_steps=128), tiny.SAC, tmp_path / "run", **QUIET)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["total_steps"] == 128 and len(result.history) == 1


class _FakeWandb:
    """Stands in for the wandb package: records init's arguments and the logged rows."""

    def __init__(self):
        self.inits, self.logged = [], []

    def init(self, **kwargs):
        self.inits.append(kwargs)
        return self

    def log(self, scalars, step):
        self.logged.append((step, scalars["eval_return"]))

    def finish(self):
        pass


def test_wandb_logs_every_row_under_the_run_s_own_id(tmp_path, monkeypatch):
    import sys

    fake = _FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    options = RunOptions(wandb="proj", checkpoint_every=1)
    full = driver.train(_sac(total_steps=256), tiny.SAC, tmp_path / "run", options=options, **QUIET)
    run_id = json.loads((tmp_path / "run" / "config.json").read_text())["run_id"]
    assert [init["id"] for init in fake.inits] == [run_id]
    assert fake.inits[0]["project"] == "proj" and fake.inits[0]["resume"] is None
    kept = [full.start_row, *full.history]
    assert fake.logged == [(r["env_steps"], r["eval_return"]) for r in kept]
    # Another run in a folder of the same name gets another id; a resume keeps its own.
    driver.train(_sac(total_steps=128), tiny.SAC, tmp_path / "b" / "run", options=options, **QUIET)
    assert fake.inits[1]["id"] != run_id
    driver.resume(tmp_path / "run", total_steps=384, **QUIET)
    assert fake.inits[2]["id"] == run_id and fake.inits[2]["resume"] == "allow"
    # Without the package: refused before training, and a resume can go on without W&B.
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(logs.WandbMissingError, match="--no-wandb"):
        driver.resume(tmp_path / "run", total_steps=512, **QUIET)
    resumed = driver.resume(tmp_path / "run", total_steps=512, wandb=False, **QUIET)
    assert resumed.history[-1]["env_steps"] == 512


def _progress_row(env_steps, rate, eval_return=-150.0, train_return=None):
    return {
        "env_steps": env_steps,
        "chunk_env_steps_per_second": rate,
        "eval_return": eval_return,
        "eval_return_std": 2.5,
        "train_episode_return": train_return,
    }


def test_progress_lines_show_steps_the_chunks_own_rate_eta_and_returns():
    line = logs.progress_line(_progress_row(2_000, 1_000.0, train_return=-300.0), "sac x", 62_000)
    assert line.startswith("[sac x]     2,000/62,000 steps")
    assert "1,000 env-steps/s" in line and "ETA 1:00" in line  # 60,000 steps at 1,000/s
    assert "eval   -150.00 ± 2.5" in line and "train ep   -300.00" in line
    assert "ETA 1:00:00" in logs.progress_line(_progress_row(0, 1.0), "a", 3_600)
    assert "train ep" not in logs.progress_line(_progress_row(10, 5.0), "a", 20)


def test_no_eta_from_a_chunk_of_the_warm_up():
    """An off-policy run's first chunks step at random with no updates, far faster than the
    rest (TD3 on CartpoleSwingup: 4,064 env-steps/s, then 169): a chunk that began before
    learning_starts shows no ETA; the next one does, at its own rate."""
    lines = []
    reporter = logs.make_progress(lines.append, "td3 x", 20_000, 0, warm_up_until=5_000)
    reporter.chunk(_progress_row(5_000, 4_064.0))
    reporter.chunk(_progress_row(10_000, 100.0))
    assert "ETA ?" in lines[0] and "ETA 1:40" in lines[1]  # 10,000 steps at 100/s
    resumed = []
    logs.make_progress(resumed.append, "td3 x", 20_000, 5_000, warm_up_until=5_000).chunk(
        _progress_row(10_000, 100.0)
    )
    assert "ETA 1:40" in resumed[0]


def test_progress_bar_follows_the_chunks(capsys):
    lines = []
    reporter = logs.make_progress(lines.append, "sac x", 4_000, 1_000)
    reporter.message("compiled in 1.0s")
    reporter.chunk(_progress_row(2_000, 500.0))
    reporter.close()
    assert lines[0] == "compiled in 1.0s" and "ETA 0:04" in lines[1]
    bar = logs.Progress("sac x", 4_000, 1_000, mode="bar")
    task = bar._bar.tasks[0]
    assert task.completed == 1_000 and task.total == 4_000  # a resume starts where it was
    bar.status("compiling")
    assert bar._bar.tasks[0].fields["rate"] == "compiling"
    capsys.readouterr()
    bar.message("[sac x] compiled in 1.0s")
    bar.chunk(_progress_row(3_000, 250.0, eval_return=12.5))
    task = bar._bar.tasks[0]
    assert task.completed == 3_000 and task.fields["eta"] == "0:04"
    assert task.fields["rate"] == "250 steps/s" and task.fields["eval"] == "12.50"
    bar.close()
    printed = capsys.readouterr().out  # the lines above the bar, the run's name kept
    assert "[sac x] compiled in 1.0s" in printed and "[sac x]     3,000/4,000 steps" in printed
    assert logs.make_progress(None, "a", 1, 0) is None


def test_progress_bar_keeps_its_graphic_and_every_column_in_80_columns(monkeypatch):
    import io

    import rich.console
    import rich.progress

    for width, steps_shown in ((80, False), (140, True)):
        console = rich.console.Console(
            file=io.StringIO(), width=width, force_terminal=True, color_system=None
        )
        monkeypatch.setattr(rich.progress, "get_console", lambda console=console: console)
        bar = logs._bar("fast_td3 playground/CheetahRun [seeds 0,1,2]")  # cut first
        fields = {"rate": "1.23M steps/s", "eta": "1:23:45", "eval": "-131.98"}
        bar.add_task("x", total=1_000_000, completed=500_000, **fields)
        console.print(bar.get_renderable())
        (line,) = console.file.getvalue().splitlines()
        assert len(line) <= width and line.count("━") >= 5 and " 50% " in line, line
        assert line.endswith(" 1.23M steps/s ETA 1:23:45 eval -131.98"), line
        assert ("500,000/1,000,000 steps" in line) == steps_shown, line
    shown = [logs._short(x) for x in (250, 999.6, 66_852, 999_999, 1_234_567, 2.5e9)]
    assert shown == ["250", "1k", "66.9k", "1M", "1.23M", "2,500M"]


# --- Several seeds in one program (--seeds). ----------------------------------------------


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_seeds_train_together_as_each_trains_alone_and_resume(tmp_path):
    options = RunOptions(checkpoint_every=2, keep_checkpoints=0)
    config = _sac(total_steps=512, normalize_observations=True)
    together = driver.train(
        config, tiny.SAC, tmp_path / "seeds", seeds="0,3", options=options, **QUIET
    )
    alone = driver.train(_sac(seed=3), tiny.SAC, tmp_path / "alone", **QUIET)
    # Seed 3 of the vmapped program is the run of seed 3 alone (to float tolerance: the
    # batched matmuls may round differently), chunk by chunk.
    start, *rows = _jsonl(tmp_path / "seeds" / "seed_3" / "metrics.jsonl")
    assert len(rows) == len(alone.history) == 4
    assert start["env_steps"] == 0  # its step-0 evaluation is the one of seed 3 alone
    np.testing.assert_allclose(start["eval_return"], alone.start_row["eval_return"], rtol=2e-3)
    for mine, theirs in zip(rows, alone.history, strict=True):
        for key in ("eval_return", "critic_loss", "actor_loss", "q_mean"):
            np.testing.assert_allclose(mine[key], theirs[key], rtol=2e-3, atol=1e-3)
    # The run's rows summarise the seeds: every seed's return, their mean, IQM, interval.
    summary = _jsonl(tmp_path / "seeds" / "metrics.jsonl")[-1]
    seed_0 = _jsonl(tmp_path / "seeds" / "seed_0" / "metrics.jsonl")[-1]
    assert summary["seeds"] == [0, 3]
    assert summary["eval_returns"] == [seed_0["eval_return"], rows[-1]["eval_return"]]
    assert summary["eval_return"] == pytest.approx(np.mean(summary["eval_returns"]))
    assert summary["eval_return_ci_low"] <= summary["eval_return"] <= summary["eval_return_ci_high"]
    assert summary["best_seed"] == [0, 3][int(np.argmax(summary["eval_returns"]))]
    assert "per_seed" not in summary
    saved = json.loads((tmp_path / "seeds" / "config.json").read_text())
    assert saved["seeds"] == [0, 3]
    # Resume after the first checkpoint: the same seeds, bit-identical to the straight run.
    _stop_after(tmp_path / "seeds", 256)
    resumed = driver.resume(tmp_path / "seeds", **QUIET)
    _assert_same_run(resumed, together)
    assert len(_jsonl(tmp_path / "seeds" / "seed_0" / "metrics.jsonl")) == 5  # step 0, 4 chunks


def test_seed_summary_matches_numpy():
    summary = seed_summary([1.0, 2.0, 3.0, 10.0, 4.0, 5.0, 6.0, 7.0])
    assert summary["eval_return_mean"] == pytest.approx(4.75)
    assert summary["eval_return_iqm"] == pytest.approx(np.mean([3.0, 4.0, 5.0, 6.0]))
    assert 2.5 < summary["eval_return_ci_low"] < 4.75 < summary["eval_return_ci_high"] < 7.5
    assert seed_summary([2.0])["eval_return_ci_low"] == 2.0


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("3", (0, 1, 2)),
        ("0,3,7", (0, 3, 7)),
        (2, (0, 1)),
        ([5], (5,)),
        ("5,", None),
        ("0,0", None),
        ("0", None),
        ("a", None),
    ],
)
def test_seeds_are_a_count_or_a_list(spec, expected):
    if expected is None:
        with pytest.raises(jaxrl.ConfigError, match="--seeds"):
            driver.parse_seeds(spec)
    else:
        assert driver.parse_seeds(spec) == expected


def test_a_count_of_seeds_starts_at_seed_and_a_list_stays_as_given():
    """`--seed 3 --seeds 3` trains seeds 3, 4 and 5 (it used to train 0, 1, 2, the --seed
    silently dropped); a list names its seeds whatever --seed says."""
    config = tiny.off_policy(seed=3)
    three, grid_ = driver._run_grid(config, tiny.SAC, "3", None, None)
    assert grid_.seeds == (3, 4, 5) and three.seed == 3
    _, listed = driver._run_grid(config, tiny.SAC, "0,7", None, None)
    assert listed.seeds == (0, 7)
    assert driver.parse_seeds(2, first=5) == (5, 6)


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--seeds", "0,0"], "listed twice"),
        (["--seeds", "two"], "give a count"),
        (["--seeds", "2", "--randomize", "mass"], "domain randomization"),
        (["--vmap", "batch_size=8,16"], "batch_size: it shapes the compiled program"),
        (["--vmap", "nope=1,2"], "no such field"),
        (["--vmap", "actor_lr=fast"], "must be numbers"),
        (["--vmap", "actor_lr=1e-3", "--vmap", "actor_lr=3e-3"], "given twice"),
        (["--vmap", "tau=0.5,2"], "tau must be in (0, 1]"),
        (["--vmap", "actor_lr"], "NAME=V1,V2"),
        (["--algo", "td3", "--vmap", "weight_decay=0,0.1"], "changes the program"),
        (["--algo", "ppo", "--vmap", "max_grad_norm=0,0.5"], "changes the program"),
    ],
)
def test_bad_seeds_or_vmap_fail_before_compiling_and_write_nothing(
    tmp_path, capsys, flags, message
):
    from jaxrl import cli

    out = tmp_path / "run"
    assert cli.main(["train", "--steps", "20000", "--out", str(out), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


# --- A settings grid in one program (--vmap). ----------------------------------------------


def test_a_vmapped_grid_trains_each_setting_as_alone_and_resumes(tmp_path):
    options = RunOptions(checkpoint_every=2, keep_checkpoints=0)
    grid = {"actor_lr": [1e-3, 3e-3], "gamma": [0.9, 0.99]}
    together = driver.train(
        _sac(), tiny.SAC, tmp_path / "grid", vmap=grid, seeds=[1], options=options, **QUIET
    )
    # Setting-major members: (1e-3, 0.9), (1e-3, 0.99), (3e-3, 0.9), (3e-3, 0.99).
    alone = driver.train(
        _sac(seed=1, gamma=0.9),
        dataclasses.replace(tiny.SAC, actor_lr=3e-3),
        tmp_path / "alone",
        **QUIET,
    )
    member = tmp_path / "grid" / "actor_lr=0.003,gamma=0.9" / "seed_1"
    start, *rows = _jsonl(member / "metrics.jsonl")
    assert len(rows) == len(alone.history) == 4
    np.testing.assert_allclose(start["eval_return"], alone.start_row["eval_return"], rtol=2e-3)
    for mine, theirs in zip(rows, alone.history, strict=True):
        for key in ("eval_return", "critic_loss", "actor_loss", "q_mean", "alpha"):
            np.testing.assert_allclose(mine[key], theirs[key], rtol=2e-3, atol=1e-3)
    chex.assert_trees_all_close(
        jax.tree.map(lambda x: x[2], together.state.agent.actor.params),
        alone.state.agent.actor.params,
        rtol=2e-3,
        atol=1e-4,
    )
    # The settings really differ: each member's losses are its own.
    losses = [
        _jsonl(tmp_path / "grid" / d / "seed_1" / "metrics.jsonl")[-1]["critic_loss"]
        for d in ("actor_lr=0.001,gamma=0.9", "actor_lr=0.001,gamma=0.99")
    ]
    assert losses[0] != losses[1]
    # Rows and summary name the best setting and summarise every one.
    last = _jsonl(tmp_path / "grid" / "metrics.jsonl")[-1]
    assert len(last["eval_returns"]) == 4 and len(last["settings"]) == 4
    best = max(last["settings"], key=lambda s: s["eval_return_mean"])
    assert last["best_setting"] == best["setting"] == last["settings"][0]["setting"]
    assert last["eval_return"] == best["eval_return_mean"]
    summary = json.loads((tmp_path / "grid" / "summary.json").read_text())
    assert summary["best_setting"] == last["best_setting"]
    assert summary["vmap"] == grid
    # A member's policy loads on its own (by index, or the best by default) and evaluates.
    policy = runs.load_policy(tmp_path / "grid", member=2)
    assert policy.member == "actor_lr=0.003,gamma=0.9/seed_1"
    obs = jnp.asarray([[1.0, 0.0, 0.5], [0.0, 1.0, -2.0]])
    alone_policy = runs.load_policy(tmp_path / "alone")
    np.testing.assert_allclose(policy(obs), alone_policy(obs), rtol=1e-3, atol=1e-4)
    best = int(np.argmax(last["eval_returns"]))
    assert runs.evaluate_run(tmp_path / "grid", episodes=2)["member"] == (
        runs.load_policy(tmp_path / "grid", member=best).member
    )
    # Resume after the first checkpoint: every member, bit-identical to the straight run.
    _stop_after(tmp_path / "grid", 256)
    resumed = driver.resume(tmp_path / "grid", **QUIET)
    _assert_same_run(resumed, together)


def test_a_ppo_grid_trains_each_setting_as_alone(tmp_path):
    config = tiny.on_policy(unroll_length=8, total_steps=256, eval_every=128)
    together = driver.train(
        config, tiny.PPO, vmap=["learning_rate=1e-3,1e-2", "clip_epsilon=0.1"], **QUIET
    )
    member = dataclasses.replace(tiny.PPO, learning_rate=1e-2, clip_epsilon=0.1)
    alone = driver.train(config, member, **QUIET)
    mine = together.history[-1]["per_seed"][1]
    for key in ("eval_return", "policy_loss", "value_loss"):
        np.testing.assert_allclose(mine[key], alone.history[-1][key], rtol=2e-3, atol=1e-4)
    assert together.history[-1]["per_seed"][0]["value_loss"] != mine["value_loss"]
