"""Turning SQLite rows into the store's records."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from kforge.store.owner import ProcessLookup, shown_status
from kforge.store.records import Attempt, Evaluation, LLMCall, Owner, Profile, Run, StageStep


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def run_from(r: sqlite3.Row, lookup: ProcessLookup) -> Run:
    """The run as it stands: one recorded `running` whose owner `lookup` cannot find is `interrupted`, with why."""
    owner = Owner(r["owner_pid"], r["owner_started"]) if r["owner_pid"] is not None else None
    status = shown_status(r["status"], owner, lookup)
    reason = r["stop_reason"]
    if status != r["status"] and owner is not None:
        reason = f"process {owner.pid} is gone"
    return Run(
        id=r["id"],
        created=_time(r["created"]),
        command=r["command"],
        problem_path=r["problem_path"],
        problem_hash=r["problem_hash"],
        platform=r["platform"],
        language=r["language"],
        model=r["model"],
        settings=json.loads(r["settings_json"]),
        budgets=json.loads(r["budgets_json"]),
        status=status,
        finished=_time(r["finished"]) if r["finished"] else None,
        baselines=json.loads(r["baselines_json"]) if r["baselines_json"] else None,
        best_attempt_id=r["best_attempt_id"],
        confirmation=json.loads(r["confirmation_json"]) if r["confirmation_json"] else None,
        stop_reason=reason,
        owner=owner,
    )


def attempt_from(r: sqlite3.Row) -> Attempt:
    return Attempt(
        id=r["id"],
        run_id=r["run_id"],
        number=r["number"],
        parent_attempt_id=r["parent_attempt_id"],
        made_by=r["made_by"],
        round=r["round"],
        source=r["source"],
        language=r["language"],
        platform=r["platform"],
        source_hash=r["source_hash"],
        created=_time(r["created"]),
        stage=r["stage"],
    )


def evaluation_from(r: sqlite3.Row) -> Evaluation:
    return Evaluation(
        id=r["id"],
        attempt_id=r["attempt_id"],
        verdict=json.loads(r["verdict_json"]),
        outcome=r["outcome"],
        runtime_ms=r["runtime_ms"],
        speedup_vs_eager=r["speedup_vs_eager"],
        speedup_vs_compile=r["speedup_vs_compile"],
        created=_time(r["created"]),
    )


def llm_call_from(r: sqlite3.Row) -> LLMCall:
    return LLMCall(
        id=r["id"],
        run_id=r["run_id"],
        attempt_id=r["attempt_id"],
        model=r["model"],
        provider=r["provider"],
        request=json.loads(r["request_json"]),
        response_text=r["response_text"],
        prompt_tokens=r["prompt_tokens"],
        completion_tokens=r["completion_tokens"],
        cost_usd=r["cost_usd"],
        latency_s=r["latency_s"],
        cache_hit=bool(r["cache_hit"]),
        request_hash=r["request_hash"],
        created=_time(r["created"]),
    )


def profile_from(r: sqlite3.Row) -> Profile:
    return Profile(
        id=r["id"],
        attempt_id=r["attempt_id"],
        kind=r["kind"],
        data=json.loads(r["data_json"]),
        png=r["png"],
        created=_time(r["created"]),
    )


def stage_step_from(r: sqlite3.Row) -> StageStep:
    return StageStep(
        id=r["id"],
        run_id=r["run_id"],
        position=r["position"],
        stage=r["stage"],
        input_attempt_id=r["input_attempt_id"],
        output_attempt_id=r["output_attempt_id"],
        status=r["status"],
        detail=json.loads(r["detail_json"]),
        created=_time(r["created"]),
    )
