"""The variant search (verify/search.py): many variants tried in one sandboxed worker, compared with the reference's
output here, timed there; what is wrong, broken or hung is dropped and the search goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.problem import load_problem
from kforge.verify.search import SearchSettings, Tried, ranked, search_variants
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options

LEAKY = PROBLEMS / "leaky_scale.py"
QUICK = SearchSettings(warmup_ms=2, rep_ms=10, min_reps=5, max_reps=20)

# Pure-PyTorch variants (the policy is off for them): the search itself is what is tested, not kernels.
_VARIANT = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
{body}
'''
RIGHT = _VARIANT.format(body="        y = x * self.scale\n        return torch.where(y > 0, y, 0.1 * y)")
# The same function, a quarter of a second later every call: the search must rank it behind RIGHT, even on a
# loaded machine (where a small CPU op can take tens of milliseconds).
SLOW = _VARIANT.format(body="        import time\n        time.sleep(0.25)\n"
                            "        return torch.nn.functional.leaky_relu(x * self.scale, 0.1)")
WRONG = _VARIANT.format(body="        return torch.nn.functional.leaky_relu(x * self.scale, 0.2)")
RAISES = _VARIANT.format(body="        raise RuntimeError('no kernel today')")
DIES = _VARIANT.format(body="        import os\n        os._exit(3)")
HANGS = _VARIANT.format(body="        while True:\n            pass")


def _search(sources: list[str], **changes: object) -> list[Tried]:
    options = fast_options(policy=POLICY_OFF, **changes)
    return search_variants(load_problem(LEAKY), sources, options, QUICK)


def test_variants_are_ranked_by_time_and_wrong_or_broken_ones_dropped() -> None:
    tried = _search([SLOW, WRONG, RAISES, DIES, RIGHT])
    assert [one.index for one in tried] == [0, 1, 2, 3, 4]
    slow, wrong, raises, dies, right = tried
    assert wrong.dropped is not None and wrong.dropped.startswith("incorrect")
    assert raises.dropped is not None and "no kernel today" in raises.dropped
    assert dies.dropped is not None and dies.dropped.startswith("crashed")
    # The variant after the one that killed its worker was tried in a fresh worker.
    assert right.usable and slow.usable
    assert [one.index for one in ranked(tried)] == [4, 0]
    assert right.median_ms is not None and slow.median_ms is not None and right.median_ms < slow.median_ms


def test_a_variant_that_hangs_costs_its_timeout_and_the_search_goes_on() -> None:
    hangs, right = _search([HANGS, RIGHT], timeout_s=5.0, build_timeout_s=1.0)
    assert hangs.dropped is not None and hangs.dropped.startswith("timeout")
    assert right.usable


def test_the_budget_stops_the_search_after_the_first_variant() -> None:
    ticks = iter(range(0, 1000, 10))
    options = fast_options(policy=POLICY_OFF)
    tried = search_variants(load_problem(LEAKY), [RIGHT, SLOW, RIGHT], options,
                            SearchSettings(rep_ms=5, min_reps=3, max_reps=5, budget_s=1.0),
                            clock=lambda: float(next(ticks)))
    assert tried[0].usable
    assert [one.dropped for one in tried[1:]] == ["not tried: the search's time budget was spent"] * 2


def test_the_policy_drops_a_variant_before_it_runs() -> None:
    tried = search_variants(load_problem(LEAKY), [RIGHT], fast_options(), QUICK)
    assert tried[0].dropped is not None and tried[0].dropped.startswith("the policy rejects it")


def test_a_compiled_variant_builds_in_the_search_and_is_timed(tmp_path: Path) -> None:
    honest = (CANDIDATES / "leaky_scale" / "honest.py").read_text()
    broken = (CANDIDATES / "leaky_scale" / "compile_error.py").read_text()
    tried = search_variants(load_problem(LEAKY), [broken, honest], fast_options(cache_dir=tmp_path), QUICK)
    assert tried[0].dropped is not None and tried[0].dropped.startswith("compile_error")
    assert tried[1].usable and tried[1].build_s > 0


@pytest.mark.gpu
def test_the_engines_triton_variants_are_searched_on_a_gpu(tmp_path: Path) -> None:
    """The engine's Triton GEMM variants, each compiled and timed in the one worker on CUDA."""
    from kforge.engine.propose import propose

    problem = load_problem(PROBLEMS / "engine" / "linear_gelu.py")
    variants = propose(problem, "triton", limit=4).variants
    options = fast_options(platform="cuda", cache_dir=tmp_path)
    tried = search_variants(problem, [variant.source for variant in variants], options, QUICK)
    assert len(tried) == len(variants) >= 2
    assert all(one.usable for one in tried), [one.dropped for one in tried]
    assert all((one.median_ms or 0.0) > 0 for one in tried)


def test_a_variant_near_its_floor_ends_the_search() -> None:
    """Floors far above any real time: the first variant is 'within reach', so nothing after it is tried."""
    tried = search_variants(load_problem(LEAKY), [RIGHT, SLOW, RIGHT], fast_options(policy=POLICY_OFF), QUICK,
                            floors_ms=[1e3, 1e3, None])
    first, *rest = tried
    assert first.usable and first.floor_share is not None and first.floor_share > 1
    assert all(one.dropped is not None and "of its roofline floor" in one.dropped for one in rest)
    # A floor far below it ends nothing.
    tried = search_variants(load_problem(LEAKY), [RIGHT, RIGHT], fast_options(policy=POLICY_OFF), QUICK,
                            floors_ms=[1e-6, 1e-6])
    assert all(one.usable for one in tried) and all((one.floor_share or 1) < 0.01 for one in tried)
