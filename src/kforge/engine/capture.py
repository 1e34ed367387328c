"""Graph capture: the reference `Model.forward` traced with torch.fx and lowered to an `ir.Program`.

The model is built from `get_init_inputs()` and traced symbolically (math functions of sizes are recorded,
not evaluated); shapes come from running the graph on every input set the problem defines (`ShapeProp`), so
each dim is marked static when all sets agree on it. Anything outside the IR raises `LoweringError`, whose
message is the one line the user sees.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from kforge.engine import attention, constants, decompose, einsum, ir, losses, tracing
from kforge.problem import Problem


class LoweringError(ValueError):
    """The reference uses something the engine cannot lower; the message is one line for the user."""


def cannot_lower(what: str, *, op: bool = True) -> LoweringError:
    """The one-line refusal: `what` is an aten op's name (with a detail after it), or, with `op=False`, a
    description of something else (a value, a kind of forward)."""
    return LoweringError(f"builtin engine: cannot lower {'aten.' if op else ''}{what}; configure a model with --model")


@dataclass(frozen=True)
class Captured:
    """A lowered problem: the program and the reference model it was traced from."""

    program: ir.Program
    model: nn.Module = field(repr=False)


def capture(problem: Problem, seed: int = 0, training: bool | None = None) -> Captured:
    """Trace and lower `problem`'s Model, as its constructor leaves it or with every layer switched to `training`;
    LoweringError when it uses something the IR does not have."""
    model = problem.make_model(seed)
    if training is not None:
        model.train(training)
    try:
        graph = tracing.trace(model, problem.path)
    except tracing.TraceError as exc:
        where = f" at {exc.where}" if exc.where else ""
        raise LoweringError(f"builtin engine: cannot trace Model.forward{where} ({exc.reason}); "
                            "configure a model with --model") from None
    shapes = _shapes_per_set(graph, problem, seed)
    return Captured(_Lowerer(graph, model, shapes).lower(), model)


def _shapes_per_set(graph: torch.fx.GraphModule, problem: Problem, seed: int) -> list[dict[str, Any]]:
    """For each input set, every node's result (a tensor's meta, or a Python value) from one run of the graph."""
    results = []
    for inputs in problem.input_sets(seed):
        values: dict[str, Any] = {}
        interpreter = _Recorder(graph, values)
        # ShapeProp prints the traceback of a node that fails before raising its own error: the cause goes into the
        # one line the user sees instead.
        with torch.no_grad(), contextlib.redirect_stderr(io.StringIO()):
            try:
                interpreter.run(*inputs)
            except LoweringError:
                raise
            except Exception as exc:
                cause = str(exc.__cause__ or exc).strip().splitlines()
                line = tracing.line_of(interpreter.current, problem.path) if interpreter.current else ""
                where = f" at {line}" if line else ""
                raise LoweringError(f"builtin engine: the traced graph does not run{where} "
                                    f"({cause[0] if cause else exc}); configure a model with --model") from None
        results.append(values)
    return results


class _Recorder(ShapeProp):
    """ShapeProp that also keeps each node's plain value (sizes, tuples) and the meta of its tensors."""

    def __init__(self, module: torch.fx.GraphModule, values: dict[str, Any]) -> None:
        super().__init__(module)
        self.values = values
        self.current: torch.fx.Node | None = None  # the node running, named by a refusal when it fails

    def run_node(self, n: torch.fx.Node) -> Any:
        self.current = n
        result = super().run_node(n)
        if isinstance(result, torch.Tensor):
            self.values[n.name] = (tuple(result.shape), result.dtype)
        elif isinstance(result, (int, float, torch.Size)) or (
                isinstance(result, tuple) and not any(isinstance(r, torch.Tensor) for r in result)):
            self.values[n.name] = result
        else:
            self.values[n.name] = None
        return result


_ACTIVATION_MODULES: dict[type[nn.Module], tuple[str, Callable[[nn.Module], dict[str, Any]]]] = {
    nn.ReLU: ("relu", lambda m: {}),
    nn.Sigmoid: ("sigmoid", lambda m: {}),
    nn.Tanh: ("tanh", lambda m: {}),
    nn.SiLU: ("silu", lambda m: {}),
    nn.Mish: ("mish", lambda m: {}),
    nn.Hardsigmoid: ("hardsigmoid", lambda m: {}),
    nn.Hardswish: ("hardswish", lambda m: {}),
    nn.Softplus: ("softplus", lambda m: {"beta": float(m.beta), "threshold": float(m.threshold)}),
    nn.LeakyReLU: ("leaky_relu", lambda m: {"negative_slope": float(m.negative_slope)}),
    nn.ELU: ("elu", lambda m: {"alpha": float(m.alpha)}),
    nn.ReLU6: ("clamp", lambda m: {"min": 0.0, "max": 6.0}),
    nn.Hardtanh: ("clamp", lambda m: {"min": float(m.min_val), "max": float(m.max_val)}),
}

_UNARY_FUNCTIONS: dict[Any, str] = {
    operator.neg: "neg", torch.neg: "neg", torch.abs: "abs", operator.abs: "abs", torch.exp: "exp",
    torch.log: "log", torch.log1p: "log1p", torch.expm1: "expm1", torch.sqrt: "sqrt", torch.rsqrt: "rsqrt",
    torch.reciprocal: "reciprocal", torch.square: "square", torch.sin: "sin", torch.cos: "cos", torch.erf: "erf",
    torch.special.erf: "erf", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid", torch.tanh: "tanh", F.tanh: "tanh",
    torch.relu: "relu", F.relu: "relu", F.silu: "silu", F.mish: "mish", F.hardsigmoid: "hardsigmoid",
    F.hardswish: "hardswish", math.log: "log", math.sqrt: "sqrt", math.exp: "exp",
    operator.invert: "logical_not", torch.logical_not: "logical_not",
}
_UNARY_METHODS = {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "square", "sin",
                  "cos", "erf", "sigmoid", "tanh", "relu", "logical_not"}
_BINARY_FUNCTIONS: dict[Any, str] = {
    operator.add: "add", torch.add: "add", operator.sub: "sub", torch.sub: "sub", operator.mul: "mul",
    torch.mul: "mul", torch.multiply: "mul", torch.subtract: "sub", operator.truediv: "div", torch.div: "div",
    torch.divide: "div", torch.maximum: "maximum",
    torch.minimum: "minimum", operator.pow: "pow", torch.pow: "pow",
    operator.gt: "gt", torch.gt: "gt", operator.ge: "ge", torch.ge: "ge", operator.lt: "lt", torch.lt: "lt",
    operator.le: "le", torch.le: "le", operator.eq: "eq", torch.eq: "eq", operator.ne: "ne", torch.ne: "ne",
    operator.and_: "logical_and", torch.logical_and: "logical_and", operator.or_: "logical_or",
    torch.logical_or: "logical_or",
}
_BINARY_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "multiply": "mul", "subtract": "sub",
                   "divide": "div", "maximum": "maximum",
                   "minimum": "minimum", "pow": "pow", **{op: op for op in ir.COMPARE_OPS},
                   "logical_and": "logical_and", "logical_or": "logical_or", "__and__": "logical_and",
                   "__or__": "logical_or"}
_CAST_METHODS = {"float", "to", "type_as", "long", "int", "bool"}  # to a dtype of ir.DTYPES
_REFLECTED = {"radd": "add", "rsub": "sub", "rmul": "mul", "rdiv": "div", "rtruediv": "div"}
_REDUCE_FUNCTIONS: dict[Any, str] = {torch.sum: "sum", torch.mean: "mean", torch.amax: "amax", torch.amin: "amin",
                                     torch.logsumexp: "logsumexp"}
_ROW_FUNCTIONS: dict[Any, str] = {torch.softmax: "softmax", F.softmax: "softmax", torch.log_softmax: "log_softmax",
                                  F.log_softmax: "log_softmax"}
_VIEW_METHODS = {"view", "reshape", "unsqueeze", "squeeze", "flatten", "view_as", "reshape_as"}
_VIEW_FUNCTIONS = {torch.reshape, torch.unsqueeze, torch.squeeze, torch.flatten}
_POOL_FUNCTIONS: dict[Any, tuple[str, int]] = {
    F.max_pool1d: ("max_pool", 1), F.max_pool2d: ("max_pool", 2), F.max_pool3d: ("max_pool", 3),
    F.avg_pool1d: ("avg_pool", 1), F.avg_pool2d: ("avg_pool", 2), F.avg_pool3d: ("avg_pool", 3)}
_ADAPTIVE_FUNCTIONS: dict[Any, tuple[str, int]] = {
    F.adaptive_avg_pool1d: ("avg_pool", 1), F.adaptive_avg_pool2d: ("avg_pool", 2),
    F.adaptive_avg_pool3d: ("avg_pool", 3), F.adaptive_max_pool1d: ("max_pool", 1),
    F.adaptive_max_pool2d: ("max_pool", 2), F.adaptive_max_pool3d: ("max_pool", 3)}
# Pooling layers: (op, pooled dims).
_POOL_MODULES: dict[type, tuple[str, int]] = {
    nn.MaxPool1d: ("max_pool", 1), nn.MaxPool2d: ("max_pool", 2), nn.MaxPool3d: ("max_pool", 3),
    nn.AvgPool1d: ("avg_pool", 1), nn.AvgPool2d: ("avg_pool", 2), nn.AvgPool3d: ("avg_pool", 3)}
_ADAPTIVE_MODULES: dict[type, tuple[str, int]] = {
    nn.AdaptiveAvgPool1d: ("avg_pool", 1), nn.AdaptiveAvgPool2d: ("avg_pool", 2),
    nn.AdaptiveAvgPool3d: ("avg_pool", 3), nn.AdaptiveMaxPool1d: ("max_pool", 1),
    nn.AdaptiveMaxPool2d: ("max_pool", 2), nn.AdaptiveMaxPool3d: ("max_pool", 3)}
