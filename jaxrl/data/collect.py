"""`jaxrl collect`: a trained policy played in its run's vectorised env, written as a Minari
dataset (`jaxrl.data.minari_format`).

The policy (a run folder's checkpoint or a `.policy` file, `jaxrl.load_policy`) acts greedily
with Gaussian noise of std `noise` added to its actions (clipped to [-1, 1]), in `num_envs`
auto-resetting copies of the run's env (its options, time limit, action repeat and domain
randomization). One compiled program plays one episode length of steps of every env; it is
called for the data and, from fresh resets, for the reference returns: the random policy's
(uniform actions) and the policy's own greedy one, unless an `expert_score` is given, as for
a medium-quality dataset whose 100 is another policy's.

With `replay`, the rows are instead the run's replay buffer as its checkpoint holds it (D4RL's
"replay" quality: every transition the run trained on, oldest first); the reference returns
are played as above.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time
from typing import Annotated, Any

import numpy as np
import tyro

from jaxrl.data import minari_format
from jaxrl.errors import ConfigError

SCORE_EPISODES = 16  # at least this many episodes behind each reference return


@dataclasses.dataclass(frozen=True)
class CollectSettings:
    """What `jaxrl collect` plays and writes (its flags: `jaxrl.cli_args.CollectArgs`)."""

    source: Annotated[str, tyro.conf.Positional]
    """A run folder (its newest checkpoint) or a file written by Policy.save."""
    dataset_id: str
    """The new Minari dataset's id, [NAMESPACE/]NAME-v<N> (written under MINARI_DATASETS_PATH,
    else Minari's default folder)."""
    steps: int | None = None
    """Transitions to collect, all envs together (rounded up to whole steps of every env);
    needed unless --replay."""
    noise: float = 0.0
    """Std of the Gaussian noise added to the policy's greedy actions (which lie in [-1, 1])."""
    checkpoint: int | None = None
    """The checkpoint's step (default: the newest)."""
    member: int | None = None
    """Of a run of several seeds or settings: the member (default: the best at the checkpoint)."""
    envs: int | None = None
    """Envs stepped at once (default: the run's own count)."""
    seed: int = 0
    """Seed of the envs' initial states and of the action noise."""
    expert_score: float | None = None
    """The return that normalised scores call 100 (default: the policy's own greedy return)."""
    description: str | None = None
    """The dataset's description (default: the policy, env and noise)."""
    replay: bool = False
    """Write the run's replay buffer at the checkpoint (every transition it still holds,
    oldest first) instead of playing the policy: D4RL's "replay" datasets."""

    def check(self) -> None:
        """ConfigError naming the flag, before anything is loaded or compiled."""
        if self.replay:
            given = {"--steps": self.steps, "--noise": self.noise or None, "--envs": self.envs}
            for flag, value in given.items():
                if value is not None:
                    raise ConfigError(
                        f"{flag} with --replay: the dataset is the run's replay buffer as it "
                        f"is; leave {flag} unset"
                    )
            if pathlib.Path(self.source).is_file():
                raise ConfigError(
                    f"--replay with {self.source}: a policy file holds no replay buffer; give "
                    "the run folder"
                )
        elif self.steps is None or self.steps < 1:
            raise ConfigError(f"--steps must be a positive integer, got {self.steps}")
        if not self.noise >= 0 or not math.isfinite(self.noise):
            raise ConfigError(f"--noise must be a finite std >= 0, got {self.noise}")
        if self.envs is not None and self.envs < 1:
            raise ConfigError(f"--envs must be a positive integer, got {self.envs}")
        if self.expert_score is not None and not math.isfinite(self.expert_score):
            raise ConfigError(f"--expert-score must be finite, got {self.expert_score}")
        minari_format.check_new_id(self.dataset_id)
        if not pathlib.Path(self.source).exists():
            raise ConfigError(f"{self.source}: no such run folder or policy file")


