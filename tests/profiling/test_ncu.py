from __future__ import annotations

from pathlib import Path

import pytest

from kforge.profiling import ncu
from kforge.profiling.ncu import NcuError, ncu_command, parse_ncu_csv, profile_from_ncu

DATA = Path(__file__).parent / "data"


def test_raw_page_gives_one_row_per_kernel_name() -> None:
    totals = parse_ncu_csv((DATA / "ncu_raw.csv").read_text())
    assert totals["ampere_sgemm_64x32_sliced1x4_tn"] == (2, pytest.approx(7.328 + 6.912))
    [elementwise] = [name for name in totals if "vectorized_elementwise_kernel" in name]
    assert totals[elementwise] == (2, pytest.approx(2.272 + 1.888))


def test_details_page_reads_the_duration_rows_in_any_unit() -> None:
    totals = parse_ncu_csv((DATA / "ncu_details.csv").read_text())
    assert totals == {"ampere_sgemm_64x32_sliced1x4_tn": (1, pytest.approx(7.33)),
                      "triton_poi_fused_relu_0": (2, pytest.approx(2.272 + 1.888))}


def test_profile_from_ncu_is_per_forward_call() -> None:
    profile = profile_from_ncu((DATA / "ncu_raw.csv").read_text(), platform="cuda", device="NVIDIA A100", calls=2)
    assert profile.source == "ncu"
    assert profile.wall_time_us_per_call is None
    assert profile.launches_per_call == 2
    assert profile.device_time_us_per_call == pytest.approx((7.328 + 6.912 + 2.272 + 1.888) / 2)
    assert profile.rows[0].name == "ampere_sgemm_64x32_sliced1x4_tn"
    assert sum(row.share for row in profile.rows) == pytest.approx(1.0)


def test_output_without_a_table_is_an_error() -> None:
    with pytest.raises(NcuError, match="no ncu CSV"):
        parse_ncu_csv("==PROF== No kernels were profiled.\n")


def test_command_profiles_the_script_inside_the_forward_range() -> None:
    command = ncu_command("probe.py", ["--calls", "3"], python="python3", ncu="/opt/ncu", launch_count=10)
    assert command[:2] == ["/opt/ncu", "--csv"]
    assert "gpu__time_duration.sum" in command
    assert command[command.index("--nvtx-include") + 1] == "kforge_forward/"
    assert command[-4:] == ["python3", "probe.py", "--calls", "3"]
    assert command[command.index("--launch-count") + 1] == "10"


def test_command_without_ncu_installed_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ncu.shutil, "which", lambda _name: None)
    assert ncu.ncu_path() is None
    with pytest.raises(NcuError, match="not on PATH"):
        ncu_command("probe.py")


def test_real_ncu_output_from_an_h200() -> None:
    # ncu_command's output for three forward calls of Linear(256, 256) + ReLU, NVTX columns and all.
    totals = parse_ncu_csv((DATA / "ncu_raw_h200.csv").read_text())
    assert sorted(count for count, _ in totals.values()) == [3, 3, 3]
    [gemm] = [name for name in totals if "sgemm" in name]
    assert totals[gemm][1] == pytest.approx(25.952)
