"""Minari datasets in and out: `write` stores episodes as a local Minari dataset, `load` reads
any local one with box observations and actions back as flat transitions (`OfflineData`).

Through the `minari` package, never by writing HDF5 by hand, so `minari.load_dataset(id)`
and Minari's own tools read what jaxrl writes. jaxrl's envs are not Gymnasium envs: a dataset
is made from episode buffers with the spaces given (`env=None`), and Minari then keeps no
env spec and drops `ref_min_score` / `ref_max_score` (it computes them only from a Gymnasium
env). `write` puts them back into the metadata afterwards, with jaxrl's own entry ("jaxrl":
the env's registry name, its options, how the data was made), so `minari.get_normalized_score`
works and `OfflineData.normalized_score` gives D4RL's scale (0 random, 100 expert).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import pathlib
import re
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from jaxrl.errors import JaxrlError

FORMAT = 1  # the version of jaxrl's "jaxrl" metadata entry


class DatasetError(JaxrlError, ValueError):
    """A dataset that is missing, cannot be written, or does not hold what jaxrl reads."""


@dataclasses.dataclass(frozen=True)
class OfflineData:
    """A dataset as transitions, rows [R] in episode order, on the host (numpy).

    `next_obs` is the observation each step reached (the episode's next observation in
    Minari's T + 1 list); `terminated` zeroes the bootstrap, truncations do not; `done` is 1
    where a row ends its episode (terminated, truncated, or the last row Minari stored of it),
    so nothing that follows episodes (n-step returns) crosses into the next one."""

    dataset_id: str
    obs: np.ndarray  # [R, obs_size] float32
    action: np.ndarray  # [R, action_size] float32
    reward: np.ndarray  # [R] float32
    next_obs: np.ndarray  # [R, obs_size] float32
    terminated: np.ndarray  # [R] float32
    truncated: np.ndarray  # [R] float32
    done: np.ndarray  # [R] float32
    episode_returns: np.ndarray  # [E] float64, undiscounted, every episode stored
    metadata: dict  # Minari's metadata; jaxrl's own entry under "jaxrl" where jaxrl wrote it

    @property
    def rows(self) -> int:
        return int(self.reward.shape[0])

    @property
    def obs_size(self) -> int:
        return int(self.obs.shape[1])

    @property
    def action_size(self) -> int:
        return int(self.action.shape[1])

    @property
    def env(self) -> str | None:
        """The registry name of the env the data came from, where jaxrl wrote it."""
        return self.metadata.get("jaxrl", {}).get("env")

    def normalized_score(self, returns: Any) -> np.ndarray:
        """D4RL's normalised score: 100 (return - random) / (reference - random), with the
        random policy's return and the reference (expert) return stored with the data."""
        low, high = self.metadata.get("ref_min_score"), self.metadata.get("ref_max_score")
        if low is None or high is None:
            raise DatasetError(
                f"{self.dataset_id} stores no reference returns (ref_min_score and "
                "ref_max_score), so its scores cannot be normalised"
            )
        if high == low:
            raise DatasetError(f"{self.dataset_id}: its reference and random returns are equal")
        return 100.0 * (np.asarray(returns, np.float64) - low) / (high - low)

    def fingerprint(self) -> str:
        """A short hash of every row (sha256 of the arrays' bytes): a resumed run checks that
        it reads the dataset it trained on."""
        import hashlib

        digest = hashlib.sha256()
        for name in ("obs", "action", "reward", "next_obs", "terminated", "done"):
            digest.update(np.ascontiguousarray(getattr(self, name)).tobytes())
        return digest.hexdigest()[:16]

    def transitions(self) -> Any:
        """The rows as a `jaxrl.types.Transition` of device arrays (what replay holds)."""
        import jax.numpy as jnp

        from jaxrl.types import Transition

        return Transition(
            obs=jnp.asarray(self.obs),
            action=jnp.asarray(self.action),
            reward=jnp.asarray(self.reward),
            next_obs=jnp.asarray(self.next_obs),
            terminated=jnp.asarray(self.terminated),
            done=jnp.asarray(self.done),
        )


# --- Writing ----------------------------------------------------------------------------------


def datasets_root() -> pathlib.Path:
    """Where Minari keeps local datasets: MINARI_DATASETS_PATH, else its default."""
    root = os.environ.get("MINARI_DATASETS_PATH")
    return pathlib.Path(root) if root else pathlib.Path.home() / ".minari" / "datasets"


def check_new_id(dataset_id: str) -> pathlib.Path:
    """The folder a new dataset `dataset_id` would take; DatasetError where the id is not one
    Minari takes (`[namespace/]name-v<version>`) or a dataset of that id exists."""
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except (ValueError, TypeError):  # TypeError: minari 0.5's parser on an id without -v<N>
        raise DatasetError(
            f"--dataset-id {dataset_id!r} is not a Minari dataset id: [NAMESPACE/]NAME-v<N>, "
            "e.g. jaxrl/cartpole-medium-v0"
        ) from None
    path = datasets_root() / dataset_id
    if path.exists():
        raise DatasetError(
            f"--dataset-id {dataset_id!r}: a dataset of that id exists at {path}; pick another "
            "name or version (or remove it with `minari delete`)"
        )
    return path


def episodes_from_steps(steps: dict[str, np.ndarray]) -> tuple[list[dict], list[bool]]:
    """Episodes of a collected stream: `steps` holds obs, action, reward, next_obs,
    terminated, truncated, leaves [T, N, ...] (T steps of N envs, auto-reset between
    episodes). Each env's stream is cut after every step that ended an episode; an episode
    still running at the end of the stream is kept and marked truncated, as D4RL's
    `timeouts` mark theirs. Returns (episodes, env-major, as dicts of numpy arrays with
    observations [T + 1]; for each, whether it ended on its own, not cut by the stream's end)."""
    obs, next_obs = steps["obs"], steps["next_obs"]
    ended = (steps["terminated"] > 0) | (steps["truncated"] > 0)
    length, num_envs = ended.shape
    episodes, whole = [], []
    for env in range(num_envs):
        ends = list(np.flatnonzero(ended[:, env]))
        if not ends or ends[-1] != length - 1:
            ends.append(length - 1)
        start = 0
        for end in ends:
            whole.append(bool(ended[end, env]))
            rows = slice(start, end + 1)
            truncations = steps["truncated"][rows, env] > 0
            truncations[-1] |= not ended[end, env]  # cut by the stream's end
            episodes.append(
                {
                    "observations": np.concatenate([obs[rows, env], next_obs[end, env][None]]),
                    "actions": steps["action"][rows, env],
                    "rewards": steps["reward"][rows, env],
                    "terminations": steps["terminated"][rows, env] > 0,
                    "truncations": truncations,
                }
            )
            start = end + 1
    return episodes, whole


def write(
    dataset_id: str,
    episodes: Iterable[dict],
    *,
    ref_min_score: float,
    ref_max_score: float,
    info: dict,
    description: str,
    algorithm_name: str,
) -> pathlib.Path:
    """Writes `episodes` (dicts of observations [T + 1, O], actions [T, A], rewards,
    terminations, truncations [T]) as the local Minari dataset `dataset_id`, with the
    reference returns and jaxrl's `info` ("jaxrl": env, options, source) in its metadata.
    Returns its folder. Box spaces: observations unbounded, actions in [-1, 1]."""
    import gymnasium
    from minari import create_dataset_from_buffers
    from minari.data_collector import EpisodeBuffer

    episodes = list(episodes)
    if not episodes:
        raise DatasetError(f"{dataset_id}: no episodes to write")
    obs_size = episodes[0]["observations"].shape[-1]
    action_size = episodes[0]["actions"].shape[-1]
    buffers = [
        EpisodeBuffer(
            id=index,
            observations=np.asarray(episode["observations"], np.float32),
            actions=np.asarray(episode["actions"], np.float32),
            rewards=np.asarray(episode["rewards"], np.float64),
            terminations=np.asarray(episode["terminations"], bool),
            truncations=np.asarray(episode["truncations"], bool),
            infos={},
        )
        for index, episode in enumerate(episodes)
    ]
    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (action_size,), np.float32)
    with warnings.catch_warnings():
        # Minari asks for an author, a code link and an env spec; a jaxrl env has no
        # Gymnasium spec, and jaxrl's own entry below says where the data came from.
        warnings.simplefilter("ignore", UserWarning)
        dataset = create_dataset_from_buffers(
            dataset_id,
            buffers,
            env=None,
            observation_space=observation_space,
            action_space=action_space,
            algorithm_name=algorithm_name,
            description=description,
        )
    dataset.storage.update_metadata(
        {
            "ref_min_score": float(ref_min_score),
            "ref_max_score": float(ref_max_score),
            "jaxrl": {"format": FORMAT, **info},
        }
    )
    return datasets_root() / dataset_id


