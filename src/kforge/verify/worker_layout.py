"""Where each kind of worker keeps what it compiles: named once, for the workers (sandbox.py), the harness that
keeps a candidate's builds (artifact_store.py) and the reference's worker (evaluate.py).

A candidate's worker, and a build worker (which imports a candidate too), keeps everything it compiles inside its
own directory, which goes with the worker: load_inline's build folders under `builds/`, and Triton's, Inductor's
and torch's extension caches under `caches/`. So no candidate can write, or read, a file that another worker will
load (issue 38: a candidate swapped its library into another's build folder, and appended code to a compile cache
the reference imported). What is worth keeping is copied out by the harness once the worker is dead, and copied
back, checked, into the next worker of the same candidate (`KEPT`, verify/artifact_store.py).

The reference's worker runs only the user's own problem and torch.compile, never candidate code: it is trusted,
and keeps its caches under `<cache>/reference/`, which no candidate worker may write or read, so that the
torch.compile baseline compiles once per problem and machine and no candidate can slow it down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BUILDS = "builds"  # load_inline's build folders, one per extension (verify/builds.py names them)
# The compiler caches torch and Triton find through these variables, and their folders.
CACHE_VARIABLES = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton",
                   "TORCH_EXTENSIONS_DIR": "torch_extensions"}
_CANDIDATE_CACHES = "caches"
_REFERENCE = "reference"


def candidate_caches(directory: Path) -> dict[str, str]:
    """The compiler-cache variables of a candidate's worker whose own directory is `directory`: all inside it."""
    return {variable: str(directory / _CANDIDATE_CACHES / folder) for variable, folder in CACHE_VARIABLES.items()}


def reference_builds(cache: Path) -> Path:
    """The build folder of the reference's workers under kforge's cache `cache` (used when a problem itself
    calls load_inline)."""
    return cache / _REFERENCE / BUILDS


def reference_caches(cache: Path) -> dict[str, str]:
    """The compiler-cache variables of the reference's workers: their own folders under `cache`, written by
    reference workers only (Inductor's code for the torch.compile baseline, Triton's kernels)."""
    return {variable: str(cache / _REFERENCE / folder) for variable, folder in CACHE_VARIABLES.items()}


@dataclass(frozen=True)
class KeptTree:
    """A part of a candidate worker's directory whose files the harness keeps after the worker: those at most
    `depth` levels below `path` (relative to the worker's directory) whose names end in one of `suffixes` (any
    name when empty)."""

    path: str
    depth: int
    suffixes: tuple[str, ...] = ()

    def holds(self, relative: str) -> bool:
        """Whether `relative` (a path in the worker's directory, `/`-separated) is one of this tree's files."""
        prefix = self.path + "/"
        if not relative.startswith(prefix):
            return False
        parts = relative[len(prefix):].split("/")
        return len(parts) <= self.depth and (not self.suffixes or parts[-1].endswith(self.suffixes))


# What a later load of the same candidate reads: each extension's library (loaded as it is, see
# verify/builds.py: ninja's objects would not be reused anyway, since its build file names the worker's own
# directory), and Triton's compiled kernels and launchers. Inductor's cache and torch's own extension folder
# go with the worker.
KEPT = (KeptTree(BUILDS, 2, (".so", ".pyd")), KeptTree(f"{_CANDIDATE_CACHES}/{CACHE_VARIABLES['TRITON_CACHE_DIR']}", 2))
