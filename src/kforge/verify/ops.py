"""Recording the framework operators a model dispatches while it runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OpRecorder(TorchDispatchMode):
    """Counts every ATen operator that reaches the dispatcher, from Python or from C++ extensions alike."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.counts[func._schema.name] += 1
        return func(*args, **(kwargs or {}))


def record_ops(call: Callable[[], Any]) -> tuple[Any, set[str]]:
    """Run `call` and return its result with the names of the operators it dispatched."""
    recorder = OpRecorder()
    with recorder:
        result = call()
    return result, set(recorder.counts)


def reference_ops(model: torch.nn.Module, inputs: list[Any]) -> set[str]:
    """The operators the reference model runs on one input list."""
    with torch.no_grad():
        _, ops = record_ops(lambda: model(*inputs))
    return ops
