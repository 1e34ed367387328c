from __future__ import annotations

import pydantic
import pytest

from kforge.profiling.roofline import with_roofline
from kforge.profiling.schema import KernelRow, Peaks, Profile, Workload, kernel_rows


def test_kernel_rows_are_sorted_with_shares_of_their_sum() -> None:
    rows = kernel_rows({"small": (4, 10.0), "big": (1, 30.0)})
    assert [row.name for row in rows] == ["big", "small"]
    assert [row.share for row in rows] == [0.75, 0.25]
    assert rows[1].mean_us == 2.5


def test_profile_round_trips_through_json(cpu_profile: Profile, workload: Workload, peaks: Peaks) -> None:
    profile = with_roofline(cpu_profile, workload, peaks)
    again = Profile.from_json(profile.to_json())
    assert again == profile
    assert again.roofline is not None and again.roofline.bound == profile.roofline.bound  # type: ignore[union-attr]


def test_profile_is_frozen_and_strict(cpu_profile: Profile) -> None:
    with pytest.raises(pydantic.ValidationError):
        cpu_profile.calls = 9  # type: ignore[misc]
    data = cpu_profile.model_dump(mode="json")
    with pytest.raises(pydantic.ValidationError):
        Profile.model_validate({**data, "unexpected": 1})


def test_share_outside_zero_one_is_rejected() -> None:
    with pytest.raises(pydantic.ValidationError):
        KernelRow(name="k", calls=1, total_us=1.0, mean_us=1.0, share=1.5)
