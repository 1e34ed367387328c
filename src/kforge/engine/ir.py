"""The builtin engine's intermediate representation: one lowered problem, and a torch interpreter for it.

A `Program` is what capture produces, simplification rewrites and the backends (C++, Triton) turn into code:

- `inputs`: the tensors `forward` receives, in order (name, shape, dtype): floats, integers (`int64`,
  `int32`) or booleans; a Python number `forward` receives is an input of shape () and dtype float64
  (`is_number`), a run-time scalar like the sizes below;
- `params`: parameters and buffers read from the reference module, named by their attribute path
  (`"linear.weight"`); the generated `ModelNew` creates them exactly as the reference does;
- `prepared`: nodes computed once at construction from params only (e.g. a weight summed over its rows);
- `heavy`: at most one GEMM or convolution (`HEAVY_OPS`), whose operands are inputs, params or prepared;
- `nodes`: the epilogue, a DAG in topological order of pointwise ops (`UNARY_OPS`, `BINARY_OPS` with the
  comparisons `COMPARE_OPS`, whose results are booleans, and `where(condition, a, b)`),
  reductions over one dim (`REDUCE_OPS`), row-wise normalizations over one dim (`ROW_OPS`) and views
  (`VIEW_OPS`) of inputs, params or the heavy output;
- `outputs`: the names of the values `forward` returns, in order, then those of `updates`;
- `updates`: the buffers `forward` writes (a training-mode batch norm's running statistics and count), by
  attribute path, one per trailing output: after computing, the forward copies each of those values into its
  buffer and returns the others (`returned`). The IR itself stays free of side effects.

That is a *single-kernel* program: one heavy op and what fuses after it. Capture may also produce a *graph*
program (`is_graph()`): heavy ops among `nodes` (several GEMMs, or a GEMM after other work), to be cut into
single-kernel programs by `engine/partition.py`.

Every value has a unique name: an input's, a param's, or a node's (the heavy op is a node). A node's `args`
are names of values or Python floats (scalar constants, broadcast everywhere). Shapes are those of the
problem's main input set (`get_inputs()`); `static[d]` tells whether dim d has that size in every input set
the problem defines, so shape-dependent rewrites only rely on static dims and the generated code reads every
size at run time.

Attributes (`Node.attrs`, as a sorted tuple of pairs; read them with `node.attr(key)`):

- reductions (`argmax`/`argmin` too, whose result is int64): `dim` (int, non-negative), `keepdim` (bool);
- `remainder`: torch.remainder (the sign of the divisor), of integers or floats;
- `softmax`/`log_softmax`: `dim`; `layer_norm`: `dim` (the last), `eps`, args `(x[, weight[, bias]])`;
- `cast`: none (the node's dtype is the target: a float, integer or boolean dtype);
- `clamp`: `min`, `max` (float or None); `leaky_relu`: `negative_slope`; `elu`: `alpha`;
  `softplus`: `beta`, `threshold`; `pow` with a float exponent is a binary op with a float arg;
- `linear`: args `(x, weight[, bias])`; `matmul`/`bmm`: args `(a, b)`;
  `conv1d`/`conv2d`: args `(x, weight[, bias])`, attrs `stride`, `padding`, `dilation` (tuples), `groups`;
  `conv3d` likewise; `conv_transpose1d`/`conv_transpose2d`: the same args and attrs, and `output_padding`
  (a tuple; the weight is (in channels, out channels per group, taps...), as torch holds it);
- `view`: `shape` (tuple, the main set's sizes); `slice`: `dim`, `start`, `stop`, `step` (stop clipped);
  `permute`: `dims` (a permutation; the backends leave it to Python between kernels);
  a slice whose end is a run-time size has args `(x, stop)`, `stop` naming a `size` node (the attr is None);
- `max_pool`/`avg_pool`: `kernel`, `stride`, `padding`, `dilation` (tuples, one per pooled dim: the last one,
  two or three), `ceil_mode`, and for `avg_pool` `count_include_pad`, `divisor` (int or None);
- `cumsum`/`cumprod`/`cummax` (values only): `dim`; `tril`/`triu`: `diagonal`, `fill` (what the cut-off part
  becomes: 0.0, or -inf for an attention mask); `cat`: `dim`, args the tensors joined;
- `flip`: `dims` (non-negative; at most four dims in all);
- `moments`: args `(x)`, x of shape (batch, channels, ...): each channel's mean and biased variance over every
  other dim, as a float32 value of shape (2, channels) (row 0 the means, row 1 the variances): a batch norm's
  statistics in training mode, in one kernel;
- `attention`: args `(q, k, v)`, attrs `scale` (float), `causal` (bool): softmax(q k^T * scale) v over the
  last two dims, the causal mask keeping key j <= query i;
- `fill`: args `(x)`, x read for its device only; attrs `start`, `step` (floats), `dim`: a tensor of the node's
  (static) shape and dtype whose element is `start + step * (its index along dim)` (`step` 0: a constant tensor);
- `size`: `dim`; args `(x)`; the size of x along dim at run time, as a float64 value of shape (). Scalar
  values (shape ()) computed from sizes by pointwise ops (`log(n)`) are ordinary nodes.

Example: `y = gelu_tanh(x @ W.T + b) * 0.5` with x (8, 16) and `nn.Linear(16, 32)` stored as `lin`::

    program = Program(
        inputs=(TensorSpec("x", (8, 16)),),
        params=(TensorSpec("lin.weight", (32, 16)), TensorSpec("lin.bias", (32,))),
        heavy=Node("mm", "linear", ("x", "lin.weight", "lin.bias"), (8, 32)),
        nodes=(Node("act", "gelu_tanh", ("mm",), (8, 32)), Node("out", "mul", ("act", 0.5), (8, 32))),
        outputs=("out",),
    )
    [y] = evaluate(program, [x], {"lin.weight": w, "lin.bias": b})
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

Arg = str | float
Shape = tuple[int, ...]

# Kernels compute floats in float32 and integers in their own width; booleans (comparisons' and logical ops'
# results, casts to bool, boolean inputs and outputs) are held as 1.0/0.0 inside a kernel.
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INTEGER_DTYPES = ("int64", "int32")
DTYPES = (*FLOAT_DTYPES, *INTEGER_DTYPES, "bool")
CONV_OPS = ("conv1d", "conv2d", "conv3d")
CONV_TRANSPOSE_OPS = ("conv_transpose1d", "conv_transpose2d")
HEAVY_OPS = ("linear", "matmul", "bmm", *CONV_OPS, *CONV_TRANSPOSE_OPS)
UNARY_OPS = ("neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos",
             "erf", "sigmoid", "tanh", "relu", "gelu", "gelu_tanh", "silu", "mish", "softplus", "leaky_relu",
             "elu", "hardsigmoid", "hardswish", "clamp", "cast", "logical_not")
COMPARE_OPS = ("gt", "ge", "lt", "le", "eq", "ne")
# Of booleans only (masks: comparisons' results and these ops' own), giving booleans.
LOGICAL_OPS = ("logical_and", "logical_or", "logical_not")
BOOLEAN_RESULT_OPS = COMPARE_OPS + LOGICAL_OPS
BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "remainder", *COMPARE_OPS, "logical_and",
              "logical_or")
TERNARY_OPS = ("where",)
REDUCE_OPS = ("sum", "mean", "amax", "amin", "logsumexp")
# Reductions to the index (int64) of the first largest or smallest element along one dim, NaN counting as
# larger and smaller than anything, as torch counts it.
INDEX_OPS = ("argmax", "argmin")
ROW_OPS = ("softmax", "log_softmax", "layer_norm")
VIEW_OPS = ("view", "slice", "permute")
SCALAR_OPS = ("size",)
# Ops that make a kernel of their own (engine/standalone.py), reading one input in full: sliding windows,
# scans along a dim, triangular masks of the last two dims.
WINDOW_OPS = ("max_pool", "avg_pool")
SCAN_OPS = ("cumsum", "cumprod", "cummax")
MASK_OPS = ("tril", "triu")
ATTENTION_OPS = ("attention",)
REORDER_OPS = ("flip",)
# Per-channel statistics over every dim but dim 1 (batch norm in training mode).
MOMENT_OPS = ("moments",)
# Tensors the forward makes from nothing (torch.arange, torch.full and the *_like constructors).
FILL_OPS = ("fill",)
STANDALONE_OPS = WINDOW_OPS + SCAN_OPS + MASK_OPS + ATTENTION_OPS + REORDER_OPS + MOMENT_OPS + FILL_OPS
# Data movement the composed forward does in Python between kernels.
COPY_OPS = ("cat",)
POINTWISE_OPS = UNARY_OPS + BINARY_OPS + TERNARY_OPS
ALL_OPS = (HEAVY_OPS + POINTWISE_OPS + REDUCE_OPS + INDEX_OPS + ROW_OPS + VIEW_OPS + SCALAR_OPS + STANDALONE_OPS
           + COPY_OPS)


class IRError(ValueError):
    """A program that breaks the rules of the IR (unknown op, undefined name, duplicate name)."""


@dataclass(frozen=True)
class TensorSpec:
    """A named tensor: an input or a parameter/buffer of the reference."""

    name: str
    shape: Shape
    dtype: str = "float32"
    static: tuple[bool, ...] = ()  # per dim; empty means every dim is static

    def is_static(self, dim: int) -> bool:
        return not self.static or self.static[dim]


@dataclass(frozen=True)
class Node:
    """One operation; its result is the value called `name`."""

    name: str
    op: str
    args: tuple[Arg, ...]
    shape: Shape
    dtype: str = "float32"
    attrs: tuple[tuple[str, Any], ...] = ()
    static: tuple[bool, ...] = ()  # per dim of the result; empty means every dim is static

    def attr(self, key: str, default: Any = None) -> Any:
        for name, value in self.attrs:
            if name == key:
                return value
        return default

    def with_attrs(self, **changes: Any) -> Node:
        merged = dict(self.attrs)
        merged.update(changes)
        return Node(self.name, self.op, self.args, self.shape, self.dtype, make_attrs(**merged), self.static)

    @property
    def value_args(self) -> tuple[str, ...]:
        """The args that name values (scalar constants left out)."""
        return tuple(arg for arg in self.args if isinstance(arg, str))

    def is_static(self, dim: int) -> bool:
        return not self.static or self.static[dim]


def make_attrs(**attrs: Any) -> tuple[tuple[str, Any], ...]:
    """Attributes in the canonical (sorted) form that `Node.attrs` holds."""
    return tuple(sorted(attrs.items()))


@dataclass(frozen=True)
class Program:
    """A lowered problem; see the module docstring."""

    inputs: tuple[TensorSpec, ...]
    params: tuple[TensorSpec, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[str, ...]
    heavy: Node | None = None
    prepared: tuple[Node, ...] = ()
    degenerate: str | None = None  # why the outputs are provably constant, when they are
    notes: tuple[str, ...] = field(default=())  # one line per rewrite applied, for reports and docs
    updates: tuple[str, ...] = ()  # the buffers the last len(updates) outputs are written into, in order

    def __post_init__(self) -> None:
        validate(self)

    def spec(self, name: str) -> TensorSpec | Node:
        """The input, param or node called `name`."""
        values: tuple[TensorSpec | Node, ...] = (*self.inputs, *self.params, *self.prepared, *self.all_nodes())
        for item in values:
            if item.name == name:
                return item
        raise IRError(f"no value named {name!r}")

    def shape(self, name: str) -> Shape:
        return self.spec(name).shape

    @property
    def returned(self) -> tuple[str, ...]:
        """The outputs `forward` returns: all but the values written into buffers."""
        return self.outputs[:len(self.outputs) - len(self.updates)]

    @property
    def written(self) -> tuple[tuple[str, str], ...]:
        """(buffer path, value) of each buffer the forward writes, in order."""
        return tuple(zip(self.updates, self.outputs[len(self.outputs) - len(self.updates):], strict=True))

    def all_nodes(self) -> tuple[Node, ...]:
        """The heavy op (when there is one) followed by the epilogue."""
        return ((self.heavy,) if self.heavy else ()) + self.nodes

    def is_graph(self) -> bool:
        """Whether heavy ops sit among the nodes (a whole graph, to partition before any backend renders it)."""
        return any(node.op in HEAVY_OPS for node in self.nodes)

    def users(self, name: str) -> list[Node]:
        return [node for node in (*self.prepared, *self.all_nodes()) if name in node.value_args]

    def replace(self, **changes: Any) -> Program:
        fields: dict[str, Any] = {
            "inputs": self.inputs, "params": self.params, "nodes": self.nodes, "outputs": self.outputs,
            "heavy": self.heavy, "prepared": self.prepared, "degenerate": self.degenerate, "notes": self.notes,
            "updates": self.updates}
        fields.update(changes)
        return Program(**fields)


def validate(program: Program) -> None:
    """Raise IRError unless names are unique, defined before use, ops are known, and heavy ops are either all
    among the nodes (a graph) or one in `Program.heavy`."""
    defined: set[str] = set()
    for spec in (*program.inputs, *program.params):
        if spec.name in defined:
            raise IRError(f"duplicate value name {spec.name!r}")
        defined.add(spec.name)
    leaves = set(defined)
    groups: list[tuple[str, tuple[Node, ...]]] = [("prepared", program.prepared)]
    if program.heavy is not None:
        if program.heavy.op not in HEAVY_OPS:
            raise IRError(f"heavy op must be one of {', '.join(HEAVY_OPS)}, not {program.heavy.op!r}")
        groups.append(("heavy", (program.heavy,)))
    groups.append(("epilogue", program.nodes))
    for group, nodes in groups:
        for node in nodes:
            if node.op not in ALL_OPS:
                raise IRError(f"unknown op {node.op!r} in node {node.name!r}")
            if group == "epilogue" and node.op in HEAVY_OPS and program.heavy is not None:
                raise IRError(f"node {node.name!r}: a graph program (heavy ops among its nodes) has no "
                              "Program.heavy")
            for arg in node.value_args:
                if arg not in defined:
                    raise IRError(f"node {node.name!r} uses {arg!r} before it is defined")
                if group == "prepared" and arg not in leaves and arg not in {n.name for n in program.prepared}:
                    raise IRError(f"prepared node {node.name!r} may use params only, not {arg!r}")
            if node.name in defined:
                raise IRError(f"duplicate value name {node.name!r}")
            defined.add(node.name)
    for name in program.outputs:
        if name not in defined:
            raise IRError(f"output {name!r} is not defined")
    params = {spec.name for spec in program.params}
    if program.updates and len(program.updates) >= len(program.outputs):
        raise IRError("a program writing buffers must return at least one other output")
    for path in program.updates:
        if path not in params:
            raise IRError(f"the buffer {path!r} the forward writes is not among the params")
    if len(set(program.updates)) != len(program.updates):
        raise IRError("a buffer written twice by one forward")


# ---- the reference interpreter ------------------------------------------------------------------------------

_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                 "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


def is_number(spec: TensorSpec | Node) -> bool:
    """Whether an input is a Python number `forward` receives (held as a float64 value of shape (), like the
    scalars computed from sizes), not a tensor."""
    return isinstance(spec, TensorSpec) and spec.shape == () and spec.dtype == "float64"


def reshape_sizes(node: Node) -> tuple[int, ...] | None:
    """A view's sizes for any input set: the main set's, with the one dim that varies between input sets as -1
    (reshape infers it); None when more than one dim varies."""
    varying = [d for d in range(len(node.shape)) if not node.is_static(d)]
    if len(varying) > 1:
        return None
    return tuple(-1 if d in varying else size for d, size in enumerate(node.shape))


def hoist_heavy(program: Program) -> Program:
    """A graph program whose only heavy op comes first (reading inputs and params only) as a single-kernel
    program with that op in `Program.heavy`; any other program unchanged."""
    if program.heavy is not None:
        return program
    heavy = [node for node in program.nodes if node.op in HEAVY_OPS]
    leaves = {spec.name for spec in (*program.inputs, *program.params)}
    if len(heavy) != 1 or not all(arg in leaves for arg in heavy[0].value_args):
        return program
    return program.replace(heavy=heavy[0], nodes=tuple(node for node in program.nodes if node is not heavy[0]))


def torch_dtype(dtype: str) -> torch.dtype:
    return _TORCH_DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    for name, value in _TORCH_DTYPES.items():
        if value == dtype:
            return name
    raise IRError(f"unsupported dtype {dtype}")


def evaluate(program: Program, inputs: Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
             params: Mapping[str, torch.Tensor], written: dict[str, torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Run `program` with torch ops: the outputs it returns, in order. Inputs by position or by name; params by
    name. The new values of the buffers it writes (`Program.updates`) go into `written`, by path, when given;
    `params` is left as it was."""
    if not isinstance(inputs, Mapping):
        if len(inputs) != len(program.inputs):
            raise IRError(f"program takes {len(program.inputs)} inputs, got {len(inputs)}")
        inputs = {spec.name: tensor for spec, tensor in zip(program.inputs, inputs, strict=True)}
    numbers = {spec.name: torch.tensor(float(inputs[spec.name]), dtype=torch.float64) for spec in program.inputs
               if is_number(spec)}
    env: dict[str, torch.Tensor] = {**inputs, **numbers, **{spec.name: params[spec.name] for spec in program.params}}
    for node in (*program.prepared, *program.all_nodes()):
        env[node.name] = apply(node, [env[arg] if isinstance(arg, str) else arg for arg in node.args])
    if written is not None:
        written.update({path: env[name] for path, name in program.written})
    return [env[name] for name in program.returned]


