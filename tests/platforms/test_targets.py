"""`kforge targets`: every platform's languages, whether the device is here, and the record of where each
target last passed on hardware."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import kforge.platforms as platforms_package
import kforge.platforms.targets as targets_module
from kforge import cli
from kforge.cli import app
from kforge.platforms import PlatformError, platform_class, platform_names
from kforge.platforms.targets import Catalogued, Verification, catalogue, target_statuses, verifications

NOT_RUN = {("mps", "metal"), ("xpu", "triton"), ("xpu", "sycl"), ("rocm", "hip"), ("rocm", "triton")}


def test_every_platform_language_is_listed_once_with_its_titles() -> None:
    statuses = target_statuses()
    listed = [(s.platform, s.language) for s in statuses]
    assert listed == [(name, lang) for name in platform_names() for lang in platform_class(name).languages]
    metal = next(s for s in statuses if s.platform == "mps")
    assert (metal.device_title, metal.language_title) == ("an Apple GPU (MPS)", "Metal Shading Language")


def test_the_catalogue_agrees_with_the_platform_classes() -> None:
    """data/platforms/targets.toml lists what the classes declare, so that `kforge targets` can read it alone."""
    listed = {entry.name: (entry.title, entry.languages) for entry in catalogue()}
    declared = {name: (cls.title, {language: cls.language_titles.get(language, language)
                                   for language in cls.languages})
                for name in platform_names() for cls in [platform_class(name)]}
    assert listed == declared
    for name, (_, languages) in listed.items():
        assert list(languages) == list(platform_class(name).languages)  # in the same order


def test_a_device_whose_driver_files_are_missing_is_absent_without_asking_torch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_platform(name: str) -> None:
        raise AssertionError(f"platform {name} was imported")

    monkeypatch.setattr(platforms_package, "platform_class", no_platform)
    gone = Catalogued("cuda", "an NVIDIA GPU", {"cuda": "CUDA C++"}, device_files=(str(tmp_path / "nvidiactl"),))
    assert not gone.present()
    assert Catalogued("cpu", "a CPU", {"cpp": "C++"}).present()
    assert not Catalogued("mps", "an Apple GPU", {"metal": "Metal"}, system="no-such-system").present()


@pytest.mark.skipif(any(entry.may_be_here() for entry in catalogue() if entry.name != "cpu"),
                    reason="an accelerator's driver is here: torch is rightly asked")
def test_targets_imports_no_torch_on_a_machine_without_accelerators() -> None:
    script = ("import json, sys\nfrom kforge.cli import app\ntry:\n    app(['targets'], prog_name='kforge')\n"
              "except SystemExit as stop:\n    print(json.dumps([stop.code, 'torch' in sys.modules]))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert json.loads(result.stdout.splitlines()[-1]) == [0, False], result.stderr
    assert "cpu/cpp: present" in result.stdout and "cuda/cuda: absent" in result.stdout


def test_on_an_80_column_terminal_each_line_folds_to_fit_with_its_rest_indented(
        monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(cli, "out", cli._Console(file=screen, force_terminal=True, width=80, color_system=None))
    assert CliRunner().invoke(app, ["targets"]).exit_code == 0
    lines = screen.getvalue().splitlines()
    assert lines and all(len(line) <= 80 for line in lines), lines
    folded = [line for line in lines if line.startswith("    ")]
    assert folded, lines  # cpu/triton's line is 118 characters long
    whole = " ".join(line.strip() for line in lines).replace(" cpu/", "\ncpu/").replace(" cuda/", "\ncuda/")
    assert "verified on x86-64 CPU (Triton interpreter: correctness, not speed) (2026-12-05, docs/builtin.md)" in whole


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
    monkeypatch.setattr(Catalogued, "may_be_here", lambda self: self.name == "xpu")  # its driver's files are here
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
