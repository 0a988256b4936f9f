"""What `TrainConfig` knows of a dataset (docs/OFFLINE.md): the checks of the offline fields
(`dataset`, `offline_updates`, `offline_eval_every`, `offline_ratio`) and the offline part's
chunks. A base class of `TrainConfig` without fields of its own: the fields stay in
`TrainConfig`, in its "offline" section. No jax here."""

from __future__ import annotations

from typing import Any

from jaxrl.errors import ConfigError


def whole(value: Any, least: int) -> bool:
    """Whether `value` is an integer (a bool is none) of at least `least`."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= least


class OfflineSchedule:
    """The offline part of a run: `offline_updates` on `dataset` in `offline_chunks` chunks of
    `offline_updates_per_chunk`, before the online part's `num_chunks` (`total_chunks` in all).
    An online part after offline updates (offline-to-online), or an online run with a dataset,
    draws `offline_ratio` of each batch from the dataset."""

    def _check_offline(self) -> None:
        """The run's length: env steps, offline updates, or both; a dataset to learn from."""
        offline, ratio = self.offline_updates, self.offline_ratio
        if not whole(offline, 0) or not whole(self.offline_eval_every, 1):
            raise ConfigError(
                f"offline_updates must be an integer >= 0 and offline_eval_every >= 1, got "
                f"{offline!r} and {self.offline_eval_every!r}"
            )
        if not whole(self.total_steps, 0 if offline else 1):
            least = (
                "an integer >= 0" if offline else "a positive integer (0 needs --offline-updates)"
            )
            raise ConfigError(f"total_steps must be {least}, got {self.total_steps!r}")
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1:
            raise ConfigError(f"offline_ratio must be in [0, 1], got {ratio!r}")
        if offline and self.dataset is None:
            raise ConfigError(f"--offline-updates {offline}: name the data with --dataset")
        if self.dataset is not None and not offline and ratio == 0:
            raise ConfigError(
                f"--dataset {self.dataset} with --offline-ratio 0 and no --offline-updates: "
                "nothing would read the dataset; give one of them"
            )
        if self.dataset is not None and self.algo is not None and self.on_policy:
            raise ConfigError(
                f"--dataset with {self.algo}: an on-policy algorithm learns only from its own "
                "rollouts; pick an off-policy one (edac, sac_n, e2o, sac, td3, ...)"
            )
        if self.dataset is not None and self.total_steps and self.split:
            raise ConfigError(
                f"--dataset {self.dataset} with --split-every: the actor/learner split does not "
                "read a dataset; leave --split-every unset"
            )

    @property
    def pretrained(self) -> bool:
        """Whether the agent has learnt before its first env step (offline updates, or
        `init_from` another run): its policy then acts from that step, without warm-up."""
        return bool(self.offline_updates) or self.init_from is not None

    @property
    def mixes_dataset(self) -> bool:
        """Whether the online part's batches draw rows from the dataset (`offline_ratio`)."""
        return self.dataset is not None and bool(self.total_steps) and self.offline_ratio > 0

    @property
    def offline_chunks(self) -> int:
        """Evaluations in the run's offline part: one every offline_eval_every updates."""
        return -(-self.offline_updates // max(self.offline_eval_every, self.updates_per_step))

    @property
    def offline_iterations_per_chunk(self) -> int:
        """Iterations (a draw of updates_per_step batches, then as many updates) per offline
        chunk, spread as iterations_per_chunk spreads env steps."""
        if not self.offline_chunks:
            return 0
        iterations = -(-self.offline_updates // self.updates_per_step)
        return -(-iterations // self.offline_chunks)

    @property
    def offline_updates_per_chunk(self) -> int:
        return self.offline_iterations_per_chunk * self.updates_per_step

    @property
    def total_chunks(self) -> int:
        """The run's chunks: its offline ones, then its online ones."""
        return self.offline_chunks + self.num_chunks