def apply(node: Node, args: list[Any]) -> torch.Tensor:
    """One node's result in torch, given its args (tensors where the node names values, floats otherwise)."""
    op = node.op
    if node.dtype in INTEGER_DTYPES:  # an integer result: its integral constants are ints (3, not 3.0)
        args = [int(arg) if isinstance(arg, float) and arg.is_integer() else arg for arg in args]
    if op in _UNARY:
        return _UNARY[op](args[0], node)
    if op in _BINARY:
        a, b = args
        if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
            raise IRError(f"node {node.name!r}: a binary op needs at least one tensor")
        return _BINARY[op](a, b)
    if op == "where":
        return _where(*args)
    if op in REDUCE_OPS:
        dim, keepdim = node.attr("dim"), bool(node.attr("keepdim", False))
        x = args[0]
        if op == "sum":
            return torch.sum(x, dim=dim, keepdim=keepdim)
        if op == "mean":
            return torch.mean(x, dim=dim, keepdim=keepdim)
        if op == "amax":
            return torch.amax(x, dim=dim, keepdim=keepdim)
        if op == "amin":
            return torch.amin(x, dim=dim, keepdim=keepdim)
        return torch.logsumexp(x, dim=dim, keepdim=keepdim)
    if op in INDEX_OPS:
        pick = torch.argmax if op == "argmax" else torch.argmin
        return pick(args[0], dim=node.attr("dim"), keepdim=bool(node.attr("keepdim", False)))
    if op == "softmax":
        return torch.softmax(args[0], dim=node.attr("dim"))
    if op == "log_softmax":
        return torch.log_softmax(args[0], dim=node.attr("dim"))
    if op == "layer_norm":
        x = args[0]
        weight = args[1] if len(args) > 1 else None
        bias = args[2] if len(args) > 2 else None
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=node.attr("eps", 1e-5))
    if op == "view":
        return args[0].reshape(reshape_sizes(node) or node.attr("shape"))
    if op == "permute":
        return args[0].permute(node.attr("dims"))
    if op == "slice":
        dim = node.attr("dim")
        index = [slice(None)] * args[0].dim()
        stop = int(args[1]) if len(args) > 1 else node.attr("stop")
        index[dim] = slice(node.attr("start", 0), stop, node.attr("step", 1))
        return args[0][tuple(index)]
    if op == "size":
        return torch.tensor(float(args[0].shape[node.attr("dim")]), dtype=torch.float64)
    if op in STANDALONE_OPS or op in COPY_OPS:
        return _apply_standalone(node, args)
    return _apply_heavy(node, args)


