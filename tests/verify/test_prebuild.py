"""Building candidates ahead of their evaluation, in workers that see no GPU."""

from __future__ import annotations

from pathlib import Path

from kforge.platforms.cpu import CpuPlatform
from kforge.verify.prebuild import Prebuilder, build_environment, prebuild
from kforge.verify.worker_layout import CACHE_VARIABLES
from tests.conftest import CANDIDATES


def test_build_workers_see_no_gpu_share_the_cores_and_get_no_shared_cache() -> None:
    environment = build_environment(CpuPlatform(), jobs_per_build=3)
    assert environment["CUDA_VISIBLE_DEVICES"] == ""
    assert environment["MAX_JOBS"] == "3"
    # A build worker imports a candidate: its caches lie in its own directory (sandbox.Worker), none is shared.
    assert not any(variable in environment for variable in CACHE_VARIABLES)


def test_a_candidate_the_policy_rejects_is_never_run(tmp_path: Path) -> None:
    result = prebuild(CANDIDATES / "leaky_scale" / "exit_process.py", {}, tmp_path)
    assert not result.ok and "policy" in result.message
    assert not any(tmp_path.iterdir()), "no worker may have started"


def test_candidates_are_imported_in_workers_and_failures_reported(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text('raise RuntimeError("the module fails at import")\n')
    with Prebuilder(CpuPlatform(), tmp_path / "cache", parallel=2) as builder:
        futures = [builder.submit(CANDIDATES / "tiny_outputs" / "zeros.py"), builder.submit(broken)]
        imported, failed = (future.result() for future in futures)
    assert imported.ok and imported.build_s == 0.0, imported.message  # pure Python: nothing to compile
    assert not failed.ok and "fails at import" in failed.message
