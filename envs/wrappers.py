"""Training wrappers over any env that follows Brax's reset/step/State convention.

Brax's and MuJoCo Playground's own training wrappers were not reused because (a) they mark
time-limit truncation only inside `done` + `info["truncation"]` but do not keep the final
observation of an episode, so a truncated transition bootstraps from the *reset* observation;
(b) their auto-reset returns every env to the one cached initial state instead of a fresh
random reset; and (c) they keep no completed-episode return/length statistics. Ours do all three
and work for the Brax, Playground and pure-JAX families alike.

Order (see `envs.registry.make_vec`): base -> ActionRepeat -> EpisodeWrapper -> VmapWrapper ->
AutoResetWrapper. Auto-reset sits outside vmap so that the reset is computed only on steps
where some env finished (`lax.cond` on any(done)).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


def require_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


class Wrapper:
    def __init__(self, env: Any):
        self.env = env

    @property
    def observation_size(self) -> int:
        return self.env.observation_size

    @property
    def action_size(self) -> int:
        return self.env.action_size

    @property
    def unwrapped(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    def reset(self, key: jax.Array):
        return self.env.reset(key)

    def step(self, state, action: jax.Array):
        return self.env.step(state, action)


class ActionRepeat(Wrapper):
    """Applies each action `repeat` times and sums the rewards; stops at termination."""

    def __init__(self, env: Any, repeat: int):
        super().__init__(env)
        require_positive("action_repeat", repeat)
        self.repeat = repeat

    def step(self, state, action: jax.Array):
        if self.repeat == 1:
            return self.env.step(state, action)

        def body(carry, _):
            state, total = carry
            stepped = self.env.step(state, action)
            # An env that terminated mid-repeat stays frozen at its terminal state.
            stepped = jax.tree.map(lambda new, old: jnp.where(state.done, old, new), stepped, state)
            total = total + jnp.where(state.done, 0.0, stepped.reward)
            return (stepped, total), None

        start = state.replace(done=jnp.zeros_like(state.done))
        (state, total), _ = jax.lax.scan(
            body, (start, jnp.zeros_like(state.reward)), None, self.repeat
        )
        return state.replace(reward=total)


class RescaleAction(Wrapper):
    """The agent acts in [-1, 1] (tanh policies, clipped noise); an env whose actions live in
    [low, high] gets low + (a + 1) (high - low) / 2, per action entry."""

    def __init__(self, env: Any, low: Any, high: Any):
        super().__init__(env)
        self.low, self.high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
        if not bool(jnp.all(self.high > self.low)):
            raise ValueError(f"action bounds need high > low, got {low} and {high}")

    def step(self, state, action: jax.Array):
        scaled = self.low + (jnp.clip(action, -1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)
        return self.env.step(state, scaled)


class JointLimitActions(Wrapper):
    """Joint-limit-aware action bounds (the FastSAC / FastTD3 humanoid recipe) for tasks whose
    motor targets are default_pose + action x action_scale: the agent's a in [-1, 1] becomes
    a x high where a >= 0 and -a x low where a < 0, per action entry, with [low, high] the
    actions that take each joint from its default pose to its limits. So 0 stays the default
    pose, and +-1 reach the joint's limits whatever the task's action_scale."""

    def __init__(self, env: Any, low: Any, high: Any):
        super().__init__(env)
        self.low, self.high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
        if not bool(jnp.all(self.low <= 0.0)) or not bool(jnp.all(self.high >= 0.0)):
            raise ValueError(f"joint-limit bounds need low <= 0 <= high, got {low} and {high}")

    def step(self, state, action: jax.Array):
        action = jnp.clip(action, -1.0, 1.0)
        scaled = jnp.where(action >= 0.0, action * self.high, -action * self.low)
        return self.env.step(state, scaled)


def action_bounds(env: Any) -> tuple[Any, Any] | None:
    """An env's `action_bounds` = (low, high) where it declares bounds other than [-1, 1]."""
    bounds = getattr(env, "action_bounds", None)
    if bounds is None:
        return None
    low, high = (jnp.broadcast_to(jnp.asarray(b, jnp.float32), (env.action_size,)) for b in bounds)
    if bool(jnp.all(low == -1.0)) and bool(jnp.all(high == 1.0)):
        return None
    return low, high


