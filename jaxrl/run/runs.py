"""Reading a run folder back: its configs, a jitted policy of a checkpoint (`load_policy`), and
greedy evaluation of a checkpoint (`evaluate_run`, the `jaxrl eval` command)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl import agents, checkpoint, grid, normalization
from jaxrl.config import ConfigError, TrainConfig
from jaxrl.errors import JaxrlError, SavedConfigError
from jaxrl.files import SCALE_GRID, SWEEP_PLAN, write_atomically
from jaxrl.loops.base import init_agent, make_eval_env, make_evaluate, make_policy
from jaxrl.observations import ObservationView
from jaxrl.version import version

if TYPE_CHECKING:
    from jaxrl.export.brax_checkpoint import BraxPolicy


class RunError(JaxrlError, ValueError):
    """A run folder that is missing or does not hold what is asked of it."""


def read_config_json(run_dir: str | os.PathLike) -> dict:
    path = pathlib.Path(run_dir)
    if not path.is_dir():
        what = "a file, not a folder" if path.exists() else "no such folder"
        raise RunError(f"{path} is not a run folder ({what})")
    config_file = path / "config.json"
    if not config_file.is_file():
        hint = ""
        if (path / SWEEP_PLAN).is_file():
            hint = f" (a sweep's folder: go on with it by jaxrl sweep --resume {path})"
        elif (path / SCALE_GRID).is_file():
            hint = " (a scale grid's folder: go on with it by running its jaxrl scale again)"
        raise RunError(f"{path} is not a run folder: it has no config.json{hint}")
    try:
        saved = json.loads(config_file.read_text())
    except json.JSONDecodeError as error:
        raise RunError(f"{config_file} is not valid JSON ({error})") from None
    except (OSError, UnicodeDecodeError) as error:  # unreadable, or not text at all
        raise RunError(f"{config_file} cannot be read ({error})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("train"), dict):
        raise RunError(f'{config_file} is not a run\'s config (no "train" entry)')
    return saved


def _from_dict(cls: type, values: dict) -> Any:
    """A config dataclass from its JSON dict: lists back to tuples (hidden sizes); unknown
    names are an error naming them."""
    names = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{cls.__name__} has no field(s) {', '.join(unknown)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{cls.__name__}: {error}") from None


def configs_from_json(saved: dict) -> tuple[TrainConfig, Any]:
    """(TrainConfig, agent config) from a config.json's "train" and "agent" entries."""
    if "train" not in saved or "agent" not in saved:
        raise ConfigError('a run config needs "train" and "agent" entries')
    train = dict(saved["train"])
    # Runs save the algorithm they trained; a config written by hand from an unnamed
    # TrainConfig (algo None) is SAC's, as training it without an agent config would be.
    train["algo"] = train.get("algo") or "sac"
    spec = agents.get(train["algo"])
    try:
        return _from_dict(TrainConfig, train), _from_dict(spec.config_cls, saved["agent"])
    except ConfigError as error:
        versions = saved.get("versions")
        written = versions.get("jaxrl") if isinstance(versions, dict) else None
        where = f"in the config's {_which(error)} entry"
        if written is None and "has no field" in str(error):
            raise SavedConfigError(
                f"{error} ({where}; the config names no jaxrl version: if an older jaxrl wrote "
                "it, continue or evaluate the run with that version, or edit its config.json to "
                "this version's fields, which jaxrl train --help lists)"
            ) from None
        if written is None or str(written) == version():
            # Hand-written, or written by this version: the value is wrong, not the version.
            raise SavedConfigError(f"{error} ({where})") from None
        raise SavedConfigError(
            f"{error}: this config was written by jaxrl {written}, and this is jaxrl "
            f"{version()}; continue or evaluate the run with the version that wrote it, or "
            "edit its config.json to this version's fields (jaxrl train --help lists them)"
        ) from None


def _which(error: ConfigError) -> str:
    """ "train" or "agent": the config.json entry a _from_dict error is about."""
    return "train" if str(error).startswith("TrainConfig") else "agent"


