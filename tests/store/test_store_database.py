"""Round trips through the store, as a pipeline would use it."""

import sqlite3
from pathlib import Path

import pytest

from kforge.store import Store, StoreError, default_db_path, text_hash


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "kforge.db") as store:
        yield store


def verdict(outcome: str, runtime_ms: float | None = None, **extra: object) -> dict[str, object]:
    return {"verdict": outcome, "reason": "", "runtime_ms": runtime_ms, **extra}


def test_a_run_round_trips(store: Store) -> None:
    run = store.create_run(
        command="optimize",
        problem_path="problems/relu.py",
        problem_hash=text_hash("problem source"),
        platform="cpu",
        language="cpp",
        model="openai:gpt-4o",
        settings={"timeout_s": 60.0, "temperature": 0.2},
        budgets={"max_calls": 5},
    )
    again = store.get_run(run.id)
    assert again == run
    assert run.status == "running" and run.finished is None
    assert run.settings == {"timeout_s": 60.0, "temperature": 0.2}
    assert run.budgets == {"max_calls": 5}

    ended = store.finish_run(run.id, "interrupted")
    assert ended.status == "interrupted" and ended.finished is not None
    assert store.resume_run(run.id).status == "running"


def test_runs_are_listed_newest_first_and_can_be_filtered(store: Store) -> None:
    ids = [store.create_run(command="optimize").id for _ in range(3)]
    store.finish_run(ids[0])
    assert [r.id for r in store.list_runs()] == ids[::-1]
    assert [r.id for r in store.list_runs(limit=2)] == ids[:0:-1]
    assert [r.id for r in store.list_runs(status="finished")] == [ids[0]]


def test_unknown_runs_and_bad_statuses_are_clear_errors(store: Store) -> None:
    assert store.get_run(99) is None
    with pytest.raises(StoreError, match="no run 99"):
        store.finish_run(99)
    run = store.create_run(command="optimize")
    with pytest.raises(ValueError, match="finished, failed or interrupted"):
        store.finish_run(run.id, "running")


def test_foreign_keys_are_enforced(store: Store) -> None:
    with pytest.raises(StoreError, match="does the run or attempt id exist"):
        store.record_attempt(42, source="x", language="cpp", platform="cpu", made_by="agent")


def test_attempts_keep_their_lineage_and_source_hash(store: Store) -> None:
    run = store.create_run(command="optimize")
    first = store.record_attempt(run.id, source="v1", language="triton", platform="cuda", made_by="generator")
    second = store.record_attempt(
        run.id,
        source="v2",
        language="triton",
        platform="cuda",
        made_by="fuse",
        round=1,
        parent_attempt_id=first.id,
    )
    assert store.attempts_of(run.id) == [first, second]
    assert second.parent_attempt_id == first.id and second.round == 1 and second.made_by == "fuse"
    assert first.source_hash == text_hash("v1")
    assert store.find_attempt(run.id, text_hash("v2")) == second
    assert store.find_attempt(run.id, text_hash("never made")) is None


def test_the_verdict_is_kept_whole_and_its_numbers_queryable(store: Store) -> None:
    run = store.create_run(command="optimize")
    attempt = store.record_attempt(run.id, source="s", language="cpp", platform="cpu", made_by="agent")
    full = verdict("correct", 1.25, speedup_vs_eager=3.0, speedup_vs_compile=1.5, timing={"median_ms": 1.25})
    evaluation = store.record_evaluation(attempt.id, full)
    assert evaluation.verdict == full
    assert (evaluation.outcome, evaluation.runtime_ms, evaluation.speedup_vs_eager) == ("correct", 1.25, 3.0)
    assert evaluation.correct
    assert store.evaluation_of(attempt.id) == evaluation
    with pytest.raises(ValueError, match="'verdict' key"):
        store.record_evaluation(attempt.id, {"runtime_ms": 1.0})


def test_best_attempt_is_the_fastest_correct_one(store: Store) -> None:
    run = store.create_run(command="optimize")
    assert store.best_attempt(run.id) is None
    outcomes = [("incorrect", 0.1), ("correct", 2.0), ("correct", 0.9), ("timeout", None), ("correct", 0.9)]
    attempts = []
    for i, (outcome, runtime) in enumerate(outcomes):
        attempt = store.record_attempt(run.id, source=f"s{i}", language="cpp", platform="cpu", made_by="agent")
        store.record_evaluation(attempt.id, verdict(outcome, runtime))
        attempts.append(attempt)
    best = store.best_attempt(run.id)
    assert best is not None
    assert best.attempt == attempts[2]  # the earlier of two equally fast ones; never the faster wrong one
    assert best.evaluation.runtime_ms == 0.9


