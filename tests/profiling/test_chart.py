from __future__ import annotations

import io

import pytest

from kforge.profiling.roofline import with_roofline
from kforge.profiling.schema import Peaks, Profile, Workload

image = pytest.importorskip("matplotlib.image")
from kforge.profiling.chart import render_chart  # noqa: E402  (only where matplotlib is present)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _decode(png: bytes) -> tuple[int, int]:
    pixels = image.imread(io.BytesIO(png), format="png")
    return pixels.shape[1], pixels.shape[0]


def test_chart_with_roofline_is_a_readable_png(cpu_profile: Profile, workload: Workload, peaks: Peaks) -> None:
    png = render_chart(with_roofline(cpu_profile, workload, peaks))
    assert png.startswith(PNG_SIGNATURE)
    width, height = _decode(png)
    assert width > 1000 and height > 400  # two panels, large enough for a model to read the labels


def test_chart_without_roofline_has_only_the_bars(cpu_profile: Profile) -> None:
    png = render_chart(cpu_profile)
    width, _ = _decode(png)
    assert 600 < width < 1000


def test_chart_of_a_problem_without_flops(cpu_profile: Profile, peaks: Peaks) -> None:
    copy_only = Workload(flops=0, flops_method="elementwise", min_bytes=10**6, dtype="float32")
    assert render_chart(with_roofline(cpu_profile, copy_only, peaks)).startswith(PNG_SIGNATURE)