# A standalone policy file (`Policy.save`): flax's msgpack of the configs (as config.json
# holds them), the env's sizes, the arrays of the agent state that the greedy action reads
# (by path; the critics, targets and optimiser states are left out and come back as zeros)
# and the observation statistics. Its first bytes name the format, so `load_policy` tells it
# from a run folder and refuses other files by name. Format 1 held the whole agent state
# without its optimiser states; it is still read.
POLICY_FORMAT = "jaxrl-policy-2"
_POLICY_FORMATS = ("jaxrl-policy-1", POLICY_FORMAT)


@dataclasses.dataclass
class Policy:
    """A trained policy, callable as `policy(obs) -> action`: greedy (the deterministic action)
    and jitted, with the run's observation normalisation applied. `obs` is one observation
    [obs_size] or a batch [..., obs_size], or the env's dict observation (read at the run's
    actor entry, `config.actor_obs`, default "state"). `policy.save(path)` writes it to one
    file that `jaxrl.load_policy(path)` reads back without the run folder."""

    config: TrainConfig
    agent_config: Any
    agent_state: Any
    obs_stats: normalization.RunningStats
    env_steps: int
    _apply: Callable = dataclasses.field(repr=False)
    member: str | None = None
    """Of a run of several seeds or settings (`--seeds`, `--vmap`): which member this is."""
    sizes: tuple[int, int | None, int] | None = None
    """(observation size, the critic's own observation size or None, action size)."""

    def __call__(self, obs: Any) -> jax.Array:
        obs = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), obs)
        if self.sizes is not None and not isinstance(obs, dict):
            # Checked here: inside the jitted policy a wrong size is flax's ScopeParamShapeError
            # or a broadcasting error about the normaliser, neither naming the observation.
            if obs.ndim == 0 or obs.shape[-1] != self.sizes[0]:
                raise ValueError(
                    f"the policy takes observations of size {self.sizes[0]} (one [obs_size] or "
                    f"a batch [..., obs_size]), got an array of shape {tuple(obs.shape)}"
                )
        return self._apply(self.agent_state, self.obs_stats, obs)

    def __repr__(self) -> str:
        # The dataclass's own repr prints every parameter array (thousands of lines).
        sizes = "" if self.sizes is None else f", obs {self.sizes[0]} -> action {self.sizes[2]}"
        member = "" if self.member is None else f", member {self.member}"
        return (
            f"Policy({self.config.algo} on {self.config.env}, {self.env_steps:,} env steps"
            f"{sizes}{member})"
        )

    @property
    def actor_entry(self) -> str | None:
        """The entry of a dict observation the policy reads (the run's `actor_obs`, "state"
        by default), or None for an array observation."""
        critic_size = None if self.sizes is None else self.sizes[1]
        return self.config.actor_obs or ("state" if critic_size is not None else None)

    def export_onnx(self, path: str | os.PathLike, opset: int | None = None) -> pathlib.Path:
        """Writes this policy as an ONNX model (`jaxrl export`; docs/EXPORT.md): raw
        observations `obs` [batch, obs_size] in, greedy `actions` [batch, action_size] out,
        the normalisation inside. Needs `pip install 'jaxrl[export]'`."""
        from jaxrl.export.graph import DEFAULT_OPSET
        from jaxrl.export.policy import export_policy

        return export_policy(self, path, DEFAULT_OPSET if opset is None else opset)

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Writes this policy to one file (`jaxrl.load_policy(path)` reads it back): its
        configs, parameters and observation statistics, without the optimiser states."""
        from flax import serialization

        if self.sizes is None:
            raise RunError("this policy does not know its env's sizes; load it with load_policy")
        record = {
            "format": POLICY_FORMAT,
            "config": json.dumps(
                {
                    "train": dataclasses.asdict(self.config),
                    "agent": dataclasses.asdict(self.agent_config),
                    "env_info": dict(zip(_SIZE_NAMES, self.sizes, strict=True)),
                    "env_steps": self.env_steps,
                    "member": self.member,
                    "versions": {"jaxrl": version()},
                },
                default=str,
            ),
            "agent_state": policy_arrays(
                self.config, self.agent_config, self.agent_state, self.obs_stats, _greedy_obs(self)
            ),
            "obs_stats": serialization.to_state_dict(self.obs_stats),
        }
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: a crash while replacing a policy file leaves the old one.
        write_atomically(path, serialization.msgpack_serialize(jax.device_get(record)))
        return path


_SIZE_NAMES = ("observation_size", "critic_observation_size", "action_size")


def _without_optimisers(agent_state: Any) -> Any:
    """The agent state with every learner's optimiser state dropped (a policy never reads it)."""
    from jaxrl.agents.base import Learner

    return jax.tree.map(
        lambda x: x.replace(opt_state=None) if isinstance(x, Learner) else x,
        agent_state,
        is_leaf=lambda x: isinstance(x, Learner),
    )


