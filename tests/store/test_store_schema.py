"""Opening a database brings it to the current schema; old files migrate, newer ones are refused."""

import sqlite3
from pathlib import Path

import pytest

from kforge.store import SCHEMA_VERSION, Store, StoreError

V1_DUMP = Path(__file__).parent / "data" / "schema_v1.sql"


def write_v1_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_DUMP.read_text())
    conn.close()


def test_a_new_database_gets_the_latest_schema(tmp_path: Path) -> None:
    with Store(tmp_path / "new.db") as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.migrated_from == 0


def test_a_version_1_database_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_v1_database(path)

    with Store(path) as store:
        assert store.migrated_from == 1
        assert store.schema_version == SCHEMA_VERSION

        run = store.get_run(1)
        assert run is not None
        assert (run.command, run.model, run.status, run.finished) == (
            "optimize",
            "openai:gpt-4o",
            "finished",
            None,
        )
        assert run.settings == {"retries": 4}
        [attempt] = store.attempts_of(1)
        assert attempt.source == "class ModelNew: pass" and attempt.number == 1
        best = store.best_attempt(1)
        assert best is not None and best.evaluation.runtime_ms == 0.5
        assert store.costs_of(1).cost_usd == pytest.approx(0.00045)
        assert store.find_cached_llm_response("hash-1") is not None

        # what version 2 added works on the migrated file
        profile = store.record_profile(attempt.id, "torch", {"ops": []}, png=b"\x89PNG")
        assert store.profiles_of(attempt.id) == [profile]
        assert store.finish_run(1, "failed").finished is not None


def test_migrating_twice_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_v1_database(path)
    Store(path).close()
    with Store(path) as store:
        assert store.migrated_from == SCHEMA_VERSION


def test_a_database_from_a_newer_kforge_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this kforge"):
        Store(path)


def test_a_file_that_is_not_a_database_gives_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not sqlite\n" * 100)
    with pytest.raises(StoreError, match="cannot open run database"):
        Store(path)


def test_the_recorded_best_is_the_runs_best_even_when_another_measured_faster(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        ids = []
        for number, runtime in enumerate((1.00, 0.98)):  # the second is 2% faster: within noise
            attempt = store.record_attempt(run.id, source=f"# {number}", language="cpp", platform="cpu",
                                           made_by="builtin")
            store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": runtime})
            ids.append(attempt.id)
        best = store.best_attempt(run.id)
        assert best is not None and best.attempt.id == ids[1]  # nothing recorded: the lowest median
        store.record_best(run.id, ids[0])
        best = store.best_attempt(run.id)
        assert best is not None and best.attempt.id == ids[0] and best.evaluation.runtime_ms == 1.00
        stored = store.get_run(run.id)
        assert stored is not None and stored.best_attempt_id == ids[0]