def test_resume_helpers_tell_what_is_already_done(store: Store) -> None:
    run = store.create_run(command="optimize")
    done = store.record_attempt(run.id, source="a", language="cpp", platform="cpu", made_by="agent")
    pending = store.record_attempt(run.id, source="b", language="cpp", platform="cpu", made_by="agent")
    store.record_evaluation(done.id, verdict("correct", 1.0))
    other_run = store.create_run(command="optimize")
    store.record_attempt(other_run.id, source="c", language="cpp", platform="cpu", made_by="agent")

    assert store.evaluated_attempt_ids(run.id) == {done.id}
    assert store.unevaluated_attempts(run.id) == [pending]
    assert store.evaluation_of(pending.id) is None


def record_call(store: Store, run_id: int, request_hash: str, text: str, **kw: object):
    fields: dict[str, object] = {
        "model": "gpt-4o",
        "provider": "openai",
        "request": {"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "response_text": text,
        "request_hash": request_hash,
        "latency_s": 0.5,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost_usd": 0.001,
    }
    fields.update(kw)
    return store.record_llm_call(run_id, **fields)  # type: ignore[arg-type]


def test_llm_calls_round_trip_and_add_up(store: Store) -> None:
    run = store.create_run(command="optimize")
    call = record_call(store, run.id, "h1", "answer")
    assert store.llm_calls_of(run.id) == [call]
    assert call.request["messages"] == [{"role": "user", "content": "hi"}]
    record_call(store, run.id, "h2", "other", cost_usd=None)  # a model without a price
    record_call(store, run.id, "h1", "answer", cache_hit=True, cost_usd=0.0)

    costs = store.costs_of(run.id)
    assert (costs.calls, costs.cached_calls, costs.unpriced_calls) == (2, 1, 1)
    assert (costs.prompt_tokens, costs.completion_tokens, costs.tokens) == (20, 10, 30)
    assert costs.cost_usd == pytest.approx(0.001)


def test_the_cache_finds_the_nth_real_answer_to_a_request(store: Store) -> None:
    first_run = store.create_run(command="optimize")
    record_call(store, first_run.id, "same", "first sample")
    record_call(store, first_run.id, "same", "replayed", cache_hit=True)
    record_call(store, first_run.id, "same", "second sample")
    later_run = store.create_run(command="optimize")

    assert store.find_cached_llm_response("same").response_text == "first sample"  # type: ignore[union-attr]
    second = store.find_cached_llm_response("same", occurrence=1)
    assert second is not None and second.response_text == "second sample"  # hits are never answers
    assert store.find_cached_llm_response("same", occurrence=2) is None
    assert store.find_cached_llm_response("unknown") is None
    assert store.llm_calls_of(later_run.id) == []


def test_settings_that_look_like_credentials_are_never_written(store: Store) -> None:
    run = store.create_run(
        command="optimize",
        settings={
            "model": "openai:x",
            "api_key": "sk-1",
            "nested": {"OPENAI_API_KEY": "sk-2", "max_tokens": 9},
        },
    )
    assert run.settings == {"model": "openai:x", "nested": {"max_tokens": 9}}


def test_profiles_keep_json_and_png(store: Store) -> None:
    run = store.create_run(command="optimize")
    attempt = store.record_attempt(run.id, source="s", language="cpp", platform="cpu", made_by="agent")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    chart = store.record_profile(attempt.id, "roofline", {"points": [[1, 2]]}, png=png)
    table = store.record_profile(attempt.id, "torch", {"ops": ["mm"]})
    assert store.profiles_of(attempt.id) == [chart, table]
    assert chart.png == png and table.png is None


def test_the_database_is_wal_with_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "kforge.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_writes_are_visible_to_another_connection_at_once(store: Store) -> None:
    run = store.create_run(command="optimize")
    store.record_attempt(run.id, source="s", language="cpp", platform="cpu", made_by="agent")
    reader = sqlite3.connect(store.path)
    assert reader.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 1  # committed, not pending
    reader.close()


def test_the_default_location_follows_kforge_home_then_xdg() -> None:
    assert default_db_path({"KFORGE_HOME": "/k"}) == Path("/k/kforge.db")
    assert default_db_path({"XDG_DATA_HOME": "/x"}) == Path("/x/kforge/kforge.db")
    assert default_db_path({}) == Path.home() / ".local/share/kforge/kforge.db"


def test_store_without_a_path_uses_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KFORGE_HOME", str(tmp_path / "home"))
    with Store() as store:
        assert store.path == tmp_path / "home" / "kforge.db"
        assert store.path.exists()
