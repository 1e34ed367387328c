"""Every bundled example's honest solution passes the harness under the default (strict) policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, EXAMPLES, PROBLEMS, fast_options

CPP_SOLUTIONS = sorted(EXAMPLES.glob("*/solution_cpp.py"))


@pytest.mark.slow
@pytest.mark.parametrize("solution", CPP_SOLUTIONS, ids=[path.parent.name for path in CPP_SOLUTIONS])
def test_example_cpp_solution_is_correct(solution: Path) -> None:
    verdict = evaluate(solution.parent / "problem.py", solution, fast_options(platform="cpu", baselines=("eager",)))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.speedup_vs_eager is not None and verdict.speedup_vs_eager > 0


def test_there_are_at_least_four_examples() -> None:
    assert len(CPP_SOLUTIONS) >= 4


@pytest.mark.slow
def test_compile_baseline_is_timed_in_rounds_taken_in_turn_with_the_candidate() -> None:
    example = CPP_SOLUTIONS[0]
    said: list[str] = []
    verdict = evaluate(example.parent / "problem.py", example, fast_options(baselines=("eager", "compile")),
                       progress=said.append)
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.compile_ms is not None and verdict.compile_ms > 0, verdict.warnings
    assert verdict.speedup_vs_compile is not None
    rounds = [message.split("timing ", 1)[1].split(",")[0].split(" (the first")[0]
              for message in said if message.startswith("timing ")]
    assert rounds == ["the reference (eager)", "the reference under torch.compile", "the candidate"] * 3
    timing, eager = verdict.timing, verdict.eager_timing
    assert timing is not None and eager is not None and min(timing.repeats, eager.repeats) >= 3 * 2


@pytest.mark.slow
def test_a_reference_worker_that_dies_costs_the_baselines_not_the_candidates_verdict() -> None:
    # The reference's worker exits while torch.compile traces (in its first round, or as eager runs after it):
    # the candidate is still timed in every round, eager keeps what it had, and the warnings say what was lost.
    said: list[str] = []
    verdict = evaluate(PROBLEMS / "compile_kills_worker.py", CANDIDATES / "leaky_scale" / "honest.py",
                       fast_options(baselines=("eager", "compile")), progress=said.append)
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.eager_ms is not None and verdict.speedup_vs_eager is not None
    lost = [w for w in verdict.warnings if "baseline unavailable" in w or "rounds only" in w]
    assert lost and "status 3" in " ".join(lost), verdict.warnings
    assert sum("timing the candidate" in line for line in said) == 3