def _apply_standalone(node: Node, args: list[Any]) -> torch.Tensor:
    op, x = node.op, args[0]
    if op == "attention":
        return F.scaled_dot_product_attention(args[0], args[1], args[2], is_causal=bool(node.attr("causal")),
                                              scale=node.attr("scale"))
    if op == "cat":
        return torch.cat(args, dim=node.attr("dim"))
    if op == "flip":
        return torch.flip(x, node.attr("dims"))
    if op == "fill":
        return _filled(node, x.device)
    if op == "moments":
        dims = [0, *range(2, x.dim())]
        var, mean = torch.var_mean(x.float(), dim=dims, correction=0)
        return torch.stack([mean, var])
    if op in SCAN_OPS:
        dim = node.attr("dim")
        return torch.cummax(x, dim).values if op == "cummax" else getattr(torch, op)(x, dim)
    if op in MASK_OPS:
        keep = getattr(torch, op)(torch.ones(x.shape[-2:], dtype=torch.bool, device=x.device), node.attr("diagonal"))
        return torch.where(keep, x, torch.full((), node.attr("fill"), dtype=x.dtype, device=x.device))
    rank = len(node.attr("kernel"))
    options = {"kernel_size": node.attr("kernel"), "stride": node.attr("stride"), "padding": node.attr("padding"),
               "ceil_mode": node.attr("ceil_mode")}
    if op == "max_pool":
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[rank - 1]
        return pool(x, dilation=node.attr("dilation"), **options)
    if rank == 1:
        return F.avg_pool1d(x, count_include_pad=node.attr("count_include_pad"), **options)
    average = F.avg_pool2d if rank == 2 else F.avg_pool3d
    return average(x, count_include_pad=node.attr("count_include_pad"), divisor_override=node.attr("divisor"),
                   **options)