_IDENTITY_METHODS = {"contiguous", "clone", "detach"}
_HEAVY_FUNCTIONS: dict[Any, str] = {F.linear: "linear", torch.matmul: "matmul", operator.matmul: "matmul",
                                    torch.mm: "matmul", torch.bmm: "bmm", F.conv1d: "conv1d", F.conv2d: "conv2d",
                                    F.conv3d: "conv3d", F.conv_transpose1d: "conv_transpose1d",
                                    F.conv_transpose2d: "conv_transpose2d"}
_CONV_MODULES: dict[type, str] = {nn.Conv1d: "conv1d", nn.Conv2d: "conv2d", nn.Conv3d: "conv3d",
                                  nn.ConvTranspose1d: "conv_transpose1d", nn.ConvTranspose2d: "conv_transpose2d"}
# Loss functions and layers: the loss, and the function's parameter names in order (a layer's options are its
# attributes of those names).
_LOSS_FUNCTIONS: dict[Any, tuple[str, tuple[str, ...]]] = {
    F.cross_entropy: ("cross_entropy", ("input", "target", "weight", "size_average", "ignore_index", "reduce",
                                        "reduction", "label_smoothing")),
    F.smooth_l1_loss: ("smooth_l1", ("input", "target", "size_average", "reduce", "reduction", "beta")),
    F.kl_div: ("kl_div", ("input", "target", "size_average", "reduce", "reduction", "log_target")),
    F.triplet_margin_loss: ("triplet_margin", ("anchor", "positive", "negative", "margin", "p", "eps", "swap",
                                               "size_average", "reduce", "reduction")),
}
_LOSS_MODULES: dict[type, Any] = {nn.CrossEntropyLoss: F.cross_entropy, nn.SmoothL1Loss: F.smooth_l1_loss,
                                  nn.KLDivLoss: F.kl_div, nn.TripletMarginLoss: F.triplet_margin_loss}
# Tensors made in the forward, filled with one value: the value (None: given as an argument, after the sizes).
_FILLED_FUNCTIONS: dict[Any, float | None] = {torch.zeros_like: 0.0, torch.ones_like: 1.0, torch.full_like: None,
                                              torch.zeros: 0.0, torch.ones: 1.0, torch.full: None}
_FILLED_METHODS: dict[str, float | None] = {"new_zeros": 0.0, "new_ones": 1.0, "new_full": None}
# Names the user sees for layers that have no lowering (the rest are named by their class).
_MODULE_NAMES = {nn.BatchNorm1d: "batch_norm", nn.BatchNorm2d: "batch_norm", nn.Dropout: "dropout",
                 nn.GroupNorm: "group_norm", nn.InstanceNorm1d: "instance_norm", nn.InstanceNorm2d: "instance_norm"}


