"""Attempts are numbered within their run (1, 2, 3...): the number people see, whatever the row ids are."""

import sqlite3
import threading
from pathlib import Path

import pytest

from kforge.store import SCHEMA_VERSION, Store, StoreError
from kforge.store.schema import MIGRATIONS

NUMBERED_IN = 8  # the schema version that added attempts.number


def record(store: Store, run_id: int, source: str) -> int:
    """Record one attempt; its number."""
    return store.record_attempt(run_id, source=source, language="cpp", platform="cpu", made_by="test").number


def test_each_run_numbers_its_attempts_from_one(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        first = store.create_run(command="optimize").id
        second = store.create_run(command="optimize").id
        numbers = [(run_id, record(store, run_id, f"# {i}"))
                   for i, run_id in enumerate([first, first, second, first, second])]
        assert numbers == [(first, 1), (first, 2), (second, 1), (first, 3), (second, 2)]
        later = store.attempts_of(second)
        assert [a.number for a in later] == [1, 2]
        assert [a.id for a in later] == [3, 5]  # the row ids go on across runs; the numbers do not


def test_a_resumed_run_numbers_on_from_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run_id = store.create_run(command="optimize").id
        assert [record(store, run_id, s) for s in ("a", "b")] == [1, 2]
        store.finish_run(run_id, "interrupted")
        other = store.create_run(command="optimize").id
        assert record(store, other, "a") == 1
    with Store(path) as store:  # a later process
        store.resume_run(run_id)
        assert record(store, run_id, "c") == 3
        found = store.find_attempt(run_id, store.attempts_of(run_id)[0].source_hash)
        assert found is not None and found.number == 1  # an attempt found again keeps its number


def test_attempts_recorded_at_once_from_several_connections_never_share_a_number(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run_id = store.create_run(command="suite").id
    writers, each = 4, 25
    failures: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(writer: int) -> None:
        try:
            with Store(path) as mine:  # a connection of its own, as another process would have
                start.wait()
                for i in range(each):
                    record(mine, run_id, f"# {writer}.{i}")
        except BaseException as exc:  # reported below, with the others
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with Store(path) as store:
        attempts = store.attempts_of(run_id)
    assert sorted(a.number for a in attempts) == list(range(1, writers * each + 1))
    assert [a.number for a in attempts] == list(range(1, writers * each + 1))  # in the order they were recorded


def test_a_number_cannot_be_given_twice_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run_id = store.create_run(command="optimize").id
        record(store, run_id, "a")
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute("INSERT INTO attempts (run_id, number, made_by, source, language, platform, source_hash,"
                     " created) VALUES (?, 1, 'x', 'b', 'cpp', 'cpu', 'h', '2026-01-01T00:00:00+00:00')", (run_id,))
    conn.close()


def write_database_before_numbers(path: Path) -> None:
    """A database as the schema before attempt numbers left it: migrations 1 to 7, two runs whose attempts were
    made in turn (row ids 1, 3, 4 in run 1; 2, 5 in run 2)."""
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:NUMBERED_IN - 1]:
        conn.executescript(script)
    conn.execute(f"PRAGMA user_version = {NUMBERED_IN - 1}")
    conn.executemany("INSERT INTO runs (id, created, command, status) VALUES (?, ?, 'optimize', 'finished')",
                     [(1, "2026-01-01T00:00:00+00:00"), (2, "2026-01-01T00:00:01+00:00")])
    conn.executemany("INSERT INTO attempts (id, run_id, made_by, source, language, platform, source_hash, created)"
                     " VALUES (?, ?, 'test', ?, 'cpp', 'cpu', ?, '2026-01-01T00:00:02+00:00')",
                     [(row_id, run_id, f"# {row_id}", f"h{row_id}")
                      for row_id, run_id in [(1, 1), (2, 2), (3, 1), (4, 1), (5, 2)]])
    conn.execute("UPDATE runs SET best_attempt_id = 4 WHERE id = 1")
    conn.commit()
    conn.close()


def test_opening_an_older_database_numbers_its_attempts_in_the_order_they_were_made(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_database_before_numbers(path)
    with Store(path) as store:
        assert store.migrated_from == NUMBERED_IN - 1 and store.schema_version == SCHEMA_VERSION
        assert [(a.id, a.number) for a in store.attempts_of(1)] == [(1, 1), (3, 2), (4, 3)]
        assert [(a.id, a.number) for a in store.attempts_of(2)] == [(2, 1), (5, 2)]
        store.record_evaluation(4, {"verdict": "correct", "runtime_ms": 1.0})
        best = store.best_attempt(1)
        assert best is not None and (best.attempt.id, best.attempt.number) == (4, 3)
        assert record(store, 2, "# new") == 3  # recording goes on after the migrated numbers
    with sqlite3.connect(path) as conn:
        indexes = {row[1]: row[2] for row in conn.execute("PRAGMA index_list(attempts)")}
    assert indexes.get("attempts_number_by_run") == 1  # unique


def test_a_migration_that_fails_leaves_the_older_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_database_before_numbers(path)
    with sqlite3.connect(path) as conn:  # the numbering cannot be unique if the index's name is taken
        conn.execute("CREATE INDEX attempts_number_by_run ON attempts(made_by)")
    with pytest.raises(StoreError, match="attempts_number_by_run"):
        Store(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == NUMBERED_IN - 1
    assert "number" not in [row[1] for row in conn.execute("PRAGMA table_info(attempts)")]
    conn.close()
