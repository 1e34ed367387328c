"""A suite's results: one row per problem, appended to `results.jsonl` the moment the problem is done (flushed and
synced, so that a suite killed at any point keeps every finished row), and the summary computed from the rows.

Figures: a row's runtimes and speedups come from one evaluation that timed the candidate and its baselines in
rounds taken in turn (for an optimized problem, the final confirmation of its best), with the candidate's spread.
In the summary, a problem without a correct kernel counts 1.0x in the geometric means: the user keeps the
baseline there. fast_p is the share of all problems that are correct and faster than p times the baseline.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kforge.verify.ratio import includes_one

Status = Literal["solved", "unsolved", "error"]  # a correct kernel; none; the problem could not be worked on
FAST_P = (0.0, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")


class SuiteRow(BaseModel):
    """What the suite concluded about one problem."""

    model_config = ConfigDict(frozen=True)

    problem: str  # its name in the suite (path below the folder it was found in)
    path: str
    problem_hash: str = ""
    status: Status
    verdict: str | None = None  # the harness's outcome for the kernel kept (or the last one judged)
    rule: str | None = None
    reason: str = ""
    runtime_ms: float | None = None
    spread: float | None = None  # the candidate's interquartile range over its median
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    # 95% intervals of the speedups, where the baselines were timed in turn with the kernel (verify/ratio.py)
    speedup_vs_eager_interval: tuple[float, float] | None = None
    speedup_vs_compile_interval: tuple[float, float] | None = None
    machine_busy: str | None = None  # the verdict's line when other work loaded the machine while it timed
    roofline_share: float | None = None  # of the bound (memory or compute) the measured peaks set
    attempts: int = 0
    llm_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    run_id: int | None = None  # the optimize run in the store (none when judging given solutions)
    device: str | None = None  # where it ran (CUDA_VISIBLE_DEVICES, or the Ray node and GPU)
    tries: int = 1  # 2 when its first worker was lost and it ran again
    memory_gb: float | None = None  # its estimated GPU memory, where its slot shared a GPU (suite/memory.py)

    @property
    def correct(self) -> bool:
        return self.status == "solved"

    def speedup(self, baseline: str) -> float | None:
        return self.speedup_vs_eager if baseline == "eager" else self.speedup_vs_compile


class ResultsFile:
    """`results.jsonl`: rows appended as problems finish; a row read back is a problem not to redo."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self) -> dict[str, SuiteRow]:
        """Every complete row so far, by problem (a later row for a problem replaces an earlier one). A line cut
        short by a kill is skipped: that problem is simply done again."""
        found: dict[str, SuiteRow] = {}
        if not self.path.exists():
            return found
        for line in self.path.read_text().splitlines():
            try:
                row = SuiteRow.model_validate_json(line)
            except ValidationError:
                continue
            found[row.problem] = row
        return found

    def append(self, row: SuiteRow) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as results:
            results.write(row.model_dump_json() + "\n")
            results.flush()
            os.fsync(results.fileno())


class Totals(BaseModel):
    wall_s: float
    attempts: int
    llm_tokens: int
    cost_usd: float


class Summary(BaseModel):
    problems: int
    correct: int
    unsolved: int
    errors: int
    fast_p: dict[str, dict[str, float]]  # baseline -> p -> share of all problems
    geomean_vs_eager: float | None
    geomean_vs_compile: float | None
    geomean_note: str = "a problem without a correct kernel (or without a timed baseline) counts 1.0x"
    slower_than_eager: list[str]  # correct kernels the eager baseline beats (beyond noise, where measured so)
    rejections_by_rule: dict[str, int]
    totals: Totals


def summarize(rows: list[SuiteRow]) -> Summary:
    return Summary(
        problems=len(rows), correct=sum(row.correct for row in rows),
        unsolved=sum(row.status == "unsolved" for row in rows), errors=sum(row.status == "error" for row in rows),
        fast_p={baseline: {_p_key(p): fast_p(rows, baseline, p) for p in FAST_P} for baseline in BASELINES},
        geomean_vs_eager=geomean_speedup(rows, "eager"), geomean_vs_compile=geomean_speedup(rows, "compile"),
        slower_than_eager=[row.problem for row in rows
                           if row.correct and row.speedup_vs_eager is not None and row.speedup_vs_eager < 1.0
                           and not includes_one(row.speedup_vs_eager_interval)],
        rejections_by_rule=dict(Counter(row.rule for row in rows if row.rule).most_common()),
        totals=Totals(wall_s=sum(row.wall_s for row in rows), attempts=sum(row.attempts for row in rows),
                      llm_tokens=sum(row.llm_tokens for row in rows), cost_usd=sum(row.cost_usd for row in rows)))


def fast_p(rows: list[SuiteRow], baseline: str, p: float) -> float:
    """The share of `rows` that are correct and faster than `p` times `baseline` (fast_0: correct at all)."""
    if not rows:
        return 0.0
    hits = sum(row.correct and (p == 0.0 or (row.speedup(baseline) or 0.0) > p) for row in rows)
    return hits / len(rows)


def geomean_speedup(rows: list[SuiteRow], baseline: str) -> float | None:
    """The geometric mean speedup over every problem, 1.0x where there is no correct, timed kernel."""
    if not rows:
        return None
    logs = [math.log(row.speedup(baseline) or 1.0) if row.correct else 0.0 for row in rows]
    return math.exp(sum(logs) / len(logs))


def write_summary(summary: Summary, path: Path) -> None:
    path.write_text(json.dumps(summary.model_dump(mode="json"), indent=2) + "\n")


def _p_key(p: float) -> str:
    return f"{p:g}"
