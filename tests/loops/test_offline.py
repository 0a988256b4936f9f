"""Offline runs (`jaxrl.loops.offline`): chunks of updates on a dataset on the device, no env
step, evaluation in the eval envs; their rows, checkpoints, statistics, seeds in one program,
exact resume, and the input they refuse. Then offline-to-online runs: the online chunks after
them, their batches mixing dataset and replay rows (`offpolicy.mixed_sample`), E2O's switch,
and their exact resume."""

import dataclasses
import json
import shutil

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl import checkpoint, cli, replay
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.data import collect, minari_format
from jaxrl.run import driver
from jaxrl.run.rows import learning_metrics
from tests import tiny

DATASET = "jaxrl/offline-test-v0"
EPISODE = 50


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """A dataset of 400 rows from a tiny SAC run's noisy policy on the pendulum."""
    root = tmp_path_factory.mktemp("offline")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MINARI_DATASETS_PATH", str(root / "datasets"))
        config = tiny.off_policy(normalize_observations=True, episode_length=EPISODE)
        driver.train(config, tiny.SAC, root / "run", progress=None)
        settings = collect.CollectSettings(str(root / "run"), DATASET, 400, noise=0.2, envs=4)
        collect.collect(settings, log=lambda line: None)
    return root / "datasets"


@pytest.fixture(autouse=True)
def _datasets_path(datasets, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(datasets))


def _config(**overrides):
    """An offline run of 64 updates in 2 chunks (2 updates of 16 rows an iteration)."""
    settings = dict(
        tiny.PENDULUM,
        total_steps=0,
        offline_updates=64,
        offline_eval_every=32,
        dataset=DATASET,
        batch_size=16,
        updates_per_step=2,
        episode_length=EPISODE,
        normalize_observations=True,
    )
    return TrainConfig(**{**settings, **overrides})


EDAC = tiny.agent("edac", num_critics=3)


def test_an_offline_run_learns_from_the_dataset_alone(tmp_path):
    result = driver.train(_config(), EDAC, tmp_path / "run", progress=None, checkpoint_every=1)
    rows = result.history
    assert [(r["phase"], r["offline_updates"], r["step"], r["env_steps"]) for r in rows] == [
        ("offline", 32, 32, 0),
        ("offline", 64, 64, 0),
    ]
    assert all(np.isfinite(r["eval_return"]) and r["updates"] == 32 for r in rows)
    assert checkpoint.steps(tmp_path / "run/checkpoints") == [32, 64]
    state = result.state
    assert int(state.agent.step) == 64 and int(state.iteration) == 0  # no env step
    assert int(state.buffer.size) == 0  # the training envs' replay never written
    data = minari_format.load(DATASET)
    np.testing.assert_allclose(state.obs_stats.mean, data.obs.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.obs_stats.var, data.obs.var(0), rtol=1e-4, atol=1e-6)
    assert float(state.obs_stats.count) == data.rows
    saved = json.loads((tmp_path / "run/config.json").read_text())
    assert saved["dataset"] == {"id": DATASET, "rows": 400, "fingerprint": data.fingerprint()}
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["final_eval_return"] == rows[-1]["eval_return"]


def test_the_dataset_is_what_the_updates_read():
    """The same run on a dataset whose rewards are negated learns other critics."""
    steps, _ = _stream_of(minari_format.load(DATASET))
    steps["reward"] = -steps["reward"]
    _write_stream("jaxrl/negated-v0", steps)
    one = driver.train(_config(offline_updates=32), EDAC, None, progress=None)
    other = driver.train(
        _config(offline_updates=32, dataset="jaxrl/negated-v0"), EDAC, None, progress=None
    )
    assert one.history[0]["q_mean"] < other.history[0]["q_mean"]


