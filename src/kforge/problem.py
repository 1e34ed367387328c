"""Problems (a PyTorch reference in KernelBench's format) and solutions (a candidate `ModelNew`).

A problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`, and may define
`get_input_variants()` returning more input lists (other shapes) on which correctness is also checked.
A solution file defines `class ModelNew` with the same constructor signature.

Problems are the user's own code and are imported here; solutions are untrusted and are only ever read as
text in this process (their code runs in the sandboxed worker).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import itertools
import random
import re
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from kforge import pyparse

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
LANGUAGES = ("cpp", "cuda", "triton", "metal", "sycl", "hip")

# What marks CUDA-style sources as HIP: its runtime header, or calls only HIP has.
_HIP_SIGNS = re.compile(r"#include\s*[<\"]hip/|\bhip(LaunchKernelGGL|Stream_t|Malloc|Memcpy|GetLastError)\b")

_module_counter = itertools.count()

# Seeding is global to the process: a draw is only reproducible if no other thread seeds or draws between the
# seed and the draw's end. Every seeded draw here holds this lock (re-entrant: a draw may seed inside another),
# so threads that judge problems side by side (a benchmark's jobs) draw what a worker draws with the same seed.
SEEDED = threading.RLock()


def seed_everything(seed: int) -> None:
    """Seed every generator a problem's code may draw from: torch's (on every device), Python's `random`, and
    NumPy's global one where the problem imported NumPy. Every party that draws with one seed (the workers, the
    harness) must see the same values, whichever of them `get_inputs` uses."""
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


class ProblemError(ValueError):
    """A problem file that cannot be used; the message is one line for the user."""


class SolutionError(ValueError):
    """A solution file that cannot be read; the message is one line for the user."""


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import a Python file as a fresh module (never cached under a name another file could share)."""
    name = f"{prefix}_{next(_module_counter)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def last_frame_summary(exc: BaseException, path: Path) -> str:
    """'ValueError: boom (problem.py:12)': the exception and the deepest line of `path` it passed through."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            where = f" ({path.name}:{frame.lineno})"
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    return f"{type(exc).__name__}: {message}{where}" if message else f"{type(exc).__name__}{where}"


@dataclass(frozen=True)
class Problem:
    """A loaded reference problem."""

    path: Path
    source: str
    module: ModuleType = field(repr=False)

    @property
    def name(self) -> str:
        return self.path.parent.name if self.path.stem == "problem" else self.path.stem

    @property
    def source_hash(self) -> str:
        return source_hash(self.source)

    @property
    def model_class(self) -> type[torch.nn.Module]:
        return self.module.Model

    @property
    def has_variants(self) -> bool:
        return callable(getattr(self.module, "get_input_variants", None))

    def init_inputs(self) -> list[Any]:
        return list(self.module.get_init_inputs())

    def make_model(self, seed: int) -> torch.nn.Module:
        with SEEDED:
            seed_everything(seed)
            return self.model_class(*self.init_inputs())

    def input_sets(self, seed: int) -> list[list[Any]]:
        """The main input list and every variant, all drawn after seeding with `seed`."""
        with SEEDED:
            seed_everything(seed)
            sets = [list(self.module.get_inputs())]
            if self.has_variants:
                sets.extend(list(variant) for variant in self.module.get_input_variants())
            return sets

    def inputs(self, seed: int, variant: int = 0, device: torch.device | None = None) -> list[Any]:
        """One input list drawn after seeding with `seed`; variant 0 is `get_inputs()`.

        With an accelerator `device`, tensors are drawn there (`torch.randn` inside `get_inputs` runs under
        that device, with its own seeded generator) and anything still elsewhere is moved there: drawing a
        large input on the host and copying it costs far more than most kernels. The values depend on the
        device kind, not on the process, so every party that draws with the same seed on the same kind of
        device (the workers, the harness's spot checks) gets the same inputs. A `get_inputs` that cannot run
        on the device (one that goes through numpy, say) is drawn on the host and moved, by every party alike.
        """
        if device is not None and device.type != "cpu":
            try:
                return _moved(self._draw(seed, variant, device), device)
            except Exception:  # e.g. get_inputs converts through numpy, which needs host tensors
                pass  # the same failure happens to every party drawing this seed, so all fall back alike
        drawn = self._draw(seed, variant, None)
        return _moved(drawn, device) if device is not None else drawn

    def _draw(self, seed: int, variant: int, device: torch.device | None) -> list[Any]:
        with SEEDED, torch.device(device) if device is not None else contextlib.nullcontext():
            seed_everything(seed)
            if variant == 0:
                return list(self.module.get_inputs())
            return list(self.module.get_input_variants()[variant - 1])

    def variant_count(self) -> int:
        return 1 + (len(self.module.get_input_variants()) if self.has_variants else 0)


def load_problem(path: str | Path, *, check_runs: bool = True) -> Problem:
    """Import and validate a problem file, raising ProblemError with a one-line reason."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"problem file not found: {path}")
    source = path.read_text()
    try:
        module = import_file(path, "kforge_problem")
    except BaseException as exc:  # a user's file may raise anything, SystemExit included
        raise ProblemError(f"problem {path.name} does not import: {last_frame_summary(exc, path)}") from None
    missing = [name for name in REQUIRED_NAMES if not hasattr(module, name)]
    if missing:
        raise ProblemError(f"problem {path.name} lacks {', '.join(missing)} (KernelBench format needs "
                           "class Model, get_inputs() and get_init_inputs())")
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise ProblemError(f"problem {path.name}: Model must be a subclass of torch.nn.Module")
    problem = Problem(path=path.resolve(), source=source, module=module)
    if check_runs:
        _check_reference_runs(problem)
    return problem


def _check_reference_runs(problem: Problem) -> None:
    path = problem.path
    try:
        model = problem.make_model(seed=0)
    except BaseException as exc:
        raise ProblemError(f"problem {path.name}: Model(*get_init_inputs()) fails: "
                           f"{last_frame_summary(exc, path)}") from None
    try:
        sets = problem.input_sets(seed=0)
    except BaseException as exc:
        raise ProblemError(f"problem {path.name}: get_inputs fails: {last_frame_summary(exc, path)}") from None
    first = None
    for index, inputs in enumerate(sets):
        label = "get_inputs()" if index == 0 else f"input variant {index}"
        try:
            with torch.no_grad():
                output = model(*inputs)
        except BaseException as exc:
            raise ProblemError(f"problem {path.name}: Model fails on {label}: "
                               f"{last_frame_summary(exc, path)}") from None
        if index == 0:
            first = output  # the variants' outputs are not kept
    _check_reference_repeats(problem, model, first)


def _check_reference_repeats(problem: Problem, model: torch.nn.Module, first: Any) -> None:
    """A reference whose outputs change from call to call on one input (dropout in training mode, noise drawn
    in forward) cannot be matched by any candidate: say so here, not as every candidate's failure."""
    path = problem.path
    try:
        inputs = problem.inputs(seed=0)  # the first call's inputs drawn again: that call may have changed them
        with SEEDED, torch.no_grad():
            seed_everything(1)  # but other random numbers for the call itself, so that any it draws show
            again = model(*inputs)
    except BaseException as exc:
        raise ProblemError(f"problem {path.name}: Model fails when called a second time: "
                           f"{last_frame_summary(exc, path)}") from None
    try:
        torch.testing.assert_close(again, first, rtol=1e-2, atol=1e-2, equal_nan=True)
    except AssertionError as exc:
        detail = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        raise ProblemError(f"problem {path.name}: Model gives other outputs when called again on the same "
                           f"input ({detail}); kforge judges deterministic functions: draw no random numbers in "
                           "forward (dropout: p=0, or call .eval() in __init__)") from None
    except Exception:  # outputs assert_close cannot compare (other types): left to the harness's comparison
        return


@dataclass(frozen=True)
class Solution:
    """A candidate's source text and language; never imported in this process. `path` is where it was read
    from, None for a candidate that exists only as text (a model's reply, an engine's variant)."""

    source: str
    language: str
    path: Path | None = None

    @property
    def source_hash(self) -> str:
        return source_hash(self.source)

    @classmethod
    def from_source(cls, source: str, language: str | None = None, name: str = "the solution",
                    path: Path | None = None, default: str = "cpp") -> Solution:
        """Check `source` parses and defines ModelNew, and settle its language: `language` when given, else the
        one its kernel is written in, else (no kernel at all) `default`, the platform's own. SolutionError with a
        one-line reason otherwise. `name` is how the message calls it."""
        try:
            tree = pyparse.parse(source, filename=name)
        except SyntaxError as exc:
            raise SolutionError(f"{name} is not valid Python: {exc.msg} (line {exc.lineno})") from None
        if not any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body):
            raise SolutionError(f"{name} defines no class ModelNew at module level")
        if language is None:
            language = infer_language(tree) or default
        elif language not in LANGUAGES:
            raise SolutionError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}")
        return cls(source=source, language=language, path=path)


