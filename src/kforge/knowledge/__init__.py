"""Hardware knowledge for the staged pipeline: constraints, optimization patterns and worked examples per
target, retrieved by stage and problem features within a token budget, plus static checks of candidates.

Entries are data (`kforge/data/knowledge/<platform>/<language>/*.yaml`); this package reads, ranks and
renders them, and runs the validators the constraints name. It imports nothing above floor 1.
"""

from kforge.knowledge.base import KnowledgeBase
from kforge.knowledge.entries import FEATURES, Constraint, Feature, Pattern, WorkedExample
from kforge.knowledge.features import problem_features
from kforge.knowledge.limits import DeviceLimits
from kforge.knowledge.loader import KnowledgeFileError, load_knowledge, targets
from kforge.knowledge.retrieval import Retrieval, estimate_tokens
from kforge.knowledge.stages import STAGE_TITLES, STAGES
from kforge.knowledge.violations import Violation

__all__ = [
    "FEATURES",
    "STAGES",
    "STAGE_TITLES",
    "Constraint",
    "DeviceLimits",
    "Feature",
    "KnowledgeBase",
    "KnowledgeFileError",
    "Pattern",
    "Retrieval",
    "Violation",
    "WorkedExample",
    "estimate_tokens",
    "load_knowledge",
    "problem_features",
    "targets",
]
