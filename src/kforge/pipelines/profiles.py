"""Profiling a candidate for the analyst: the worker's profile, validated and joined with the roofline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from kforge.platforms import get_platform
from kforge.problem import Problem, Solution
from kforge.profiling import (
    ChartUnavailable,
    Profile,
    measure_peaks,
    measure_workload,
    render_chart,
    render_table,
    with_roofline,
)
from kforge.verify.evaluate import EvalOptions, collect_profile
from kforge.verify.sandbox import WorkerPool


@dataclass(frozen=True)
class CandidateProfile:
    profile: Profile
    text: str
    png: bytes | None


def profile_candidate(problem: Problem, solution: Solution, options: EvalOptions, pool: WorkerPool | None = None,
                      runtime_ms: float | None = None, cache_dir: Path | None = None) -> CandidateProfile:
    """Profile `solution` in a worker; FLOPs and bytes come from the trusted reference, peaks from the device.

    `runtime_ms`, the harness's own measurement, places the candidate on the roofline when given.
    """
    data = collect_profile(problem, solution, options, pool)
    profile = Profile.model_validate(data)  # the worker is untrusted: only well-formed data gets through
    platform = get_platform(options.platform)
    model = problem.make_model(options.seed).to(platform.device)
    inputs = problem.inputs(options.seed, device=platform.device)
    workload = measure_workload(model, inputs)
    peaks = measure_peaks(platform, dtype=getattr(torch, workload.dtype, torch.float32),
                          cache_dir=cache_dir or options.cache_dir)
    profile = with_roofline(profile, workload, peaks, runtime_ms * 1000 if runtime_ms else None)
    try:
        png: bytes | None = render_chart(profile)
    except ChartUnavailable:
        png = None
    return CandidateProfile(profile, render_table(profile), png)