def load_solution(path: str | Path, language: str | None = None, default: str = "cpp") -> Solution:
    """Read a solution file, check it parses and defines ModelNew, and settle its language (Solution.from_source)."""
    path = Path(path)
    if not path.is_file():
        raise SolutionError(f"solution file not found: {path}")
    return Solution.from_source(path.read_text(), language, name=f"solution {path.name}", path=path.resolve(),
                                default=default)


def infer_language(tree: ast.Module) -> str | None:
    """Triton if it imports triton; Metal if it compiles a shader for MPS; SYCL if it passes sycl_sources; HIP if
    it passes cuda_sources written against HIP's headers or API (torch for ROCm compiles those with hipcc), CUDA
    for other cuda_sources; C++ if it builds an extension; None for a candidate with no kernel at all (it only
    calls PyTorch): the platform it runs on decides its language."""
    names: set[str] = set()
    keywords: set[str] = set()
    attributes: set[str] = set()
    texts: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.keyword) and node.arg:
            keywords.add(node.arg)
        elif isinstance(node, ast.Attribute):
            attributes.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
    if "triton" in names:
        return "triton"
    if "compile_shader" in attributes:
        return "metal"
    if "sycl_sources" in keywords:
        return "sycl"
    if "cuda_sources" in keywords:
        return "hip" if any(_HIP_SIGNS.search(text) for text in texts) else "cuda"
    if "cpp_sources" in keywords or "cpp_extension" in names or _calls_extension_loader(tree):
        return "cpp"
    return None


def _calls_extension_loader(tree: ast.Module) -> bool:
    """Whether the source names torch.utils.cpp_extension or calls load_inline / load_library."""
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name in ("cpp_extension", "load_inline", "load_library"):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and "cpp_extension" in node.module:
            return True
    return False


def _moved(value: Any, device: torch.device) -> Any:
    """Tensors in `value` (nested lists and tuples included) on `device`; other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_moved(item, device) for item in value)
    return value
