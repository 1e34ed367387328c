"""The Triton backend's common ground: one IR program divided between the generated forward and its kernels.

`Lowering` holds the program and splits its nodes (`Split`): views and slices of inputs, parameters and the
heavy output (no data moves), and scalars computed from run-time sizes, stay Python in the generated `forward`;
the rest is compute for a kernel. It also writes what every kernel family shares: the module around the
kernels (`_module.py.j2` with `_helpers.j2`), a kernel's operands (`Leaf`, read by `_leaves.j2`) and its body
(one line a node, spelled by `emit`). The families extend it: `fused` (a pointwise chain or one reduction),
`gemm` and `conv`; `backend` offers what they can write.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kforge.engine import dtypes
from kforge.engine.construct import param_expression
from kforge.engine.expressions import python_expression
from kforge.engine.ir import POINTWISE_OPS, Arg, Node, Program, TensorSpec, is_number
from kforge.engine.triton.emit import Unsupported, literal, spelled_expression, var
from kforge.engine.triton.fast import param_root
from kforge.templating import template_environment

Config = dict[str, Any]


@dataclass
class Leaf:
    """A tensor a kernel reads: its value name, Python expression, and how the kernel indexes it."""

    name: str
    python: str
    mode: str = "full"  # full | row (varies along the reduced dim only) | col (along a GEMM's N only) | scalar
    prepare: str = ""  # the expression passed to the kernel
    root: str | None = None  # the parameter holding its elements in order (itself, or a reshape of it)
    held: str = "tl.float32"  # the dtype the kernel holds its elements in (kforge.engine.dtypes)

    @property
    def arg(self) -> str:
        return "p_" + var(self.name)[2:]

    @property
    def var(self) -> str:
        return var(self.name)


@dataclass
class Split:
    """The epilogue divided between the generated forward (Python) and the kernel (compute)."""

    prelude: list[str] = field(default_factory=list)
    python: dict[str, str] = field(default_factory=dict)  # value name -> Python expression (tensors)
    scalars: dict[str, str] = field(default_factory=dict)  # value name -> Python variable (floats)
    compute: list[Node] = field(default_factory=list)
    alias: dict[str, str] = field(default_factory=dict)  # a same-shape view of a compute value -> that value
    heavy_kernel: str = ""  # functions the forward calls: prepared values, a generated heavy op
    finish: str = ""  # a unit-dim view applied to the kernel's output, when the program's output is one


class Lowering:
    """One program for the Triton backend: its split between the forward and the kernels, and what every
    kernel family renders alike."""

    def __init__(self, program: Program, reference: str) -> None:
        if len(program.outputs) != 1:
            raise Unsupported(f"the Triton backend lowers one output, not {len(program.outputs)}")
        self.program = program
        self.reference = reference
        self.arguments = {spec.name: "in_" + var(spec.name)[2:] for spec in program.inputs}
        self.output = program.spec(program.outputs[0])
        self.env = template_environment("kforge", "data/engine/triton", trim_blocks=True)

    # ---- the Python side -------------------------------------------------------------------------------------
    def split_leaves(self) -> Split:
        """A split holding only the inputs and parameters, by their Python names."""
        split = Split()
        for spec in self.program.inputs:
            if is_number(spec):  # a Python number: a run-time scalar, passed to the kernels as a float
                local = "s_" + var(spec.name)[2:]
                split.prelude.append(f"{local} = float({self.arguments[spec.name]})")
                split.scalars[spec.name] = local
                continue
            split.python[spec.name] = self.arguments[spec.name]
        for spec in self.program.params:
            split.python[spec.name] = param_local(spec.name)
        return split

    def split(self, heavy_python: str | None) -> Split:
        """Divide the nodes; with `heavy_python`, the heavy op is a call (vendor or generated) in the forward."""
        split = self.split_leaves()
        for index, node in enumerate(self.program.prepared):
            split.heavy_kernel += self.prepared_function(node, f"_prepare{index}") + "\n\n"
            arguments = ", ".join(split.python[str(arg)] for arg in node.value_args)
            self.bind(split, node.name, f"_prepare{index}({arguments})")
        heavy = self.program.heavy
        if heavy is not None and heavy_python is not None:
            self.bind(split, heavy.name, heavy_python.format(*(split.python[str(a)] for a in heavy.value_args)))
        elif heavy is not None:
            split.compute.append(heavy)
        for node in self.program.nodes:
            self.place(split, node)
        return split

    def bind(self, split: Split, name: str, expression: str) -> None:
        local = "t_" + var(name)[2:]
        split.prelude.append(f"{local} = {expression}")
        split.python[name] = local

    def place(self, split: Split, node: Node) -> None:
        args = node.value_args
        if node.op == "permute":
            raise Unsupported(f"the Triton backend leaves a permute to Python between kernels (node {node.name!r})")
        python_side = all(arg in split.python or arg in split.scalars for arg in args)
        if node.op == "size" or (node.shape == () and python_side and node.op in POINTWISE_OPS):
            local = "s_" + var(node.name)[2:]
            split.prelude.append(f"{local} = {python_expression(node, lambda a: self.python_operand(split, a))}")
            split.scalars[node.name] = local
        elif node.op in ("view", "slice") and args[0] in split.python:
            self.bind(split, node.name, self.view_expression(split, node))
        elif node.op in ("view", "slice"):
            finish = "" if node.shape == self.program.shape(args[0]) else _unit_view(self.program.shape(args[0]),
                                                                                  node.shape)
            if finish is None or (finish and node.name != self.output.name):
                raise Unsupported(f"the Triton backend cannot reshape a computed value (node {node.name!r})")
            split.alias[node.name] = split.alias.get(args[0], args[0])
            split.finish = finish
        else:
            split.compute.append(node)

    def prepared_function(self, node: Node, function: str) -> str:
        """A function computing a prepared value (a reduction of parameters) with its own fused kernel, each call:
        written by the fused kernels' lowering (`fused.FusedLowering`), which every family extends."""
        raise NotImplementedError

    def python_operand(self, split: Split, arg: Arg) -> str:
        if not isinstance(arg, str):
            return literal(arg)
        return split.scalars.get(arg) or split.python[arg]

    def reshaped_base(self, split: Split, name: str) -> str:
        """The value that `name` is a chain of reshapes of (itself if it is none), among the values bound in Python
        with static sizes: a reshape of a reshape is one reshape (the elements keep their order), and each costs
        the host microseconds on every call."""
        while True:
            producer = self.program.spec(name)
            if not (isinstance(producer, Node) and producer.op == "view"):
                return name
            source = str(producer.args[0])
            spec = self.program.spec(source)
            if source not in split.python or not all(spec.is_static(d) for d in range(len(spec.shape))):
                return name
            name = source

    def view_expression(self, split: Split, node: Node) -> str:
        source = split.python[str(node.args[0])]
        if node.op == "view":
            spec = self.program.spec(str(node.args[0]))
            if not all(spec.is_static(d) for d in range(len(spec.shape))):
                raise Unsupported(f"the Triton backend cannot view a value whose sizes vary (node {node.name!r})")
            base = self.reshaped_base(split, str(node.args[0]))
            if tuple(self.program.shape(base)) == tuple(node.shape):
                return split.python[base]  # reshaped back to its own shape: nothing to do
            return f"{split.python[base]}.reshape({tuple(node.shape)})"
        stop = (f"int({split.scalars[str(node.args[1])]})" if len(node.args) > 1 else
                ("" if node.attr("stop") is None else str(node.attr("stop"))))
        step = node.attr("step", 1)
        start = node.attr("start", 0) or ""
        index = ":, " * int(node.attr("dim")) + f"{start}:{stop}" + (f":{step}" if step != 1 else "")
        return f"{source}[{index}]"

    # ---- rendering -------------------------------------------------------------------------------------------
    def resolve(self, split: Split, name: str) -> str:
        return split.alias.get(name, name)

    def leaves_of(self, split: Split, nodes: Iterable[Node]) -> list[Leaf]:
        leaves: dict[str, Leaf] = {}
        for node in nodes:
            for arg in node.value_args:
                arg = self.resolve(split, arg)
                if arg in split.python and arg not in leaves:
                    leaves[arg] = Leaf(arg, split.python[arg], root=param_root(self.program, arg),
                                       held=self.held_type(arg))
        return list(leaves.values())

    def held_type(self, name: str) -> str:
        """The Triton dtype a kernel holds value `name` in."""
        return f"tl.{dtypes.held(self.program.spec(name).dtype)}"

    def held(self, split: Split, name: str) -> str:
        """The dtype (kforge.engine.dtypes) a kernel holds value `name` in; run-time scalars are floats."""
        name = self.resolve(split, name)
        return dtypes.FLOAT if name in split.scalars else dtypes.held(self.program.spec(name).dtype)

    def operand(self, split: Split, overrides: Mapping[str, str] | None = None) -> Any:
        def spell(arg: Arg) -> str:
            if not isinstance(arg, str):
                return literal(arg)
            arg = self.resolve(split, arg)
            if overrides and arg in overrides:
                return overrides[arg]
            return split.scalars.get(arg) or var(arg)
        return spell

    def body(self, split: Split, nodes: Iterable[Node]) -> list[str]:
        spell = self.operand(split)

        def held(name: str) -> str:
            return self.held(split, name)
        lines = []
        for node in nodes:
            operands = [self.converted(spell(arg), arg, dtype, held)
                        for arg, dtype in zip(node.args, dtypes.operand_dtypes(node, held), strict=True)]
            lines.append(f"{var(node.name)} = {spelled_expression(node, operands, dtypes.node_dtype(node, held))}")
        return lines

    @staticmethod
    def converted(spelled: str, arg: Arg, dtype: str, held: Any) -> str:
        """An operand spelled for the kernel, converted to `dtype` where it is held in another."""
        if not isinstance(arg, str):
            return str(int(arg)) if dtypes.is_integer(dtype) and float(arg).is_integer() else spelled
        return spelled if held(arg) == dtype else f"{spelled}.to(tl.{dtype})"

    def scalars_of(self, split: Split, nodes: Iterable[Node]) -> list[str]:
        used = {self.resolve(split, arg) for node in nodes for arg in node.value_args}
        return [local for name, local in split.scalars.items() if name in used]

    def common(self, split: Split, config: Config, doc: str) -> dict[str, Any]:
        return {"doc": doc, "config_text": config_text(config),
                "reference": self.reference.rstrip(), "prelude": split.prelude, "config": config,
                "arguments": ", ".join(self.arguments.values()), "kernel": "_fused",
                "out_dtype": f"torch.{self.output.dtype}", "result": self.stored(split),
                "heavy_kernel": split.heavy_kernel, "finish": split.finish,
                "params": _held(self.program.params)}

    def stored(self, split: Split) -> str:
        """What the kernel stores: the output's value, a boolean one as `!= 0` (held as 1.0/0.0)."""
        value = var(self.resolve(split, self.output.name))
        return f"({value} != 0)" if self.output.dtype == "bool" else value

    def render_python_only(self, split: Split, kernels: str = "", returned: str | None = None) -> str:
        """A module whose forward only calls functions (`kernels` adds some) and returns `returned`, by default
        the output's Python value."""
        what = ("A generated depthwise convolution with its epilogue" if kernels else
                "A generated depthwise convolution" if split.heavy_kernel else "The vendor's operator")
        context = self.common(split, {}, f"{what}; every operation after it is a view.")
        context["heavy_kernel"] += kernels
        source = self.env.get_template("_module.py.j2").render(**context)
        value = self.resolve(split, self.output.name)
        if returned is None and value not in split.python:
            # A kernel whose output is a run-time scalar (a 0-d parameter's exp before a GEMM): nothing to launch
            # and nothing held in Python. The C++ backend refuses it alike.
            raise Unsupported("a 0-d output")
        returned = returned or split.python[value]
        return source.rstrip() + f"\n        return {returned}\n"


