"""Partitioning: a whole captured forward cut into kernels, each a single-kernel `ir.Program`.

A backend renders one kernel: at most one heavy op (GEMM or convolution) and what fuses after it, with one
output (`lower.plan`). A real forward has several heavy ops, reductions in a row, several outputs. This module
cuts such a graph into *steps* that a composed `ModelNew` runs in order:

- `Kernel`: a single-kernel program whose inputs are the graph's inputs and the values earlier steps computed
  (named as in the graph), and whose one output is a value of the graph;
- `ViewStep`: a view (reshape or slice) of a computed value, or one that feeds a heavy op: free metadata work
  the composed forward does in Python between kernels.

Views of inputs and parameters, and scalars computed from sizes, are copied into every kernel that reads them
(they cost nothing). The cut is greedy: each node joins the newest kernel that is still open, runs after all its
producers, and that `plan` accepts grown by it; a heavy op always starts a kernel. A value that another step
reads, or that the forward returns, must be its kernel's output, so it closes its kernel; where the greedy cut
breaks that rule the value is marked and the cut is redone (the marks only grow, so this ends).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from graphlib import TopologicalSorter

from kforge.engine import ir
from kforge.engine.capture import LoweringError, cannot_lower
from kforge.engine.lower import plan


@dataclass(frozen=True)
class Kernel:
    """One kernel: a single-kernel program reading graph inputs, parameters and earlier steps' values."""

    program: ir.Program

    @property
    def output(self) -> str:
        return self.program.outputs[0]


@dataclass(frozen=True)
class ViewStep:
    """A view or slice of an input, a parameter or an earlier step's value, done in Python between kernels."""

    node: ir.Node

    @property
    def output(self) -> str:
        return self.node.name


Step = Kernel | ViewStep


@dataclass(frozen=True)
class Partition:
    """A graph program and the steps that compute it, in an order that respects every dependency."""

    graph: ir.Program
    steps: tuple[Step, ...]

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return tuple(step for step in self.steps if isinstance(step, Kernel))

    def summary(self) -> str:
        """One line: the steps in order, each kernel as its ops (e.g. `linear+relu | linear | view | softmax`)."""
        return " | ".join(_step_text(step) for step in self.steps)

    def kernels_summary(self) -> str:
        """The kernels alone, in order (`linear+relu | linear | softmax`): a view or slice between them is done in
        Python, not by a kernel."""
        return " | ".join(_step_text(step) for step in self.kernels)


def _step_text(step: Step) -> str:
    if isinstance(step, ViewStep):
        return step.node.op
    ops = [n.op for n in step.program.all_nodes() if n.op not in ir.VIEW_OPS and n.shape != ()]
    return "+".join(ops) or "copy"


def as_graph(program: ir.Program) -> ir.Program:
    """`program` in graph form: its heavy op (if any) moved among the nodes."""
    if program.prepared:
        raise LoweringError("builtin engine: partitioning expects a captured program (no prepared values)")
    if program.heavy is None:
        return program
    return program.replace(heavy=None, nodes=(program.heavy, *program.nodes))


Accepts = Callable[[ir.Program], bool]


def partition(program: ir.Program, accepts: Accepts | None = None) -> Partition:
    """The steps computing `program`; LoweringError (one line) where some piece fits no kernel. `accepts` tells
    whether a backend renders a single-kernel program (beyond `plan`, which every backend needs)."""
    graph = as_graph(program)
    cut = _Cut(graph, accepts)
    forced = set(cut.structural)
    for _ in range(len(graph.nodes) + 1):
        groups = cut.greedy(forced)
        broken = cut.misplaced_exports(groups)
        if not broken:
            return Partition(graph, cut.steps(groups))
        forced |= broken
    raise LoweringError("builtin engine: the graph could not be partitioned; configure a model with --model")