def _filled(node: Node, device: torch.device) -> torch.Tensor:
    """`start + step * index along dim` in the node's shape and dtype (computed in float64, as arange does)."""
    rank = len(node.shape)
    dim = node.attr("dim", 0)
    length = node.shape[dim] if rank else 1
    index = torch.arange(length, dtype=torch.float64, device=device)
    index = index.reshape([length if d == dim else 1 for d in range(rank)]) if rank else index.reshape(())
    values = node.attr("start", 0.0) + node.attr("step", 0.0) * index
    return values.expand(node.shape).to(torch_dtype(node.dtype)).contiguous()


def _apply_heavy(node: Node, args: list[Any]) -> torch.Tensor:
    op = node.op
    if op == "linear":
        return F.linear(args[0], args[1], args[2] if len(args) > 2 else None)
    if op == "matmul":
        return torch.matmul(args[0], args[1])
    if op == "bmm":
        return torch.bmm(args[0], args[1])
    if op in CONV_OPS:
        conv = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv3d": F.conv3d}[op]
        return conv(args[0], args[1], args[2] if len(args) > 2 else None, stride=node.attr("stride", 1),
                    padding=node.attr("padding", 0), dilation=node.attr("dilation", 1),
                    groups=node.attr("groups", 1))
    if op in CONV_TRANSPOSE_OPS:
        transposed = F.conv_transpose1d if op == "conv_transpose1d" else F.conv_transpose2d
        return transposed(args[0], args[1], args[2] if len(args) > 2 else None, stride=node.attr("stride", 1),
                          padding=node.attr("padding", 0), output_padding=node.attr("output_padding", 0),
                          groups=node.attr("groups", 1), dilation=node.attr("dilation", 1))
    raise IRError(f"unknown op {op!r}")