def make_play(config: Any, agent: Any, env: Any, length: int):
    """`play(agent_state, stats, env_state, key, noise, random) -> (env_state, key, rows)`:
    `length` steps of every env, acting greedily plus N(0, noise^2) noise, or uniformly at
    random where `random`; rows [length, N] of obs, action, reward, next_obs (the observation
    each step reached, before any reset), terminated and truncated, obs as the env gives them
    (the actor's part, unnormalised)."""
    import jax
    import jax.numpy as jnp

    from jaxrl.loops.base import make_policy, observation_view
    from jaxrl.observations import actor_part

    view = observation_view(config, env)
    greedy = make_policy(config, agent)

    def play(agent_state, stats, env_state, key, noise, random):
        def step(carry, _):
            env_state, key = carry
            key, noise_key, random_key = jax.random.split(key, 3)
            obs = actor_part(view(env_state.obs))
            action = greedy(agent_state, stats, obs)
            noisy = jnp.clip(action + noise * jax.random.normal(noise_key, action.shape), -1, 1)
            uniform = jax.random.uniform(random_key, action.shape, minval=-1.0, maxval=1.0)
            action = jnp.where(random, uniform, noisy)
            stepped = env.step(env_state, action)
            truncated = stepped.done * stepped.info["truncation"]
            row = {
                "obs": obs,
                "action": action,
                "reward": stepped.reward,
                "next_obs": actor_part(view(stepped.info["final_obs"])),
                "terminated": stepped.done - truncated,
                "truncated": truncated,
            }
            return (stepped, key), row

        (env_state, key), rows = jax.lax.scan(step, (env_state, key), None, length)
        return env_state, key, rows

    return play


def replay_steps(run_dir: pathlib.Path, step: int, member: int | None) -> dict[str, np.ndarray]:
    """The replay buffer of checkpoint `step` of a run as a collected stream (`make_play`'s
    rows, leaves [T, N]): each env's rows oldest first (from the write position on in a ring
    that wrapped, so each env's first episode may start mid-way), the actor's observations
    as float32. Of a run of several members, `member` (default: the best at that step)."""
    from jaxrl import agents, checkpoint, grid
    from jaxrl.observations import actor_part
    from jaxrl.run import runs

    where = f"--replay: {run_dir}"
    saved = runs.read_config_json(run_dir)
    algo = saved["train"].get("algo")
    if agents.get(algo).on_policy:
        raise ConfigError(f"{where} is a run of {algo}, on-policy: it keeps no replay buffer")
    directory = run_dir / "checkpoints"
    meta, history = checkpoint.read_meta(directory, step)
    if not meta.get("has_buffer", True):
        raise ConfigError(
            f"{where}: checkpoint {step} was saved without its replay buffer "
            "(--no-checkpoint-buffer); no dataset can be made of it"
        )
    buffer = checkpoint.restore_loop(directory, step)["buffer"]
    run_grid = grid.Grid.from_json(saved)
    if run_grid is not None:
        if member is None:
            member = int(np.argmax(history[-1]["eval_returns"]))
        buffer = _leaves(buffer, member)
    data, size = buffer["data"], int(buffer["size"])
    if size == 0:
        raise ConfigError(f"{where}: checkpoint {step}'s replay buffer is empty")
    capacity = np.asarray(data["reward"]).shape[0]
    start = int(buffer["position"]) % capacity if size == capacity else 0
    order = (start + np.arange(size)) % capacity
    rows = lambda x: np.asarray(x, np.float32)[order]  # noqa: E731
    terminated, done = rows(data["terminated"]), rows(data["done"])
    return {
        "obs": rows(actor_part(data["obs"])),
        "action": rows(data["action"]),
        "reward": rows(data["reward"]),
        "next_obs": rows(actor_part(data["next_obs"])),
        "terminated": terminated,
        "truncated": done - terminated,
    }


def _leaves(tree: Any, member: int) -> Any:
    """`tree`'s arrays at `member` of their leading (members) axis."""
    if isinstance(tree, dict):
        return {k: _leaves(v, member) for k, v in tree.items()}
    return np.asarray(tree)[member]


def first_returns(rows: dict[str, np.ndarray]) -> np.ndarray:
    """Each env's first episode's return in rows [T, N] that start at a reset (0 for an env
    whose first episode has not ended)."""
    ended = (rows["terminated"] > 0) | (rows["truncated"] > 0)
    before_end = np.cumsum(ended, 0) - ended == 0  # steps up to and including the first end
    return np.where(ended.any(0), (rows["reward"] * before_end).sum(0), 0.0)