def with_action_bounds(env: Any) -> Any:
    bounds = action_bounds(env)
    return env if bounds is None else RescaleAction(env, *bounds)


class EpisodeWrapper(Wrapper):
    """Time limit and episode statistics for one (unbatched) env.

    `done` = terminated or truncated; `info["truncation"]` is 1 only when the time limit ended an
    episode that did not terminate, so a learner bootstraps through it. `info["episode_return"]`
    and `info["episode_length"]` accumulate over the running episode (length in agent steps).
    With `metric_sums`, `info["episode_metrics"]` sums each of the env's own metrics over the
    running episode, one value per agent step, as Brax's EpisodeWrapper sums them (a metric
    named "reward" stays 0 there, and here).
    """

    def __init__(self, env: Any, episode_length: int, metric_sums: bool = False):
        super().__init__(env)
        require_positive("episode_length", episode_length)
        self.episode_length = episode_length
        self.metric_sums = metric_sums

    def reset(self, key: jax.Array):
        state = self.env.reset(key)
        zero = jnp.zeros((), jnp.float32)
        info = dict(state.info)
        info.update(
            truncation=zero,
            episode_return=zero,
            episode_length=jnp.zeros((), jnp.int32),
        )
        if self.metric_sums:
            info["episode_metrics"] = {k: zero for k in state.metrics}
        return state.replace(
            obs=_float32(state.obs),
            reward=zero,
            done=zero,
            info=info,
        )

    def step(self, state, action: jax.Array):
        # Every step starts from done = 0, as Brax's and Playground's auto-reset wrappers start
        # it: after an auto-reset the state holds the finished transition's done = 1, which an
        # env whose step never sets done (docs/API.md's example) would otherwise keep, ending
        # every later episode after one step.
        stepped = self.env.step(state.replace(done=jnp.zeros_like(state.done)), action)
        length = state.info["episode_length"] + 1
        terminated = jnp.asarray(stepped.done, jnp.float32)
        truncated = (1.0 - terminated) * (length >= self.episode_length)
        reward = jnp.asarray(stepped.reward, jnp.float32)
        info = dict(stepped.info)
        info.update(
            truncation=truncated,
            episode_return=state.info["episode_return"] + reward,
            episode_length=length,
        )
        if self.metric_sums:
            sums = state.info["episode_metrics"]
            info["episode_metrics"] = {
                k: v if k == "reward" else v + jnp.asarray(stepped.metrics[k], jnp.float32)
                for k, v in sums.items()
            }
        return stepped.replace(
            obs=_float32(stepped.obs),
            reward=reward,
            done=jnp.maximum(terminated, truncated),
            info=info,
        )


def _float32(obs: Any) -> Any:
    """An observation (an array, or a dict of them) in float32."""
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), obs)


class VmapWrapper(Wrapper):
    """`num_envs` copies of an env: reset takes one key, step takes actions [N, A]."""

    def __init__(self, env: Any, num_envs: int):
        super().__init__(env)
        require_positive("num_envs", num_envs)
        self.num_envs = num_envs
        # Jitted once here, so that jit's cache keeps one trace per input shapes, which every
        # program and every place in one that resets these envs shares: the initial state's
        # reset, the chunk's auto-reset and its shared evaluation's restarts. MJX CheetahRun's
        # reset (a forward pass and 200 settling steps, batched) was about a third of
        # `fast_td3_playground`'s chunk trace, traced there twice and once more for the initial
        # state. XLA inlines the call. (The step, traced once per program anyway, gained
        # nothing measurable from the same: docs/DESIGN.md.)
        self._reset_each = jax.jit(jax.vmap(env.reset))

    def reset(self, key: jax.Array):
        return self.reset_each(jax.random.split(key, self.num_envs))

    def reset_each(self, keys: jax.Array):
        """One reset per env, env i's from `keys[i]` (`reset(key)` splits `key` into them)."""
        return self._reset_each(keys)

    def step(self, state, action: jax.Array):
        return jax.vmap(self.env.step)(state, action)


GRID_AXIS = "jaxrl_grid"
"""The name of the vmap axis over which a grid's members (seeds, settings) train in one program
(`jaxrl.run.chunks.compile_chunk`)."""