def _clamp(x: torch.Tensor, node: Node) -> torch.Tensor:
    return torch.clamp(x, min=node.attr("min"), max=node.attr("max"))


_UNARY: dict[str, Any] = {
    "neg": lambda x, n: -x,
    "abs": lambda x, n: torch.abs(x),
    "exp": lambda x, n: torch.exp(x),
    "log": lambda x, n: torch.log(x),
    "log1p": lambda x, n: torch.log1p(x),
    "expm1": lambda x, n: torch.expm1(x),
    "sqrt": lambda x, n: torch.sqrt(x),
    "rsqrt": lambda x, n: torch.rsqrt(x),
    "reciprocal": lambda x, n: torch.reciprocal(x),
    "square": lambda x, n: x * x,
    "sin": lambda x, n: torch.sin(x),
    "cos": lambda x, n: torch.cos(x),
    "erf": lambda x, n: torch.erf(x),
    "sigmoid": lambda x, n: torch.sigmoid(x),
    "tanh": lambda x, n: torch.tanh(x),
    "relu": lambda x, n: torch.relu(x),
    "gelu": lambda x, n: F.gelu(x),
    "gelu_tanh": lambda x, n: F.gelu(x, approximate="tanh"),
    "silu": lambda x, n: F.silu(x),
    "mish": lambda x, n: F.mish(x),
    "softplus": lambda x, n: F.softplus(x, beta=n.attr("beta", 1.0), threshold=n.attr("threshold", 20.0)),
    "leaky_relu": lambda x, n: F.leaky_relu(x, n.attr("negative_slope", 0.01)),
    "elu": lambda x, n: F.elu(x, n.attr("alpha", 1.0)),
    "hardsigmoid": lambda x, n: F.hardsigmoid(x),
    "hardswish": lambda x, n: F.hardswish(x),
    "clamp": _clamp,
    "cast": lambda x, n: x.to(torch_dtype(n.dtype)),
    "logical_not": lambda x, n: torch.logical_not(x),
}


