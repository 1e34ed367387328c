"""The worker's watch over the functions the measurement relies on, CUDA's among them."""

from __future__ import annotations

import pytest
import torch

from kforge.verify.tamper import WATCHED, TamperWatch


def test_patched_cuda_event_timer_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    watch = TamperWatch()
    assert watch.changed() == []
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda start, end: 0.001)
    assert watch.changed() == ["torch.cuda.Event.elapsed_time"]


def test_the_cuda_platforms_captured_primitives_are_watched() -> None:
    assert {"_synchronize", "_record", "_elapsed_time", "_clock"} <= set(WATCHED["kforge.platforms.cuda"])
    assert "memory_snapshot" in WATCHED["torch.cuda"]


def test_every_watched_name_exists() -> None:
    # A watched name that a rename left behind would be watched as "absent" and never be seen changing.
    import importlib
    import inspect

    for owner, names in WATCHED.items():
        try:
            holder = importlib.import_module(owner)
        except ImportError:
            module, _, cls = owner.rpartition(".")
            holder = getattr(importlib.import_module(module), cls)
        for name in names:
            assert inspect.getattr_static(holder, name, None) is not None, f"{owner}.{name}"


def test_a_changed_numerics_setting_is_seen_and_named() -> None:
    from kforge.verify.tamper import SettingsWatch

    before = torch.get_float32_matmul_precision()
    watch = SettingsWatch()
    assert watch.changed() == []
    try:
        torch.set_float32_matmul_precision("medium" if before != "medium" else "highest")
        assert any(change.startswith("float32 matmul precision") for change in watch.changed())
    finally:
        torch.set_float32_matmul_precision(before)
