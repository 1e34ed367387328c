"""What the agents need to know about a (platform, language) target: names and the single-shot example."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from kforge.platforms import Platform, PlatformError, platform_class


def _platform_class(name: str) -> type[Platform] | None:
    try:
        return platform_class(name)
    except PlatformError:
        return None


class MissingExample(LookupError):
    """No single-shot example exists for a target."""


@dataclass(frozen=True)
class Target:
    platform: str
    language: str

    @property
    def language_name(self) -> str:
        """The language in words, as its platform names it ("CUDA C++"); the bare name for an unknown one."""
        platform = _platform_class(self.platform)
        return platform.language_titles.get(self.language, self.language) if platform else self.language

    @property
    def platform_name(self) -> str:
        """The device in words, as its platform names it ("an NVIDIA GPU"); the bare name for an unknown one."""
        platform = _platform_class(self.platform)
        return platform.title if platform else self.platform

    def example(self) -> tuple[str, str]:
        """The (reference, implementation) pair shown to the generation agent for this target."""
        folder = resources.files("kforge").joinpath(f"data/examples/{self.platform}/{self.language}")
        problem, solution = folder.joinpath("problem.py"), folder.joinpath("solution.py")
        if not (problem.is_file() and solution.is_file()):
            raise MissingExample(f"no single-shot example for {self.language} on {self.platform}: add "
                                 f"kforge/data/examples/{self.platform}/{self.language}/problem.py and solution.py")
        return problem.read_text(), solution.read_text()
