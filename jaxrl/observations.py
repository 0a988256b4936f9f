"""Which observation each network reads: dict observations and asymmetric actor-critic.

Playground's robot tasks observe a dict, `{"state": ..., "privileged_state": ...}`: the policy
reads "state" (what a real robot measures), while a critic, used only in training, may read the
simulator's privileged state (`--critic-obs privileged_state`). The envs keep their own
observations whole (some tasks read their previous observation back in `step`); the loops read
them through an `ObservationView`:

- the env observes an array: it is the observation of actor and critic alike;
- a dict, with actor and critic on the same key: that entry, an array (as above);
- a dict, with different keys: `{"actor": ..., "critic": ...}`, which the replay buffer stores and
  the observation statistics normalise per key; agents then get the critic's input in
  `Batch.critic_obs` / `Rollout.critic_obs` and their `init` takes its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax

from jaxrl.config import ConfigError

DEFAULT_KEY = "state"  # the policy's input in Playground's own trainers
ACTOR, CRITIC = "actor", "critic"  # the entries of an asymmetric (actor, critic) observation


class ObservationView(NamedTuple):
    actor_key: str | None  # the env's dict entry the actor reads; None: array observations
    critic_key: str | None
    actor_size: int
    critic_size: int | None  # None: the critic reads the actor's observation

    @property
    def asymmetric(self) -> bool:
        return self.critic_size is not None

    @property
    def sizes(self) -> int | dict[str, int]:
        """What the observation statistics are made for (`normalization.init`)."""
        if not self.asymmetric:
            return self.actor_size
        return {ACTOR: self.actor_size, CRITIC: self.critic_size}

    def __call__(self, obs: Any) -> Any:
        """An env's observation (any leading axes) as the loop stores and normalises it."""
        if self.actor_key is None:
            return obs
        if not self.asymmetric:
            return obs[self.actor_key]
        return {ACTOR: obs[self.actor_key], CRITIC: obs[self.critic_key]}


def actor_part(obs: Any) -> jax.Array:
    """The actor's observation of a viewed observation."""
    return obs[ACTOR] if isinstance(obs, dict) else obs


def _vector_size(shape: Any, key: str, flag: str, label: str) -> int:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) != 1:
        raise ConfigError(
            f"{flag} {key!r}: {label}'s observation {key!r} has shape {shape}; the networks "
            "read flat vectors (pixels are not supported), so pick an entry of one axis"
        )
    return int(shape[0])


def view(
    observation_size: Any, actor_obs: str | None, critic_obs: str | None, label: str = "the env"
) -> ObservationView:
    """The view of an env whose `observation_size` is an int (array observations) or a dict of
    entry -> shape (dict observations), for a run's `actor_obs` / `critic_obs` (None: "state"
    for the actor, the actor's entry for the critic). Raises ConfigError naming the entries an
    env has when a key is not one of them."""
    if not isinstance(observation_size, Mapping):
        given = [f"--{n}-obs {k}" for n, k in (("actor", actor_obs), ("critic", critic_obs)) if k]
        if given:
            raise ConfigError(
                f"{' and '.join(given)}: {label} observes one array (of size "
                f"{observation_size}), not a dict of entries; leave --actor-obs and "
                "--critic-obs unset for it"
            )
        return ObservationView(None, None, int(observation_size), None)
    entries = ", ".join(map(repr, observation_size))
    actor_key = actor_obs or DEFAULT_KEY
    critic_key = critic_obs or actor_key
    for flag, key in (("--actor-obs", actor_key), ("--critic-obs", critic_key)):
        if key not in observation_size:
            hint = "" if key != DEFAULT_KEY or actor_obs else " (the default)"
            raise ConfigError(
                f"{flag} {key!r}{hint}: {label} observes a dict without that entry; its "
                f"entries are {entries}"
            )
    actor_size = _vector_size(observation_size[actor_key], actor_key, "--actor-obs", label)
    if critic_key == actor_key:
        return ObservationView(actor_key, actor_key, actor_size, None)
    critic_size = _vector_size(observation_size[critic_key], critic_key, "--critic-obs", label)
    return ObservationView(actor_key, critic_key, actor_size, critic_size)


def split_critic(batch: Any) -> Any:
    """A Batch or Rollout whose observations are asymmetric ({"actor", "critic"} dicts) with the
    actor's in obs / next_obs and the critic's in critic_obs / next_critic_obs; others as given."""
    if not isinstance(batch.obs, dict):
        return batch
    return batch._replace(
        obs=batch.obs[ACTOR],
        next_obs=batch.next_obs[ACTOR],
        critic_obs=batch.obs[CRITIC],
        next_critic_obs=batch.next_obs[CRITIC],
    )
