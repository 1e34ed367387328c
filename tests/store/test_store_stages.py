"""The staged pipeline's records: the stage of each attempt, and one row per stage run."""

from pathlib import Path

from kforge.store import Store
from tests.store.test_store_schema import write_v1_database


def test_stage_rows_chain_kernels_and_a_rerun_position_replaces_its_row(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        start = store.record_attempt(run.id, source="a", language="triton", platform="cuda", made_by="user")
        tried = store.record_attempt(run.id, source="b", language="triton", platform="cuda", made_by="fusion:optimize",
                                     round=1, parent_attempt_id=start.id, stage="fusion")
        assert tried.stage == "fusion" and start.stage is None
        assert store.attempts_of(run.id)[1].stage == "fusion"

        store.record_stage(run.id, position=0, stage="fusion", input_attempt_id=start.id, output_attempt_id=None,
                           status="skipped", detail={"tries": 1})
        store.record_stage(run.id, position=0, stage="fusion", input_attempt_id=start.id,
                           output_attempt_id=tried.id, status="accepted", detail={"tries": 2})
        store.record_stage(run.id, position=1, stage="autotuning", input_attempt_id=tried.id,
                           output_attempt_id=None, status="skipped")
        steps = store.stages_of(run.id)
        assert [(s.position, s.stage, s.status) for s in steps] == [(0, "fusion", "accepted"),
                                                                    (1, "autotuning", "skipped")]
        assert steps[0].output_attempt_id == steps[1].input_attempt_id == tried.id
        assert steps[0].detail == {"tries": 2}


def test_a_version_1_database_gains_the_stage_records(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_v1_database(path)
    with Store(path) as store:
        [attempt] = store.attempts_of(1)
        assert attempt.stage is None
        assert store.stages_of(1) == []
        store.record_stage(1, position=0, stage="fusion", input_attempt_id=attempt.id, output_attempt_id=None,
                           status="skipped")
        assert len(store.stages_of(1)) == 1
