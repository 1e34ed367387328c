"""kforge: fast compute kernels written by LLM agents, proven correct and fast on real hardware."""

import os as _os

__version__ = "0.1.0"

# The CPUs this process may run on, read before anything imports torch: an OpenMP runtime asked to bind its
# threads (OMP_PROC_BIND) pins the importing thread to one CPU, and workers started later would inherit
# that one CPU. Workers are given this set back (see verify/sandbox.py).
CPUS_AT_START: frozenset[int] | None = (
    frozenset(_os.sched_getaffinity(0)) if hasattr(_os, "sched_getaffinity") else None)
