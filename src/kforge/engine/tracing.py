"""The reference `Model` traced with torch.fx as people write attention, and a refusal that names the user's line.

Plain `torch.fx.symbolic_trace` stops on two habits of hand-written attention: a factory given sizes read from
a shape (`torch.ones(t, t, device=x.device)`: torch's argument parser takes no proxy among separate sizes) and
a registered buffer cut by such a size (`self.mask[:t, :t]`: fx hands buffers out as real tensors, which a
proxy cannot index). The tracer here records both as graph nodes: the factory's sizes are passed as one tuple,
which torch hands to the proxy, and buffers are read through `get_attr` nodes as parameters are. What the
nodes mean is left to capture; a trace that still fails names the problem file's line it failed on.
"""

from __future__ import annotations

import contextlib
import functools
import re
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.fx
import torch.nn as nn

# Factories that take their sizes as separate arguments as well as in one sequence.
SIZED_FACTORIES = ("ones", "zeros", "empty")


class TraceError(ValueError):
    """The forward could not be traced: `reason` (the cause's first line) and `where` (`problem.py:12`, the line of
    the problem file the trace stopped at, or empty)."""

    def __init__(self, reason: str, where: str) -> None:
        super().__init__(f"{reason} at {where}" if where else reason)
        self.reason = reason
        self.where = where


class _Tracer(torch.fx.Tracer):
    proxy_buffer_attributes = True  # a buffer is a get_attr node, so `self.mask[:t, :t]` is traced, not run
    record_stack_traces = True  # each node knows the line it came from (`line_of`)


def trace(model: nn.Module, source: Path | None = None) -> torch.fx.GraphModule:
    """`model`'s forward as an fx graph; TraceError (one line, naming `source`'s line it failed at) otherwise."""
    tracer = _Tracer()
    try:
        with _sizes_as_tuples():
            graph = tracer.trace(model)
    except Exception as exc:
        raise TraceError(_reason(exc), _where(exc, source)) from None
    return torch.fx.GraphModule(tracer.root, graph, type(model).__name__)


def _reason(exc: BaseException) -> str:
    """The exception's first line, cut at 160 characters."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def _where(exc: BaseException, source: Path | None) -> str:
    """`problem.py:12`: the deepest frame in `source` the exception passed through; empty when none did."""
    if source is None:
        return ""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if Path(frame.filename).resolve() == source.resolve()]
    return f"{source.name}:{lines[-1]}" if lines else ""


def line_of(node: torch.fx.Node, source: Path) -> str:
    """`problem.py:12`: the last line of `source` in the stack `node` was traced from; empty when none."""
    lines = re.findall(rf'File "{re.escape(str(source.resolve()))}", line (\d+)', node.stack_trace or "")
    if not lines:
        lines = re.findall(rf'File "{re.escape(str(source))}", line (\d+)', node.stack_trace or "")
    return f"{source.name}:{lines[-1]}" if lines else ""


@contextlib.contextmanager
def _sizes_as_tuples() -> Iterator[None]:
    """While tracing, `torch.ones(t, t)` with a traced `t` is called as `torch.ones((t, t))`."""
    originals = {name: getattr(torch, name) for name in SIZED_FACTORIES}
    try:
        for name, factory in originals.items():
            setattr(torch, name, _sized(factory))
        yield
    finally:
        for name, factory in originals.items():
            setattr(torch, name, factory)


def _sized(factory: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(factory)
    def call(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 and any(isinstance(arg, torch.fx.Proxy) for arg in args):
            return factory(tuple(args), **kwargs)
        return factory(*args, **kwargs)
    return call
