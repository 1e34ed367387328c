"""Every target kforge knows (a platform and one of its languages): whether its device is on this machine,
and where it last passed its tests on real hardware (the record in `data/platforms/verified.toml`).

What `kforge targets` prints. A target the record does not name has not run on its hardware yet.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

from kforge.platforms import PlatformError, platform_class, platform_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


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
    """Every registered platform's languages, in platform order, each with its device and record."""
    record = verifications()
    statuses = []
    for name in platform_names():
        cls = platform_class(name)
        present = cls.is_available()
        for language in cls.languages:
            statuses.append(TargetStatus(name, language, cls.title, cls.language_titles.get(language, language),
                                         present, record.get((name, language))))
    return statuses


@cache
def verifications() -> dict[tuple[str, str], Verification]:
    """The record of verified targets; PlatformError naming the entry when it names an unknown target."""
    text = resources.files("kforge").joinpath("data/platforms/verified.toml").read_text()
    found: dict[tuple[str, str], Verification] = {}
    for index, entry in enumerate(tomllib.loads(text).get("verified", []), start=1):
        key = (str(entry.get("platform")), str(entry.get("language")))
        if key[0] not in platform_names() or key[1] not in platform_class(key[0]).languages:
            raise PlatformError(f"data/platforms/verified.toml: entry {index} names {key[0]}/{key[1]}, "
                                "which is no platform's language")
        found[key] = Verification(str(entry["device"]), str(entry["date"]), str(entry["record"]))
    return found
