"""Moving tensors between the worker and the harness without trusting the worker.

The worker writes plain tensors with torch.save; the harness reads them with `weights_only=True`, which
builds only tensors and plain containers and never runs code a candidate could have placed in the file.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

_PLAIN_LEAVES = (int, float, bool, type(None), str)
# The named tuples torch's own ops return (`x.max(dim=1)`, `torch.sort`, ...), read before any candidate code
# exists: exactly these classes, never a look-alike, are handed over as the plain tuples they are.
_TORCH_NAMED_TUPLES = frozenset(
    kind for kind in vars(torch.return_types).values() if isinstance(kind, type) and issubclass(kind, tuple))


class UnsafeOutput(ValueError):
    """An output that is not a plain tensor, number or container of those."""


def plain_copy(value: Any) -> Any:
    """A detached copy made only of exact `torch.Tensor`s, numbers and tuples/lists (torch's named tuples
    become plain ones); UnsafeOutput otherwise."""
    if type(value) is torch.Tensor:
        return value.detach().clone()
    if isinstance(value, torch.Tensor):
        raise UnsafeOutput(f"output is a tensor subclass ({type(value).__qualname__}), not a plain tensor")
    if type(value) in (tuple, list):
        return type(value)(plain_copy(item) for item in value)
    if type(value) in _TORCH_NAMED_TUPLES:
        return tuple(plain_copy(item) for item in tuple.__iter__(value))
    if type(value) in _PLAIN_LEAVES:
        return value
    raise UnsafeOutput(f"output of type {type(value).__qualname__} is not a tensor, number or tuple/list")


def save(value: Any, path: Path) -> None:
    torch.save(value, path)


def load(data: bytes) -> Any:
    """Parse what a worker wrote, from bytes the harness read itself (sandbox.Worker.read_file: never through a
    path the candidate could redirect); only tensors and plain containers can come out."""
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def same_bits(first: Any, second: Any) -> bool:
    """True when two plain copies have the same structure and bit-identical tensors (a NaN equals itself)."""
    if first is second:
        return True
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor):
        if first.shape != second.shape or first.dtype != second.dtype or first.device != second.device:
            return False
        return bool(torch.equal(_as_bytes(first), _as_bytes(second)))
    if type(first) in (tuple, list) and type(first) is type(second) and len(first) == len(second):
        return all(same_bits(a, b) for a, b in zip(first, second, strict=True))
    return bool(first == second) or (first != first and second != second)  # NaN


def _as_bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)