def _stream_of(data):
    """The dataset's rows as one env's stream [R, 1] (its episodes end where `done` is 1)."""
    truncated = np.maximum(data.truncated, data.done - data.terminated)
    steps = {
        "obs": data.obs, "action": data.action, "reward": data.reward,
        "next_obs": data.next_obs, "terminated": data.terminated, "truncated": truncated,
    }  # fmt: skip
    return {k: v[:, None] for k, v in steps.items()}, None


def test_seeds_train_offline_in_one_program_as_each_alone():
    together = driver.train(_config(), EDAC, None, progress=None, seeds=2)
    alone = driver.train(_config(seed=1), EDAC, None, progress=None)
    second = jax.tree.map(lambda x: x[1], together.state.agent)
    chex.assert_trees_all_close(second, alone.state.agent, rtol=1e-5, atol=1e-6)
    assert together.history[-1]["eval_returns"][1] == pytest.approx(
        alone.history[-1]["eval_return"], rel=1e-5, abs=1e-4
    )


def test_an_offline_run_resumes_bit_exactly(tmp_path):
    full = driver.train(_config(), EDAC, tmp_path / "full", progress=None)
    driver.train(_config(), EDAC, tmp_path / "cut", progress=None, checkpoint_every=1)
    shutil.rmtree(tmp_path / "cut/checkpoints/64")  # killed after the first chunk's checkpoint
    (tmp_path / "cut/summary.json").unlink()
    resumed = driver.resume(tmp_path / "cut", progress=None)
    chex.assert_trees_all_equal(resumed.state.agent, full.state.agent)
    assert learning_metrics(resumed.history) == learning_metrics(full.history)


def _write_stream(dataset_id, steps):
    episodes, _ = minari_format.episodes_from_steps(steps)
    minari_format.write(dataset_id, episodes, ref_min_score=0, ref_max_score=1, info={},
                        description="a test's", algorithm_name="test")  # fmt: skip


