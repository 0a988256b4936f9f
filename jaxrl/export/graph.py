"""A JAX function of float32 batches to an ONNX model, equation by equation from its jaxpr.

The function is traced with a symbolic batch size, so the model's batch axis is dynamic; its
closed-over arrays (the parameters, the observation statistics) become the model's
initialisers, and only the equations its output depends on are converted.

Why a table of primitives built with the `onnx` package's helpers rather than jax2onnx: its
current releases pin orbax-checkpoint below the version jaxrl runs on, the last release
without that pin fails on JAX 0.10, and at opset 11 (what Playground's examples and robot
stacks load) it writes Split in its opset-13 form, which ONNX Runtime refuses. A policy is an
MLP with its normaliser and squashing: some thirty primitives, each one to three ONNX ops
valid from opset 11 up, and the tests hold every algorithm's graph to `load_policy`'s action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.errors import JaxrlError

MIN_OPSET = 11
DEFAULT_OPSET = 11  # what Playground's ONNX examples use; ONNX Runtime and Isaac Lab load it
BATCH = "batch"  # the symbolic batch axis's name, in the model's input and output shapes
_INT64_MAX = np.iinfo(np.int64).max


class ExportError(JaxrlError, ValueError):
    """A policy (or a source of one) that cannot be written as an ONNX model."""


def to_model(
    fn: Callable[[dict[str, jax.Array]], jax.Array],
    inputs: dict[str, int],
    output: str,
    opset: int = DEFAULT_OPSET,
    metadata: dict[str, str] | None = None,
) -> Any:
    """The ONNX model of `fn(inputs) -> [batch, n]`: one float32 input [batch, size] per entry
    of `inputs` (name -> size), one float32 output named `output`, `metadata` as the model's
    metadata properties. `fn` must not draw random numbers (a greedy policy)."""
    import onnx
    from onnx import helper

    max_opset = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= max_opset:
        raise ExportError(
            f"--opset {opset}: this exporter writes opsets {MIN_OPSET} to {max_opset}"
        )
    (batch,) = jax.export.symbolic_shape(BATCH)
    like = {name: jax.ShapeDtypeStruct((batch, size), jnp.float32) for name, size in inputs.items()}
    closed = jax.make_jaxpr(fn)(like)
    if len(closed.jaxpr.outvars) != 1:
        raise ExportError(f"the policy returns {len(closed.jaxpr.outvars)} arrays, not one")
    graph = _Graph(opset)
    names = sorted(inputs)  # the jaxpr's inputs: a dict flattens in its keys' order
    (result,) = graph.run(closed.jaxpr, closed.consts, names)
    graph.nodes.append(helper.make_node("Identity", [result], [output]))
    out_aval = closed.jaxpr.outvars[0].aval
    if out_aval.dtype != np.float32:
        raise ExportError(f"the policy returns {out_aval.dtype}, not float32")
    tensor = lambda name, shape: helper.make_tensor_value_info(  # noqa: E731
        name, onnx.TensorProto.FLOAT, [d if isinstance(d, int) else BATCH for d in shape]
    )
    read = {name for node in graph.nodes for name in node.input}
    # The entries of a dict observation the policy reads (Brax's policy_obs_key, say).
    kept = [name for name in inputs if name in read]
    if not kept:
        raise ExportError("the policy reads none of its inputs")
    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            "policy",
            [tensor(name, (BATCH, inputs[name])) for name in kept],
            [tensor(output, out_aval.shape)],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="jaxrl",
    )
    model.ir_version = min(model.ir_version, _ir_version(opset))
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=str(value))
    onnx.checker.check_model(model, full_check=True)
    return model


def _ir_version(opset: int) -> int:
    """The oldest IR version that holds `opset`: an older runtime refuses a newer IR version
    than it knows, so the file claims no more than its ops need."""
    from onnx import helper

    # helper.VERSION_TABLE rows: (release, IR version, ai.onnx opset, ...).
    return min(row[1] for row in helper.VERSION_TABLE if row[2] >= opset)


class _Graph:
    """ONNX nodes and initialisers built while a jaxpr is interpreted."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value: Any, dtype: Any = None) -> str:
        from onnx import numpy_helper

        array = np.asarray(value, dtype)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        name = self.fresh("const")
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], **attributes) -> str:
        from onnx import helper

        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attributes))
        return out

    def run(self, jaxpr: Any, consts: list[Any], args: list[str]) -> list[str]:
        """Converts the equations of `jaxpr` that its outputs need; returns their names."""
        env: dict[Any, str] = {}

        def read(var: Any) -> str:
            if _is_literal(var):
                return self.const(var.val, var.aval.dtype)
            return env[var]

        for var, value in zip(jaxpr.constvars, consts, strict=True):
            env[var] = self.const(np.asarray(value))
        for var, name in zip(jaxpr.invars, args, strict=True):
            env[var] = name
        for eqn in _live(jaxpr):
            outs = convert(self, eqn, [read(v) for v in eqn.invars])
            for var, name in zip(eqn.outvars, outs, strict=True):
                env[var] = name
        return [read(v) for v in jaxpr.outvars]

    def reduce(self, op: str, x: str, axes: tuple[int, ...]) -> str:
        # ReduceSum takes its axes as an input from opset 13, the others from opset 18.
        if self.opset >= (13 if op == "ReduceSum" else 18):
            return self.node(op, [x, self.const(axes, np.int64)], keepdims=0)
        return self.node(op, [x], axes=list(axes), keepdims=0)