# --- Reading ----------------------------------------------------------------------------------


def _open(id_or_path: str) -> tuple[Any, str]:
    """(MinariDataset, its id) of a local dataset id, or of a dataset's folder."""
    import minari

    path = pathlib.Path(id_or_path)
    for folder in (path, path / "data"):
        if (folder / "metadata.json").is_file():
            dataset = minari.MinariDataset(str(folder))
            return dataset, str(dataset.spec.dataset_id)
    if (datasets_root() / id_or_path / "data").is_dir():
        return minari.load_dataset(id_or_path), id_or_path
    try:
        local = sorted(minari.list_local_datasets())
    except Exception:  # a damaged dataset among them: the id alone is still worth naming
        local = []
    close = difflib.get_close_matches(id_or_path, local, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    where = f"; local datasets: {', '.join(local)}" if local and not close else ""
    raise DatasetError(
        f"--dataset {id_or_path!r}: no such local Minari dataset under {datasets_root()} "
        f"(MINARI_DATASETS_PATH) nor a dataset folder.{hint}{where}"
    )


def _flattener(space: Any, dataset_id: str):
    """A function from a dataset's observations (an array, or a dict of arrays) to [T, O]:
    1-D box observations as they are, a dict of them concatenated in the space's order."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Box):
        if len(space.shape) != 1:
            raise DatasetError(
                f"{dataset_id}: observations of shape {space.shape}; jaxrl's networks read "
                "flat vectors (pixels are not supported)"
            )
        return lambda obs: np.asarray(obs, np.float32)
    if isinstance(space, gymnasium.spaces.Dict):
        for name, entry in space.spaces.items():
            if not isinstance(entry, gymnasium.spaces.Box) or len(entry.shape) != 1:
                raise DatasetError(
                    f"{dataset_id}: observation entry {name!r} is {entry}; jaxrl flattens dict "
                    "observations of 1-D boxes only"
                )
        names = list(space.spaces)
        return lambda obs: np.concatenate([np.asarray(obs[n], np.float32) for n in names], -1)
    raise DatasetError(f"{dataset_id}: observation space {space} is neither a box nor a dict")


def _episodes(dataset, dataset_id: str):
    """The dataset's episodes in order; one whose stored fields lack one (Minari's reader raises
    KeyError naming the HDF5 object) refused by name."""
    episodes, index = iter(dataset.iterate_episodes()), 0
    while True:
        try:
            episode = next(episodes)
        except StopIteration:
            return
        except KeyError as error:
            found = re.search(r"object '(\w+)'", str(error))
            field = found.group(1) if found else str(error)
            why = (
                " (a terminal step's target does not bootstrap)" if field == "terminations" else ""
            )
            raise DatasetError(
                f"{dataset_id}: episode {index} has no {field}; offline learning needs them{why}"
            ) from None
        yield episode
        index += 1


def load(id_or_path: str) -> OfflineData:
    """A local Minari dataset (its id, or its folder) as transitions. DatasetError, naming
    the problem, where it is missing, its actions are not a 1-D box, its observations are
    neither a 1-D box nor a dict of them, or an episode lacks terminations."""
    dataset, dataset_id = _open(id_or_path)
    action_space = dataset.action_space
    import gymnasium

    if not isinstance(action_space, gymnasium.spaces.Box) or len(action_space.shape) != 1:
        raise DatasetError(f"{dataset_id}: actions in {action_space}; jaxrl needs a 1-D box")
    flatten = _flattener(dataset.observation_space, dataset_id)
    parts: dict[str, list] = {k: [] for k in ("obs", "next", "act", "rew", "term", "trunc")}
    returns = []
    for episode in _episodes(dataset, dataset_id):
        steps = len(episode.rewards)
        terminations = getattr(episode, "terminations", None)
        if terminations is None or len(terminations) != steps:
            raise DatasetError(
                f"{dataset_id}: episode {episode.id} has no terminations for its {steps} steps; "
                "offline learning needs them (a terminal step's target does not bootstrap)"
            )
        obs = flatten(episode.observations)
        parts["obs"].append(obs[:-1])
        parts["next"].append(obs[1:])
        parts["act"].append(np.asarray(episode.actions, np.float32))
        parts["rew"].append(np.asarray(episode.rewards, np.float32))
        parts["term"].append(np.asarray(terminations, np.float32))
        parts["trunc"].append(np.asarray(episode.truncations, np.float32))
        returns.append(float(np.sum(episode.rewards, dtype=np.float64)))
    if not returns:
        raise DatasetError(f"{dataset_id}: the dataset holds no episodes")
    terminated, truncated = np.concatenate(parts["term"]), np.concatenate(parts["trunc"])
    done = np.maximum(terminated, truncated)
    done[np.cumsum([len(r) for r in parts["rew"]]) - 1] = 1.0  # every episode's last row
    return OfflineData(
        dataset_id=dataset_id,
        obs=np.concatenate(parts["obs"]),
        action=np.concatenate(parts["act"]),
        reward=np.concatenate(parts["rew"]),
        next_obs=np.concatenate(parts["next"]),
        terminated=terminated,
        truncated=truncated,
        done=done,
        episode_returns=np.asarray(returns),
        metadata=dict(dataset.storage.metadata),
    )
