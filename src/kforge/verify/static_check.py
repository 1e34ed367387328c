"""Static half of the no-delegation policy: reads a candidate's syntax tree (and its C++ strings), runs nothing.

It catches what an honest kernel never needs: framework compute calls for the problem's work, nn layers
called instead of read, try/except fallbacks, threads and processes, monkeypatching of imported modules,
compilers, names built at run time, and access to files, network or environment. A framework call is let
through when every operator it reaches is one the policy allows (the vendor's GEMM under
`Policy.allowing_vendor_gemm`); the dynamic check still judges the operators it actually dispatched.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kforge import pyparse
from kforge.verify import cpp_names
from kforge.verify.policy import Policy, Violation, op_family, policy_rules

_TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.Tensor", "torch.special", "torch.linalg",
                     "torch.fft", "torch.nn.init")
_EXTENSION_LOADERS = {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}


@dataclass
class _Names:
    """What the module's names refer to: import aliases, extension modules and nn layers."""

    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted module path
    extensions: set[str] = field(default_factory=set)  # names (and self.attrs) bound to built extensions
    layers: dict[str, str] = field(default_factory=dict)  # self.attr -> nn class name


def check_source(source: str, policy: Policy, reference_ops: set[str] | None = None) -> list[Violation]:
    """Every static rule the candidate breaks; an empty list means it may run."""
    if not policy.static_checks:
        return []
    tree = pyparse.parse(source)
    checker = _Checker(policy, {op_family(op) for op in (reference_ops or set())})
    checker.collect_names(tree)
    checker.visit(tree)
    checker.check_cpp_strings(tree)
    unique: dict[tuple[str, str], Violation] = {}
    for violation in checker.violations:
        unique.setdefault((violation.rule, violation.message), violation)
    return list(unique.values())


