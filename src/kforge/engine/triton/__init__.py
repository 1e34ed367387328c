"""The Triton backend: an IR program rendered as standalone Triton solutions, one per tunable configuration.

One module per kernel family, matching the templates in `kforge/data/engine/triton/`: `backend` (what is
offered, `variants`), `lowering` (the program divided between the forward and the kernels; the module around
them), `fused` (a pointwise chain or one reduction), `gemm`, `conv`, `conv_nd` (conv3d, transposed
convolutions); `emit` spells the IR's pointwise ops
(`ops.toml`) and `fast` writes the generated forward's fast path.
"""

from __future__ import annotations

from kforge.engine.triton.backend import copies_source, variants
from kforge.engine.triton.emit import Unsupported

__all__ = ["Unsupported", "copies_source", "variants"]