def _is_literal(var: Any) -> bool:
    return hasattr(var, "val") and not hasattr(var, "count")


def _live(jaxpr: Any) -> list[Any]:
    """The equations the outputs depend on, in order (a greedy policy's trace still holds the
    log-std head, say, which its action never reads)."""
    needed = {v for v in jaxpr.outvars if not _is_literal(v)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in needed for v in eqn.outvars):
            kept.append(eqn)
            needed.update(v for v in eqn.invars if not _is_literal(v))
    return kept[::-1]


def inputs_read(jaxpr: Any, outputs: list[bool] | None = None) -> list[bool]:
    """Which of `jaxpr`'s inputs its outputs (those marked in `outputs`, default all) depend
    on, looking inside call-like equations (a nested jit reads only what its body reads)."""
    outputs = [True] * len(jaxpr.outvars) if outputs is None else outputs
    needed = {v for v, used in zip(jaxpr.outvars, outputs, strict=True) if used}
    needed -= {v for v in needed if _is_literal(v)}
    for eqn in reversed(jaxpr.eqns):
        wanted = [v in needed for v in eqn.outvars]
        if not any(wanted):
            continue
        if eqn.primitive.name in ("jit", "pjit", "closed_call", "core_call"):
            reads = inputs_read(_body(eqn).jaxpr, wanted)
        else:
            reads = [True] * len(eqn.invars)
        needed.update(v for v, r in zip(eqn.invars, reads, strict=True) if r and not _is_literal(v))
    return [v in needed for v in jaxpr.invars]


def _static(shape: tuple, what: str) -> list[int]:
    """A shape with its one batch-sized axis as -1 (ONNX's Reshape infers it)."""
    dims = [d if isinstance(d, int) else -1 for d in shape]
    if dims.count(-1) > 1:
        raise ExportError(f"{what}: more than one batch-sized axis in {shape}")
    return dims


_UNARY = {
    "neg": "Neg",
    "abs": "Abs",
    "exp": "Exp",
    "log": "Log",
    "tanh": "Tanh",
    "logistic": "Sigmoid",
    "sqrt": "Sqrt",
    "sign": "Sign",
    "floor": "Floor",
    "ceil": "Ceil",
    "erf": "Erf",
    "not": "Not",
}
_BINARY = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "max": "Max",
    "min": "Min",
    "pow": "Pow",
    "and": "And",
    "or": "Or",
    "eq": "Equal",
    "lt": "Less",
    "gt": "Greater",
}
# Called functions whose body is converted in place.
_CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat")
_IDENTITY = ("copy", "copy_p", "optimization_barrier", "stop_gradient")


def convert(g: _Graph, eqn: Any, ins: list[str]) -> list[str]:
    """The ONNX names of one equation's outputs."""
    name = eqn.primitive.name
    aval = eqn.outvars[0].aval
    if name in _UNARY:
        return [g.node(_UNARY[name], ins)]
    if name in _BINARY:
        return [g.node(_BINARY[name], ins)]
    if name in _CALLS:
        return g.run(_body(eqn).jaxpr, _body(eqn).consts, ins)
    if name in _IDENTITY:
        return ins
    if name == "split":  # as Slices: Split's sizes moved from an attribute to an input at 13
        axis, start, outs = int(eqn.params["axis"]), 0, []
        for size in eqn.params["sizes"]:
            bounds = [g.const([start], np.int64), g.const([start + int(size)], np.int64)]
            outs.append(g.node("Slice", [ins[0], *bounds, g.const([axis], np.int64)]))
            start += int(size)
        return outs
    if name == "ne":
        return [g.node("Not", [g.node("Equal", ins)])]
    if name == "ge":
        return [g.node("Not", [g.node("Less", ins)])]
    if name == "le":
        return [g.node("Not", [g.node("Greater", ins)])]
    if name == "rsqrt":
        return [g.node("Reciprocal", [g.node("Sqrt", ins)])]
    if name == "square":
        return [g.node("Mul", [ins[0], ins[0]])]
    if name == "integer_pow":
        power = eqn.params["y"]
        if power == 2:
            return [g.node("Mul", [ins[0], ins[0]])]
        return [g.node("Pow", [ins[0], g.const(power, aval.dtype)])]
    if name == "log1p":
        return [g.node("Log", [g.node("Add", [ins[0], g.const(1.0, aval.dtype)])])]
    if name == "expm1":
        return [g.node("Sub", [g.node("Exp", ins), g.const(1.0, aval.dtype)])]
    if name == "clamp":  # clamp(low, x, high)
        return [g.node("Min", [g.node("Max", [ins[1], ins[0]]), ins[2]])]
    if name == "select_n":
        if len(ins) != 3:
            raise ExportError(f"select_n of {len(ins) - 1} cases (only two are supported)")
        return [g.node("Where", [ins[0], ins[2], ins[1]])]
    if name == "convert_element_type":
        if eqn.invars[0].aval.dtype == aval.dtype:
            return ins
        return [g.node("Cast", ins, to=_onnx_dtype(aval.dtype))]
    return [_shaped(g, eqn, ins)]