def _maximum(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        a, b = b, a
    return torch.clamp(a, min=b) if not isinstance(b, torch.Tensor) else torch.maximum(a, b)


def _minimum(a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        a, b = b, a
    return torch.clamp(a, max=b) if not isinstance(b, torch.Tensor) else torch.minimum(a, b)


def _pow(a: Any, b: Any) -> torch.Tensor:
    return torch.pow(a, b)


_MIRRORED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "ne": "ne"}


def _compare(op: str, a: Any, b: Any) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):  # 0.5 < x is x > 0.5
        a, b, op = b, a, _MIRRORED[op]
    return getattr(torch, op)(a, b)


_BINARY: dict[str, Any] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": _maximum,
    "minimum": _minimum,
    "pow": _pow,
    "remainder": torch.remainder,
    **{name: functools.partial(_compare, name) for name in COMPARE_OPS},
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
}


def _where(condition: Any, a: Any, b: Any) -> torch.Tensor:
    """torch.where, with a condition held as booleans or as 1.0/0.0, and either branch possibly a float."""
    if not isinstance(condition, torch.Tensor):
        raise IRError("where needs a tensor condition")
    mask = condition if condition.dtype == torch.bool else condition != 0
    like = a if isinstance(a, torch.Tensor) else b if isinstance(b, torch.Tensor) else None
    dtype = like.dtype if like is not None else torch.float32
    a = a if isinstance(a, torch.Tensor) else torch.tensor(float(a), dtype=dtype, device=mask.device)
    b = b if isinstance(b, torch.Tensor) else torch.tensor(float(b), dtype=dtype, device=mask.device)
    return torch.where(mask, a, b)