def _greedy_obs(policy: Policy) -> Any:
    """An observation batch's shape as the policy takes it: an array, or the dict entry that a
    run of dict observations reads (as the exporter feeds it)."""
    like = jax.ShapeDtypeStruct((1, policy.sizes[0]), jnp.float32)
    return {policy.actor_entry: like} if policy.actor_entry else like


def policy_arrays(
    config: TrainConfig,
    agent_config: Any,
    agent_state: Any,
    obs_stats: Any,
    obs_like: Any,
    exploring: bool = False,
) -> dict[str, np.ndarray]:
    """The agent state's arrays that the greedy action of `obs_like` observations depends on
    (and, `exploring`, the exploring action of an array observation: its noise's settings),
    by their tree paths: found from the policy's jaxpr, so every algorithm's actor (and
    CrossQ's BatchRenorm statistics) is kept and its critics, target critics, temperature and
    optimiser states are not. `agent_state_from_arrays` puts them back."""
    from jaxrl.export.graph import inputs_read
    from jaxrl.loops.base import make_observe
    from jaxrl.observations import actor_part

    agent = agents.get(config.algo).make(agent_config)
    greedy, observe = make_policy(config, agent), make_observe(config)

    def apply(state, stats, obs):
        if not exploring:
            return greedy(state, stats, obs)
        noisy = agent.act(state, observe(actor_part(stats), obs), jax.random.PRNGKey(0), 1.0)
        return greedy(state, stats, obs), noisy

    closed = jax.make_jaxpr(apply)(agent_state, obs_stats, obs_like)
    reads = inputs_read(closed.jaxpr)
    leaves = jax.tree_util.tree_flatten_with_path(agent_state)[0]
    return {
        jax.tree_util.keystr(path): np.asarray(jax.device_get(leaf))
        for (path, leaf), read in zip(leaves, reads[: len(leaves)], strict=True)
        if read
    }