class _Checker(ast.NodeVisitor):
    def __init__(self, policy: Policy, reference_families: set[str]) -> None:
        rules = policy_rules()
        self.policy = policy
        self.reference_families = reference_families
        self.allowed_families = {op_family(op) for op in policy.allowed_ops}
        self.names = _Names()
        self.violations: list[Violation] = []
        self.allowed_imports = rules.imports.allowed | policy.allow_imports
        self.import_rules = {module: rule for rule, modules in rules.imports.rules.items() for module in modules}
        self.torch = rules.torch
        self.allowed_callables = rules.torch.allowed_callables
        self.holder_layers = rules.torch.holder_layers
        self.aliases = rules.aliases
        self.os_rules = rules.os
        self.sys_allowed = rules.sys.allowed
        self.builtins = rules.builtins

    def flag(self, rule: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", None)
        where = f" (line {line})" if line else ""
        self.violations.append(Violation(rule, message + where))

    # ---- names -------------------------------------------------------------------------------------------
    def collect_names(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.names.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.names.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self.note_binding(node.targets[0], node.value)

    def note_binding(self, target: ast.expr, value: ast.expr) -> None:
        target_name = _target_name(target)
        if target_name is None:
            return
        if isinstance(value, ast.Call):
            callee = self.resolve(value.func)
            if callee in _EXTENSION_LOADERS:
                self.names.extensions.add(target_name)
            elif callee and callee.startswith("torch.nn.") and callee.count(".") == 2:
                layer = callee.rsplit(".", 1)[1]
                if layer not in self.holder_layers:
                    self.names.layers[target_name] = layer
        elif _target_name(value) in self.names.extensions:
            self.names.extensions.add(target_name)

    def resolve(self, node: ast.expr) -> str | None:
        """The dotted path an expression names, through import aliases ('F.relu' -> 'torch.nn.functional.relu')."""
        if isinstance(node, ast.Name):
            return self.names.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    # ---- imports -----------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_module(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag("static.import", node, "relative import in a candidate")
        elif node.module:
            self.check_module(node.module, node)
            for alias in node.names:
                self.check_torch_path(f"{node.module}.{alias.name}", node)

    def check_module(self, module: str, node: ast.AST) -> None:
        top = module.split(".")[0]
        if top in self.import_rules and top not in self.policy.allow_imports:
            self.flag(self.import_rules[top], node, f"imports {module}")
        elif top not in self.allowed_imports:
            self.flag("static.import", node, f"imports {module}, which a candidate may not use")
        self.check_torch_path(module, node)

    def check_torch_path(self, path: str, node: ast.AST) -> bool:
        """Flag use of torch's compilers and internals; True when something was flagged."""
        for rule, modules in (("static.compiler", self.torch.compiler_modules),
                              ("static.introspection", self.torch.private_modules),
                              ("static.concurrency", self.torch.concurrency_modules)):
            for banned in modules:
                if path == banned or path.startswith(banned + "."):
                    self.flag(rule, node, f"uses {banned}")
                    return True
        return False

    # ---- statements --------------------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        if node.handlers:
            self.flag("static.try-except", node, "try/except in a candidate: a fallback path hides failures")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]  # try/except* (3.11) has the same handlers

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.check_store(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_store(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.check_store(target)
        self.generic_visit(node)

    def check_store(self, target: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.check_store(element)
        elif isinstance(target, ast.Attribute):
            owner = self.resolve(target.value)
            if owner is not None:
                self.flag("static.monkeypatch", target, f"assigns {owner}.{target.attr}: patching a module "
                          "or class the candidate did not define")

    # ---- expressions -------------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self.resolve(node)
        if path and not self.check_torch_path(path, node):
            self.check_os_sys(path, node)
        self.generic_visit(node)

    def check_os_sys(self, path: str, node: ast.AST) -> None:
        parts = path.split(".")
        if parts[0] == "os" and len(parts) > 1:
            attribute = parts[1]
            if attribute in self.os_rules.process:
                self.flag("static.process", node, f"calls {path}: process control")
            elif attribute in self.os_rules.concurrency:
                self.flag("static.concurrency", node, f"uses {path}: starts processes")
            elif attribute in ("environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"):
                self.flag("static.io", node, f"reads {path}: environment access")
            elif attribute not in self.os_rules.allowed:
                self.flag("static.io", node, f"uses {path}: file or system access")
        elif parts[0] == "sys" and len(parts) > 1 and parts[1] not in self.sys_allowed:
            self.flag("static.introspection", node, f"uses {path}")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self.delegates("matmul"):
            self.flag("static.framework-compute", node, "uses the @ operator: PyTorch's matmul does the work")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.check_call(node)
        self.generic_visit(node)

    def check_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.names.aliases:
            self.check_builtin(func.id, node)
            return
        callee = self.resolve(func)
        if callee is not None:
            self.check_resolved_call(callee, node)
            return
        callee_name = _target_name(func)
        if callee_name in self.names.layers:
            self.flag_layer(callee_name, node)
            return
        if isinstance(func, ast.Attribute):
            owner = _target_name(func.value)
            if owner in self.names.extensions:
                return
            if owner in self.names.layers and func.attr == "forward":
                self.flag_layer(owner, node)
            elif func.attr not in self.allowed_callables and self.delegates(func.attr):
                self.flag("static.framework-compute", node,
                          f"calls .{func.attr}(): PyTorch's {func.attr} does the problem's work")

    def flag_layer(self, name: str, node: ast.AST) -> None:
        self.flag("static.layer-call", node, f"calls the nn.{self.names.layers[name]} layer {name}: PyTorch's "
                  "kernel does the work (read its weight and bias instead)")

    def check_builtin(self, name: str, node: ast.Call) -> None:
        if name in self.builtins.dynamic:
            self.flag("static.dynamic-name", node, f"calls {name}(): code or names decided at run time")
        elif name in self.builtins.io:
            self.flag("static.io", node, f"calls {name}(): file or terminal access")
        elif name in self.builtins.by_name:
            literal = len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            target = self.resolve(node.args[0]) if node.args else None
            if not literal:
                self.flag("static.dynamic-name", node, f"calls {name}() with a name built at run time")
            elif target is not None and name in ("setattr", "delattr"):
                self.flag("static.monkeypatch", node, f"calls {name}() on {target}")
            elif target is not None and name == "getattr":
                self.check_resolved_call(f"{target}.{getattr(node.args[1], 'value', '?')}", node)

    def check_resolved_call(self, callee: str, node: ast.Call) -> None:
        if self.check_torch_path(callee, node):
            return
        if callee == "torch.compile":
            self.flag("static.compiler", node, "calls torch.compile")
            return
        if callee.startswith(("torch.ops.aten.", "torch.ops.prims.")):
            allowed = callee.startswith("torch.ops.aten.") and op_family(callee.split(".")[3]) in self.allowed_families
            if not allowed:
                self.flag("static.framework-compute", node, f"calls {callee}: PyTorch's operator does the work")
            return
        namespace, _, name = callee.rpartition(".")
        if namespace in ("torch.nn", "torch.nn.modules") and name not in self.holder_layers and name[:1].isupper():
            return  # constructing a layer is fine; calling it is checked where it is called
        delegates = (namespace == "torch.nn.functional" and not self.allowed(name)) or self.delegates(name)
        if namespace in _TORCH_NAMESPACES and name not in self.allowed_callables and delegates:
            self.flag("static.framework-compute", node, f"calls {callee}: PyTorch does the problem's work")

    def delegates(self, name: str) -> bool:
        """Whether calling `name` hands the reference's work to PyTorch through operators the policy forbids."""
        return bool(self.families_of(name) & self.reference_families) and not self.allowed(name)

    def allowed(self, name: str) -> bool:
        """Whether every operator the Python spelling `name` reaches is one the policy allows (a vendor GEMM)."""
        return self.families_of(name) <= self.allowed_families

    def families_of(self, name: str) -> set[str]:
        base = name.rstrip("_")
        return {op_family(op) for op in self.aliases.get(base, [base])}

    # ---- C++ strings -------------------------------------------------------------------------------------
    def check_cpp_strings(self, tree: ast.Module) -> None:
        patterns = policy_rules().cpp
        for text, node in _string_constants(tree):
            for rule, rule_patterns in patterns.items():
                for pattern in rule_patterns:
                    match = re.search(pattern, text)
                    if match:
                        self.flag(rule, node, f"C++ source uses {match.group(0).strip('( ')}")
        self.check_cpp_framework(tree)

    def check_cpp_framework(self, tree: ast.Module) -> None:
        """ATen and torch names in C++ beyond the allowlist (cpp_names.py). Every string but docstrings is read,
        short ones too: a name such as `at::cpu::_softmax` fits in a string the length check above skips."""
        allowed = cpp_names.allowlist(self.policy)
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
                continue
            found = cpp_names.framework_names(node.value, allowed)
            if found:
                listed = ", ".join(found[:4]) + (" ..." if len(found) > 4 else "")
                self.flag("static.cpp-framework-call", node, f"C++ source uses {listed}: a kernel may call only "
                          "ATen's allocation, layout, device and stream helpers")


def _target_name(node: ast.expr) -> str | None:
    """'name' or 'self.attr' for simple targets, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of the module, its classes and functions: prose, not C++."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _string_constants(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 40:
            yield node.value, node