def _unit_view(source: tuple[int, ...], target: tuple[int, ...]) -> str | None:
    """The view from `source` to `target` when it drops or adds one size-1 dim (counted from the end, so
    leading dims may vary at run time): '.squeeze(-1)', '.unsqueeze(-2)' ...; None for any other view."""
    for position in range(len(source)):
        if source[position] == 1 and source[:position] + source[position + 1:] == target:
            return f".squeeze({position - len(source)})"
    for position in range(len(target)):
        if target[position] == 1 and target[:position] + target[position + 1:] == source:
            return f".unsqueeze({position - len(target)})"
    return None


def param_local(name: str) -> str:
    """The generated forward's local variable holding parameter `name` ('linear.weight' -> 'p_linear_weight')."""
    return "p_" + var(name)[2:]


def _held(params: Iterable[TensorSpec]) -> dict[str, str] | None:
    """The tuple of parameters `ModelNew.__init__` holds and the forward's locals unpacking it; None for none."""
    names = [spec.name for spec in params]
    if not names:
        return None
    comma = "," if len(names) == 1 else ""
    held = ", ".join(param_expression(name) for name in names) + comma
    if len(held) > 80:  # one a line, at the indentation of ModelNew.__init__'s body
        held = "\n" + "".join(f"            {param_expression(name)},\n" for name in names) + "        "
    return {"tuple": "(" + held + ")",
            "locals": ", ".join(param_local(name) for name in names) if len(names) > 1 else
            f"({param_local(names[0])},)"}


