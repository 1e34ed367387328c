"""The run database: one SQLite file recording runs, attempts, evaluations, LLM calls and profiles.

Every write is its own transaction and is committed before the method returns, so a crash (even SIGKILL)
loses at most the row being written, and nothing is held open across an LLM call or an evaluation.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kforge.store.errors import StoreError
from kforge.store.owner import ProcessLookup, current_owner, process_start
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
from kforge.store.rows import attempt_from, evaluation_from, llm_call_from, profile_from, run_from, stage_step_from
from kforge.store.schema import migrate, schema_version

# A run's settings are stored for later inspection; a key that looks like a credential is dropped so a
# careless caller cannot put an API key into a file that gets shared and exported.
_SECRET_KEY = re.compile(r"(api_?key|secret|password|passwd|authorization|auth_token|access_token)$", re.I)

# Long enough to outlast another process's single-row write; short enough to report a stuck lock.
_BUSY_TIMEOUT_S = 30.0


class Store:
    """An open run database. Safe to share between threads; several processes may open the same file.

    `process_lookup` finds a run's owner (store/owner.py): a run whose owner it cannot find reads as interrupted.
    """

    def __init__(self, path: str | Path | None = None, *, process_lookup: ProcessLookup = process_start) -> None:
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._lookup = process_lookup
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: autocommit, so each statement commits on its own.
            self._conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"cannot open run database {self.path}: {err}") from None
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            # With WAL, NORMAL survives a killed process (only a power cut can lose the last commits).
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self.migrated_from = migrate(self._conn)
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise StoreError(f"cannot open run database {self.path}: {err}") from None
        except StoreError:
            self._conn.close()
            raise

    @property
    def schema_version(self) -> int:
        with self._lock:
            return schema_version(self._conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # runs

    def create_run(
        self,
        *,
        command: str,
        problem_path: str | None = None,
        problem_hash: str | None = None,
        platform: str | None = None,
        language: str | None = None,
        model: str | None = None,
        settings: Mapping[str, Any] | None = None,
        budgets: Mapping[str, Any] | None = None,
        owner: Owner | None = None,
    ) -> Run:
        """Record a new run, `running`, owned by `owner` (default: this process)."""
        owner = owner or current_owner()
        row_id = self._insert(
            "INSERT INTO runs (created, command, problem_path, problem_hash, platform, language, model,"
            " settings_json, budgets_json, status, owner_pid, owner_started)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            (
                _now(),
                command,
                problem_path,
                problem_hash,
                platform,
                language,
                model,
                _json(_without_secrets(settings or {})),
                _json(_without_secrets(budgets or {})),
                owner.pid if owner else None,
                owner.started if owner else None,
            ),
        )
        return self._get_run(row_id)

    def finish_run(self, run_id: int, status: RunStatus = "finished", reason: str | None = None) -> Run:
        """Mark a run as ended: `finished`, `failed` or `interrupted`, with why (one line)."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"a run ends as finished, failed or interrupted, not {status!r}")
        line = (reason or "").strip().splitlines()[0][:300] if reason and reason.strip() else None
        self._update_run(run_id, "UPDATE runs SET status = ?, finished = ?, stop_reason = ? WHERE id = ?",
                         (status, _now(), line))
        return self._get_run(run_id)

    def delete_run(self, run_id: int) -> None:
        """Remove a run and everything recorded with it (attempts, evaluations, model calls, profiles, stages)."""
        self._get_run(run_id)  # StoreError when there is no such run
        self._update_run(run_id, "DELETE FROM runs WHERE id = ?", ())

    def resume_run(self, run_id: int, owner: Owner | None = None) -> Run:
        """Mark an ended (or crashed) run as running again, owned by `owner` (default: this process), keeping
        everything it recorded. StoreError while another process still runs it: two writers would both go on."""
        owner = owner or current_owner()
        run = self._get_run(run_id)
        if run.status == "running" and run.owner is not None and run.owner != owner:
            raise StoreError(f"run {run_id} is still running in process {run.owner.pid}; "
                             "let it end or stop it, then resume")
        self._update_run(run_id, "UPDATE runs SET status = 'running', finished = NULL, stop_reason = NULL, "
                                 "owner_pid = ?, owner_started = ? WHERE id = ?",
                         (owner.pid if owner else None, owner.started if owner else None))
        return self._get_run(run_id)

    def record_baselines(self, run_id: int, baselines: Mapping[str, Any]) -> Run:
        """Keep the reference's timings for the run (`Run.baselines`), so a resumed run compares with them too."""
        self._update_run(run_id, "UPDATE runs SET baselines_json = ? WHERE id = ?", (_json(baselines),))
        return self._get_run(run_id)

    def get_run(self, run_id: int) -> Run | None:
        row = self._one("SELECT * FROM runs WHERE id = ?", (run_id,))
        return run_from(row, self._lookup) if row else None

    def list_runs(self, *, limit: int | None = None, status: RunStatus | None = None) -> list[Run]:
        """Runs, newest first; `status` picks by the status as it stands (a run whose owner is gone is
        interrupted, not running)."""
        sql, args = "SELECT * FROM runs", list[Any]()
        if status is not None:
            # A run recorded `running` may stand as interrupted, so both are read and each judged as it stands.
            recorded = ["running", "interrupted"] if status == "interrupted" else [status]
            sql += f" WHERE status IN ({', '.join('?' * len(recorded))})"
            args += recorded
        sql += " ORDER BY id DESC"
        if limit is not None and status is None:  # with a status, the limit counts the runs as they stand
            sql += " LIMIT ?"
            args.append(limit)
        runs = [run_from(r, self._lookup) for r in self._all(sql, tuple(args))]
        matching = [run for run in runs if status is None or run.status == status]
        return matching if limit is None else matching[:limit]

    # attempts and evaluations

    def record_attempt(
        self,
        run_id: int,
        *,
        source: str,
        language: str,
        platform: str,
        made_by: str,
        round: int = 0,
        parent_attempt_id: int | None = None,
        stage: str | None = None,
    ) -> Attempt:
        """Record a candidate as soon as it exists, before it is evaluated; it gets the run's next number.

        The number is computed by the INSERT itself: one statement is one transaction, and SQLite takes the
        write lock before the statement reads, so threads and processes recording into the same run at once
        never get the same number (the unique index on (run_id, number) would refuse it if they did).
        """
        row_id = self._insert(
            "INSERT INTO attempts (run_id, number, parent_attempt_id, made_by, round, source, language, platform,"
            " source_hash, created, stage)"
            " VALUES (?, (SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE run_id = ?),"
            " ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                run_id,
                parent_attempt_id,
                made_by,
                round,
                source,
                language,
                platform,
                text_hash(source),
                _now(),
                stage,
            ),
        )
        return attempt_from(self._row("attempts", row_id))

    def attempts_of(self, run_id: int) -> list[Attempt]:
        """A run's attempts in the order they were made."""
        return [attempt_from(r) for r in self._all("SELECT * FROM attempts WHERE run_id = ? ORDER BY id", (run_id,))]

    def find_attempt(self, run_id: int, source_hash: str) -> Attempt | None:
        """The run's first attempt with this source, so a resumed run can reuse it instead of redoing it."""
        row = self._one(
            "SELECT * FROM attempts WHERE run_id = ? AND source_hash = ? ORDER BY id LIMIT 1",
            (run_id, source_hash),
        )
        return attempt_from(row) if row else None

    def record_evaluation(self, attempt_id: int, verdict: Mapping[str, Any]) -> Evaluation:
        """Store a verdict as the harness produced it (its JSON dict).

        The store reads only the keys `verdict` (the outcome), `runtime_ms`, `speedup_vs_eager` and
        `speedup_vs_compile` into columns for queries; the whole dict is kept as it is.
        """
        if "verdict" not in verdict:
            raise ValueError("a verdict dict needs its 'verdict' key (the outcome)")
        row_id = self._insert(
            "INSERT INTO evaluations (attempt_id, verdict_json, outcome, runtime_ms, speedup_vs_eager,"
            " speedup_vs_compile, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                attempt_id,
                _json(verdict),
                str(verdict["verdict"]),
                verdict.get("runtime_ms"),
                verdict.get("speedup_vs_eager"),
                verdict.get("speedup_vs_compile"),
                _now(),
            ),
        )
        return evaluation_from(self._row("evaluations", row_id))

    def evaluation_of(self, attempt_id: int) -> Evaluation | None:
        """The latest evaluation of an attempt, or None if it was never evaluated."""
        row = self._one("SELECT * FROM evaluations WHERE attempt_id = ? ORDER BY id DESC LIMIT 1", (attempt_id,))
        return evaluation_from(row) if row else None

    def evaluated_attempt_ids(self, run_id: int) -> set[int]:
        """Ids of the run's attempts that already have an evaluation: a resumed run skips these."""
        rows = self._all(
            "SELECT DISTINCT e.attempt_id FROM evaluations e JOIN attempts a ON a.id = e.attempt_id WHERE a.run_id = ?",
            (run_id,),
        )
        return {r[0] for r in rows}

    def unevaluated_attempts(self, run_id: int) -> list[Attempt]:
        """The run's attempts recorded but never evaluated (say, the run died mid-evaluation)."""
        rows = self._all(
            "SELECT * FROM attempts a WHERE a.run_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.attempt_id = a.id) ORDER BY a.id",
            (run_id,),
        )
        return [attempt_from(r) for r in rows]

    def record_best(self, run_id: int, attempt_id: int) -> None:
        """Name the attempt the run's pipeline chose as its best, so every report of the run names the same one."""
        self._update_run(run_id, "UPDATE runs SET best_attempt_id = ? WHERE id = ?", (attempt_id,))

    def record_confirmation(self, run_id: int, attempt_id: int, verdict: Mapping[str, Any]) -> None:
        """Keep the verdict of the run's best judged again at the run's end (`Run.confirmation`)."""
        self._update_run(run_id, "UPDATE runs SET confirmation_json = ? WHERE id = ?",
                         (_json({"attempt_id": attempt_id, "verdict": dict(verdict)}),))

    def best_attempt(self, run_id: int) -> ScoredAttempt | None:
        """The run's best: the attempt its pipeline chose (`record_best`: faster beyond noise, not merely the
        lowest median) when it is recorded and correct; else the correct attempt with the lowest runtime, the
        earliest of equals. A run whose correct attempts were never timed (Triton in the CPU interpreter) has the
        earliest of them, with `runtime_ms` None: the pipelines keep that one too, since an untimed candidate is
        never shown faster."""
        run = self.get_run(run_id)
        chosen = run.best_attempt_id if run is not None else None
        if chosen is not None:
            row = self._one("SELECT * FROM evaluations WHERE attempt_id = ? AND outcome = 'correct'", (chosen,))
            if row is not None:
                evaluation = evaluation_from(row)
                return ScoredAttempt(attempt=attempt_from(self._row("attempts", chosen)), evaluation=evaluation)
        row = self._one(
            "SELECT e.* FROM evaluations e JOIN attempts a ON a.id = e.attempt_id"
            " WHERE a.run_id = ? AND e.outcome = 'correct'"
            " ORDER BY e.runtime_ms IS NULL, e.runtime_ms, a.id LIMIT 1",
            (run_id,),
        )
        if row is None:
            return None
        evaluation = evaluation_from(row)
        attempt = attempt_from(self._row("attempts", evaluation.attempt_id))
        return ScoredAttempt(attempt=attempt, evaluation=evaluation)

    # stages of the staged pipeline

    def record_stage(
        self,
        run_id: int,
        *,
        position: int,
        stage: str,
        input_attempt_id: int | None,
        output_attempt_id: int | None,
        status: StageStatus,
        detail: Mapping[str, Any] | None = None,
    ) -> StageStep:
        """Record how the stage at `position` ended; a resumed run that reaches it again replaces the row."""
        row_id = self._insert(
            "INSERT OR REPLACE INTO stages (run_id, position, stage, input_attempt_id, output_attempt_id, status,"
            " detail_json, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, position, stage, input_attempt_id, output_attempt_id, status, _json(detail or {}), _now()),
        )
        return stage_step_from(self._row("stages", row_id))

    def stages_of(self, run_id: int) -> list[StageStep]:
        """A staged run's stages in the order they ran."""
        rows = self._all("SELECT * FROM stages WHERE run_id = ? ORDER BY position", (run_id,))
        return [stage_step_from(r) for r in rows]

    # the engine's searches

    def record_search(self, run_id: int, key: str, results: list[dict[str, Any]]) -> None:
        """Keep what a search found for the variants named by `key` (one dict per variant, JSON-serializable)."""
        self._insert("INSERT OR REPLACE INTO searches (run_id, key, results_json, created) VALUES (?, ?, ?, ?)",
                     (run_id, key, _json({"tried": results}), _now()))

    def find_search(self, run_id: int, key: str) -> list[dict[str, Any]] | None:
        """What `record_search` kept for `key` in this run, or None."""
        row = self._one("SELECT results_json FROM searches WHERE run_id = ? AND key = ?", (run_id, key))
        return None if row is None else list(json.loads(row["results_json"])["tried"])

    # LLM calls

    def record_llm_call(
        self,
        run_id: int,
        *,
        model: str,
        provider: str,
        request: Mapping[str, Any],
        response_text: str,
        request_hash: str,
        latency_s: float,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = None,
        cache_hit: bool = False,
        attempt_id: int | None = None,
    ) -> LLMCall:
        """Record one answered call.

        `request` is what was asked (model, messages, parameters): never headers, never a key.
        """
        row_id = self._insert(
            "INSERT INTO llm_calls (run_id, attempt_id, model, provider, request_json, response_text,"
            " prompt_tokens, completion_tokens, cost_usd, latency_s, cache_hit, request_hash, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                attempt_id,
                model,
                provider,
                _json(_without_secrets(request)),
                response_text,
                prompt_tokens,
                completion_tokens,
                cost_usd,
                latency_s,
                int(cache_hit),
                request_hash,
                _now(),
            ),
        )
        return llm_call_from(self._row("llm_calls", row_id))

    def find_cached_llm_response(self, request_hash: str, *, occurrence: int = 0) -> LLMCall | None:
        """The answer to an identical earlier request, from any run, or None.

        `occurrence` picks among several real answers to the same request, oldest first: the n-th time a
        run asks the same thing it gets the n-th answer, so sampling the same prompt twice still gives two
        samples, and a resumed run replays them in order.
        """
        row = self._one(
            "SELECT * FROM llm_calls WHERE request_hash = ? AND cache_hit = 0 ORDER BY id LIMIT 1 OFFSET ?",
            (request_hash, occurrence),
        )
        return llm_call_from(row) if row else None

    def llm_calls_of(self, run_id: int) -> list[LLMCall]:
        return [llm_call_from(r) for r in self._all("SELECT * FROM llm_calls WHERE run_id = ? ORDER BY id", (run_id,))]

    def costs_of(self, run_id: int) -> RunCosts:
        [row] = self._all(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
            " COALESCE(SUM(cost_usd), 0.0), COALESCE(SUM(cost_usd IS NULL), 0)"
            " FROM llm_calls WHERE run_id = ? AND cache_hit = 0",
            (run_id,),
        )
        [cached] = self._all("SELECT COUNT(*) FROM llm_calls WHERE run_id = ? AND cache_hit = 1", (run_id,))
        return RunCosts(
            calls=row[0],
            cached_calls=cached[0],
            prompt_tokens=row[1],
            completion_tokens=row[2],
            cost_usd=float(row[3]),
            unpriced_calls=row[4],
        )

    # profiles

    def record_profile(self, attempt_id: int, kind: str, data: Mapping[str, Any], png: bytes | None = None) -> Profile:
        row_id = self._insert(
            "INSERT INTO profiles (attempt_id, kind, data_json, png, created) VALUES (?, ?, ?, ?, ?)",
            (attempt_id, kind, _json(data), png, _now()),
        )
        return profile_from(self._row("profiles", row_id))

    def profiles_of(self, attempt_id: int) -> list[Profile]:
        rows = self._all("SELECT * FROM profiles WHERE attempt_id = ? ORDER BY id", (attempt_id,))
        return [profile_from(r) for r in rows]

    # plumbing

    def _insert(self, sql: str, args: tuple[Any, ...]) -> int:
        try:
            with self._lock:
                row_id = self._conn.execute(sql, args).lastrowid
        except sqlite3.IntegrityError as err:
            raise StoreError(f"cannot record in {self.path}: {err} (does the run or attempt id exist?)") from None
        assert row_id is not None
        return row_id

    def _update_run(self, run_id: int, sql: str, args: tuple[Any, ...]) -> None:
        with self._lock:
            changed = self._conn.execute(sql, (*args, run_id)).rowcount
        if changed == 0:
            raise StoreError(f"no run {run_id} in {self.path}")

    def _get_run(self, run_id: int) -> Run:
        run = self.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id} in {self.path}")
        return run

    def _row(self, table: str, row_id: int) -> sqlite3.Row:
        row = self._one(f"SELECT * FROM {table} WHERE id = ?", (row_id,))
        if row is None:
            raise StoreError(f"no row {row_id} in {table} of {self.path}")
        return row

    def _one(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
        with self._lock:
            cursor = self._conn.execute(sql, args)
            cursor.row_factory = sqlite3.Row
            return cursor.fetchone()

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
        with self._lock:
            cursor = self._conn.execute(sql, args)
            cursor.row_factory = sqlite3.Row
            return cursor.fetchall()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, sort_keys=True)


def _without_secrets(data: Mapping[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(key, str) and _SECRET_KEY.search(key):
            continue
        clean[key] = _without_secrets(value) if isinstance(value, Mapping) else value
    return clean
