"""Brax and Playground checkpoints as greedy policies: the `<step>/` folders Brax's `ppo.train`
and `sac.train` (and `jaxrl.brax`) write, with `ppo_network_config.json` or
`sac_network_config.json` beside the orbax parameters.

The networks are rebuilt by Brax's own factories and run through Brax's own
`make_inference_fn(...)(params, deterministic=True)`, so the exported graph computes what Brax's
policy does. The config is read here rather than by Brax's `checkpoint.load_config`, which
fails where `ppo.train` wrote a `null` kernel initialiser (its default): an initialiser shapes
only the first parameters, never the policy of trained ones, so those entries are dropped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from collections.abc import Callable
from typing import Any

from jaxrl.export.graph import DEFAULT_OPSET, ExportError

CONFIGS = {"ppo_network_config.json": "ppo", "sac_network_config.json": "sac"}
# The factory arguments that only draw the first parameters (Brax's _KERNEL_INIT_FN_KEYWORDS
# and their options).
_INIT_ONLY = ("kernel_init_fn", "kernel_init_kwargs")


def config_file(folder: pathlib.Path) -> pathlib.Path | None:
    """The network config of a `<step>/` checkpoint folder, or None."""
    for name in CONFIGS:
        if (folder / name).is_file():
            return folder / name
    return None


def find(path: pathlib.Path, step: int | None) -> pathlib.Path | None:
    """The checkpoint folder `path` names: itself where it holds a network config, else its
    newest `<step>/` subfolder that does (or the one of `step`); None where it holds none."""
    if config_file(path) is not None:
        if step is not None:
            raise ExportError(f"{path} is one checkpoint: --checkpoint-step does not apply")
        return path
    steps = {}
    for child in path.iterdir() if path.is_dir() else ():
        if child.is_dir() and child.name.isdigit() and config_file(child) is not None:
            steps[int(child.name)] = child
    if not steps:
        return None
    if step is None:
        return steps[max(steps)]
    if step not in steps:
        raise ExportError(
            f"--checkpoint-step {step}: {path} holds Brax checkpoints at steps "
            f"{', '.join(str(s) for s in sorted(steps))}"
        )
    return steps[step]


def load(folder: pathlib.Path) -> tuple[Callable, dict[str, int], dict[str, str]]:
    """(greedy policy of a dict of [batch, size] observations, its inputs {entry: size},
    metadata) of the Brax checkpoint `folder`."""
    from brax.training import checkpoint, networks
    from brax.training.acme import running_statistics

    path = config_file(folder)
    algo = CONFIGS[path.name]
    try:
        saved = json.loads(path.read_text())
        kwargs = dict(saved["network_factory_kwargs"])
        action_size = int(saved["action_size"])
        obs_size = saved["observation_size"]
        normalize = bool(saved["normalize_observations"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ExportError(f"{path} is not a Brax network config ({error!r})") from None
    for key in [k for k in kwargs if any(k.endswith(s) for s in _INIT_ONLY)]:
        del kwargs[key]
    if "activation" in kwargs:
        if kwargs["activation"] not in networks.ACTIVATION:
            raise ExportError(
                f"{path}: activation {kwargs['activation']!r} is not one Brax registers "
                f"({', '.join(sorted(networks.ACTIVATION))})"
            )
        kwargs["activation"] = networks.ACTIVATION[kwargs["activation"]]
    inputs = _inputs(obs_size, path)
    factory, make_inference_fn = _factory(algo)
    whole = list(inputs) == ["obs"]  # an array observation, not a dict
    try:
        built = factory(
            inputs["obs"] if whole else {k: (v,) for k, v in inputs.items()},
            action_size,
            preprocess_observations_fn=running_statistics.normalize if normalize else _identity,
            **kwargs,
        )
    except TypeError as error:  # an option this Brax's factory does not take
        raise ExportError(f"{path}: Brax's {algo} network factory refuses it ({error})") from None
    try:
        params = checkpoint.load(folder)
    except (OSError, ValueError) as error:
        raise ExportError(f"{folder}: its parameters cannot be read ({error})") from None
    params = tuple(params) if algo == "sac" else tuple(params)[:2]
    act = make_inference_fn(built)(params, deterministic=True)

    def policy(obs: dict[str, Any]) -> Any:
        observations = obs["obs"] if whole else obs
        action, _ = act(observations, None)
        return action

    metadata = {
        "algorithm": f"brax_{algo}",
        "env": "",  # a Brax checkpoint does not record its env
        "source": str(folder),
        "env_steps": str(int(folder.name)) if folder.name.isdigit() else "",
        "observation_size": str(inputs["obs"]) if whole else json.dumps(inputs),
        "action_size": str(action_size),
        "normalized_observations": str(normalize),
    }
    return policy, inputs, metadata


@dataclasses.dataclass(repr=False)
class BraxPolicy:
    """The greedy policy of a Brax or Playground checkpoint, as `jaxrl.load_policy(folder)`
    gives it: `policy(obs) -> action` (Brax's own networks and inference fn, deterministic),
    and `policy.export_onnx(path)`. `obs` is one observation [obs_size] or a batch, or a dict
    of them for a checkpoint of dict observations."""

    folder: pathlib.Path
    inputs: dict[str, int]
    """{input name: size}: "obs" for an array observation, else the dict's entries."""
    metadata: dict[str, str]
    greedy: Callable = dataclasses.field(repr=False)
    """dict of float32 [batch, size] observations -> [batch, action_size] actions."""

    def __post_init__(self):
        import jax

        self._jitted = jax.jit(self.greedy)

    def __call__(self, obs: Any) -> Any:
        import jax.numpy as jnp

        whole = list(self.inputs) == ["obs"]
        obs = {"obs": obs} if whole else obs
        missing = sorted(set(self.inputs) - set(obs))
        if missing:
            raise ValueError(f"the policy reads observation entries {missing}, not given")
        obs = {k: jnp.asarray(v, jnp.float32) for k, v in obs.items() if k in self.inputs}
        single = next(iter(obs.values())).ndim == 1
        action = self._jitted({k: v[None] if single else v for k, v in obs.items()})
        return action[0] if single else action

    def __repr__(self) -> str:
        return f"BraxPolicy({self.metadata['algorithm']} checkpoint {self.folder})"

    def model(self, opset: int = DEFAULT_OPSET) -> Any:
        """This policy's ONNX model (`jaxrl export FOLDER`)."""
        from jaxrl.export.graph import to_model
        from jaxrl.export.policy import OUTPUT, require_onnx
        from jaxrl.version import version

        require_onnx()
        metadata = {"producer": f"jaxrl {version()}", "jaxrl_version": version(), **self.metadata}
        return to_model(self.greedy, self.inputs, OUTPUT, opset, metadata)

    def export_onnx(self, path: str | os.PathLike, opset: int = DEFAULT_OPSET) -> pathlib.Path:
        """Writes this policy as an ONNX model (as `jaxrl export FOLDER` does)."""
        from jaxrl.export.policy import check_out
        from jaxrl.files import write_atomically

        path = check_out(path)
        write_atomically(path, self.model(opset).SerializeToString())
        return path


def load_policy(folder: pathlib.Path) -> BraxPolicy:
    """The BraxPolicy of the checkpoint `folder` (a `<step>/` folder, as `find` gives it)."""
    fn, inputs, metadata = load(folder)
    return BraxPolicy(folder, inputs, metadata, fn)


def _identity(x, _stats):
    return x


def _inputs(obs_size: Any, path: pathlib.Path) -> dict[str, int]:
    """{input name: size}: "obs" for an array observation, else every entry of the dict (the
    exporter keeps those the policy reads). Brax writes a size, a shape, or (ppo.train) a
    ShapeDtypeStruct as {"shape": [n], "dtype": "unserializable object: ..."}, per entry."""
    if _is_shape(obs_size):
        return {"obs": _vector(obs_size, "the observation", path)}
    if not isinstance(obs_size, dict):
        raise ExportError(f"{path}: observation_size {obs_size!r} is neither a size nor a dict")
    inputs = {}
    for key, shape in obs_size.items():
        if not _is_shape(shape):
            raise ExportError(f"{path}: observation entry {key!r} is {shape!r}, not a shape")
        inputs[key] = _vector(shape, f"observation entry {key!r}", path)
    return inputs


def _is_shape(value: Any) -> bool:
    return isinstance(value, int | list) or (isinstance(value, dict) and "shape" in value)


def _vector(value: Any, what: str, path: pathlib.Path) -> int:
    """The size of a vector observation written as a size, a shape or a ShapeDtypeStruct."""
    shape = value["shape"] if isinstance(value, dict) else value
    shape = [shape] if isinstance(shape, int) else list(shape)
    if len(shape) != 1:
        raise ExportError(
            f"{path}: {what} has shape {tuple(shape)}; the exporter takes vector "
            "observations only (pixels are not exported)"
        )
    return int(shape[0])


def _factory(algo: str) -> tuple[Callable, Callable]:
    if algo == "ppo":
        from brax.training.agents.ppo import networks as ppo_networks

        return ppo_networks.make_ppo_networks, ppo_networks.make_inference_fn
    from brax.training.agents.sac import networks as sac_networks

    return sac_networks.make_sac_networks, sac_networks.make_inference_fn