class _Cut:
    """The classification of a graph's nodes and the greedy cut over them."""

    def __init__(self, graph: ir.Program, accepts: Accepts | None) -> None:
        self.graph = graph
        self.accepts = accepts
        self.fits_cache: dict[ir.Program, bool] = {}
        self.roots = {spec.name: spec for spec in (*graph.inputs, *graph.params)}
        self.nodes = {node.name: node for node in graph.nodes}
        self.order = {name: index for index, name in enumerate(self.nodes)}
        self.users: dict[str, list[ir.Node]] = {name: [] for name in (*self.roots, *self.nodes)}
        for node in graph.nodes:
            for arg in node.value_args:
                self.users[arg].append(node)
        self.view_steps = self._view_steps()
        self.kernel_nodes = [node for node in graph.nodes if self._is_kernel_node(node)]
        self._check_outputs()
        self.structural = self._exported_by_structure()

    # ---- classification ------------------------------------------------------------------------------------
    def _is_scalar(self, node: ir.Node) -> bool:
        return node.shape == () and node.dtype == "float64"

    def _is_kernel_node(self, node: ir.Node) -> bool:
        return node.op not in ir.VIEW_OPS and node.op not in ir.COPY_OPS and not self._is_scalar(node)

    def _alone(self, node: ir.Node) -> bool:
        """A heavy op or a standalone op: it starts a kernel, and nothing before it joins that kernel."""
        return node.op in ir.HEAVY_OPS or node.op in ir.STANDALONE_OPS

    def _base(self, name: str) -> str:
        """The value a chain of views starts from."""
        while name in self.nodes and self.nodes[name].op in ir.VIEW_OPS:
            name = str(self.nodes[name].args[0])
        return name

    def _feeds_heavy(self, view: ir.Node) -> bool:
        for user in self.users[view.name]:
            if self._alone(user) or (user.op in ir.VIEW_OPS and self._feeds_heavy(user)):
                return True
        return False

    def _view_steps(self) -> set[str]:
        """Views done in Python: permutes; reshapes of computed values or with a dim that varies between input
        sets; views feeding a heavy op (whose operands a kernel reads as they are) and those returned. Every
        other view (slices of anything, reshapes of graph inputs and parameters) is read in place by the kernels
        that use it."""
        steps = {node.name for node in self.graph.nodes
                 if node.op in ir.COPY_OPS or (node.op in ir.VIEW_OPS and self._in_python(node))}
        for node in reversed(self.graph.nodes):  # the views these are taken through are done in Python too
            if node.name in steps and str(node.args[0]) in self.nodes and \
                    self.nodes[str(node.args[0])].op in ir.VIEW_OPS:
                steps.add(str(node.args[0]))
        return steps

    def _in_python(self, view: ir.Node) -> bool:
        if view.op == "permute" or self._feeds_heavy(view) or view.name in self.graph.outputs:
            return True
        return view.op == "view" and (self._base(view.name) not in self.roots or not all(view.static))

    def _check_outputs(self) -> None:
        for name in self.graph.outputs:
            if self._base(name) in self.roots and name not in self.view_steps:
                raise cannot_lower("a forward that returns an input or a parameter unchanged", op=False)
            if name in self.nodes and self._is_scalar(self.nodes[name]):
                raise cannot_lower("a forward that returns a scalar computed from sizes", op=False)
            if name in self.view_steps and self._base(name) in self.roots:
                raise cannot_lower("a forward that returns a view of an input or a parameter", op=False)

    def producers(self, node: ir.Node) -> list[str]:
        """The kernel nodes whose values `node` reads, directly or through views it reads in place."""
        found = []
        for arg in node.value_args:
            base = arg if arg in self.view_steps else self._base(arg)
            if base in self.nodes and self._is_kernel_node(self.nodes[base]):
                found.append(base)
        return found

    def _exported_by_structure(self) -> set[str]:
        """Kernel values that must leave their kernel whatever the cut: outputs, heavy operands, the sources
        of Python views, and tensors whose sizes a scalar reads."""
        exported = {name for name in self.graph.outputs if name in self.nodes}
        for node in self.graph.nodes:
            if self._alone(node) or node.name in self.view_steps or node.op == "size":
                exported.update(arg for arg in node.value_args if arg in self.nodes)
        return {name for name in exported if self._is_kernel_node(self.nodes[name])}

    # ---- the greedy cut ------------------------------------------------------------------------------------
    def greedy(self, forced: set[str]) -> list[list[ir.Node]]:
        groups: list[list[ir.Node]] = []
        is_open: list[bool] = []
        reads: list[set[int]] = []  # the kernels each kernel reads values of
        group_of: dict[str, int] = {}
        for node in self.kernel_nodes:
            target = None
            sources = {group_of[name] for name in self.producers(node)}
            if not self._alone(node):
                # Any open kernel that can run after every producer, the newest first: one created after them,
                # or an older one that none of them reads from, directly or not (`x + flip(x)` joins the kernel
                # computing x's neighbours although the flip's kernel came later). A node that reads only the
                # graph's inputs and parameters joins only a kernel whose result its own broadcasts to.
                for index in range(len(groups) - 1, -1, -1):
                    if is_open[index] and (sources or _broadcasts(node.shape, groups[index][-1].shape)) and \
                            not _reaches(reads, sources - {index}, index) and self._fits([*groups[index], node]):
                        target = index
                        break
            if target is None:
                groups.append([node])
                is_open.append(True)
                reads.append(set())
                target = len(groups) - 1
            else:
                groups[target].append(node)
            reads[target] |= sources - {target}
            group_of[node.name] = target
            if node.name in forced:
                is_open[target] = False
        return groups

    def _fits(self, members: list[ir.Node]) -> bool:
        try:
            program = self.kernel_program(members)
            plan(program)
        except (LoweringError, ir.IRError):
            return False
        if self.accepts is None:
            return True
        if program not in self.fits_cache:
            self.fits_cache[program] = self.accepts(program)
        return self.fits_cache[program]

    def misplaced_exports(self, groups: list[list[ir.Node]]) -> set[str]:
        """Values read outside their kernel (or returned) that are not their kernel's last node."""
        group_of = {node.name: index for index, members in enumerate(groups) for node in members}
        broken = set()
        for index, members in enumerate(groups):
            for node in members[:-1]:
                outside = node.name in self.graph.outputs or node.name in self.structural
                for user in self.users[node.name]:
                    if self._is_kernel_node(user):
                        outside = outside or group_of[user.name] != index
                    else:
                        outside = outside or self._read_outside(user, group_of, index)
                if outside:
                    broken.add(node.name)
        return broken

    def _read_outside(self, user: ir.Node, group_of: dict[str, int], index: int) -> bool:
        """Whether a scalar or view user of a value carries it to a kernel other than `index`."""
        if user.name in self.view_steps:
            return True
        return any((self._is_kernel_node(u) and group_of[u.name] != index) or
                   (not self._is_kernel_node(u) and self._read_outside(u, group_of, index))
                   for u in self.users[user.name])

    # ---- the kernels' programs -----------------------------------------------------------------------------
    def kernel_program(self, members: list[ir.Node]) -> ir.Program:
        """The single-kernel program computing `members` (in graph order), its last node the output."""
        included = {node.name for node in members}
        inputs: set[str] = set()
        params: set[str] = set()

        def need(name: str) -> None:
            if name in included or name in inputs or name in params:
                return
            if name in self.roots:
                (inputs if any(s.name == name for s in self.graph.inputs) else params).add(name)
                return
            node = self.nodes[name]
            if name in self.view_steps or self._is_kernel_node(node):
                inputs.add(name)
                return
            included.add(name)  # a view of a root, or a scalar: copied into this kernel
            for arg in node.value_args:
                if node.op == "size" and arg not in self.roots:
                    inputs.add(arg)
                else:
                    need(arg)

        for node in members:
            for arg in node.value_args:
                need(arg)
        ordered = [node for node in self.graph.nodes if node.name in included]
        input_specs = [spec for spec in self.graph.inputs if spec.name in inputs]
        input_specs += [_spec_of(self.nodes[name]) for name in sorted(inputs - set(self.roots),
                                                                       key=self.order.__getitem__)]
        graph_form = self.graph.replace(inputs=tuple(input_specs),
                                        params=tuple(s for s in self.graph.params if s.name in params),
                                        nodes=tuple(ordered), outputs=(members[-1].name,), notes=(), updates=())
        return ir.hoist_heavy(graph_form)

    def steps(self, groups: list[list[ir.Node]]) -> tuple[Step, ...]:
        produced_by: dict[str, str] = {}  # value -> the step (its output name) that computes it
        steps: dict[str, Step] = {}
        for members in groups:
            kernel = Kernel(self.kernel_program(members))
            steps[kernel.output] = kernel
            for node in members:
                produced_by[node.name] = kernel.output
        for name in [name for name in self.nodes if name in self.view_steps]:  # graph order: the same text every run
            steps[name] = ViewStep(self.nodes[name])
            produced_by[name] = name
        sorter: TopologicalSorter[str] = TopologicalSorter()
        for key, step in steps.items():
            reads = step.program.inputs if isinstance(step, Kernel) else ()
            needed = {spec.name for spec in reads} if isinstance(step, Kernel) else set(step.node.value_args)
            sorter.add(key, *sorted({produced_by[name] for name in needed if name in produced_by} - {key}))
        return tuple(steps[key] for key in sorter.static_order())


def _reaches(reads: list[set[int]], starts: set[int], goal: int) -> bool:
    """Whether kernel `goal` is among `starts` or what they read, directly or not (joining it would make a
    cycle)."""
    seen, pending = set(), list(starts)
    while pending:
        index = pending.pop()
        if index == goal:
            return True
        if index not in seen:
            seen.add(index)
            pending.extend(reads[index])
    return False


def _broadcasts(small: ir.Shape, large: ir.Shape) -> bool:
    """Whether a value of shape `small` broadcasts to `large` without growing it."""
    return len(small) <= len(large) and all(s in (1, n) for s, n in zip(reversed(small), reversed(large),
                                                                          strict=False))


def _spec_of(node: ir.Node) -> ir.TensorSpec:
    return ir.TensorSpec(node.name, node.shape, node.dtype, node.static)
