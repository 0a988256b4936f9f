"""Minari datasets in and out (`jaxrl.data.minari_format`): a collected stream cut into
episodes, a round trip through Minari's own reader, and datasets jaxrl refuses. No jax."""

import gymnasium
import minari
import numpy as np
import pytest
from minari.data_collector import EpisodeBuffer

from jaxrl.data import minari_format
from jaxrl.data.minari_format import DatasetError


@pytest.fixture(autouse=True)
def datasets(tmp_path, monkeypatch):
    """Every test's datasets in a folder of its own."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    return tmp_path / "datasets"


def _stream(length=6, num_envs=2, obs_size=3, seed=0):
    """A stream [T, N] as `jaxrl collect` plays it: env 0 terminates after step 1 and is cut
    by the time limit after step 4; env 1 runs through without an end."""
    rng = np.random.default_rng(seed)
    terminated = np.zeros((length, num_envs), np.float32)
    truncated = np.zeros((length, num_envs), np.float32)
    terminated[1, 0], truncated[4, 0] = 1, 1
    return {
        "obs": rng.normal(size=(length, num_envs, obs_size)).astype(np.float32),
        "action": rng.uniform(-1, 1, (length, num_envs, 2)).astype(np.float32),
        "reward": rng.normal(size=(length, num_envs)).astype(np.float32),
        "next_obs": rng.normal(size=(length, num_envs, obs_size)).astype(np.float32),
        "terminated": terminated,
        "truncated": truncated,
    }


def _write(dataset_id="jaxrl/test-v0", steps=None, low=-10.0, high=90.0):
    steps = _stream() if steps is None else steps
    episodes, _ = minari_format.episodes_from_steps(steps)
    info = {"env": "classic/pendulum", "noise": 0.1}
    minari_format.write(
        dataset_id,
        episodes,
        ref_min_score=low,
        ref_max_score=high,
        info=info,
        description="a test",
        algorithm_name="jaxrl sac",
    )
    return steps, episodes


def test_a_stream_is_cut_after_each_end_and_its_running_episodes_are_kept_truncated():
    steps = _stream()
    episodes, whole = minari_format.episodes_from_steps(steps)
    # env 0: steps 0-1 (terminated), 2-4 (time limit), 5 (cut); env 1: steps 0-5 (cut)
    assert [len(e["rewards"]) for e in episodes] == [2, 3, 1, 6]
    assert whole == [True, True, False, False]
    assert [e["terminations"].tolist() for e in episodes[:2]] == [[False, True], [False] * 3]
    assert [e["truncations"][-1] for e in episodes] == [False, True, True, True]
    first = episodes[0]
    np.testing.assert_array_equal(first["observations"][:2], steps["obs"][:2, 0])
    np.testing.assert_array_equal(first["observations"][2], steps["next_obs"][1, 0])
    np.testing.assert_array_equal(episodes[1]["observations"][0], steps["obs"][2, 0])
    np.testing.assert_array_equal(episodes[3]["observations"][-1], steps["next_obs"][5, 1])
    np.testing.assert_array_equal(episodes[3]["actions"], steps["action"][:, 1])


def test_a_written_dataset_reads_back_through_minari_and_as_transitions():
    steps, episodes = _write()
    dataset = minari.load_dataset("jaxrl/test-v0")  # Minari's own reader
    assert dataset.total_episodes == 4 and dataset.total_steps == 12
    for episode, written in zip(dataset.iterate_episodes(), episodes, strict=True):
        np.testing.assert_array_equal(episode.observations, written["observations"])
        np.testing.assert_array_equal(episode.terminations, written["terminations"])
        np.testing.assert_array_equal(episode.truncations, written["truncations"])
    np.testing.assert_allclose(minari.get_normalized_score(dataset, np.array([40.0])), [0.5])

    data = minari_format.load("jaxrl/test-v0")
    assert (data.rows, data.obs_size, data.action_size, data.env) == (12, 3, 2, "classic/pendulum")
    # env-major rows, each row's next observation the one its step reached
    obs = np.concatenate([steps["obs"][:, 0], steps["obs"][:, 1]])
    next_obs = np.concatenate([steps["next_obs"][:, 0], steps["next_obs"][:, 1]])
    np.testing.assert_array_equal(data.obs, obs)
    ends = [1, 4, 5, 11]  # each episode's last row
    middle = np.setdiff1d(np.arange(12), ends)
    np.testing.assert_array_equal(data.next_obs[ends], next_obs[ends])
    np.testing.assert_array_equal(data.next_obs[middle], obs[middle + 1])
    assert np.flatnonzero(data.terminated).tolist() == [1]
    assert np.flatnonzero(data.truncated).tolist() == [4, 5, 11]
    assert np.flatnonzero(data.done).tolist() == ends
    np.testing.assert_allclose(data.reward, np.concatenate([steps["reward"][:, e] for e in (0, 1)]))
    np.testing.assert_allclose(data.episode_returns, [e["rewards"].sum() for e in episodes])
    np.testing.assert_allclose(data.normalized_score([40.0, -10.0]), [50.0, 0.0])
    assert data.metadata["jaxrl"] == {"format": 1, "env": "classic/pendulum", "noise": 0.1}
    # by folder as well as by id
    folder = minari_format.datasets_root() / "jaxrl/test-v0"
    assert minari_format.load(str(folder)).rows == 12


def test_ids_that_minari_refuses_or_that_exist_are_named(datasets):
    with pytest.raises(
        DatasetError, match=r"--dataset-id 'pendulum' is not a Minari dataset id: .*NAME-v<N>"
    ):
        minari_format.check_new_id("pendulum")
    assert minari_format.check_new_id("jaxrl/new-v0") == datasets / "jaxrl/new-v0"
    _write()
    with pytest.raises(DatasetError, match="a dataset of that id exists"):
        minari_format.check_new_id("jaxrl/test-v0")


def test_an_unknown_dataset_is_named_with_the_closest_local_ids():
    _write()
    with pytest.raises(
        DatasetError, match=r"no such local Minari dataset.*Did you mean jaxrl/test-v0"
    ):
        minari_format.load("jaxrl/tset-v0")
    with pytest.raises(DatasetError, match="local datasets: jaxrl/test-v0"):
        minari_format.load("other/far-away-v3")


def _minari_dataset(dataset_id, observation_space, action_space, observations, actions):
    steps = len(actions)
    buffer = EpisodeBuffer(
        id=0,
        observations=observations,
        actions=actions,
        rewards=np.ones(steps),
        terminations=np.zeros(steps, bool),
        truncations=np.r_[np.zeros(steps - 1, bool), True],
        infos={},
    )
    with pytest.warns(UserWarning):
        minari.create_dataset_from_buffers(
            dataset_id,
            [buffer],
            observation_space=observation_space,
            action_space=action_space,
        )


def test_dict_observations_are_flattened_in_the_space_s_order_and_others_refused():
    box = lambda n: gymnasium.spaces.Box(-np.inf, np.inf, (n,), np.float32)  # noqa: E731
    actions = np.zeros((3, 1), np.float32)
    space = gymnasium.spaces.Dict({"b": box(2), "a": box(1)})  # Gymnasium sorts the keys
    obs = {"a": np.arange(4, dtype=np.float32)[:, None], "b": np.ones((4, 2), np.float32)}
    _minari_dataset("other/dict-v0", space, gymnasium.spaces.Box(-1, 1, (1,)), obs, actions)
    data = minari_format.load("other/dict-v0")
    np.testing.assert_array_equal(data.obs, [[0, 1, 1], [1, 1, 1], [2, 1, 1]])
    np.testing.assert_array_equal(data.next_obs[-1], [3, 1, 1])

    pixels = gymnasium.spaces.Dict({"image": gymnasium.spaces.Box(0, 255, (2, 2), np.uint8)})
    frames = {"image": np.zeros((4, 2, 2), np.uint8)}
    _minari_dataset("other/pixels-v0", pixels, gymnasium.spaces.Box(-1, 1, (1,)), frames, actions)
    with pytest.raises(DatasetError, match="observation entry 'image'"):
        minari_format.load("other/pixels-v0")

    discrete = gymnasium.spaces.Discrete(3)
    _minari_dataset("other/discrete-v0", box(1), discrete, np.zeros((4, 1), np.float32), [0, 1, 2])
    with pytest.raises(DatasetError, match="actions in Discrete"):
        minari_format.load("other/discrete-v0")


def test_a_dataset_without_reference_returns_cannot_normalise_scores():
    box = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    actions = np.zeros((3, 1), np.float32)
    _minari_dataset("other/plain-v0", box, box, np.zeros((4, 1), np.float32), actions)
    data = minari_format.load("other/plain-v0")
    assert data.done.tolist() == [0, 0, 1]
    with pytest.raises(DatasetError, match="no reference returns"):
        data.normalized_score(1.0)


def test_a_dataset_without_terminations_is_refused_by_name(datasets):
    """An episode whose terminations were never stored (a converter that wrote D4RL's
    `terminals` elsewhere, or none): which rows end in a terminal state is unknown, so it is
    refused rather than read as never terminating."""
    import h5py

    _write()
    path = datasets / "jaxrl/test-v0/data/main_data.hdf5"
    with h5py.File(path, "r+") as file:
        del file["episode_1/terminations"]
    with pytest.raises(DatasetError, match="episode 1 has no terminations"):
        minari_format.load("jaxrl/test-v0")
