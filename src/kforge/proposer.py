"""What a pipeline asks of a proposer: candidates for a request.

The generation agent (`agents/generator.py`: a `GenerationRequest` -> a `Proposal`), the stage writer
(`agents/stage_writer.py`: a `StageRequest` -> a `Proposal`) and the builtin engine (`engine/propose.py`: an
`EngineRequest` -> `EngineCandidates`) each write candidate text for what they are asked; none judges it. A
pipeline that needs nothing else of them depends on this protocol rather than on their classes.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

RequestT_contra = TypeVar("RequestT_contra", contravariant=True)
CandidatesT_co = TypeVar("CandidatesT_co", covariant=True)


class Proposer(Protocol[RequestT_contra, CandidatesT_co]):
    """Writes candidates (source text, not yet judged) for a request."""

    def propose(self, request: RequestT_contra, /) -> CandidatesT_co: ...