def test_a_resume_refuses_a_dataset_that_changed(tmp_path, datasets):
    steps, _ = _stream_of(minari_format.load(DATASET))
    _write_stream("jaxrl/changing-v0", steps)
    config = _config(dataset="jaxrl/changing-v0")
    driver.train(config, EDAC, tmp_path / "run", progress=None, checkpoint_every=1)
    shutil.rmtree(tmp_path / "run/checkpoints/64")
    (tmp_path / "run/summary.json").unlink()
    shutil.rmtree(datasets / "jaxrl/changing-v0")
    steps["reward"] = steps["reward"] + 1.0
    _write_stream("jaxrl/changing-v0", steps)
    with pytest.raises(ConfigError, match="not the data this run trained on"):
        driver.resume(tmp_path / "run", progress=None)


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--dataset", "jaxrl/nowhere-v0"], "no such local Minari dataset"),
        (["--env", "classic/mountain_car_continuous"], "observations of size 3"),
        (["--dataset", None], "--offline-updates 64: name the data with --dataset"),
        (["--offline-updates", "0"], "--steps must be a positive integer"),
        (["--steps", "1000", "--offline-ratio", "1.5"], "--offline-ratio must be in [0, 1]"),
        (
            ["--offline-updates", "0", "--steps", "1000", "--offline-ratio", "0"],
            "nothing would read the dataset",
        ),
        (["--algo", "ppo"], "an on-policy algorithm learns only from its own rollouts"),
        (["--critic-obs", "privileged"], "observes one array"),
        (["--algo", "rebrac", "--n-step", "3"], "--n-step 3 with rebrac"),
    ],
)
def test_bad_offline_flags_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, flags, message):
    argv = {
        "--algo": "edac", "--env": "classic/pendulum", "--dataset": DATASET,
        "--offline-updates": "64", "--steps": "0", "--num-envs": "4", "--batch-size": "16",
        "--out": str(tmp_path / "run"),
    }  # fmt: skip
    argv.update(dict(zip(flags[::2], flags[1::2], strict=True)))
    words = [w for k, v in argv.items() if v is not None for w in (k, v)]
    assert cli.main(["train", *words, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_offline_algorithms_learn_the_pendulum_from_an_expert_s_data(tmp_path, monkeypatch):
    """The whole offline path on a real task: SAC's pendulum preset trained (one expert for
    every dataset: it takes most of the time), then
    - its policy collected with action noise 0.3 (20,000 rows), and TD3+BC and ReBRAC on that
      data alone. Random play scores about -1,240 and the noisy expert about -165; 4,000
      updates reach above -400 (TD3+BC -118 to -218 from 2,000 to 8,000 updates when measured,
      ReBRAC -140 to -165 from 2,000 to 4,000, and -204 where TD3+BC was at -442 after 1,000);
    - its replay buffer (D4RL's "replay": every transition of its training, uniform warm-up
      included), and SAC-RND on it. SAC-RND needs such broad data on this task (its 1-D action
      leaves the RND little to tell apart; benchmarks/notes/2026-12-07-sac-rnd-betas-probe.md)
      and learns from it beyond the data's own mean return, which cloning cannot."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    from jaxrl.config import resolve

    train, agent, _ = resolve.build_configs(["--preset", "sac_pendulum"])
    driver.train(train, agent, tmp_path / "expert", progress=None)
    settings = collect.CollectSettings(str(tmp_path / "expert"), "jaxrl/pendulum-v0", 20_000, 0.3)
    report = collect.collect(settings, log=lambda line: None)
    assert report["random_return"] < -1_000 and report["behaviour_return"] > -400
    replay = collect.CollectSettings(str(tmp_path / "expert"), "jaxrl/replay-v0", replay=True)
    replay_report = collect.collect(replay, log=lambda line: None)
    # TD3+BC normalises the states (the paper); ReBRAC and SAC-RND do not (their code's default).
    runs = (
        ("td3_bc", True, "jaxrl/pendulum-v0", 4_000),
        ("rebrac", False, "jaxrl/pendulum-v0", 4_000),
        ("sac_rnd", False, "jaxrl/replay-v0", 6_000),
    )
    for algo, normalize, dataset, updates in runs:
        config = TrainConfig(
            env="classic/pendulum", num_envs=4, eval_envs=16, total_steps=0,
            offline_updates=updates, offline_eval_every=updates // 2, dataset=dataset,
            batch_size=256, updates_per_step=8, normalize_observations=normalize, algo=algo,
        )  # fmt: skip
        result = driver.train(config, tiny.agent(algo, hidden=(64, 64)), None, progress=None)
        final = result.history[-1]["eval_return"]
        assert final > -400, algo
        assert minari_format.load(dataset).normalized_score(final) > 70, algo
    assert final > replay_report["behaviour_return"] + 300  # SAC-RND above its data


# --- Offline to online ------------------------------------------------------------------------


def test_mixed_batches_take_their_share_of_rows_from_the_dataset():
    """`offline_ratio` of each batch from the dataset (rewards 1000 + row), the rest from the
    replay (rewards below 100), online rows first; ratio 0 (or no dataset) is `sample`'s."""
    from jaxrl import sharding
    from jaxrl.loops import offpolicy
    from jaxrl.types import Transition

    def buffer(rows, envs, first_reward):
        """A full buffer of `rows` time slots of `envs` rows, rewards counting up."""
        rewards = first_reward + jnp.arange(rows * envs, dtype=jnp.float32).reshape(rows, envs)
        zeros = jnp.zeros((rows, envs, 1))
        full = Transition(zeros, zeros, rewards, zeros, 0 * rewards, 0 * rewards)
        return replay.ReplayBuffer(full, jnp.zeros((), jnp.int32), jnp.asarray(rows, jnp.int32))

    online, dataset = buffer(32, 4, 0.0), buffer(50, 1, 1000.0)
    config = tiny.off_policy(batch_size=8, updates_per_step=3, offline_ratio=0.25, n_step=1)
    data = sharding.data_axis(0, config.num_envs, config.batch_size)
    key = jax.random.PRNGKey(0)
    rows = offpolicy.mixed_sample(config, data, online, dataset, key, 0.99)
    assert rows.reward.shape == (3, 8)
    assert (rows.reward[:, :6] < 1000).all() and (rows.reward[:, 6:] >= 1000).all()
    alone = offpolicy.sample(config, data, online, key, 0.99)
    for no_mix in (dataclasses.replace(config, offline_ratio=0.0), config):
        given = dataset if no_mix.offline_ratio == 0 else None
        same = offpolicy.mixed_sample(no_mix, data, online, given, key, 0.99)
        chex.assert_trees_all_equal(same, alone)


E2O = tiny.agent("e2o", num_critics=3, ucb_candidates=4)


def _o2o(**overrides):
    """64 offline updates in 2 chunks, then 256 env steps online in 2 chunks (4 envs, updates
    from 32 rows on)."""
    return _config(total_steps=256, eval_every=128, learning_starts=32, buffer_size=512,
                   **overrides)  # fmt: skip


def test_an_offline_to_online_run_fine_tunes_online_after_its_offline_updates(tmp_path):
    result = driver.train(_o2o(), E2O, tmp_path / "run", progress=None, checkpoint_every=1)
    rows = result.history
    assert [(r["phase"], r["offline_updates"], r["env_steps"], r["step"]) for r in rows] == [
        ("offline", 32, 0, 32),
        ("offline", 64, 0, 64),
        ("online", 64, 128, 192),
        ("online", 64, 256, 320),
    ]
    assert checkpoint.steps(tmp_path / "run/checkpoints") == [64, 192, 320]  # the last 3
    # E2O's target: the offline minimum's weight 1 offline, 0 online (decay 0)
    assert [r["pessimism"] for r in rows] == [1.0, 1.0, 0.0, 0.0]
    state = result.state
    assert int(state.agent.online_from) == 64  # the switch, at the offline updates' end
    assert int(state.iteration) == 64 and int(state.buffer.size) == 64  # 64 steps of 4 envs
    # the online updates: every iteration from the 8th (32 rows) on, 2 updates each
    assert int(state.agent.step) == 64 + 2 * (64 - 7)
    assert all(np.isfinite(r["eval_return"]) for r in rows)


def test_a_pretrained_agent_acts_from_its_first_online_step():
    """After offline updates no uniform warm-up: the online rows' actions are the policy's from
    the first env step, whatever --warmup-actions says; from scratch the warm-up is uniform."""
    states = {}
    for updates in (64, 0):
        for warmup in ("uniform", "policy"):
            config = _o2o(offline_updates=updates, warmup_actions=warmup)
            states[updates, warmup] = driver.train(config, E2O, None, progress=None).state
    pretrained, scratch = states[64, "uniform"], states[0, "uniform"]
    chex.assert_trees_all_equal(pretrained.buffer, states[64, "policy"].buffer)
    chex.assert_trees_all_equal(pretrained.agent, states[64, "policy"].agent)
    warm = scratch.buffer.data.action[:8]  # the 32 rows before learning_starts
    assert not np.allclose(warm, states[0, "policy"].buffer.data.action[:8])


def test_rebrac_s_offline_and_online_batches_carry_the_next_actions_its_penalty_reads():
    """ReBRAC offline, then online with the dataset mixed in: its update runs on the loop's
    batches (it refuses one without next actions), and its critic penalty changes the
    critics' loss in both phases, so the next actions arrive known where rows go on."""
    loss = {}
    for coef in (0.0, 5.0):
        agent = tiny.agent("rebrac", critic_bc_coef=coef)
        rows = driver.train(_o2o(n_step=1), agent, None, progress=None).history
        assert [r["phase"] for r in rows] == ["offline", "offline", "online", "online"]
        assert all(np.isfinite(r["eval_return"]) and np.isfinite(r["critic_loss"]) for r in rows)
        loss[coef] = [r["critic_loss"] for r in rows]
    assert all(a != b for a, b in zip(loss[0.0], loss[5.0], strict=True))


def test_the_online_batches_read_the_dataset_at_their_ratio():
    """An online run from scratch that mixes in a dataset whose rewards are -100 lower: its
    critics' TD errors are that large where batches read it (half of each), and the run without
    a dataset is the same whatever dataset is named nowhere."""
    steps, _ = _stream_of(minari_format.load(DATASET))
    steps["reward"] = steps["reward"] - 100.0
    _write_stream("jaxrl/lowered-o2o-v0", steps)
    sac_n = tiny.agent("sac_n", num_critics=2)
    loss = {}
    for name in (None, DATASET, "jaxrl/lowered-o2o-v0"):
        config = _o2o(offline_updates=0, dataset=name, offline_ratio=0.5 if name else 0.0)
        loss[name] = driver.train(config, sac_n, None, progress=None).history[-1]["critic_loss"]
    assert loss["jaxrl/lowered-o2o-v0"] > 20 * max(loss[None], loss[DATASET])
    assert loss[DATASET] != loss[None]  # the same data's rows, but other rows than the replay's


def test_an_offline_to_online_run_resumes_bit_exactly(tmp_path):
    full = driver.train(_o2o(), E2O, tmp_path / "full", progress=None)
    driver.train(_o2o(), E2O, tmp_path / "cut", progress=None, checkpoint_every=1)
    shutil.rmtree(tmp_path / "cut/checkpoints/320")  # killed after the first online chunk
    (tmp_path / "cut/summary.json").unlink()
    resumed = driver.resume(tmp_path / "cut", progress=None)
    chex.assert_trees_all_equal(resumed.state.agent, full.state.agent)
    assert learning_metrics(resumed.history) == learning_metrics(full.history)


def test_a_run_starts_from_a_finished_offline_run_with_init_from(tmp_path):
    offline = driver.train(_config(), E2O, tmp_path / "offline", progress=None)
    config = _o2o(offline_updates=0, init_from=str(tmp_path / "offline"))
    first = driver.train(dataclasses.replace(config, total_steps=128), E2O, None, progress=None)
    # one online chunk of 32 iterations, updates from the 8th on: 2 x 25 after the 64 offline
    assert int(first.state.agent.step) == 64 + 2 * 25
    assert int(first.state.agent.online_from) == 64
    assert first.history[0]["pessimism"] == 0.0
    # the state it starts from: the offline run's agent and statistics, for one seed and for
    # every member of a grid of seeds
    from jaxrl.run import state as run_state

    for seeds in (None, 2):
        run_config, run_grid = driver._run_grid(config, E2O, seeds, None, None)
        trainer = driver.check_setting(run_config, E2O)
        members = run_state.member_settings(trainer, E2O, run_grid)
        fresh = run_state.initial_state(trainer, run_grid, members)
        source = run_state.check_init_from(trainer.config)
        started = run_state.initialized_from(source, fresh, run_grid)
        agent, stats = started.agent, started.obs_stats
        if seeds:
            agent, stats = jax.tree.map(lambda x: x[1], (agent, stats))
        chex.assert_trees_all_equal(agent, offline.state.agent)
        chex.assert_trees_all_equal(stats, offline.state.obs_stats)
        chex.assert_trees_all_equal(started.env_state, fresh.env_state)  # its own envs


@pytest.mark.parametrize(
    "source,message",
    [("nowhere", "--init-from"), ("sac", "a run of sac, not of e2o")],
)
def test_bad_init_from_exits_2_with_one_line(tmp_path, capsys, source, message):
    if source == "sac":
        driver.train(tiny.off_policy(total_steps=128, eval_every=128), tiny.SAC,
                     tmp_path / "sac", progress=None)  # fmt: skip
    argv = ["train", "--algo", "e2o", "--env", "classic/pendulum", "--steps", "256",
            "--num-envs", "4", "--batch-size", "16", "--learning-starts", "32", "--quiet",
            "--init-from", str(tmp_path / source), "--out", str(tmp_path / "run")]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
