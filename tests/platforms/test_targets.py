"""`kforge targets`: every platform's languages, whether the device is here, and the record of where each
target last passed on hardware."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

import kforge.platforms.targets as targets_module
from kforge.cli import app
from kforge.platforms import PlatformError, platform_class, platform_names
from kforge.platforms.targets import Verification, target_statuses, verifications

NOT_RUN = {("mps", "metal"), ("xpu", "triton"), ("xpu", "sycl"), ("rocm", "hip"), ("rocm", "triton")}


def test_every_platform_language_is_listed_once_with_its_titles() -> None:
    statuses = target_statuses()
    listed = [(s.platform, s.language) for s in statuses]
    assert listed == [(name, lang) for name in platform_names() for lang in platform_class(name).languages]
    metal = next(s for s in statuses if s.platform == "mps")
    assert (metal.device_title, metal.language_title) == ("an Apple GPU (MPS)", "Metal Shading Language")


def test_the_record_names_cuda_on_the_h200_and_none_of_the_new_targets() -> None:
    record = verifications()
    assert record[("cuda", "triton")].device == "H200" and record[("cuda", "cuda")].record == "docs/cuda.md"
    assert NOT_RUN.isdisjoint(record)


@pytest.mark.skipif(torch.cuda.is_available(), reason="reads the lines of a machine without accelerators")
def test_lines_say_present_or_absent_and_where_verified() -> None:
    lines = {(s.platform, s.language): s.line for s in target_statuses()}
    assert lines[("cuda", "triton")].startswith("cuda/triton: absent, verified on H200 (")
    assert lines[("mps", "metal")] == "mps/metal: absent, not yet run on hardware"
    assert lines[("cpu", "cpp")].startswith("cpu/cpp: present, verified on ")


def test_a_device_that_appears_is_reported_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform_class("xpu"), "is_available", classmethod(lambda cls: True))
    xpu = [s for s in target_statuses() if s.platform == "xpu"]
    assert xpu and all(s.present for s in xpu)
    assert xpu[0].line == "xpu/triton: present, not yet run on hardware"


def test_a_record_naming_an_unknown_target_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeFile:
        def read_text(self) -> str:
            return '[[verified]]\nplatform = "mps"\nlanguage = "cuda"\ndevice = "M3"\ndate = "x"\nrecord = "y"\n'

    class FakeRoot:
        def joinpath(self, path: str) -> FakeFile:
            return FakeFile()

    verifications.cache_clear()
    monkeypatch.setattr(targets_module.resources, "files", lambda package: FakeRoot())
    try:
        with pytest.raises(PlatformError, match="entry 1 names mps/cuda"):
            verifications()
    finally:
        verifications.cache_clear()


def test_the_command_prints_lines_or_json() -> None:
    runner = CliRunner()
    plain = runner.invoke(app, ["targets"])
    assert plain.exit_code == 0
    lines = {line.split(":")[0]: line for line in plain.output.splitlines()}
    assert lines["mps/metal"].endswith(", not yet run on hardware")
    assert lines["rocm/hip"].endswith(", not yet run on hardware")
    assert lines["cuda/cuda"].split(": ")[1].split(",")[0] in ("present", "absent")
    rows = [json.loads(line) for line in runner.invoke(app, ["targets", "--json"]).output.splitlines()]
    assert {(row["platform"], row["language"]) for row in rows} >= NOT_RUN
    cuda = next(row for row in rows if (row["platform"], row["language"]) == ("cuda", "cuda"))
    assert cuda["verified"] == {"device": "H200", "date": "2026-12-02", "record": "docs/cuda.md"}
    assert isinstance(Verification(**cuda["verified"]), Verification)