def agent_state_from_arrays(like: Any, arrays: dict) -> Any:
    """An agent state shaped as `like` (arrays or shapes), its optimiser states dropped, from
    `policy_arrays`' arrays by path, with zeros where an array was left out (nothing the
    policy computes reads them)."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(_without_optimisers(like))
    out = []
    for path, leaf in leaves:
        value = arrays.get(jax.tree_util.keystr(path))
        if value is None:
            out.append(jnp.zeros(leaf.shape, leaf.dtype))
        elif tuple(np.shape(value)) != tuple(leaf.shape):
            raise RunError(
                f"the policy's {jax.tree_util.keystr(path)} has shape {np.shape(value)}, where "
                f"its config builds {tuple(leaf.shape)}"
            )
        else:
            out.append(jnp.asarray(value, leaf.dtype))
    return jax.tree_util.tree_unflatten(treedef, out)


def _agent_state_from(like: Any, saved: dict, format_: str) -> Any:
    """The agent state of a policy file: format 1's state dict, or format 2's arrays."""
    from flax import serialization

    if format_ == "jaxrl-policy-1":
        like = _without_optimisers(like)
        return jax.tree.map(jnp.asarray, serialization.from_state_dict(like, saved))
    return agent_state_from_arrays(like, saved)


def _load_policy_file(path: pathlib.Path) -> Policy:
    from flax import serialization

    try:
        record = serialization.msgpack_restore(path.read_bytes())
    except Exception:  # msgpack's own errors name no file
        record = None
    if not isinstance(record, dict) or record.get("format") not in _POLICY_FORMATS:
        raise RunError(f"{path} is neither a run folder nor a policy file written by Policy.save")
    saved = json.loads(record["config"])
    config, agent_config = configs_from_json(saved)
    sizes = _sizes(saved)
    agent = agents.get(config.algo).make(agent_config)
    view = ObservationView(None, None, sizes[0], sizes[1])
    like_agent = jax.eval_shape(
        lambda key: init_agent(agent, key, view, sizes[2]), jax.random.PRNGKey(0)
    )
    like_stats = jax.eval_shape(lambda: normalization.init(view.sizes))
    agent_state = _agent_state_from(like_agent, record["agent_state"], record["format"])
    stats = serialization.from_state_dict(like_stats, record["obs_stats"])
    stats = jax.tree.map(jnp.asarray, stats)
    return _policy(
        config, agent_config, agent, agent_state, stats, int(saved["env_steps"]),
        saved.get("member"), sizes,
    )  # fmt: skip


def _policy(config, agent_config, agent, agent_state, stats, env_steps, member, sizes) -> Policy:
    """The Policy of a restored agent state and statistics (of a checkpoint or a file)."""
    apply = jax.jit(make_policy(config, agent))
    return Policy(config, agent_config, agent_state, stats, env_steps, apply, member, sizes)


def _sizes(saved: dict) -> tuple[int, int | None, int]:
    """(observation size, the critic's own observation size or None, action size)."""
    info = saved.get("env_info", {})
    if "observation_size" not in info or "action_size" not in info:
        raise RunError("config.json has no env_info with observation_size and action_size")
    critic = info.get("critic_observation_size")
    critic = None if critic is None else int(critic)
    return int(info["observation_size"]), critic, int(info["action_size"])


def check_env_given(
    saved: dict, env: Any, run_dir: pathlib.Path, randomization_fn: Any = "unused"
) -> None:
    """A run trained on an env object (`jaxrl.train(..., env=...)`) can only be resumed or
    evaluated with an env given again: its config's env name is only a label. Resuming a run
    trained with a randomization function of its own needs that function again."""
    info = saved.get("env_info", {})
    randomized = info.get("randomization_fn")
    if randomized and randomization_fn is None:
        raise RunError(
            f"{run_dir} trained with the domain randomization function {randomized}: pass it "
            "again (randomization_fn=...) to resume it"
        )
    made_from = info.get("env_object")
    if made_from and env is None:
        raise RunError(
            f"{run_dir} trained on an env object ({made_from}) passed to jaxrl.train, not on a "
            f"registry name ({saved['train'].get('env')!r} is only its label): pass the same "
            "env again (env=...), or register it with jaxrl.envs.register and train by name"
        )


def load_policy(
    run_dir: str | os.PathLike, checkpoint_step: int | None = None, member: int | None = None
) -> Policy | BraxPolicy:
    """The greedy policy of a run's newest checkpoint (or of `checkpoint_step`, in env steps):
    `policy = jaxrl.load_policy("runs/NAME"); action = policy(obs)`. Builds no env.
    Of a run of several members (`--seeds`, `--vmap`): member `member` (an index, setting-major
    as the grid lists them), by default the one with the best eval return at that checkpoint.
    `run_dir` may also be a file written by `Policy.save` (no other argument then applies), or
    a Brax or Playground checkpoint folder as Brax's trainers write it (a `<step>/` folder, or
    their parent: its newest step or `checkpoint_step`), whose policy is a `BraxPolicy`."""
    brax_folder = _brax_checkpoint(pathlib.Path(run_dir), checkpoint_step)
    if brax_folder is not None:
        from jaxrl.export import brax_checkpoint

        if member is not None:
            raise RunError(f"{run_dir} is a Brax checkpoint of one policy: member does not apply")
        return brax_checkpoint.load_policy(brax_folder)
    if pathlib.Path(run_dir).is_file():
        if checkpoint_step is not None or member is not None:
            raise RunError(
                f"{run_dir} is a policy file: it holds one policy, so checkpoint_step and "
                "member do not apply"
            )
        return _load_policy_file(pathlib.Path(run_dir))
    saved = read_config_json(run_dir)
    config, agent_config = configs_from_json(saved)
    obs_size, critic_size, action_size = _sizes(saved)
    directory = pathlib.Path(run_dir) / "checkpoints"
    step = checkpoint.pick(directory, checkpoint_step)
    agent = agents.get(config.algo).make(agent_config)
    view = ObservationView(None, None, obs_size, critic_size)
    like_agent = jax.eval_shape(
        lambda key: init_agent(agent, key, view, action_size), jax.random.PRNGKey(0)
    )
    like_stats = jax.eval_shape(lambda: normalization.init(view.sizes))
    run_grid = grid.Grid.from_json(saved)
    if run_grid is not None:  # members stacked on a leading axis
        stacked = lambda tree: jax.tree.map(  # noqa: E731
            lambda x: jax.ShapeDtypeStruct((len(run_grid), *x.shape), x.dtype), tree
        )
        like_agent, like_stats = stacked(like_agent), stacked(like_stats)
    agent_state, stats = checkpoint.restore_policy(directory, step, like_agent, like_stats)
    label = None
    if run_grid is not None:
        if member is None:
            _, history = checkpoint.read_meta(directory, step)
            member = int(np.argmax(history[-1]["eval_returns"]))
        if not 0 <= member < len(run_grid):
            raise RunError(f"member {member}: the run has members 0 to {len(run_grid) - 1}")
        agent_state, stats = jax.tree.map(lambda x: x[member], (agent_state, stats))
        setting, seed = run_grid.members[member]
        label = run_grid.member_dir(setting, seed)
    elif member not in (None, 0):
        raise RunError(f"member {member}: {run_dir} is a run of one seed")
    sizes = (obs_size, critic_size, action_size)
    return _policy(config, agent_config, agent, agent_state, stats, step, label, sizes)


def _brax_checkpoint(path: pathlib.Path, step: int | None) -> pathlib.Path | None:
    """The Brax checkpoint folder `path` names, or None for anything else (a jaxrl run)."""
    if not path.is_dir() or (path / "config.json").is_file():
        return None
    from jaxrl.export import brax_checkpoint

    return brax_checkpoint.find(path, step)


def evaluate_run(
    run_dir: str | os.PathLike,
    episodes: int = 10,
    checkpoint_step: int | None = None,
    seed: int = 0,
    env: Any = None,
    member: int | None = None,
) -> dict:
    """Mean, std and standard error of the undiscounted return of `episodes` greedy episodes
    (run in parallel, one env each) of a checkpoint's policy, with the run's env settings
    (on `env`, an env object, where the run trained on one)."""
    if episodes < 1:
        raise RunError(f"--episodes must be a positive integer, got {episodes}")

    check_env_given(read_config_json(run_dir), env, pathlib.Path(run_dir))
    policy = load_policy(run_dir, checkpoint_step, member)
    config = dataclasses.replace(policy.config, eval_envs=episodes)
    agent = agents.get(config.algo).make(policy.agent_config)
    eval_env = make_eval_env(config, env)
    evaluate = make_evaluate(config, agent, eval_env, per_episode=True)
    result = jax.jit(evaluate)(policy.agent_state, policy.obs_stats, jax.random.PRNGKey(seed))
    returns = np.asarray(result["eval_returns"], np.float64)
    std = float(returns.std(ddof=1)) if episodes > 1 else 0.0
    return {
        "checkpoint": policy.env_steps,
        "episodes": episodes,
        "mean": float(returns.mean()),
        "std": std,
        "stderr": std / math.sqrt(episodes),
        "mean_length": float(np.asarray(result["eval_length"])),
        "returns": returns.tolist(),
        "member": policy.member,
    }
