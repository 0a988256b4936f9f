"""`jaxrl export SOURCE --out FILE.onnx`: which policy SOURCE names (a jaxrl run folder, a
`.policy` file, or a Brax/Playground checkpoint), written as an ONNX model (`export.policy`)."""

from __future__ import annotations

import os
import pathlib
from typing import Any

from jaxrl.export import brax_checkpoint
from jaxrl.export.graph import DEFAULT_OPSET, ExportError
from jaxrl.export.policy import check_out, policy_model, require_onnx
from jaxrl.files import write_atomically


def export(
    source: str | os.PathLike,
    out: str | os.PathLike,
    checkpoint_step: int | None = None,
    member: int | None = None,
    opset: int = DEFAULT_OPSET,
) -> dict:
    """Writes the ONNX model of SOURCE's policy to `out`; returns what was written. SOURCE: a
    jaxrl run folder (its newest checkpoint or `checkpoint_step`; of a run of several members,
    `member`), a `.policy` file, or a Brax checkpoint (a `<step>/` folder or their parent)."""
    require_onnx()
    out = check_out(out)
    source_path = pathlib.Path(source)
    if not source_path.exists():
        raise ExportError(f"{source}: no such file or folder")
    folder = brax_checkpoint.find(source_path, checkpoint_step) if source_path.is_dir() else None
    if folder is not None:
        if member is not None:
            raise ExportError(
                f"{source} is a Brax checkpoint of one policy: --member does not apply"
            )
        model = brax_checkpoint.load_policy(folder).model(opset)
    else:
        model = _jaxrl_model(source_path, checkpoint_step, member, opset)
    write_atomically(out, model.SerializeToString())
    props = {p.key: p.value for p in model.metadata_props}
    return {
        "path": str(out),
        "bytes": out.stat().st_size,
        "opset": opset,
        "inputs": {i.name: _size(i) for i in model.graph.input},
        "outputs": {o.name: _size(o) for o in model.graph.output},
        "algorithm": props.get("algorithm"),
        "env_steps": props.get("env_steps"),
    }


def _jaxrl_model(source: pathlib.Path, step: int | None, member: int | None, opset: int) -> Any:
    from jaxrl.run import runs

    if source.is_dir() and not (source / "config.json").is_file():
        raise ExportError(
            f"{source} holds neither a jaxrl run (config.json) nor a Brax checkpoint "
            f"({' or '.join(brax_checkpoint.CONFIGS)})"
        )
    return policy_model(runs.load_policy(source, step, member), opset)


def _size(value_info: Any) -> int:
    return value_info.type.tensor_type.shape.dim[-1].dim_value