def collect(settings: CollectSettings, log=print) -> dict:
    """Plays the policy and writes the dataset; returns what was written (its id, folder,
    steps, episodes and returns). `log` takes one line of progress at a time."""
    settings.check()
    import jax

    from jaxrl import agents
    from jaxrl.loops.base import make_envs
    from jaxrl.run import runs
    from jaxrl.version import version

    source = pathlib.Path(settings.source)
    if source.is_dir():
        runs.check_env_given(runs.read_config_json(source), None, source)
    policy = runs.load_policy(source, settings.checkpoint, settings.member)
    config = policy.config
    num_envs = settings.envs or config.num_envs
    try:
        config = dataclasses.replace(
            config,
            num_envs=num_envs,
            eval_envs=min(config.eval_envs, num_envs),
            buffer_size=max(config.buffer_size, num_envs * (config.n_step or 1)),
        )
    except ConfigError as error:
        raise ConfigError(f"--envs {num_envs}: {error}") from None
    env, _ = make_envs(config)
    agent = agents.get(config.algo).make(policy.agent_config)
    # One episode length a call, whatever --steps: the reference returns' episodes fit whole.
    length = env.episode_length
    play = jax.jit(make_play(config, agent, env, length))
    reset = jax.jit(env.reset)
    args = (policy.agent_state, policy.obs_stats)
    key = jax.random.PRNGKey(settings.seed)
    key, reset_key, score_key = jax.random.split(key, 3)

    started = time.perf_counter()
    if settings.replay:
        steps = replay_steps(source, policy.env_steps, settings.member)
        per_env, num_envs = steps["reward"].shape
        log(f"read {per_env * num_envs:,} replay rows of {num_envs} envs")
    else:
        per_env = math.ceil(settings.steps / num_envs)
        env_state, chunks = reset(reset_key), []
        for _ in range(math.ceil(per_env / length)):
            env_state, key, rows = play(*args, env_state, key, settings.noise, False)
            chunks.append(jax.device_get(rows))
            if len(chunks) == 1:
                log(f"compiled and played {length * num_envs:,} steps in "
                    f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        steps = {k: np.concatenate([c[k] for c in chunks])[:per_env] for k in chunks[0]}

    def score(random: bool) -> float:
        """The mean return of at least SCORE_EPISODES episodes from fresh resets: each env's
        first, whole within the program's episode length of steps."""
        nonlocal score_key
        returns = []
        while len(returns) < SCORE_EPISODES:
            score_key, start_key, play_key = jax.random.split(score_key, 3)
            _, _, rows = play(*args, reset(start_key), play_key, 0.0, random)
            returns.extend(first_returns(jax.device_get(rows)).tolist())
        return float(np.mean(returns))

    random_return, policy_return = score(True), score(False)
    episodes, whole = minari_format.episodes_from_steps(steps)
    ended = [float(e["rewards"].sum()) for e, w in zip(episodes, whole, strict=True) if w]
    behaviour = float(np.mean(ended)) if ended else None  # None: no episode ended in it
    cut = whole.count(False)
    expert = policy_return if settings.expert_score is None else settings.expert_score
    info = {
        "kind": "replay" if settings.replay else "policy",
        "env": config.env,
        "env_options": config.env_options,
        "env_imports": list(config.env_imports),
        "episode_length": int(env.episode_length),
        "action_repeat": config.action_repeat,
        "randomize": config.randomize,
        "actor_obs": config.actor_obs,
        "source": str(source),
        "algo": config.algo,
        "policy_env_steps": policy.env_steps,
        "member": policy.member,
        "noise": None if settings.replay else settings.noise,
        "num_envs": num_envs,
        "seed": settings.seed,
        "random_return": random_return,
        "policy_return": policy_return,
        "behaviour_return": behaviour,
        "reference": "expert_score" if settings.expert_score is not None else "policy_return",
        "cut_episodes": cut,
        "jaxrl_version": version(),
    }
    description = settings.description or (
        f"{config.algo} replay buffer ({policy.env_steps:,} env steps) on {config.env}, "
        "written by jaxrl collect --replay"
        if settings.replay
        else f"{config.algo} policy ({policy.env_steps:,} env steps) on {config.env}, "
        f"Gaussian action noise std {settings.noise}, collected by jaxrl collect"
    )
    path = minari_format.write(
        settings.dataset_id,
        episodes,
        ref_min_score=random_return,
        ref_max_score=expert,
        info=info,
        description=description,
        algorithm_name=f"jaxrl {config.algo}",
    )
    return {
        "dataset_id": settings.dataset_id,
        "path": str(path),
        "steps": int(per_env * num_envs),
        "episodes": len(episodes),
        "cut_episodes": cut,
        "random_return": random_return,
        "policy_return": policy_return,
        "behaviour_return": behaviour,
        "ref_max_score": expert,
        "seconds": time.perf_counter() - started,
    }
