"""Every target kforge knows (a platform and one of its languages): whether its device is on this machine,
and where it last passed its tests on real hardware (the record in `data/platforms/verified.toml`).

What `kforge targets` prints. A target the record does not name has not run on its hardware yet. The platforms and
their languages are read from `data/platforms/targets.toml`, and a device is looked for in torch only where its
driver's files exist: on a machine without accelerators the command imports neither a platform nor torch.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

from kforge.platforms.errors import PlatformError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Catalogued:
    """A platform as `data/platforms/targets.toml` lists it."""

    name: str
    title: str
    #: each language in order, with its title
    languages: dict[str, str]
    device_files: tuple[str, ...] = ()
    system: str | None = None

    def may_be_here(self) -> bool:
        """False when the device is certainly not on this machine, told without torch: another system than its
        own, or Linux without any of its driver's files."""
        if self.system is not None and sys.platform != self.system:
            return False
        if self.device_files and sys.platform.startswith("linux"):
            return any(os.path.exists(path) for path in self.device_files)
        return True

    def present(self) -> bool:
        """Whether the device is here: always for a platform without a device to look for (the CPU), else torch's
        answer where `may_be_here`."""
        if not self.device_files and self.system is None:
            return True
        if not self.may_be_here():
            return False
        from kforge.platforms import platform_class

        return platform_class(self.name).is_available()


@cache
def catalogue() -> tuple[Catalogued, ...]:
    """The platforms of `data/platforms/targets.toml`, in its order."""
    text = resources.files("kforge").joinpath("data/platforms/targets.toml").read_text()
    return tuple(Catalogued(str(entry["name"]), str(entry["title"]), dict(entry["languages"]),
                            tuple(entry.get("device_files", ())), entry.get("system"))
                 for entry in tomllib.loads(text)["platform"])


@dataclass(frozen=True)
class Verification:
    """One run that passed a target's tests on its hardware."""

    device: str
    date: str
    #: the document where the run is written up
    record: str


@dataclass(frozen=True)
class TargetStatus:
    platform: str
    language: str
    #: the device and the language in words ("an Apple GPU (MPS)", "Metal Shading Language")
    device_title: str
    language_title: str
    present: bool
    verified: Verification | None

    @property
    def line(self) -> str:
        """'cuda/triton: present, verified on H200 (2026-12-02, docs/cuda.md)'."""
        here = "present" if self.present else "absent"
        if self.verified is None:
            return f"{self.platform}/{self.language}: {here}, not yet run on hardware"
        found = self.verified
        return f"{self.platform}/{self.language}: {here}, verified on {found.device} ({found.date}, {found.record})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_statuses() -> list[TargetStatus]:
    """Every platform's languages, in platform order, each with its device and record."""
    record = verifications()
    statuses = []
    for platform in sorted(catalogue(), key=lambda entry: entry.name):
        present = platform.present()
        for language, title in platform.languages.items():
            statuses.append(TargetStatus(platform.name, language, platform.title, title, present,
                                         record.get((platform.name, language))))
    return statuses


@cache
def verifications() -> dict[tuple[str, str], Verification]:
    """The record of verified targets; PlatformError naming the entry when it names an unknown target."""
    text = resources.files("kforge").joinpath("data/platforms/verified.toml").read_text()
    known = {(platform.name, language) for platform in catalogue() for language in platform.languages}
    found: dict[tuple[str, str], Verification] = {}
    for index, entry in enumerate(tomllib.loads(text).get("verified", []), start=1):
        key = (str(entry.get("platform")), str(entry.get("language")))
        if key not in known:
            raise PlatformError(f"data/platforms/verified.toml: entry {index} names {key[0]}/{key[1]}, "
                                "which is no platform's language")
        found[key] = Verification(str(entry["device"]), str(entry["date"]), str(entry["record"]))
    return found
