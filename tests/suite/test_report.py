"""The suite's report plots, drawn on real matplotlib axes from rows and their summary."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kforge.suite.report import rules_chart
from kforge.suite.results import SuiteRow, summarize

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
from matplotlib import pyplot  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402


@pytest.fixture
def axes() -> Iterator[Axes]:
    figure, drawn = pyplot.subplots()
    yield drawn
    pyplot.close(figure)


def test_rejections_by_rule_says_no_rejections_when_nothing_was_rejected(axes: Axes) -> None:
    rows = [SuiteRow(problem="a.py", path="/p/a.py", status="solved", verdict="correct")]
    rules_chart(axes, rows, summarize(rows))
    assert [text.get_text() for text in axes.texts] == ["no rejections"]
    assert not axes.patches and not axes.axison  # no empty bars, no axis running below zero


def test_rejections_by_rule_draws_a_bar_per_rule(axes: Axes) -> None:
    rows = [SuiteRow(problem=f"{name}.py", path=f"/p/{name}.py", status="unsolved", verdict="rejected", rule=rule)
            for name, rule in (("a", "static.io"), ("b", "static.io"), ("c", "dynamic.protocol"))]
    rules_chart(axes, rows, summarize(rows))
    assert sorted(bar.get_width() for bar in axes.patches) == [1, 2] and not axes.texts
    assert axes.get_xlim()[0] == 0
