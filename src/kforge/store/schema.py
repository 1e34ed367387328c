"""The database schema as an ordered list of migrations, applied on open.

`PRAGMA user_version` holds how many migrations a database has had. A migration is never edited once
released: a change to the schema is a new entry at the end of `MIGRATIONS`.
"""

from __future__ import annotations

import sqlite3

from kforge.store.errors import StoreError

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, attempts, evaluations, LLM calls.
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        created TEXT NOT NULL,
        command TEXT NOT NULL,
        problem_path TEXT,
        problem_hash TEXT,
        platform TEXT,
        language TEXT,
        model TEXT,
        settings_json TEXT NOT NULL DEFAULT '{}',
        budgets_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'running'
            CHECK (status IN ('running', 'finished', 'failed', 'interrupted'))
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        parent_attempt_id INTEGER REFERENCES attempts(id) ON DELETE SET NULL,
        made_by TEXT NOT NULL,
        round INTEGER NOT NULL DEFAULT 0,
        source TEXT NOT NULL,
        language TEXT NOT NULL,
        platform TEXT NOT NULL,
        source_hash TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE INDEX attempts_by_run ON attempts(run_id, id);
    CREATE TABLE evaluations (
        id INTEGER PRIMARY KEY,
        attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        verdict_json TEXT NOT NULL,
        outcome TEXT NOT NULL,
        runtime_ms REAL,
        speedup_vs_eager REAL,
        speedup_vs_compile REAL,
        created TEXT NOT NULL
    );
    CREATE INDEX evaluations_by_attempt ON evaluations(attempt_id, id);
    CREATE TABLE llm_calls (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        attempt_id INTEGER REFERENCES attempts(id) ON DELETE SET NULL,
        model TEXT NOT NULL,
        provider TEXT NOT NULL,
        request_json TEXT NOT NULL,
        response_text TEXT NOT NULL,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        cost_usd REAL,
        latency_s REAL NOT NULL,
        cache_hit INTEGER NOT NULL DEFAULT 0,
        request_hash TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE INDEX llm_calls_by_run ON llm_calls(run_id, id);
    """,
    # 2: profiles; the time a run ended; a cache lookup that does not scan every call.
    """
    CREATE TABLE profiles (
        id INTEGER PRIMARY KEY,
        attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        data_json TEXT NOT NULL,
        png BLOB,
        created TEXT NOT NULL
    );
    CREATE INDEX profiles_by_attempt ON profiles(attempt_id, id);
    ALTER TABLE runs ADD COLUMN finished TEXT;
    CREATE INDEX llm_calls_by_hash ON llm_calls(request_hash, cache_hit, id);
    """,
    # 3: the staged pipeline: the stage an attempt was made for, and one row per stage run (the trial tree).
    """
    ALTER TABLE attempts ADD COLUMN stage TEXT;
    CREATE TABLE stages (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        stage TEXT NOT NULL,
        input_attempt_id INTEGER REFERENCES attempts(id) ON DELETE SET NULL,
        output_attempt_id INTEGER REFERENCES attempts(id) ON DELETE SET NULL,
        status TEXT NOT NULL CHECK (status IN ('accepted', 'skipped')),
        detail_json TEXT NOT NULL DEFAULT '{}',
        created TEXT NOT NULL,
        UNIQUE (run_id, position)
    );
    """,
    # 4: the reference's timings (eager, torch.compile), measured once per run and shared by its verdicts.
    """
    ALTER TABLE runs ADD COLUMN baselines_json TEXT;
    """,
    # 5: the attempt the run's pipeline chose as its best (its acceptance rule, not merely the lowest median).
    """
    ALTER TABLE runs ADD COLUMN best_attempt_id INTEGER REFERENCES attempts(id) ON DELETE SET NULL;
    """,
    # 6: the best judged again when the run ended, the reference timed in turn beside it (pipelines/confirm.py).
    """
    ALTER TABLE runs ADD COLUMN confirmation_json TEXT;
    """,
    # 7: why a run ended ("no API key", "budget reached: ...", "finished 3 optimization rounds").
    """
    ALTER TABLE runs ADD COLUMN stop_reason TEXT;
    """,
    # 8: an attempt's number within its run (1, 2, 3...), what users see; the row id stays the internal key.
    # Attempts recorded before it are numbered in the order they were made (their id order within the run).
    """
    ALTER TABLE attempts ADD COLUMN number INTEGER;
    UPDATE attempts SET number = (
        SELECT COUNT(*) FROM attempts AS earlier
        WHERE earlier.run_id = attempts.run_id AND earlier.id <= attempts.id
    );
    CREATE UNIQUE INDEX attempts_number_by_run ON attempts(run_id, number);
    """,
    # 9: the process that owns a run (store/owner.py), so a run whose process was killed reads as interrupted.
    # Runs recorded before it have no owner and keep showing the status they recorded.
    """
    ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
    ALTER TABLE runs ADD COLUMN owner_started INTEGER;
    """,
    # 10: what the engine's search found (verify/search.py), one row per set of variants it tried, so a resumed run
    # judges the variants the first ranking chose instead of searching again (another ranking, under other load,
    # could pick another variant and judge work twice).
    """
    CREATE TABLE searches (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        results_json TEXT NOT NULL,
        created TEXT NOT NULL,
        UNIQUE (run_id, key)
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database up to `SCHEMA_VERSION`; return the version it had before.

    The connection must be in autocommit mode (`isolation_level=None`): each migration runs in its own
    `BEGIN IMMEDIATE` transaction, so a crash mid-migration leaves the previous version intact and two
    processes opening the same new file do not both migrate it.
    """
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {found} is newer than this kforge understands ({SCHEMA_VERSION}); "
            "upgrade kforge or use another --db"
        )
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema_version(conn)  # again, under the write lock
            if version >= SCHEMA_VERSION:
                conn.execute("COMMIT")
                return found
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _statements(script: str) -> list[str]:
    # executescript() would commit the open transaction first, so statements run one by one instead.
    # The migrations hold no semicolons inside strings, which keeps this split exact.
    return [s.strip() for s in script.split(";") if s.strip()]