def dtype_arg(source: str, result: str) -> str:
    """The dtype argument of `t.new_empty(...)` making a `result` tensor from a `source` one: none when they agree."""
    return "" if source == result else f", dtype=torch.{result}"


def config_text(config: Config) -> str:
    return ", ".join(f"{key}={value}" for key, value in config.items()) or "none"


def is_scalar(leaf: Leaf, shape: tuple[int, ...]) -> bool:
    return math.prod(shape) == 1 and leaf.root is not None


def broadcast_mode(leaf: Leaf, own: tuple[int, ...], shape: tuple[int, ...], dim: int) -> str:
    """How a kernel may index `leaf` (of shape `own`) broadcast to `shape`: a scalar, a vector along `dim` only,
    or in full.

    Only parameters (whose sizes never change) and reshapes of them are given the cheap modes; anything else is
    made contiguous in the full shape, which is always right.
    """
    if leaf.root is None:
        return "full"
    if is_scalar(leaf, own):
        return "scalar"
    aligned = (1,) * (len(shape) - len(own)) + tuple(own)
    if len(aligned) == len(shape) and all(size == 1 for d, size in enumerate(aligned) if d != dim) \
            and aligned[dim] == shape[dim]:
        return "row"
    return "full"


def kernel_argument(leaf: Leaf, shape: str) -> str:
    """The expression handing `leaf` to the kernel: a parameter as it is where the kernel indexes it as a vector
    (contiguous, its elements in the order of any reshape of it), anything else laid out in full."""
    if leaf.mode in ("scalar", "row", "col") and leaf.root is not None:
        return param_local(leaf.root)
    return f"_dense({leaf.python}, {shape})"