class _Lowerer:
    """Walks the fx graph once, turning each node into IR values."""

    def __init__(self, graph: torch.fx.GraphModule, model: nn.Module, shapes: list[dict[str, Any]]) -> None:
        self.graph = graph
        self.model = model
        self.shapes = shapes
        self.inputs: list[ir.TensorSpec] = []
        self.params: dict[str, ir.TensorSpec] = {}
        self.nodes: list[ir.Node] = []  # heavy ops among them: a graph, hoisted when it has one kernel's form
        self.env: dict[str, Any] = {}  # fx node name -> IR arg (a value name, a float) or a Python value
        self.updates: list[tuple[str, str]] = []  # (buffer path, value) the forward writes: ir.Program.updates
        # Training-mode batch norms (fx node, input, layer, path) whose buffers the forward moves: their nodes come
        # after the forward's own, so that the kernels computing the outputs are cut as they would be without them.
        self.moving: list[tuple[torch.fx.Node, str, nn.Module, str]] = []

    # ---- results --------------------------------------------------------------------------------------------
    def lower(self) -> ir.Program:
        outputs: tuple[str, ...] = ()
        for node in self.graph.graph.nodes:
            if node.op == "output":
                outputs = self._outputs(node.args[0])
            else:
                self.env[node.name] = self._lower_node(node)
        for moving in self.moving:
            self._running_statistics(*moving)
        graph = ir.Program(inputs=tuple(self.inputs), params=tuple(self.params.values()), nodes=tuple(self.nodes),
                           outputs=outputs + tuple(value for _, value in self.updates),
                           updates=tuple(path for path, _ in self.updates))
        return ir.hoist_heavy(graph)

    def _outputs(self, result: Any) -> tuple[str, ...]:
        items = result if isinstance(result, (tuple, list)) else (result,)
        names = []
        for item in items:
            value = self.env.get(item.name) if isinstance(item, torch.fx.Node) else None
            # a layer's (output, weights) pair returned as it is: both
            names.extend(value[1:] if isinstance(value, tuple) and value[0] == "outputs" else [value])
        if not all(isinstance(name, str) for name in names):
            raise LoweringError("builtin engine: forward must return tensors; configure a model with --model")
        return tuple(names)

    def _meta(self, name: str) -> tuple[ir.Shape, str, tuple[bool, ...]]:
        main = self.shapes[0].get(name)
        if not (isinstance(main, tuple) and len(main) == 2 and isinstance(main[1], torch.dtype)):
            raise cannot_lower(f"the value {name} (not a tensor)", op=False)
        shape = main[0]
        static = tuple(all(len(s[name][0]) == len(shape) and s[name][0][d] == shape[d] for s in self.shapes)
                       for d in range(len(shape)))
        try:
            return shape, ir.dtype_name(main[1]), static
        except ir.IRError:
            raise cannot_lower(f"the value {name} of dtype {main[1]}", op=False) from None

    def _emit(self, fx_node: torch.fx.Node, op: str, args: tuple[ir.Arg, ...], **attrs: Any) -> str:
        shape, dtype, static = self._meta(fx_node.name)
        if dtype == "bool" and op not in ir.BOOLEAN_RESULT_OPS and op != "cast":  # kernels hold them as 1.0/0.0
            raise cannot_lower(f"{op} (with a boolean result)")
        if op in ir.LOGICAL_OPS and not all(self._is_mask(arg) for arg in args):
            raise cannot_lower(f"{op} (of values that are not masks)")
        node = ir.Node(fx_node.name, op, args, shape, dtype, ir.make_attrs(**attrs), static)
        self.nodes.append(node)
        return node.name

    def _scalar(self, fx_node: torch.fx.Node, op: str, args: tuple[ir.Arg, ...], **attrs: Any) -> str:
        node = ir.Node(fx_node.name, op, args, (), "float64", ir.make_attrs(**attrs))
        self.nodes.append(node)
        return node.name

    # ---- what decompositions build with (decompose.Builder) -------------------------------------------------
    def add(self, name: str, op: str, args: Any, result_shape: ir.Shape, dtype: str, static: Any,
            **attrs: Any) -> str:
        self.nodes.append(ir.Node(name, op, tuple(args), tuple(result_shape), dtype, ir.make_attrs(**attrs),
                                  tuple(static)))
        return name

    def value(self, name: str) -> ir.TensorSpec | ir.Node:
        for spec in (*self.inputs, *self.params.values(), *self.nodes):
            if spec.name == name:
                return spec
        raise cannot_lower(f"the value {name} (unknown)", op=False)

    def param(self, path: str) -> str:
        return self._param(path)

    def _param(self, path: str) -> str:
        if path not in self.params:
            tensor = _attribute(self.model, path)
            if not isinstance(tensor, torch.Tensor):
                raise cannot_lower(f"the attribute {path} (not a tensor)", op=False)
            self.params[path] = ir.TensorSpec(path, tuple(tensor.shape), ir.dtype_name(tensor.dtype))
        return path

    def _arg(self, value: Any) -> Any:
        """An fx argument as an IR arg: a value name, a float, or a Python value (dims, shapes, None)."""
        if isinstance(value, torch.fx.Node):
            return self.env[value.name]
        if isinstance(value, (tuple, list)):
            return type(value)(self._arg(v) for v in value)
        if isinstance(value, slice):
            return slice(self._arg(value.start), self._arg(value.stop), self._arg(value.step))
        return value

    def _is_value(self, arg: Any) -> bool:
        return isinstance(arg, str)

    # ---- one fx node ----------------------------------------------------------------------------------------
    def _lower_node(self, node: torch.fx.Node) -> Any:
        if node.op == "placeholder":
            if all(isinstance(s.get(node.name), (int, float)) and not isinstance(s.get(node.name), bool)
                   for s in self.shapes):  # a Python number: a run-time scalar
                self.inputs.append(ir.TensorSpec(node.name, (), "float64"))
                return node.name
            shape, dtype, static = self._meta(node.name)
            self.inputs.append(ir.TensorSpec(node.name, shape, dtype, static))
            return node.name
        if node.op == "get_attr":
            if str(node.target).startswith("_tensor_constant"):  # made in forward from constants only, by tracing
                return self._traced_constant(node, _attribute(self.model, str(node.target)))
            return self._param(str(node.target))
        if node.op == "call_module":
            return self._module(node, self.model.get_submodule(str(node.target)))
        args = [self._arg(a) for a in node.args]
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        if _mentions_constant((args, kwargs)) or (node.target in constants.FACTORIES and
                                                  constants.feeds_masks(node, self._made_from_sizes)):
            folded = self._fold(node, args, kwargs)
            if folded is not _NOT_FOLDED:
                return folded
        if node.op == "call_method":
            return self._method(node, str(node.target), args, kwargs)
        return self._function(node, node.target, args, kwargs)

    def _fold(self, node: torch.fx.Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """A call on constants, static sizes and numbers only, computed now (engine/constants.py); _NOT_FOLDED
        when it reads a tensor the forward receives or computes."""
        kwargs = {key: value for key, value in kwargs.items() if key != "device"}
        try:
            concrete = self._concrete((args, kwargs))
        except _Unfoldable:
            return _NOT_FOLDED
        except _Varying:
            raise cannot_lower(f"{getattr(node.target, '__name__', node.target)} (of a size that varies between "
                               "input sets)") from None
        return constants.run(node.target, node.op == "call_method", *concrete)

    def _made_from_sizes(self, arg: Any) -> bool:
        """Whether an fx argument holds no tensor the forward receives or computes: numbers, sizes, devices, and
        tensors computed from those alone."""
        if isinstance(arg, (tuple, list)):
            return all(self._made_from_sizes(item) for item in arg)
        if isinstance(arg, slice):
            return all(self._made_from_sizes(bound) for bound in (arg.start, arg.stop, arg.step))
        if not isinstance(arg, torch.fx.Node):
            return True
        value = self.shapes[0].get(arg.name)
        if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], torch.dtype)):
            return True  # a size, a shape, a device
        inputs = (arg.args, tuple(arg.kwargs.values()))
        return arg.op in ("call_function", "call_method") and self._made_from_sizes(inputs)

    def _resolved(self, value: Any) -> Any:
        """`value` with the sizes in it that every input set agrees on as integers, where it holds no tensor."""
        try:
            return self._concrete(value)
        except (_Unfoldable, _Varying):
            return value

    def _concrete(self, value: Any) -> Any:
        """An fx argument's value at capture: a constant's tensor, a static size's int, a dtype."""
        if isinstance(value, constants.Constant):
            return value.tensor
        if isinstance(value, str):
            if not self._is_scalar(value):
                raise _Unfoldable
            size = self._constant(value)
            if size is None:
                raise _Varying
            return int(size) if float(size).is_integer() else size
        if isinstance(value, tuple) and len(value) == 2 and value[0] == "dtype":
            return ir.torch_dtype(self.value(value[1]).dtype)
        if isinstance(value, (tuple, list)):
            return type(value)(self._concrete(item) for item in value)
        if isinstance(value, dict):
            return {key: self._concrete(item) for key, item in value.items()}
        if isinstance(value, slice):
            return slice(*(self._concrete(bound) for bound in (value.start, value.stop, value.step)))
        return value

    def _module(self, node: torch.fx.Node, module: nn.Module) -> Any:
        x = self._arg(node.args[0])
        path = str(node.target)
        if isinstance(module, nn.MultiheadAttention):
            return self._multihead(node, module, path)
        if isinstance(module, nn.Linear):
            operands = (x, self._param(f"{path}.weight"))
            if module.bias is not None:
                operands += (self._param(f"{path}.bias"),)
            return self._emit(node, "linear", operands)
        if type(module) in _LOSS_MODULES:
            function = _LOSS_MODULES[type(module)]
            names = _LOSS_FUNCTIONS[function][1]
            options = {key: getattr(module, key) for key in names if hasattr(module, key)}
            options.update(zip(names, [self._arg(a) for a in node.args], strict=False))
            options.update({key: self._arg(value) for key, value in node.kwargs.items()})
            return self._loss(node, function, options)
        if type(module) in _CONV_MODULES:
            op = _CONV_MODULES[type(module)]
            if module.padding_mode != "zeros" or isinstance(module.padding, str):
                raise cannot_lower(f"convolution (padding {module.padding!r}, mode {module.padding_mode})")
            if len(node.args) > 1 or node.kwargs:
                raise cannot_lower(f"{op} (with an output size)")
            operands = (x, self._param(f"{path}.weight"))
            if module.bias is not None:
                operands += (self._param(f"{path}.bias"),)
            extra = {"output_padding": tuple(module.output_padding)} if op in ir.CONV_TRANSPOSE_OPS else {}
            return self._emit(node, op, operands, stride=tuple(module.stride), padding=tuple(module.padding),
                              dilation=tuple(module.dilation), groups=int(module.groups), **extra)
        for kind, (op, attrs) in _ACTIVATION_MODULES.items():
            if type(module) is kind:
                return self._emit(node, op, (x,), **attrs(module))
        if isinstance(module, nn.SELU):
            return self._selu(node, x)
        if isinstance(module, nn.GELU):
            return self._emit(node, "gelu_tanh" if module.approximate == "tanh" else "gelu", (x,))
        if isinstance(module, (nn.Softmax, nn.LogSoftmax)):
            op = "softmax" if isinstance(module, nn.Softmax) else "log_softmax"
            return self._emit(node, op, (x,), dim=self._dim(node.args[0], module.dim))
        if isinstance(module, nn.Identity) or (isinstance(module, nn.Dropout) and
                                               (module.p == 0 or not module.training)):
            return x
        if type(module) in _POOL_MODULES:
            op, rank = _POOL_MODULES[type(module)]
            fields = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "count_include_pad",
                      "divisor_override", "return_indices")
            return self._pool(node, op, rank, x, {f: getattr(module, f) for f in fields if hasattr(module, f)})
        if type(module) in _ADAPTIVE_MODULES:
            if getattr(module, "return_indices", False):
                raise cannot_lower("adaptive_max_pool (returning indices)")
            op, rank = _ADAPTIVE_MODULES[type(module)]
            return self._adaptive_pool(node, op, rank, x, module.output_size)
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            return self._batch_norm(node, x, module, path)
        if isinstance(module, (nn.GroupNorm, nn.modules.instancenorm._InstanceNorm)):
            return self._group_norm(node, x, module, path)
        if isinstance(module, nn.LayerNorm):
            weight = self._param(f"{path}.weight") if module.weight is not None else None
            bias = self._param(f"{path}.bias") if module.bias is not None else None
            return self._layer_norm(node, x, module.normalized_shape, weight, bias, module.eps)
        raise cannot_lower(_MODULE_NAMES.get(type(module), type(module).__name__.lower()))

    def _batch_norm(self, node: torch.fx.Node, x: Any, module: nn.Module, path: str) -> str:
        batch_statistics = module.training or module.running_mean is None
        running = None if batch_statistics else (self._param(f"{path}.running_mean"),
                                                 self._param(f"{path}.running_var"))
        weight = self._param(f"{path}.weight") if module.weight is not None else None
        bias = self._param(f"{path}.bias") if module.bias is not None else None
        if not isinstance(x, str) or len(self.program_shape(x)) < 2:
            raise cannot_lower("batch_norm (of an input without a channel dim)")
        result = decompose.batch_norm(self, node.name, x, running=running, weight=weight, bias=bias,
                                      eps=float(module.eps))
        if module.training and module.running_mean is not None:
            if any(path == moved for _, _, _, moved in self.moving):
                raise cannot_lower("batch_norm (one layer called twice in a forward, in training mode)")
            self.moving.append((node, x, module, path))
        return result

    def _running_statistics(self, node: torch.fx.Node, x: str, module: nn.Module, path: str) -> None:
        """A training-mode batch norm's buffers, moved as torch moves them (decompose.running_statistics)."""
        count = self._param(f"{path}.num_batches_tracked") if module.num_batches_tracked is not None else None
        momentum = None if module.momentum is None else float(module.momentum)
        try:
            self.updates += decompose.running_statistics(
                self, node.name, x, mean=self._param(f"{path}.running_mean"), var=self._param(f"{path}.running_var"),
                count=count, momentum=momentum)
        except ValueError as exc:
            raise cannot_lower(f"batch_norm ({exc})") from None

    def _group_norm(self, node: torch.fx.Node, x: Any, module: nn.Module, path: str) -> str:
        if isinstance(module, nn.GroupNorm):
            groups, affine = int(module.num_groups), bool(module.affine)
        else:
            if module.track_running_stats:  # used in evaluation mode, updated in training mode: not lowered
                raise cannot_lower("instance_norm (with running statistics)")
            groups, affine = int(module.num_features), bool(module.affine)
        weight = self._param(f"{path}.weight") if affine else None
        bias = self._param(f"{path}.bias") if affine else None
        try:
            return decompose.group_norm(self, node.name, x, groups=groups, weight=weight, bias=bias,
                                        eps=float(module.eps))
        except ValueError as exc:
            name = "group_norm" if isinstance(module, nn.GroupNorm) else "instance_norm"
            raise cannot_lower(f"{name} ({exc})") from None

    def _layer_norm(self, node: torch.fx.Node, x: Any, normalized: Any, weight: Any, bias: Any, eps: float) -> str:
        count = len(tuple(normalized)) if isinstance(normalized, (tuple, list, torch.Size)) else 1
        if count > 1:
            try:
                return decompose.layer_norm_dims(self, node.name, x, count, weight=weight, bias=bias, eps=float(eps))
            except ValueError as exc:
                raise cannot_lower(f"layer_norm ({exc})") from None
        operands: tuple[ir.Arg, ...] = (x,)
        if weight is not None:
            operands += (weight,) if bias is None else (weight, bias)
        elif bias is not None:
            raise cannot_lower("layer_norm (bias without weight)")
        shape, _, _ = self._meta(node.name)
        return self._emit(node, "layer_norm", operands, dim=len(shape) - 1, eps=float(eps))

    def _dim(self, source: Any, dim: Any) -> int:
        if isinstance(dim, (list, tuple)):
            if len(dim) != 1:
                raise cannot_lower("a reduction over several dims", op=False)
            dim = dim[0]
        if not isinstance(dim, int):
            raise cannot_lower("a reduction over all dims", op=False)
        rank = len(self._meta(source.name)[0]) if isinstance(source, torch.fx.Node) else 0
        return dim % rank if rank else dim

    def _method(self, node: torch.fx.Node, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        x = args[0]
        if name in _IDENTITY_METHODS:
            return x
        if name == "size":
            return self._size(node, x, args[1] if len(args) > 1 else kwargs.get("dim"))
        if name in _UNARY_METHODS:
            return self._unary(node, name, x)
        if name in _BINARY_METHODS:
            return self._binary(node, _BINARY_METHODS[name], x, args[1] if len(args) > 1 else kwargs["other"])
        if name in ("sum", "mean", "amax", "amin", "logsumexp", "max", "min"):
            return self._reduce(node, name, x, args[1:], kwargs)
        if name in ir.INDEX_OPS:
            return self._index_reduce(node, name, x, args[1:], kwargs)
        if name == "norm":
            return self._norm(node, {**dict(zip(("input", "p", "dim", "keepdim", "dtype"), args, strict=False)),
                                     **kwargs})
        if name in ("softmax", "log_softmax"):
            return self._emit(node, name, (x,), dim=self._dim(node.args[0], args[1] if len(args) > 1
                                                              else kwargs["dim"]))
        if name in ("clamp", "clip"):
            return self._clamp(node, x, *args[1:], **kwargs)
        if name in _VIEW_METHODS:
            return self._view(node, x)
        if name in ("expand", "expand_as"):
            return self._expand(node, x)
        if name in _FILLED_METHODS:
            value = _FILLED_METHODS[name]
            return self._filled(node, args[2] if value is None and len(args) > 2 else kwargs.get("fill_value", value))
        if name == "permute":
            order = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:] or kwargs["dims"]
            return self._permute(node, x, order)
        if name in ("transpose", "swapaxes"):
            return self._transpose(node, x, *args[1:3])
        if name == "t":
            return self._transpose(node, x)
        if name in ("chunk", "split"):
            pieces = args[1] if len(args) > 1 else kwargs.get("chunks", kwargs.get("split_size"))
            dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
            return self._pieces(x, pieces, int(dim), name == "chunk")
        if name == "narrow":
            return self._narrow(node, args, kwargs)
        if name in ("cumsum", "cumprod", "cummax"):
            return self._scan(node, name, x, args[1] if len(args) > 1 else kwargs["dim"], kwargs)
        if name == "flip":
            return self._flip(node, x, args[1] if len(args) == 2 and isinstance(args[1], (list, tuple))
                              else args[1:] or kwargs["dims"])
        if name in ("tril", "triu"):
            diagonal = args[1] if len(args) > 1 else kwargs.get("diagonal", 0)
            return self._emit(node, name, (x,), diagonal=int(diagonal), fill=0.0)
        if name in _CAST_METHODS:
            return self._emit(node, "cast", (x,))
        if name == "masked_fill":  # x.masked_fill(mask, value) is torch.where(mask, value, x)
            return self._where(node, args[1] if len(args) > 1 else kwargs["mask"],
                               args[2] if len(args) > 2 else kwargs["value"], x)
        if name == "where":  # x.where(condition, y) is torch.where(condition, x, y)
            return self._where(node, args[1] if len(args) > 1 else kwargs["condition"],
                               x, args[2] if len(args) > 2 else kwargs["other"])
        raise cannot_lower(name)

    def _function(self, node: torch.fx.Node, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if target is getattr and args[1] == "shape":
            return ("shape", args[0])
        if target is getattr and args[1] in ("dtype", "device"):  # only ever an argument of a cast
            return (args[1], args[0])
        if target is operator.getitem:
            return self._getitem(node, args[0], args[1])
        if target in _HEAVY_FUNCTIONS:
            return self._heavy_function(node, _HEAVY_FUNCTIONS[target], args, kwargs)
        if target in _UNARY_FUNCTIONS:
            return self._unary(node, _UNARY_FUNCTIONS[target], args[0])
        if target in _BINARY_FUNCTIONS:
            if target in (torch.div, torch.divide) and kwargs.get("rounding_mode"):
                raise cannot_lower("div (with rounding)")
            if kwargs.get("alpha", 1) != 1:
                raise cannot_lower(f"{_BINARY_FUNCTIONS[target]} (with alpha)")
            other = args[1] if len(args) > 1 else kwargs["other"]
            return self._binary(node, _BINARY_FUNCTIONS[target], args[0], other)
        if target in (torch.max, torch.min):
            if len(args) > 1 and isinstance(args[1], str):
                return self._binary(node, "maximum" if target is torch.max else "minimum", args[0], args[1])
            return self._reduce(node, target.__name__, args[0], args[1:], kwargs)
        if target in _REDUCE_FUNCTIONS:
            return self._reduce(node, _REDUCE_FUNCTIONS[target], args[0], args[1:], kwargs)
        if target in (torch.argmax, torch.argmin):
            return self._index_reduce(node, target.__name__, args[0], args[1:], kwargs)
        if target in _ROW_FUNCTIONS:
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            return self._emit(node, _ROW_FUNCTIONS[target], (args[0],), dim=self._dim(node.args[0], dim))
        if target in (torch.clamp, torch.clip, F.hardtanh, F.relu6):
            if target is F.relu6:
                return self._clamp(node, args[0], 0.0, 6.0)
            if target is F.hardtanh:
                lo = args[1] if len(args) > 1 else kwargs.get("min_val", -1.0)
                hi = args[2] if len(args) > 2 else kwargs.get("max_val", 1.0)
                return self._clamp(node, args[0], lo, hi)
            return self._clamp(node, *args, **kwargs)
        if target in (torch.selu, F.selu):
            return self._selu(node, args[0])
        if target is torch.einsum:
            return self._einsum(node, args)
        if target is torch.broadcast_to:
            return self._expand(node, args[0])
        if target is F.gelu:
            approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
            return self._emit(node, "gelu_tanh" if approximate == "tanh" else "gelu", (args[0],))
        if target in (F.leaky_relu, F.elu, F.softplus):
            return self._parametric_activation(node, target, args, kwargs)
        if target is F.layer_norm:
            normalized = args[1] if len(args) > 1 else kwargs["normalized_shape"]
            weight = args[2] if len(args) > 2 else kwargs.get("weight")
            bias = args[3] if len(args) > 3 else kwargs.get("bias")
            eps = args[4] if len(args) > 4 else kwargs.get("eps", 1e-5)
            return self._layer_norm(node, args[0], normalized, weight, bias, eps)
        if target in _VIEW_FUNCTIONS:
            return self._view(node, args[0])
        if target is getattr and args[1] in ("values", "indices") and isinstance(args[0], tuple):
            return self._getitem(node, args[0], 0 if args[1] == "values" else 1)
        if target is getattr and args[1] in ("T", "mT"):
            return self._transpose(node, args[0]) if args[1] == "mT" or len(self.program_shape(args[0])) <= 2 \
                else self._permute(node, args[0], tuple(reversed(range(len(self.program_shape(args[0]))))))
        if target is torch.permute:
            return self._permute(node, args[0], args[1] if len(args) > 1 else kwargs["dims"])
        if target in (torch.transpose, torch.swapaxes):
            return self._transpose(node, args[0], *args[1:3])
        if target is torch.t:
            return self._transpose(node, args[0])
        if target in (torch.chunk, torch.split):
            pieces = args[1] if len(args) > 1 else kwargs.get("chunks", kwargs.get("split_size_or_sections"))
            dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
            return self._pieces(args[0], pieces, int(dim), target is torch.chunk)
        if target is torch.narrow:
            return self._narrow(node, args, kwargs)
        if target is torch.masked_fill:
            return self._where(node, args[1] if len(args) > 1 else kwargs["mask"],
                               args[2] if len(args) > 2 else kwargs["value"], args[0])
        if target is torch.where:
            if len(args) != 3:
                raise cannot_lower("where (with one argument: the indices of a condition)")
            return self._where(node, *args)
        if target in (operator.mod, torch.remainder) and any(self._is_value(v) and not self._is_scalar(v)
                                                             for v in args[:2]):
            return self._binary(node, "remainder", args[0], args[1] if len(args) > 1 else kwargs["other"])
        if target in (operator.floordiv, operator.mod):
            a, b = (self._constant(value) for value in args[:2])
            if a is None or b is None:
                raise cannot_lower(f"{target.__name__} (of sizes that vary between input sets)")
            return target(int(a), int(b)) if float(a).is_integer() and float(b).is_integer() else target(a, b)
        if target in _POOL_FUNCTIONS:
            op, rank = _POOL_FUNCTIONS[target]
            names = ("input", "kernel_size", "stride", "padding", "dilation" if op == "max_pool" else "ceil_mode",
                     "ceil_mode" if op == "max_pool" else "count_include_pad",
                     "return_indices" if op == "max_pool" else "divisor_override")
            options = {**dict(zip(names, args, strict=False)), **kwargs}
            return self._pool(node, op, rank, options.pop("input"), options)
        if target in _ADAPTIVE_FUNCTIONS:
            op, rank = _ADAPTIVE_FUNCTIONS[target]
            size = args[1] if len(args) > 1 else kwargs["output_size"]
            return self._adaptive_pool(node, op, rank, args[0], size)
        if target in (torch.cumsum, torch.cumprod, torch.cummax):
            return self._scan(node, target.__name__, args[0], args[1] if len(args) > 1 else kwargs["dim"], kwargs)
        if target is torch.flip:
            return self._flip(node, args[0], args[1] if len(args) > 1 else kwargs["dims"])
        if target in (torch.tril, torch.triu):
            diagonal = args[1] if len(args) > 1 else kwargs.get("diagonal", 0)
            return self._emit(node, target.__name__, (args[0],), diagonal=int(diagonal), fill=0.0)
        if target in (torch.cat, torch.concat):
            tensors = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            if not all(isinstance(t, str) for t in tensors):
                raise cannot_lower("cat (of values that are not tensors)")
            return self._emit(node, "cat", tuple(tensors), dim=int(dim) % len(self.program_shape(tensors[0])))
        if target in (torch.norm, torch.linalg.vector_norm):
            names = ("input", "p" if target is torch.norm else "ord", "dim", "keepdim", "out", "dtype")
            options = {**dict(zip(names, args, strict=False)), **kwargs}
            return self._norm(node, {**options, "p": options.get("p", options.get("ord", 2))})
        if target in _FILLED_FUNCTIONS:
            value = _FILLED_FUNCTIONS[target]
            sized = target in (torch.zeros, torch.ones) and len(args) > 1  # torch.zeros(3, 4): sizes as arguments
            given = args[1] if value is None and len(args) > 1 and not sized else kwargs.get("fill_value", value)
            return self._filled(node, given)
        if target is torch.arange:
            return self._arange(node, args, kwargs)
        if target is torch.tensor:
            return self._tensor(node, args[0] if args else kwargs["data"])
        if target in _LOSS_FUNCTIONS:
            return self._loss(node, target, {**dict(zip(_LOSS_FUNCTIONS[target][1], args, strict=False)), **kwargs})
        if target is F.scaled_dot_product_attention:
            return self._attention(node, args, kwargs)
        if target is F.dropout:
            training = args[2] if len(args) > 2 else kwargs.get("training", True)
            p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
            if training and p > 0:
                raise cannot_lower("dropout")
            return args[0]
        raise cannot_lower(getattr(target, "__name__", str(target)))

    # ---- node kinds ---------------------------------------------------------------------------------------
    def _unary(self, node: torch.fx.Node, op: str, x: Any) -> Any:
        if isinstance(x, (int, float)):
            return float(ir.apply(ir.Node("c", op, ("x",), ()), [torch.tensor(float(x), dtype=torch.float64)]))
        if self._is_scalar(x):
            return self._scalar(node, op, (x,))
        return self._emit(node, op, (x,))

    def _binary(self, node: torch.fx.Node, op: str, a: Any, b: Any) -> Any:
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return float(ir.apply(ir.Node("c", op, ("a",), ()), [torch.tensor(float(a), dtype=torch.float64),
                                                                   float(b)]))
        if isinstance(a, constants.Constant) or isinstance(b, constants.Constant):
            return self._constant_operand(node, op, a, b)
        a, b = _operands(op, a, b)
        if all(isinstance(v, float) or self._is_scalar(v) for v in (a, b)):
            return self._scalar(node, op, (a, b))
        return self._emit(node, op, (a, b))

    def _where(self, node: torch.fx.Node, condition: Any, a: Any, b: Any) -> str:
        if isinstance(condition, constants.Constant):
            return self._constant_where(node, condition.tensor, a, b)
        if not isinstance(condition, str):
            raise cannot_lower("where (with a condition that is no tensor)")
        return self._emit(node, "where", (condition, *_operands("where", a, b)))

    def _constant_where(self, node: torch.fx.Node, condition: torch.Tensor, a: Any, b: Any) -> str:
        """where(a triangle made in forward, value, number) (or number, value): the value's tril or triu, the
        number where the mask drops it."""
        shape, _, _ = self._meta(node.name)
        plane = constants.plane(condition.bool(), shape)
        if isinstance(a, str) and isinstance(b, (int, float)):
            x, fill, keep = a, b, plane
        elif isinstance(b, str) and isinstance(a, (int, float)):
            x, fill, keep = b, a, None if plane is None else ~plane
        else:
            raise cannot_lower("where (of a mask made in forward, other than between a tensor and a number)")
        if keep is None or self.value(x).shape != shape:
            raise cannot_lower("where (of a mask made in forward that does not match the last two dims)")
        if bool(keep.all()):
            return x
        found = constants.triangle(keep)
        if found is None:
            raise cannot_lower("where (of a mask made in forward that is no triangle)")
        return self._emit(node, found.op, (x,), diagonal=found.diagonal, fill=float(fill))

    def _constant_operand(self, node: torch.fx.Node, op: str, a: Any, b: Any) -> Any:
        """A value combined with a tensor made in forward: one element everywhere is a number; a triangular
        mask added (0 and -inf) or multiplied (1 and 0) in is the value's tril or triu."""
        const, other = (a, b) if isinstance(a, constants.Constant) else (b, a)
        shape, _, _ = self._meta(node.name)
        if not isinstance(other, str) or self.program_shape(other) != shape:
            raise cannot_lower(f"{op} (of a tensor made in forward that broadcasts the other operand)")
        number = constants.uniform(const.tensor)
        if number is not None:
            return self._binary(node, op, number, other) if const is a else self._binary(node, op, other, number)
        dropped = {"add": float("-inf"), "mul": 0.0}.get(op)
        found = constants.additive(const.tensor, shape, dropped) if dropped is not None else None
        if found is None:
            raise cannot_lower(f"{op} (of a tensor made in forward that is no triangular mask)")
        return self._emit(node, found.op, (other,), diagonal=found.diagonal, fill=dropped)

    def _is_mask(self, value: Any) -> bool:
        """A boolean value: a comparison's result, a logical op's, a cast's, or a boolean input."""
        return isinstance(value, str) and any(n.name == value and n.dtype == "bool" for n in (*self.nodes,
                                                                                             *self.inputs))

    def _is_scalar(self, value: Any) -> bool:
        """A run-time scalar: computed from sizes, or a Python number `forward` receives."""
        return (isinstance(value, str) and any(n.name == value and n.shape == () and n.dtype == "float64"
                                              for n in self.nodes)) or \
            any(spec.name == value and ir.is_number(spec) for spec in self.inputs)

    def _clamp(self, node: torch.fx.Node, x: Any, min: Any = None, max: Any = None) -> str:
        for bound in (min, max):
            if bound is not None and not isinstance(bound, (int, float)):
                raise cannot_lower("clamp (with tensor bounds)")
        return self._emit(node, "clamp", (x,), min=None if min is None else float(min),
                          max=None if max is None else float(max))

    def _parametric_activation(self, node: torch.fx.Node, target: Any, args: list[Any],
                               kwargs: dict[str, Any]) -> str:
        if target is F.leaky_relu:
            slope = args[1] if len(args) > 1 else kwargs.get("negative_slope", 0.01)
            return self._emit(node, "leaky_relu", (args[0],), negative_slope=float(slope))
        if target is F.elu:
            alpha = args[1] if len(args) > 1 else kwargs.get("alpha", 1.0)
            return self._emit(node, "elu", (args[0],), alpha=float(alpha))
        beta = args[1] if len(args) > 1 else kwargs.get("beta", 1.0)
        threshold = args[2] if len(args) > 2 else kwargs.get("threshold", 20.0)
        return self._emit(node, "softplus", (args[0],), beta=float(beta), threshold=float(threshold))

    def _reduce(self, node: torch.fx.Node, name: str, x: Any, rest: list[Any], kwargs: dict[str, Any]) -> Any:
        dim = rest[0] if rest else kwargs.get("dim")
        keepdim = bool(rest[1] if len(rest) > 1 else kwargs.get("keepdim", False))
        if kwargs.get("dtype") is not None:
            raise cannot_lower(f"{name} (with a dtype)")
        if name in ("max", "min"):
            if dim is None:  # the largest (smallest) element: a value, no indices
                return self._emit_reduce(node, "amax" if name == "max" else "amin", x, None, False)
            # torch.max(x, dim) returns (values, indices); only values may be used (see _getitem).
            return ("arg" + name, self._emit_reduce(node, "amax" if name == "max" else "amin", x, dim, keepdim))
        return self._emit_reduce(node, name, x, dim, keepdim)

    def _index_reduce(self, node: torch.fx.Node, op: str, x: Any, rest: list[Any], kwargs: dict[str, Any]) -> str:
        """argmax/argmin along one dim (an int64 index); over all dims (a flat index) is refused."""
        dim = rest[0] if rest else kwargs.get("dim")
        keepdim = bool(rest[1] if len(rest) > 1 else kwargs.get("keepdim", False))
        if dim is None:
            raise cannot_lower(f"{op} (over all dims: a flat index)")
        if not isinstance(x, str) or self.value(x).dtype not in ir.FLOAT_DTYPES:
            raise cannot_lower(f"{op} (of a value that is not a float tensor)")
        return self._emit_reduce(node, op, x, dim, keepdim)

    def _emit_reduce(self, node: torch.fx.Node, op: str, x: Any, dim: Any, keepdim: bool) -> str:
        source = node.args[0]
        if not isinstance(x, str):
            raise cannot_lower(f"{op} (of a value that is no tensor)")
        rank = len(self.program_shape(x))
        if self.value(x).dtype not in ir.FLOAT_DTYPES and (op != "sum" or dim is None or
                                                           (isinstance(dim, (list, tuple)) and len(dim) != 1)):
            raise cannot_lower(f"{op} (of integers or booleans, other than a sum over one dim)")
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) != 1):
            dims = range(rank) if dim is None or len(dim) == 0 else [int(d) % rank for d in dim]
            return decompose.reduce_dims(self, node.name, op, x, list(dims), keepdim)
        dim = self._dim(source, dim)
        # Shapes from the operand: torch.max(x, dim) records a (values, indices) pair, not a tensor.
        shape_in, dtype, static_in = self._meta(source.name)  # type: ignore[union-attr]
        if (op == "sum" and dtype not in ir.FLOAT_DTYPES) or op in ir.INDEX_OPS:  # torch sums integers as int64
            dtype = "int64"
        kept = [d for d in range(len(shape_in)) if d != dim or keepdim]
        shape = tuple(1 if d == dim else shape_in[d] for d in kept)
        static = tuple(d == dim or static_in[d] for d in kept)
        ir_node = ir.Node(node.name, op, (x,), shape, dtype, ir.make_attrs(dim=dim, keepdim=keepdim), static)
        self.nodes.append(ir_node)
        return ir_node.name

    def _size(self, node: torch.fx.Node, x: Any, dim: Any) -> Any:
        if dim is None:
            return ("shape", x)
        rank = len(self.program_shape(x))
        return self._scalar(node, "size", (x,), dim=int(dim) % rank)

    def program_shape(self, name: str) -> ir.Shape:
        for spec in (*self.inputs, *self.params.values(), *self.nodes):
            if spec.name == name:
                return spec.shape
        raise cannot_lower(f"the value {name} (unknown)", op=False)

    def _getitem(self, node: torch.fx.Node, base: Any, index: Any) -> Any:
        if isinstance(base, tuple) and len(base) == 2 and base[0] == "shape":
            if isinstance(index, slice):  # the sizes of those dims, each a run-time scalar (x.shape[1:])
                rank = len(self.program_shape(base[1]))
                return tuple(self.add(f"{node.name}_{d}", "size", (base[1],), (), "float64", (), dim=d)
                             for d in range(rank)[index])
            if not isinstance(index, int):
                raise cannot_lower("getitem (of a shape by a value)")
            return self._size(node, base[1], index)
        if isinstance(base, tuple) and len(base) == 4 and base[0] == "pieces":
            _, source, dim, bounds = base
            if not isinstance(index, int):
                raise cannot_lower("getitem (a slice of chunks)")
            start, stop = bounds[index]
            return self._emit(node, "slice", (source,), dim=dim, start=start, stop=stop, step=1)
        if isinstance(base, tuple) and len(base) == 3 and base[0] == "outputs":
            if base[1 + index] is None and node.users:
                raise cannot_lower("multihead_attention (its weights, with need_weights=False)")
            return base[1 + index]
        if isinstance(base, tuple) and len(base) == 2 and base[0] == "cummax":
            if index != 0:
                raise cannot_lower("cummax (its indices)")
            return base[1]
        if isinstance(base, tuple) and len(base) == 2 and base[0] in ("argmax", "argmin"):
            if index != 0:
                raise cannot_lower(base[0])
            return base[1]
        if isinstance(base, str):
            return self._slice(node, base, index)
        raise cannot_lower("getitem")

    def _slice(self, node: torch.fx.Node, x: str, index: Any) -> str:
        items = [self._static_bounds(item) for item in (index if isinstance(index, tuple) else (index,))]
        rank = len(self.program_shape(x))
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at:at + 1] = [slice(None)] * (rank - len(items) + 1)
        cut = [(d, s) for d, s in enumerate(items) if s != slice(None)]
        if len(cut) > 1 or (cut and isinstance(cut[0][1], int)):
            return self._cuts(node, x, cut)
        if len(cut) != 1 or not isinstance(cut[0][1], slice) or cut[0][1].step not in (None, 1):
            raise cannot_lower("index (only one slice along one dim is supported)")
        dim, piece = cut[0]
        start, stop = piece.start or 0, piece.stop
        spec = self.value(x)
        if spec.is_static(dim):  # negative bounds count from the end of a dim every input set agrees on
            size = spec.shape[dim]
            start = max(0, size + start) if isinstance(start, int) and start < 0 else start
            stop = max(0, size + stop) if isinstance(stop, int) and stop < 0 else stop
        if not isinstance(start, int) or start < 0:
            raise cannot_lower("slice (with a start that is not a non-negative constant)")
        args: tuple[ir.Arg, ...] = (x,)
        if isinstance(stop, str):
            args += (stop,)
            stop = None
        elif stop is not None and (not isinstance(stop, int) or stop < 0):
            raise cannot_lower("slice (with a negative end)")
        return self._emit(node, "slice", args, dim=dim, start=start, stop=stop, step=1)

    def _static_bounds(self, item: Any) -> Any:
        """A slice whose bounds are sizes every input set agrees on, with those bounds as integers."""
        if not isinstance(item, slice):
            return item
        bounds = [self._constant(bound) if isinstance(bound, str) and self._is_scalar(bound) else None
                  for bound in (item.start, item.stop)]
        start, stop = (int(found) if found is not None else bound
                       for found, bound in zip(bounds, (item.start, item.stop), strict=True))
        return slice(start, stop, item.step)

    def _cuts(self, node: torch.fx.Node, x: str, cut: list[tuple[int, Any]]) -> str:
        """x[i, a:b, ...] (or x[..., i, ...]): one slice a dim (an integer index a slice of length one), then a
        view without the dims the integers took. Each cut dim has the same size on every input set."""
        current = x
        for step, (dim, piece) in enumerate(cut):
            spec = self.value(current)
            if not spec.is_static(dim):
                raise cannot_lower("index (an integer index along a dim whose size varies)" if len(cut) == 1
                                   else "index (of several dims, along a dim whose size varies)")
            size = spec.shape[dim]
            if isinstance(piece, int) and not isinstance(piece, bool):
                piece = slice(piece % size, piece % size + 1)
            if not isinstance(piece, slice) or piece.step not in (None, 1) or \
                    not all(bound is None or isinstance(bound, int) for bound in (piece.start, piece.stop)):
                raise cannot_lower("index (of several dims: integers and constant slices of step 1 only)")
            start, stop, _ = piece.indices(size)
            stop = max(stop, start)
            shape = tuple(stop - start if d == dim else n for d, n in enumerate(spec.shape))
            static = tuple(d == dim or spec.is_static(d) for d in range(len(spec.shape)))
            current = self.add(f"{node.name}_cut{step}", "slice", (current,), shape, spec.dtype, static, dim=dim,
                               start=start, stop=stop, step=1)
        if self.value(current).shape == self._meta(node.name)[0]:  # slices only: no dim taken by an integer
            return current
        return self._view(node, current)

    def _batched_matmul(self, name: str, a: str, b: str) -> str:
        """A matmul over one or more batch dims as a bmm: both operands viewed to one batch dim (where they have
        several), the result viewed back."""
        spec_a, spec_b = self.value(a), self.value(b)
        if spec_a.shape[:-2] != spec_b.shape[:-2] or len(spec_a.shape) < 3:
            raise cannot_lower("matmul (with broadcast batch dims)")
        shape = (*spec_a.shape[:-1], spec_b.shape[-1])
        static = (*(spec_a.is_static(d) and spec_b.is_static(d) for d in range(len(shape) - 2)),
                  spec_a.is_static(len(shape) - 2), spec_b.is_static(len(shape) - 1))
        dtype = spec_a.dtype
        if len(shape) == 3:
            return self.add(name, "bmm", (a, b), shape, dtype, static)
        batch = math.prod(shape[:-2])
        batch_static = all(static[:-2])
        if not all(static[-2:]) or not all(spec_b.is_static(d) for d in (-2, -1)):
            raise cannot_lower("matmul (of matrices whose sizes vary)")
        flat_a = (batch, *spec_a.shape[-2:])
        flat_b = (batch, *spec_b.shape[-2:])
        left = self.add(f"{name}_a", "view", (a,), flat_a, spec_a.dtype, (batch_static, True, True), shape=flat_a)
        right = self.add(f"{name}_b", "view", (b,), flat_b, spec_b.dtype, (batch_static, True, True), shape=flat_b)
        flat = (batch, shape[-2], shape[-1])
        product = self.add(f"{name}_bmm", "bmm", (left, right), flat, dtype, (batch_static, True, True))
        return self.add(name, "view", (product,), shape, dtype, static, shape=shape)

    def matmul(self, name: str, a: str, b: str) -> str:
        return self._batched_matmul(name, a, b)

    def _attention(self, node: torch.fx.Node, args: list[Any], kwargs: dict[str, Any]) -> str:
        """scaled_dot_product_attention: fused without a mask or with the causal one, else written out
        (engine/attention.py)."""
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        options = {**dict(zip(names, args, strict=False)), **kwargs}
        if options.get("dropout_p", 0.0) or options.get("enable_gqa"):
            raise cannot_lower("scaled_dot_product_attention (with dropout or grouped heads)")
        q, k, v = options["query"], options["key"], options["value"]
        mask = constants.Triangle("tril", 0) if options.get("is_causal") else \
            self._attention_mask(node, options.get("attn_mask"), keep=True)
        try:
            return attention.scaled_dot_product(self, node.name, q, k, v, scale=options.get("scale"), mask=mask)[0]
        except ValueError as exc:
            raise cannot_lower(f"scaled_dot_product_attention ({exc})") from None

    def _attention_mask(self, node: torch.fx.Node, mask: Any, keep: bool) -> attention.Mask:
        """An attention's mask as engine/attention.py takes it: a triangle, a tensor, or None. A boolean mask
        keeps where it is True when `keep` (scaled_dot_product_attention), drops there otherwise
        (nn.MultiheadAttention)."""
        if mask is None:
            return None
        if isinstance(mask, str):
            spec = self.value(mask)
            if not keep and len(spec.shape) != 2:  # the layer's (batch * heads, queries, keys) form
                raise cannot_lower("multihead_attention (with a mask per batch and head)")
            if spec.dtype == "bool" and not keep:
                return self.add(f"{node.name}_keep", "logical_not", (mask,), spec.shape, "bool",
                                tuple(spec.is_static(d) for d in range(len(spec.shape))))
            return mask
        if not isinstance(mask, constants.Constant):
            raise cannot_lower("scaled_dot_product_attention (with a mask that is no tensor)")
        tensor, shape = mask.tensor, tuple(mask.tensor.shape)  # one plane for every batch and head, or refused
        if tensor.dtype == torch.bool:
            plane = constants.plane(tensor, shape)
            found = constants.triangle(plane if keep else ~plane) if plane is not None else None
        else:
            found = constants.additive(tensor, shape, float("-inf"))
        if found is None:
            raise cannot_lower("scaled_dot_product_attention (with a constant mask that is no triangle)")
        return found

    def _multihead(self, node: torch.fx.Node, module: nn.MultiheadAttention, path: str) -> tuple[str, str, Any]:
        """An nn.MultiheadAttention call: ("outputs", output, weights or None), read by `_getitem`."""
        options = attention.layer_options([self._arg(a) for a in node.args],
                                          {k: self._arg(v) for k, v in node.kwargs.items()})
        if options["key_padding_mask"] is not None:
            raise cannot_lower("multihead_attention (with a key padding mask)")
        weights = bool(options["need_weights"]) and attention.uses_second_output(node.users)
        mask = self._attention_mask(node, options["attn_mask"], keep=False)
        try:
            out, scores = attention.multihead(self, node.name, path, module,
                                              [options["query"], options["key"], options["value"]], mask=mask,
                                              weights=weights, average=bool(options["average_attn_weights"]))
        except ValueError as exc:
            raise cannot_lower(f"multihead_attention ({exc})") from None
        return ("outputs", out, scores)

    def _pool(self, node: torch.fx.Node, op: str, rank: int, x: Any, options: dict[str, Any]) -> str:
        """max or average pooling over the last `rank` dims, with PyTorch's defaults (stride: the window)."""
        if options.get("return_indices"):
            raise cannot_lower(f"{op} (returning indices)")
        kernel = _ntuple(options["kernel_size"], rank)
        stride = _ntuple(options.get("stride") or kernel, rank)
        attrs: dict[str, Any] = {"kernel": kernel, "stride": stride,
                                 "padding": _ntuple(options.get("padding", 0), rank),
                                 "dilation": _ntuple(options.get("dilation", 1), rank),
                                 "ceil_mode": bool(options.get("ceil_mode", False))}
        if op == "avg_pool":
            attrs["count_include_pad"] = bool(options.get("count_include_pad", True))
            divisor = options.get("divisor_override")
            attrs["divisor"] = None if divisor is None else int(divisor)
        return self._emit(node, op, (x,), **attrs)

    def _adaptive_pool(self, node: torch.fx.Node, op: str, rank: int, x: Any, size: Any) -> str:
        """Adaptive pooling: a reduction where the output is one element per plane, a pool with a window of
        the input's size over the output's where that divides evenly."""
        spec = self.value(x)
        wanted = _ntuple(size, rank)
        dims = list(range(len(spec.shape) - rank, len(spec.shape)))
        if all(size == 1 for size in wanted):
            return decompose.reduce_dims(self, node.name, "mean" if op == "avg_pool" else "amax", x, dims, True)
        sizes = [spec.shape[d] for d in dims]
        if any(not spec.is_static(d) for d in dims) or any(n % w for n, w in zip(sizes, wanted, strict=True)):
            raise cannot_lower(f"adaptive_{op}{rank}d (to a size that does not divide the input's)")
        window = tuple(n // w for n, w in zip(sizes, wanted, strict=True))
        return self._pool(node, op, rank, x, {"kernel_size": window, "stride": window})

    def _loss(self, node: torch.fx.Node, function: Any, options: dict[str, Any]) -> str:
        """A loss function (engine/losses.py) with the options torch's function was given."""
        kind, names = _LOSS_FUNCTIONS[function]
        reduction = options.get("reduction", "mean")
        if options.get("size_average") is not None or options.get("reduce") is not None:
            raise cannot_lower(f"{kind} (with the old size_average/reduce options)")
        operands = [options[key] for key in names[:3 if kind == "triplet_margin" else 2]]
        if not all(isinstance(value, str) for value in operands):
            raise cannot_lower(f"{kind} (of values that are not tensors)")
        if reduction not in (*losses.REDUCTIONS, *(("batchmean",) if kind == "kl_div" else ())):
            raise cannot_lower(f"{kind} (reduction {reduction!r})")
        if kind == "cross_entropy":
            return self._cross_entropy(node, operands, options, reduction)
        like = self._broadcast_operand(kind, operands)
        if kind == "smooth_l1":
            return losses.smooth_l1(self, node.name, *operands, like=like, beta=float(options.get("beta", 1.0)),
                                    reduction=reduction)
        if kind == "kl_div":
            return losses.kl_div(self, node.name, *operands, like=like, reduction=reduction,
                                 log_target=bool(options.get("log_target", False)))
        if len(self.program_shape(like)) != 2:
            raise cannot_lower("triplet_margin (of embeddings that are not (batch, features))")
        return losses.triplet_margin(self, node.name, *operands, like=like,
                                     margin=float(options.get("margin", 1.0)), p=float(options.get("p", 2.0)),
                                     eps=float(options.get("eps", 1e-6)), swap=bool(options.get("swap", False)),
                                     reduction=reduction)

    def _cross_entropy(self, node: torch.fx.Node, operands: list[str], options: dict[str, Any],
                       reduction: str) -> str:
        if options.get("weight") is not None or options.get("label_smoothing", 0.0):
            raise cannot_lower("cross_entropy (with class weights or label smoothing)")
        x, target = operands
        spec, target_spec = self.value(x), self.value(target)
        if len(spec.shape) < 2 or spec.dtype not in ir.FLOAT_DTYPES:
            raise cannot_lower("cross_entropy (of logits without a class dim)")
        soft = target_spec.dtype in ir.FLOAT_DTYPES
        if (soft and target_spec.shape != spec.shape) or (not soft and target_spec.dtype not in ir.INTEGER_DTYPES):
            raise cannot_lower("cross_entropy (with targets that are neither class indices nor probabilities)")
        if not spec.is_static(1):
            raise cannot_lower("cross_entropy (over a number of classes that varies between input sets)")
        return losses.cross_entropy(self, node.name, x, target, device=self._device_source(), reduction=reduction,
                                    ignore_index=int(options.get("ignore_index", -100)))

    def _broadcast_operand(self, kind: str, operands: list[str]) -> str:
        """The operand whose shape is the operands' broadcast shape; refused where each is smaller."""
        shapes = [self.program_shape(name) for name in operands]
        full = tuple(torch.broadcast_shapes(*shapes))
        for name, shape in zip(operands, shapes, strict=True):
            if tuple(shape) == full:
                return name
        raise cannot_lower(f"{kind} (of operands each broadcast to a larger shape)")

    def _norm(self, node: torch.fx.Node, options: dict[str, Any]) -> str:
        """torch.norm / Tensor.norm / torch.linalg.vector_norm over given dims (or all): a vector norm."""
        x, order = options["input"], options.get("p", "fro")
        if options.get("dtype") is not None or options.get("out") is not None:
            raise cannot_lower("norm (with a dtype or an output tensor)")
        if not isinstance(x, str) or self.value(x).dtype not in ir.FLOAT_DTYPES:
            raise cannot_lower("norm (of a value that is not a float tensor)")
        if order in ("fro", None):
            order = 2.0
        if not isinstance(order, (int, float)):
            raise cannot_lower(f"norm (p={order!r}: a matrix norm)")
        rank = len(self.program_shape(x))
        dim = options.get("dim")
        dims = list(range(rank)) if dim is None else [int(d) % rank for d in ((dim,) if isinstance(dim, int) else dim)]
        return decompose.vector_norm(self, node.name, x, float(order), sorted(set(dims)),
                                     bool(options.get("keepdim", False)))

    def _selu(self, node: torch.fx.Node, x: Any) -> str:
        """selu(x) = scale * elu(x, alpha), torch's constants."""
        shape, dtype, static = self._meta(node.name)
        inner = self.add(f"{node.name}_elu", "elu", (x,), shape, dtype, static, alpha=_SELU_ALPHA)
        return self._emit(node, "mul", (inner, _SELU_SCALE))

    def _einsum(self, node: torch.fx.Node, args: list[Any]) -> str:
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        if not isinstance(equation, str) or not all(isinstance(value, str) for value in operands):
            raise cannot_lower("einsum (of values that are not tensors)")
        try:
            return einsum.einsum(self, node.name, equation, operands)
        except einsum.EinsumError as exc:
            raise cannot_lower(f"einsum ({exc})") from None

    def _expand(self, node: torch.fx.Node, x: Any) -> str:
        """expand/expand_as/broadcast_to: where every user is a pointwise op that broadcasts it to the same shape
        anyway, the value viewed with leading dims of one (no copy); else that view times a tensor of ones of the
        expanded shape (static sizes only)."""
        if not isinstance(x, str):
            raise cannot_lower("expand (of a value that is no tensor)")
        spec = self.value(x)
        shape, dtype, static = self._meta(node.name)
        lead = len(shape) - len(spec.shape)
        aligned = (1,) * lead + tuple(spec.shape)
        aligned_static = (True,) * lead + tuple(spec.is_static(d) for d in range(len(spec.shape)))
        view = self.add(f"{node.name}_aligned", "view", (x,), aligned, spec.dtype, aligned_static, shape=aligned)
        if self._broadcast_by_users(node, aligned):
            return view
        if dtype == "bool" or not all(static):
            raise cannot_lower("expand (laid out in full: of a mask, or to a size that varies between input sets)")
        ones = self.add(f"{node.name}_ones", "fill", (self._device_source(),), shape, dtype, static, start=1.0,
                        step=0.0, dim=0)
        return self._emit(node, "mul", (view, ones))

    def _broadcast_by_users(self, node: torch.fx.Node, aligned: ir.Shape) -> bool:
        """Whether every user of `node` is a pointwise op whose result keeps its shape with `node`'s value of shape
        `aligned` in its place."""
        for user in node.users:
            binary = user.target in _BINARY_FUNCTIONS or user.target is torch.where
            pointwise = (user.op == "call_function" and binary) or \
                (user.op == "call_method" and user.target in _BINARY_METHODS)
            if not pointwise:
                return False
            shapes = [aligned if arg is node else self._tensor_shape(arg)
                      for arg in (*user.args, *user.kwargs.values()) if isinstance(arg, torch.fx.Node)]
            if tuple(torch.broadcast_shapes(*shapes)) != self._meta(user.name)[0]:
                return False
        return True

    def _filled(self, node: torch.fx.Node, value: Any) -> Any:
        """A tensor of one value (zeros_like, torch.full, new_ones...): that value as a constant where every user is a
        pointwise op that broadcasts it anyway, else a `fill` kernel of the tensor's static shape."""
        number = self._constant(value)
        if number is None:
            raise cannot_lower(f"{_target_name(node)} (with a value that is not a constant)")
        dtype = self._meta(node.name)[1]
        if dtype in ir.INTEGER_DTYPES:  # torch.full_like(ints, 2.5) holds 2
            number = int(number)
        if dtype != "bool" and self._broadcast_by_users(node, ()):
            return float(number)
        return self._fill(node, float(number), 0.0)

    def _fill(self, node: torch.fx.Node, start: float, step: float) -> str:
        shape, _, static = self._meta(node.name)
        if not all(static) or not shape:
            raise cannot_lower(f"{_target_name(node)} (a tensor made in the forward, of sizes that vary or no dims)")
        return self._emit(node, "fill", (self._device_source(),), start=start, step=step, dim=0)

    def _arange(self, node: torch.fx.Node, args: list[Any], kwargs: dict[str, Any]) -> str:
        """torch.arange: its length is the result's (static) size; its start and step must be constants."""
        names = ("start", "end", "step") if len(args) > 1 else ("end",)
        given = {**dict(zip(names, args, strict=False)), **kwargs}
        start, step = self._constant(given.get("start", 0)), self._constant(given.get("step", 1))
        if start is None or step is None:
            raise cannot_lower("arange (with a start or step that varies between input sets)")
        return self._fill(node, float(start), float(step))

    def _traced_constant(self, node: torch.fx.Node, tensor: torch.Tensor) -> Any:
        """A tensor the trace computed (torch.arange(5) without a tensor argument): a number, one value filled, or
        evenly spaced values along one dim; other constants are refused (the generated module does not hold them)."""
        values = tensor.detach().to("cpu", torch.float64).reshape(-1)
        if tensor.dim() == 0 or (values.numel() and bool((values == values[0]).all())):
            return float(values[0]) if tensor.dim() == 0 else self._filled(node, float(values[0]))
        if tensor.dim() == 1 and values.numel() > 1:
            start, step = float(values[0]), float(values[-1] - values[0]) / (values.numel() - 1)
            made = start + step * torch.arange(values.numel(), dtype=torch.float64)
            if torch.equal(made.to(tensor.dtype), tensor.detach().cpu()):
                return self._fill(node, start, step)
        raise cannot_lower("a constant tensor made in the forward (not one value, nor evenly spaced)", op=False)

    def _tensor(self, node: torch.fx.Node, data: Any) -> Any:
        """torch.tensor of a number (a constant), of a size (a run-time scalar), or of a list of numbers evenly
        spaced (a fill); other lists are refused."""
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return float(data)
        if self._is_scalar(data):
            return data
        numbers = list(data) if isinstance(data, (list, tuple)) else []
        if len(numbers) < 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
            raise cannot_lower("tensor (of data other than a number or a list of numbers)")
        step = numbers[1] - numbers[0]
        if any(b - a != step for a, b in itertools.pairwise(numbers)):
            raise cannot_lower("tensor (of a list of numbers not evenly spaced)")
        return self._fill(node, float(numbers[0]), float(step))

    def _tensor_shape(self, node: torch.fx.Node) -> tuple[int, ...]:
        """The main input set's shape of a node's value; () for a value that is no tensor (a size, a number)."""
        value = self.shapes[0].get(node.name)
        return tuple(value[0]) if isinstance(value, tuple) and len(value) == 2 and \
            isinstance(value[1], torch.dtype) else ()

    def _device_source(self) -> str:
        """A tensor input: what a tensor made in the forward takes its device from."""
        for spec in self.inputs:
            if not ir.is_number(spec):
                return spec.name
        raise cannot_lower("a tensor made in a forward without tensor inputs", op=False)

    def _permute(self, node: torch.fx.Node, x: Any, order: Any) -> str:
        if not isinstance(x, str):
            raise cannot_lower("permute (of a value that is no tensor)")
        rank = len(self.program_shape(x))
        dims = tuple(int(d) % rank for d in order)
        if sorted(dims) != list(range(rank)):
            raise cannot_lower("permute (of these dims)")
        return self._emit(node, "permute", (x,), dims=dims)

    def _transpose(self, node: torch.fx.Node, x: Any, first: int = -2, second: int = -1) -> str:
        rank = len(self.program_shape(x)) if isinstance(x, str) else 0
        if rank < 2:
            return self._view(node, x)  # t() of a vector is the vector
        order = list(range(rank))
        first, second = first % rank, second % rank
        order[first], order[second] = order[second], order[first]
        return self._permute(node, x, order)

    def _pieces(self, x: Any, pieces: Any, dim: int, equal_count: bool) -> tuple[str, Any, int, list[tuple[int, int]]]:
        """chunk (`equal_count`: `pieces` is how many) or split (`pieces`: a size or sizes) along `dim`:
        the bounds of each piece, cut by a slice when the piece is read."""
        if not isinstance(x, str):
            raise cannot_lower("chunk (of a value that is no tensor)")
        pieces = self._resolved(pieces)
        spec = self.value(x)
        dim %= len(spec.shape)
        if not spec.is_static(dim):
            raise cannot_lower("chunk (along a dim whose size varies)")
        length = spec.shape[dim]
        if equal_count:
            step = -(-length // int(pieces))
            sizes = [min(step, length - start) for start in range(0, length, step)]
        elif isinstance(pieces, int):
            sizes = [min(pieces, length - start) for start in range(0, length, pieces)]
        else:
            sizes = [int(size) for size in pieces]
        bounds, start = [], 0
        for size in sizes:
            bounds.append((start, start + size))
            start += size
        return ("pieces", x, dim, bounds)

    def _constant(self, value: Any) -> float | None:
        """A number, or the size of a dim that every input set agrees on; None for anything else."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        spec = self.value(value) if isinstance(value, str) else None
        if isinstance(spec, ir.Node) and spec.op == "size":
            source = self.value(str(spec.args[0]))
            dim = spec.attr("dim")
            if source.is_static(dim):
                return source.shape[dim]
        return None

    def _scan(self, node: torch.fx.Node, op: str, x: Any, dim: Any, kwargs: dict[str, Any]) -> Any:
        if kwargs.get("dtype") is not None:
            raise cannot_lower(f"{op} (with a dtype)")
        if not isinstance(x, str):
            raise cannot_lower(f"{op} (of a value that is no tensor)")
        spec = self.value(x)
        dim = int(dim) % len(spec.shape)
        if op != "cummax":
            return self._emit(node, op, (x,), dim=dim)
        # torch.cummax returns (values, indices): only the values may be used (see _getitem).
        static = tuple(spec.is_static(d) for d in range(len(spec.shape)))
        return ("cummax", self.add(node.name, "cummax", (x,), spec.shape, spec.dtype, static, dim=dim))

    def _flip(self, node: torch.fx.Node, x: Any, dims: Any) -> str:
        if not isinstance(x, str):
            raise cannot_lower("flip (of a value that is no tensor)")
        rank = len(self.program_shape(x))
        if rank > 4:
            raise cannot_lower("flip (of more than four dims)")
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        return self._emit(node, "flip", (x,), dims=tuple(sorted({int(d) % rank for d in dims})))

    def _narrow(self, node: torch.fx.Node, args: list[Any], kwargs: dict[str, Any]) -> str:
        """`torch.narrow(x, dim, start, length)` or `x.narrow(...)`, each argument given by position or by name."""
        given = {**dict(zip(("input", "dim", "start", "length"), args, strict=False)), **kwargs}
        x, dim, start, length = (given.get(name) for name in ("input", "dim", "start", "length"))
        if not all(isinstance(v, int) for v in (dim, start, length)) or start < 0:
            raise cannot_lower("narrow (with bounds that are not non-negative constants)")
        rank = len(self.program_shape(x))
        return self._emit(node, "slice", (x,), dim=dim % rank, start=start, stop=start + length, step=1)

    def _view(self, node: torch.fx.Node, x: Any) -> str:
        shape, _, _ = self._meta(node.name)
        return self._emit(node, "view", (x,), shape=shape)

    def _heavy_function(self, node: torch.fx.Node, op: str, args: list[Any], kwargs: dict[str, Any]) -> str:
        if op == "linear":
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            operands = (args[0], args[1]) + ((bias,) if bias is not None else ())
            return self._emit(node, "linear", operands)
        if op in ("matmul", "bmm"):
            rank_a, rank_b = (len(self.program_shape(a)) for a in args[:2])
            if op == "matmul" and rank_a == rank_b > 3:
                return self._batched_matmul(node.name, str(args[0]), str(args[1]))
            if op == "matmul" and not (rank_b == 2 and rank_a >= 1) and not (rank_a == rank_b == 3):
                raise cannot_lower("matmul (of these ranks)")
            return self._emit(node, "bmm" if op == "matmul" and rank_a == rank_b == 3 else op, (args[0], args[1]))
        transposed = op in ir.CONV_TRANSPOSE_OPS
        names = ("input", "weight", "bias", "stride", "padding") + (("output_padding", "groups", "dilation")
                                                                    if transposed else ("dilation", "groups"))
        values = dict(zip(names, args, strict=False))
        values.update(kwargs)
        if isinstance(values.get("padding", 0), str):
            raise cannot_lower(f"{op} (padding {values['padding']!r})")
        rank = int(op[-2])  # conv1d, conv3d, conv_transpose2d ...
        operands = (values["input"], values["weight"]) + ((values["bias"],) if values.get("bias") is not None else ())
        extra = {"output_padding": _ntuple(values.get("output_padding", 0), rank)} if transposed else {}
        return self._emit(node, op, operands, stride=_ntuple(values.get("stride", 1), rank),
                          padding=_ntuple(values.get("padding", 0), rank),
                          dilation=_ntuple(values.get("dilation", 1), rank), groups=int(values.get("groups", 1)),
                          **extra)


# selu's constants, as torch defines them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _target_name(node: torch.fx.Node) -> str:
    return node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))


class _Unfoldable(Exception):
    """A call that reads a tensor the forward receives or computes: lowered, not folded."""


class _Varying(Exception):
    """A call on a size that varies between input sets: neither folded nor lowered."""


_NOT_FOLDED = object()


def _mentions_constant(value: Any) -> bool:
    if isinstance(value, constants.Constant):
        return True
    if isinstance(value, (tuple, list)):
        return any(_mentions_constant(item) for item in value)
    if isinstance(value, dict):
        return any(_mentions_constant(item) for item in value.values())
    return False


def _ntuple(value: Any, rank: int) -> tuple[int, ...]:
    return tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),) * rank


def _attribute(module: nn.Module, path: str) -> Any:
    value: Any = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _operands(op: str, *values: Any) -> tuple[ir.Arg, ...]:
    """Operands of a pointwise op as IR args: value names, and numbers as floats; anything else is refused."""
    args = tuple(float(v) if isinstance(v, (int, float)) else v for v in values)
    if not all(isinstance(v, (str, float)) for v in args):
        raise cannot_lower(f"{op} (of non-tensor operands)")
    return args
