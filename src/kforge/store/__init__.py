"""The run store: an embedded SQLite database of runs, attempts, evaluations, LLM calls and profiles.

    with Store(path) as store:                 # path=None: the per-user default (see `default_db_path`)
        run = store.create_run(command="optimize", model="openai:gpt-4o")
        attempt = store.record_attempt(run.id, source=src, language="cuda", platform="cuda", made_by="agent")
        store.record_evaluation(attempt.id, verdict.to_json_dict())
        store.finish_run(run.id)

The store never imports the harness or the LLM clients: verdicts and requests are plain JSON dicts.
"""

from kforge.store.database import Store
from kforge.store.errors import StoreError
from kforge.store.paths import default_db_path
from kforge.store.records import (
    RUN_STATUSES,
    Attempt,
    Evaluation,
    LLMCall,
    Owner,
    Profile,
    Run,
    RunCosts,
    RunStatus,
    ScoredAttempt,
    StageStatus,
    StageStep,
    text_hash,
)
from kforge.store.schema import SCHEMA_VERSION

__all__ = [
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "Attempt",
    "Evaluation",
    "LLMCall",
    "Owner",
    "Profile",
    "Run",
    "RunCosts",
    "RunStatus",
    "ScoredAttempt",
    "StageStatus",
    "StageStep",
    "Store",
    "StoreError",
    "default_db_path",
    "text_hash",
]
