"""Reading Triton launch parameters out of a candidate's Python AST, without importing it.

A value is known when it is a literal, a module-level constant, a kernel parameter's default, a key of a
`triton.Config`, a keyword at a launch, or a comprehension variable over a literal list; anything else
(a value computed at run time, a helper's return value) is unknown and not checked.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

#: cap on the combinations tried when an expression mixes several multi-valued names
_MAX_COMBINATIONS = 256
Env = dict[str, frozenset[int]]


@dataclass(frozen=True)
class Settings:
    """One set of launch parameters: a `triton.Config(...)` or a `kernel[grid](...)` call."""

    kind: str  # "config" or "launch"
    line: int
    #: the kernel launched (for a launch) or autotuned (for a config in a decorator), when known
    kernel: str | None
    #: meta-parameters: the Config's dict, or the launch's keyword and positional arguments by name
    params: dict[str, ast.expr] = field(default_factory=dict)
    #: compiler options: num_warps, num_stages, grf_mode, warp_size, ...
    options: dict[str, ast.expr] = field(default_factory=dict)
    env: Env = field(default_factory=dict)


_OPTION_NAMES = {"num_warps", "num_stages", "num_ctas", "maxnreg", "grf_mode", "warp_size", "threads_per_warp"}


class TritonView:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.constants = _module_constants(tree)
        self.kernels = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
                        and any(_is_jit(d) for d in node.decorator_list)}
        self.settings = list(self._settings())

    def values(self, node: ast.expr, env: Env | None = None) -> frozenset[int] | None:
        """Every integer `node` may take, or None when any part of it is unknown."""
        scope: Env = {**self.constants, **(env or {})}
        return _values(node, scope)

    def bindings(self, kernel: ast.FunctionDef) -> list[tuple[Env, int | None]]:
        """The constexpr values each launch or config gives `kernel`, with where they come from."""
        defaults = _defaults(kernel)
        params = [arg.arg for arg in kernel.args.args]
        found: list[tuple[Env, int | None]] = []
        for setting in self.settings:
            if setting.kernel != kernel.name:
                continue
            env: Env = dict(defaults)
            for name, expr in setting.params.items():
                key = params[int(name)] if name.isdigit() and int(name) < len(params) else name
                values = self.values(expr, setting.env)
                if values is not None:
                    env[key] = values
            found.append((env, setting.line))
        return found or [(dict(defaults), None)]

    def _settings(self) -> Iterator[Settings]:
        decorated = self._configs_in_decorators()
        for call, env in _calls_with_env(self.tree, {}):
            if _is_config(call):
                params: dict[str, ast.expr] = {}
                if call.args and isinstance(call.args[0], ast.Dict):
                    params = {k.value: v for k, v in zip(call.args[0].keys, call.args[0].values, strict=True)
                              if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                options = {kw.arg: kw.value for kw in call.keywords if kw.arg in _OPTION_NAMES}
                # grf_mode and friends may also sit in the Config's dict
                options.update({k: v for k, v in params.items() if k in _OPTION_NAMES})
                yield Settings("config", call.lineno, decorated.get(id(call)), params, options, env)
            elif isinstance(call.func, ast.Subscript) and isinstance(call.func.value, ast.Name):
                kernel = call.func.value.id
                params = {str(i): arg for i, arg in enumerate(call.args) if not isinstance(arg, ast.Starred)}
                params.update({kw.arg: kw.value for kw in call.keywords
                               if kw.arg is not None and kw.arg not in _OPTION_NAMES})
                options = {kw.arg: kw.value for kw in call.keywords if kw.arg in _OPTION_NAMES}
                yield Settings("launch", call.lineno, kernel, params, options, env)

    def _configs_in_decorators(self) -> dict[int, str]:
        """id(Config call) -> the kernel whose @triton.autotune lists it (directly or by a module name)."""
        lists = {target.id: node.value for node in self.tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}
        owner: dict[int, str] = {}
        for name, kernel in self.kernels.items():
            for decorator in kernel.decorator_list:
                if not (isinstance(decorator, ast.Call) and _attr_name(decorator.func) == "autotune"):
                    continue
                configs = next((kw.value for kw in decorator.keywords if kw.arg == "configs"),
                               decorator.args[0] if decorator.args else None)
                if isinstance(configs, ast.Name):
                    configs = lists.get(configs.id)
                if configs is None:
                    continue
                for node in ast.walk(configs):
                    if isinstance(node, ast.Call) and _is_config(node):
                        owner[id(node)] = name
        return owner


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _attr_name(target) in {"jit", "autotune", "heuristics"}


def _is_config(call: ast.Call) -> bool:
    return _attr_name(call.func) == "Config"


def _attr_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _module_constants(tree: ast.Module) -> Env:
    assigned: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
    env: Env = {}
    for name, exprs in assigned.items():
        if len(exprs) == 1:
            values = _values(exprs[0], env)
            if values is not None:
                env[name] = values
    return env


def _defaults(kernel: ast.FunctionDef) -> Env:
    args = kernel.args.args
    env: Env = {}
    for arg, default in zip(args[len(args) - len(kernel.args.defaults):], kernel.args.defaults, strict=True):
        values = _values(default, {})
        if values is not None:
            env[arg.arg] = values
    return env


def _values(node: ast.expr, env: Env) -> frozenset[int] | None:
    if isinstance(node, ast.Constant):
        value = node.value
        return frozenset({value}) if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _values(node.operand, env)
        return None if inner is None else frozenset(-v for v in inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
                                                            ast.LShift, ast.Pow)):
        left, right = _values(node.left, env), _values(node.right, env)
        if left is None or right is None or len(left) * len(right) > _MAX_COMBINATIONS:
            return None
        results = set()
        for a, b in itertools.product(left, right):
            if isinstance(node.op, ast.FloorDiv) and b == 0:
                return None
            if isinstance(node.op, (ast.Pow, ast.LShift)) and not 0 <= b <= 64:
                return None
            results.add(_apply(node.op, a, b))
        return frozenset(results)
    return None


def _apply(op: ast.operator, a: int, b: int) -> int:
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv):
        return a // b
    if isinstance(op, ast.LShift):
        return a << b
    return int(a**b)


def _calls_with_env(node: ast.AST, env: Env) -> Iterator[tuple[ast.Call, Env]]:
    """Every call under `node`, with the literal values that enclosing comprehension variables take."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = dict(env)
        for generator in node.generators:
            if isinstance(generator.target, ast.Name):
                values = _iterable_values(generator.iter, inner)
                if values is not None:
                    inner[generator.target.id] = values
                else:
                    inner.pop(generator.target.id, None)
        for child in ast.iter_child_nodes(node):
            yield from _calls_with_env(child, inner)
        return
    if isinstance(node, ast.Call):
        yield node, env
    for child in ast.iter_child_nodes(node):
        yield from _calls_with_env(child, env)


def _iterable_values(node: ast.expr, env: Env) -> frozenset[int] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        collected: set[int] = set()
        for element in node.elts:
            values = _values(element, env)
            if values is None:
                return None
            collected |= values
        return frozenset(collected)
    if isinstance(node, ast.Call) and _attr_name(node.func) == "range" and not node.keywords:
        bounds = [_values(arg, env) for arg in node.args]
        if any(b is None or len(b) != 1 for b in bounds) or not 1 <= len(bounds) <= 3:
            return None
        numbers = [next(iter(b)) for b in bounds if b is not None]
        span = range(*numbers)
        return frozenset(span) if len(span) <= _MAX_COMBINATIONS else None
    return None
