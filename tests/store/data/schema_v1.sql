-- A database as kforge's first schema (user_version 1) wrote it, with a little data in every table.
-- Kept verbatim: the migration test must start from what old releases really left on disk.
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

INSERT INTO runs VALUES (1, '2025-01-02T03:04:05.000+00:00', 'optimize', 'problems/matmul.py', 'abc123', 'cuda',
    'triton', 'openai:gpt-4o', '{"retries": 4}', '{"max_calls": 10}', 'finished');
INSERT INTO attempts VALUES (1, 1, NULL, 'generator', 0, 'class ModelNew: pass', 'triton', 'cuda',
    '5d2bd1a8', '2025-01-02T03:05:00.000+00:00');
INSERT INTO evaluations VALUES (1, 1, '{"verdict": "correct", "runtime_ms": 0.5}', 'correct', 0.5, 2.0, 1.1,
    '2025-01-02T03:06:00.000+00:00');
INSERT INTO llm_calls VALUES (1, 1, 1, 'gpt-4o', 'openai', '{"model": "openai:gpt-4o"}', 'class ModelNew: pass',
    100, 20, 0.00045, 1.5, 0, 'hash-1', '2025-01-02T03:04:30.000+00:00');
PRAGMA user_version = 1;
