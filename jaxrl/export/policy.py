"""A jaxrl policy as an ONNX model that needs neither jaxrl nor JAX to run.

The model computes the greedy action of raw observations, as `jaxrl.load_policy(SOURCE)(obs)`
does: the run's observation normalisation and clipping, the actor (CrossQ's BatchRenorm with
its running statistics, LayerNorm, SiLU, ...), the tanh squashing. Input `obs` float32
[batch, obs_size] (an env of dict observations: one input per entry the policy reads, named by
the entry), output `actions` float32 [batch, action_size] in [-1, 1], the env's action space.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

from jaxrl.export.graph import DEFAULT_OPSET, ExportError, to_model
from jaxrl.files import write_atomically

OUTPUT = "actions"
EXTRA = "export"  # pip install 'jaxrl[export]': onnx and onnxruntime


def require_onnx() -> None:
    """The `export` extra is installed, else an ExportError saying how to install it."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ExportError(
            f"exporting to ONNX needs the onnx package: pip install 'jaxrl[{EXTRA}]'"
        ) from None


def check_out(out: str | os.PathLike) -> pathlib.Path:
    """`out` names a file that can be written (checked before anything is loaded or traced)."""
    path = pathlib.Path(out)
    if path.is_dir():
        raise ExportError(f"--out {out}: a folder, not a file")
    parent = path.parent if str(path.parent) else pathlib.Path(".")
    if not parent.is_dir():
        raise ExportError(f"--out {out}: no folder {parent}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ExportError(f"--out {out}: not writable")
    return path


def policy_model(policy: Any, opset: int = DEFAULT_OPSET) -> Any:
    """The ONNX model of a `jaxrl.run.runs.Policy`."""
    from jaxrl import agents
    from jaxrl.loops.base import make_policy

    require_onnx()
    if policy.sizes is None:
        raise ExportError("this policy does not know its env's sizes; load it with load_policy")
    obs_size, _, action_size = policy.sizes
    agent_config, products = policy.agent_config, "float32"
    precision = getattr(agent_config, "matmul_precision", "float32")
    if precision != "float32":
        # ONNX Runtime's CPU kernels have no bfloat16 products: the graph computes in float32.
        agent_config = dataclasses.replace(agent_config, matmul_precision="float32")
        products = f"float32 (trained with matmul_precision {precision})"
    apply = make_policy(policy.config, agents.get(policy.config.algo).make(agent_config))
    entry = policy.actor_entry
    name = entry or "obs"

    def greedy(inputs: dict) -> Any:
        obs = inputs if entry else inputs[name]
        return apply(policy.agent_state, policy.obs_stats, obs)

    from jaxrl.version import version

    metadata = {
        "producer": f"jaxrl {version()}",
        "jaxrl_version": version(),
        "algorithm": policy.config.algo,
        "env": str(policy.config.env),
        "env_steps": str(policy.env_steps),
        "observation_size": str(obs_size),
        "action_size": str(action_size),
        "normalized_observations": str(bool(policy.config.normalize_observations)),
        "products": products,
    }
    if policy.member is not None:
        metadata["member"] = str(policy.member)
    return to_model(greedy, {name: obs_size}, OUTPUT, opset, metadata)


def export_policy(policy: Any, path: str | os.PathLike, opset: int = DEFAULT_OPSET) -> pathlib.Path:
    """Writes `policy`'s ONNX model to `path` (whole or not at all)."""
    path = check_out(path)
    model = policy_model(policy, opset)
    write_atomically(path, model.SerializeToString())
    return path
