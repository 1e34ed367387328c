"""The worker's run phase: fewer system calls once a candidate is loaded (data/sandbox.toml [run_phase]).

A worker needs programs and processes while it builds: load_inline runs ninja, the compiler and the linker. Once a
C++ or CUDA candidate is imported, its extensions are compiled and loaded and the model is built on its device,
and nothing its forward honestly does needs a program, a process or (on the CPU) a socket. So the worker stacks a
second seccomp filter then, on every thread, refusing what sandbox.toml lists for the candidate's language and
platform: a forward that forks, runs a program or reaches a local daemon's Unix socket gets an error instead.
Triton candidates are left out, since Triton compiles a kernel at its first call and runs ptxas then.

What this does not cover: what the candidate does while it is imported (static constructors, module-level calls)
runs before the phase, under the worker's first filter only; and the filter is set from inside a process the
candidate's code already shares, so it holds against what the candidate does after loading, not against code that
rewrote the worker while it was imported.
"""

from __future__ import annotations

from kforge.verify import confine
from kforge.verify.sandbox_rules import run_phase_rules


class RunPhaseRefused(RuntimeError):
    """The run phase's filter could not be set although seccomp is there: the candidate must not run."""


def enter(language: str | None, platform: str) -> bool:
    """Refuse, from now on and in every thread, what the run phase of `language` on `platform` refuses. False
    where there is nothing to refuse (a language the phase does not name, or none given) or no seccomp at all
    (the worker's greeting has already reported that); RunPhaseRefused where seccomp is there but the filter
    could not be set (some thread of the process no longer shares the worker's filters)."""
    rules = run_phase_rules(language, platform)
    if not rules or not confine.seccomp_available():
        return False
    problem = confine.restrict(rules)
    if problem is not None:
        raise RunPhaseRefused(f"the sandbox's run phase could not start: {problem}")
    return True
