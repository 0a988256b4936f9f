"""`jaxrl collect` (`jaxrl.data.collect`): a run's policy played in its envs and written as a
Minari dataset that Minari reads, checked against the policy itself; bad input refused before
anything is loaded or compiled."""

import json

import jax
import minari
import numpy as np
import pytest

import jaxrl
from jaxrl import cli
from jaxrl.data import collect, minari_format
from jaxrl.data.collect import CollectSettings
from jaxrl.errors import ConfigError
from jaxrl.run import driver
from tests import tiny

EPISODE = 50  # the tiny run's time limit, in steps


@pytest.fixture(autouse=True)
def datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    return tmp_path / "datasets"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny SAC run on the pendulum, episodes of 50 steps, normalised observations."""
    folder = tmp_path_factory.mktemp("collect") / "run"
    config = tiny.off_policy(normalize_observations=True, episode_length=EPISODE)
    driver.train(config, tiny.SAC, folder, progress=None)
    return folder


def test_collected_rows_are_the_policy_s_actions_in_its_env(run):
    """Noise 0: every action is the policy's greedy action of the row's observation (the
    run's normalisation applied); rows follow each other within episodes; every episode ends
    at the time limit, truncated, never terminated; the reference returns are stored."""
    settings = CollectSettings(str(run), "jaxrl/pendulum-greedy-v0", steps=400, envs=4)
    report = collect.collect(settings, log=lambda line: None)
    assert report["steps"] == 400 and report["episodes"] == 8 and report["cut_episodes"] == 0
    data = minari_format.load("jaxrl/pendulum-greedy-v0")
    policy = jaxrl.load_policy(run)
    np.testing.assert_allclose(data.action, policy(data.obs), rtol=1e-5, atol=1e-6)
    assert data.rows == 400 and not data.terminated.any()
    assert np.flatnonzero(data.truncated).tolist() == list(range(EPISODE - 1, 400, EPISODE))
    inside = np.flatnonzero(data.done == 0)
    np.testing.assert_array_equal(data.next_obs[inside], data.obs[inside + 1])
    # the pendulum's cost: -(theta^2 + 0.1 theta_dot^2 + 0.001 u^2), theta from (cos, sin)
    cos, sin, speed = data.obs.T
    torque = 2.0 * data.action[:, 0]
    cost = np.arctan2(sin, cos) ** 2 + 0.1 * speed**2 + 0.001 * torque**2
    np.testing.assert_allclose(data.reward, -cost, rtol=1e-4, atol=1e-4)
    meta = minari.load_dataset("jaxrl/pendulum-greedy-v0").storage.metadata
    info = meta["jaxrl"]
    assert (info["env"], info["algo"], info["episode_length"]) == ("classic/pendulum", "sac", 50)
    assert info["policy_env_steps"] == 256 and info["noise"] == 0.0
    assert meta["ref_min_score"] == info["random_return"] == report["random_return"]
    assert meta["ref_max_score"] == info["policy_return"]  # no --expert-score given
    # the greedy policy's data is its greedy return's: the same policy on other starts
    assert report["behaviour_return"] == pytest.approx(np.mean(data.episode_returns))


def test_noise_moves_actions_by_its_std_and_an_expert_score_sets_the_hundred(run):
    settings = CollectSettings(
        str(run), "jaxrl/pendulum-noisy-v0", steps=400, envs=4, noise=0.3, expert_score=0
    )
    collect.collect(settings, log=lambda line: None)
    data = minari_format.load("jaxrl/pendulum-noisy-v0")
    greedy = np.asarray(jaxrl.load_policy(run)(data.obs))
    inside = np.abs(data.action) < 1  # not clipped
    moved = (data.action - greedy)[inside]
    assert abs(moved.std() - 0.3) < 0.05 and abs(moved.mean()) < 0.06
    assert data.metadata["ref_max_score"] == 0.0
    assert data.metadata["jaxrl"]["reference"] == "expert_score"


def test_the_same_seed_collects_the_same_data_and_another_seed_other_data(run):
    def rows(dataset_id, seed):
        settings = CollectSettings(str(run), dataset_id, 200, noise=0.2, envs=4, seed=seed)
        collect.collect(settings, log=lambda line: None)
        return minari_format.load(dataset_id)

    first, again, other = (
        rows("jaxrl/first-v0", 0),
        rows("jaxrl/again-v0", 0),
        rows("jaxrl/other-v0", 1),
    )
    np.testing.assert_array_equal(first.obs, again.obs)
    np.testing.assert_array_equal(first.action, again.action)
    assert not np.allclose(first.obs, other.obs)


def test_a_dataset_in_which_no_episode_ended_has_no_behaviour_return(run, capsys):
    """25 steps of 4 envs, episodes of 50: every episode cut, so no whole episode's return to
    average; the report says so (null in --json, strict JSON), not NaN."""
    argv = ["collect", str(run), "--dataset-id", "jaxrl/short-v0", "--steps", "100", "--envs"]
    assert cli.main([*argv, "4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out, parse_constant=pytest.fail)
    assert report["behaviour_return"] is None and report["cut_episodes"] == report["episodes"] == 4
    assert minari_format.load("jaxrl/short-v0").metadata["jaxrl"]["behaviour_return"] is None
    assert cli.main(["collect", str(run), "--dataset-id", "jaxrl/short-v1", "--steps", "100",
                     "--envs", "4"]) == 0  # fmt: skip
    assert "behaviour - (no episode ended in the data)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--steps", "0"], "--steps must be a positive integer"),
        (["--steps", "10", "--noise", "-1"], "--noise must be a finite std >= 0"),
        (["--steps", "10", "--envs", "0"], "--envs must be a positive integer"),
        (["--steps", "10", "--dataset-id", "nameless"], "is not a Minari dataset id"),
        (["--replay", "--steps", "10"], "--steps with --replay"),
        (["--replay", "--noise", "0.1"], "--noise with --replay"),
        ([], "--steps must be a positive integer"),
    ],
)
def test_bad_collect_flags_exit_2_with_one_line_and_write_nothing(
    run, datasets, capsys, flags, message
):
    argv = ["collect", str(run), "--dataset-id", "jaxrl/bad-v0", *flags]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not (datasets / "jaxrl").exists()


def test_an_existing_dataset_id_and_a_missing_source_are_refused(run, tmp_path, capsys):
    argv = ["collect", str(run), "--dataset-id", "jaxrl/once-v0", "--steps", "200", "--json"]
    assert cli.main([*argv, "--envs", "4"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 200
    assert cli.main(argv) == 2
    assert "a dataset of that id exists" in capsys.readouterr().err
    missing = [
        "collect",
        str(tmp_path / "nothing"),
        "--dataset-id",
        "jaxrl/missing-v0",
        "--steps",
        "9",
    ]
    assert cli.main(missing) == 2
    assert "no such run folder or policy file" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--steps"):
        CollectSettings(str(run), "jaxrl/negative-v0", steps=-5).check()


def test_a_replay_dataset_is_the_run_s_buffer_oldest_row_first(tmp_path, datasets, capsys):
    """`--replay`: the rows of a ring buffer that wrapped (30 slots of 4 envs after 64
    iterations), each env's oldest first, episodes cut where its rows ended one and at the
    stream's ends; the reference returns as for a played dataset. An on-policy run and a
    policy file are refused by name."""
    config = tiny.off_policy(episode_length=EPISODE, buffer_size=120)
    result = driver.train(config, tiny.SAC, tmp_path / "run", progress=None)
    buffer = jax.device_get(result.state.buffer)
    assert int(buffer.position) == 64 % 30  # wrapped twice, mid-way
    argv = ["collect", str(tmp_path / "run"), "--dataset-id", "jaxrl/replay-v0", "--replay"]
    assert cli.main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    data = minari_format.load("jaxrl/replay-v0")
    capacity, position = buffer.capacity, int(buffer.position)
    order = (position + np.arange(capacity)) % capacity  # full: the oldest slot is the next write
    assert int(buffer.size) == capacity and data.rows == report["steps"] == capacity * 4
    for name in ("obs", "action", "reward", "next_obs", "terminated"):
        expected = np.concatenate([getattr(buffer.data, name)[order, env] for env in range(4)])
        np.testing.assert_array_equal(getattr(data, name), expected)
    ends = np.concatenate([buffer.data.done[order, env] for env in range(4)])
    ends[capacity - 1 :: capacity] = 1.0  # each env's stream ends with the buffer
    np.testing.assert_array_equal(data.done, ends)
    meta = minari.load_dataset("jaxrl/replay-v0").storage.metadata
    info = meta["jaxrl"]
    assert info["kind"] == "replay" and info["noise"] is None
    assert meta["ref_min_score"] == info["random_return"] < 0

    ppo = tmp_path / "ppo"
    driver.train(tiny.on_policy(), tiny.PPO, ppo, progress=None)
    assert cli.main(["collect", str(ppo), "--dataset-id", "jaxrl/ppo-v0", "--replay"]) == 2
    assert "on-policy: it keeps no replay buffer" in capsys.readouterr().err
    policy_file = tmp_path / "sac.policy"
    jaxrl.load_policy(tmp_path / "run").save(policy_file)
    assert cli.main(["collect", str(policy_file), "--dataset-id", "jaxrl/p-v0", "--replay"]) == 2
    assert "a policy file holds no replay buffer" in capsys.readouterr().err
    assert not (datasets / "jaxrl" / "ppo-v0").exists()


def test_a_replay_dataset_of_several_seeds_is_the_member_s_buffer(tmp_path, datasets):
    """Of a run of 2 seeds, `--member 1` writes member 1's buffer, not member 0's."""
    config = tiny.off_policy(episode_length=EPISODE)
    result = driver.train(config, tiny.SAC, tmp_path / "run", progress=None, seeds=2)
    actions = np.asarray(result.state.buffer.data.action)  # [members, slots, envs, 1]
    for member in (0, 1):
        dataset_id = f"jaxrl/member{member}-v0"
        settings = CollectSettings(str(tmp_path / "run"), dataset_id, member=member, replay=True)
        collect.collect(settings, log=lambda line: None)
        data = minari_format.load(dataset_id)
        size = int(result.state.buffer.size[member])
        expected = np.concatenate([actions[member, :size, env] for env in range(4)])
        np.testing.assert_array_equal(data.action, expected)