def _shaped(g: _Graph, eqn: Any, ins: list[str]) -> str:
    """The primitives that move or reduce axes, and the matrix product."""
    name, params = eqn.primitive.name, eqn.params
    aval = eqn.outvars[0].aval
    if name in ("reshape", "squeeze"):
        if params.get("dimensions") is not None and name == "reshape":
            raise ExportError("a reshape with a permutation of its dimensions")
        return g.node("Reshape", [ins[0], g.const(_static(aval.shape, name), np.int64)])
    if name == "broadcast_in_dim":
        return _broadcast(g, eqn, ins[0])
    if name == "transpose":
        return g.node("Transpose", ins, perm=list(params["permutation"]))
    if name == "concatenate":
        return g.node("Concat", ins, axis=int(params["dimension"]))
    if name == "slice":
        starts, limits = params["start_indices"], params["limit_indices"]
        if params.get("strides") not in (None, (1,) * len(starts)):
            raise ExportError("a strided slice")
        ends = [d if isinstance(d, int) else _INT64_MAX for d in limits]
        axes = list(range(len(starts)))
        return g.node("Slice", [ins[0], g.const(starts, np.int64), g.const(ends, np.int64),
                                g.const(axes, np.int64)])  # fmt: skip
    if name in ("reduce_sum", "reduce_max", "reduce_min"):
        op = {"reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin"}
        return g.reduce(op[name], ins[0], tuple(params["axes"]))
    if name == "dot_general":
        return _matmul(g, eqn, ins)
    if name.startswith("random_") or name.startswith("threefry"):
        raise ExportError(
            f"the policy draws random numbers (JAX primitive {name!r}): only a greedy policy "
            "can be exported"
        )
    raise ExportError(
        f"the policy uses the JAX primitive {name!r}, which the ONNX exporter does not convert"
    )


def _broadcast(g: _Graph, eqn: Any, x: str) -> str:
    """broadcast_in_dim: a Reshape inserting the new axes as 1s, then an Expand where a size
    grows. A batch-sized axis must come from the operand (Expand keeps it through a 1)."""
    shape = eqn.params["shape"]
    dims = eqn.params["broadcast_dimensions"]
    operand = eqn.invars[0].aval.shape
    middle: list[Any] = [1] * len(shape)
    for i, d in enumerate(dims):
        middle[d] = operand[i]
    out = g.node("Reshape", [x, g.const(_static(tuple(middle), "broadcast"), np.int64)])
    target, grows = [], False
    for have, want in zip(middle, shape, strict=True):
        if isinstance(want, int):
            target.append(want)
            grows = grows or have != want
        elif isinstance(have, int):
            raise ExportError("the policy broadcasts a value to a new batch-sized axis")
        else:
            target.append(1)  # Expand keeps the operand's batch axis through a 1
    return g.node("Expand", [out, g.const(target, np.int64)]) if grows else out


def _matmul(g: _Graph, eqn: Any, ins: list[str]) -> str:
    """x [..., K] . W [K, N] (or W [N, K] contracted on its last axis), no batch dimensions:
    a Dense layer's product."""
    (lhs_c, rhs_c), (lhs_b, rhs_b) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
    if lhs_b or rhs_b or rhs.ndim != 2 or tuple(lhs_c) != (lhs.ndim - 1,):
        raise ExportError(
            f"a matrix product of shapes {lhs.shape} and {rhs.shape} with dimension numbers "
            f"{eqn.params['dimension_numbers']} (only x @ W is converted)"
        )
    w = ins[1] if tuple(rhs_c) == (0,) else g.node("Transpose", [ins[1]], perm=[1, 0])
    return g.node("MatMul", [ins[0], w])


def _body(eqn: Any) -> Any:
    """The closed jaxpr a call-like equation runs."""
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        body = eqn.params.get(key)
        if body is not None:
            return body if hasattr(body, "consts") else jax.extend.core.ClosedJaxpr(body, ())
    raise ExportError(f"{eqn.primitive.name} without a body the exporter can read")


def _onnx_dtype(dtype: Any) -> int:
    from onnx import helper

    if np.dtype(dtype) == jnp.bfloat16:
        raise ExportError("the policy computes in bfloat16; export it with float32 products")
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