def any_member(condition: jax.Array) -> jax.Array:
    """`condition` (a bool []), true for every member of a grid where it holds for any member.
    Under the grid's vmap a condition that each member's data decides is batched, and
    `lax.cond` then becomes a select that runs both branches every time: MJX CheetahRun's reset
    (200 physics steps to settle) ran on every env step, a chunk of seconds taking minutes.
    Taken over the members, the condition is one
    value and the cond stays a cond. Outside a grid's vmap: `condition` itself."""
    try:
        return jax.lax.psum(condition.astype(jnp.int32), GRID_AXIS) > 0
    except NameError:  # no grid axis bound: one run
        return condition


class Restart(NamedTuple):
    """Which envs `AutoResetWrapper.step` restarts, where one batched step serves both training
    and evaluation (`jaxrl.loops.base.SharedEvaluation`): with `force`, every env, env i from
    `keys[i]` (an evaluation's first states); else the finished ones, as without a `Restart`,
    if `allow` (a training step), none if not (an evaluation step)."""

    force: jax.Array  # bool []
    allow: jax.Array  # bool []
    keys: jax.Array  # [N] keys


class AutoResetWrapper(Wrapper):
    """Resets finished envs of a batched env with fresh random initial states, or with `first`
    the state each env started from at its last `reset` (Brax's and Playground's cached first
    state: the reset is recomputed from the key that made it, so no copy of it is stored).

    After a step, `info["final_obs"]` holds the observation the step really reached (the one to
    bootstrap from), while `obs` is already the next episode's first observation for envs that
    finished. `info["finished_return"]` / `info["finished_length"]` (and `finished_metrics`,
    where `EpisodeWrapper` sums metrics) give each finished episode's statistics (valid where
    `done` is 1).
    """

    def __init__(self, env: Any, first: bool = False):
        super().__init__(env)
        self.first = first

    def reset(self, key: jax.Array):
        reset_key, key = jax.random.split(key)
        state = self.env.reset(reset_key)
        if self.first:  # the key the next resets remake this state from
            key = reset_key
        return _with_own_keys(state, state, key)

    def step(self, state, action: jax.Array, restart: Restart | None = None):
        """One step of every env, finished ones restarted (see the class); `restart` overrides
        which envs restart and from which keys (`Restart`)."""
        key = state.info["autoreset_key"]
        inner = state.replace(info=_without(state.info, _OWN_KEYS))
        stepped = self.env.step(inner, action)
        done = stepped.done
        restarting = done > 0
        if restart is not None:
            restarting = jnp.where(restart.force, True, restarting & restart.allow)

        def reset_finished(key):
            if self.first:  # the same keys as the reset that made the first states
                reset_key = key
            else:
                key, reset_key = jax.random.split(key)
            if restart is None:
                fresh = self.env.reset(reset_key)
            else:  # VmapWrapper.reset's own keys, or the forced ones
                keys = jax.random.split(reset_key, self.env.num_envs)
                fresh = self.env.reset_each(jnp.where(restart.force, restart.keys, keys))

            def select(new, old):
                mask = restarting.reshape(restarting.shape + (1,) * (old.ndim - done.ndim))
                return jnp.where(mask, new, old)

            merged = jax.tree.map(select, fresh, stepped)
            # The transition's own reward, done and truncation flag stay.
            info = dict(merged.info)
            info["truncation"] = stepped.info["truncation"]
            return merged.replace(reward=stepped.reward, done=done, info=info), key

        # Skip the reset entirely on steps where no env restarts (of any member of a grid: a
        # member whose envs all go on keeps its states, selected, and its key, as alone).
        own = jnp.any(restarting)
        nxt, new_key = jax.lax.cond(any_member(own), reset_finished, lambda k: (stepped, k), key)
        return _with_own_keys(nxt, stepped, jnp.where(own, new_key, key))


_OWN_KEYS = ("autoreset_key", "final_obs", "finished_return", "finished_length",
             "finished_metrics")  # fmt: skip


def _with_own_keys(state, reached, key: jax.Array):
    """`state` with this wrapper's info: the key for later resets, and the observation and
    episode statistics of `reached`, the state the last step arrived at before any reset."""
    info = dict(state.info)
    info.update(
        autoreset_key=key,
        final_obs=reached.obs,
        finished_return=reached.info["episode_return"],
        finished_length=reached.info["episode_length"],
    )
    if "episode_metrics" in reached.info:
        info["finished_metrics"] = reached.info["episode_metrics"]
    return state.replace(info=info)


def _without(info: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in info.items() if k not in keys}
