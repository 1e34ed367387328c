"""Where a suite's tasks run: one slot per visible device of the platform, each task shown only its device through
the platform's own variable, or CPU slots sharing the cores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kforge.platforms import platform_class
from kforge.suite.runner import slots_for


@pytest.mark.parametrize(("platform", "variable"), [("cuda", "CUDA_VISIBLE_DEVICES"), ("rocm", "HIP_VISIBLE_DEVICES"),
                                                    ("xpu", "ZE_AFFINITY_MASK")])
def test_each_gpu_platform_pins_a_task_to_one_of_the_devices_its_variable_lists(
        platform: str, variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert platform_class(platform).visible_devices_variable == variable
    monkeypatch.setenv(variable, "2,5")
    slots = slots_for(platform, None)
    assert [(slot.name, slot.environment) for slot in slots] == [("gpu 2", {variable: "2"}), ("gpu 5", {variable: "5"})]
    assert [slot.environment for slot in slots_for(platform, 1)] == [{variable: "2"}]


def test_a_cpu_suite_or_one_without_a_device_shares_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"):
        monkeypatch.delenv(variable, raising=False)
    cores = os.cpu_count() or 1
    slots = slots_for("cpu", 2)
    assert [slot.name for slot in slots] == ["cpu 0", "cpu 1"]
    assert {slot.environment["OMP_NUM_THREADS"] for slot in slots} == {str(max(1, cores // 2))}
    if not any(platform_class(name).is_available() for name in ("cuda", "rocm", "xpu", "mps")):
        assert [slot.name for slot in slots_for("auto", None)] == ["cpu 0"]
        assert slots_for("cuda", None) == slots_for("cpu", None)  # no device counted: the CPU's one slot


def test_a_tasks_device_pin_reaches_its_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kforge.verify.sandbox import scrubbed_environment

    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"):
        monkeypatch.setenv(variable, "3")
        assert scrubbed_environment({}, tmp_path)[variable] == "3"


def test_more_workers_than_gpus_deals_slots_over_the_gpus_and_each_gpus_slots_share_its_lock(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kforge.verify.device_lock import ENV

    monkeypatch.setenv("KFORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    slots = slots_for("cuda", 5)
    assert [slot.name for slot in slots] == ["gpu 2", "gpu 5", "gpu 2 slot 2", "gpu 5 slot 2", "gpu 2 slot 3"]
    assert [slot.environment["CUDA_VISIBLE_DEVICES"] for slot in slots] == ["2", "5", "2", "5", "2"]
    locks = [slot.environment[ENV] for slot in slots]
    assert locks[0] == locks[2] == locks[4] != locks[1] == locks[3]
    assert all(Path(lock).is_relative_to(tmp_path) for lock in locks)
    assert all(ENV not in slot.environment for slot in slots_for("cuda", None))  # a GPU each: nothing shared
    cpu = slots_for("cpu", 2)
    assert cpu[0].environment[ENV] == cpu[1].environment[ENV]  # CPU slots time one at a time too
    assert ENV not in slots_for("cpu", 1)[0].environment
