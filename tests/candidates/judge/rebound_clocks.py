"""Trick candidate for tests/problems/leaky_scale.py: rewrites the worker's timing loop in place (the function
object stays the same, so no rebinding shows) to divide every clock reading by 1000, the per-call timer and the
second clock alike, so that the worker's own cross-check sees them agree. (The red team's divided by 25; a machine
busy enough to slow the timed calls tenfold, as CI's can be, would hide that much from a test.) An in-place rewrite like this is what a
C++ candidate can do through the interpreter's module table; judged with the policy off, in Python."""

import sys
import types

import torch
import torch.nn as nn

_timing = sys.modules["kforge.verify.timing"]
_loop = _timing.run_timing
_timing.__dict__["_honest_loop"] = types.FunctionType(_loop.__code__, _loop.__globals__, "_honest_loop",
                                                      _loop.__defaults__, _loop.__closure__)


def _scaled(call, make_inputs, platform, plan, keep):
    run = _honest_loop(call, make_inputs, platform, plan, keep)  # noqa: F821 - found in the timing module
    run.times_ns = [reading // 1000 for reading in run.times_ns]
    run.second_clock_ns = [reading // 1000 for reading in run.second_clock_ns]
    run.lead_in_ns = [reading // 1000 for reading in run.lead_in_ns]
    run.loop_ns //= 1000
    return run


_loop.__code__ = _scaled.__code__


def _no_doubt(self, times_ns):
    return None


# The platforms' own audits of the loop's figures (the CUDA platform's against its device events' record) are
# rewritten the same way.
for _module in [module for name, module in list(sys.modules.items()) if name.startswith("kforge.platforms")]:
    for _value in list(vars(_module).values()):
        _audit = getattr(_value, "__dict__", {}).get("audit_timing")
        if isinstance(_audit, types.FunctionType):
            _audit.__code__ = _no_doubt.__code__


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
