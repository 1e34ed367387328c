"""What the agents need to know about a (platform, language) target: names and the single-shot example."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

_LANGUAGE_NAMES = {"cpp": "C++ (OpenMP)", "cuda": "CUDA C++", "triton": "Triton"}
_PLATFORM_NAMES = {"cpu": "a multi-core CPU", "cuda": "an NVIDIA GPU"}


class MissingExample(LookupError):
    """No single-shot example exists for a target."""


@dataclass(frozen=True)
class Target:
    platform: str
    language: str

    @property
    def language_name(self) -> str:
        return _LANGUAGE_NAMES.get(self.language, self.language)

    @property
    def platform_name(self) -> str:
        return _PLATFORM_NAMES.get(self.platform, self.platform)

    def example(self) -> tuple[str, str]:
        """The (reference, implementation) pair shown to the generation agent for this target."""
        folder = resources.files("kforge").joinpath(f"data/examples/{self.platform}/{self.language}")
        problem, solution = folder.joinpath("problem.py"), folder.joinpath("solution.py")
        if not (problem.is_file() and solution.is_file()):
            raise MissingExample(f"no single-shot example for {self.language} on {self.platform}: add "
                                 f"kforge/data/examples/{self.platform}/{self.language}/problem.py and solution.py")
        return problem.read_text(), solution.read_text()
