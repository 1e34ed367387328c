"""Builds and caches by trust (issue 38), through the real harness: a candidate's worker can write, and read, no
shared cache; the harness keeps what an honest candidate built, keyed by its whole source, and gives it back only
while every file matches the hash it recorded; the reference's compiler caches are its own. One C++ build for the
module (the honest candidate), and one more where a stored file is changed on disk and the evaluation rebuilds."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from kforge.export import bundle
from kforge.export.bundle import export_solution
from kforge.platforms.cpu import CpuPlatform
from kforge.verify.artifact_store import ArtifactStore, artifact_key
from kforge.verify.evaluate import EvalOptions, _context, _Evaluation, evaluate
from kforge.verify.prebuild import PrebuildResult, build_environment, prebuild
from kforge.verify.worker_layout import reference_caches
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS
from tests.export.test_prebuilt import _import
from tests.verify.test_kernel_sandbox import enforced, render

LEAKY = PROBLEMS / "leaky_scale.py"
HONEST = CANDIDATES / "leaky_scale" / "honest.py"


def options(cache: Path, **changes: object) -> EvalOptions:
    return EvalOptions(**{"platform": "cpu", "trials": 1, "measure": False, "baselines": (), "cache_dir": cache,
                          **changes})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Stored:
    """The honest candidate's entry in the store: the cache, the library's path in a worker and its object."""

    cache: Path
    library: str  # builds/<folder>/<name>.so
    sha256: str

    @property
    def store(self) -> ArtifactStore:
        return ArtifactStore.under(self.cache)

    @property
    def entry(self) -> Path:
        return self.store._entry_path(artifact_key(HONEST.read_text()))

    @property
    def object(self) -> Path:
        return self.store._object_path(self.sha256)


def only_library(entry: Path) -> tuple[str, str]:
    files = json.loads(entry.read_text())["files"]
    [(library, record)] = [(path, record) for path, record in files.items() if path.endswith(".so")]
    return library, record["sha256"]


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """The honest C++ candidate evaluated once in a cache of the module's own: built, and kept by the harness."""
    cache = tmp_path_factory.mktemp("cache")
    verdict = evaluate(LEAKY, HONEST, options(cache))
    assert verdict.verdict == "correct", verdict.reason
    stored = Stored(cache, *only_library(ArtifactStore.under(cache)._entry_path(artifact_key(HONEST.read_text()))))
    assert hashlib.sha256(stored.object.read_bytes()).hexdigest() == stored.sha256
    return stored


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_candidate_worker_may_write_a_shared_cache_and_only_the_references_write_its_own(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    evaluation = _Evaluation(_context(LEAKY, HONEST, options(cache), print, None, check_runs=False))
    with evaluation.spawn_worker() as candidate, evaluation.spawn_worker(reference=True) as reference:
        candidate_writes = json.loads(candidate.path("confinement.json").read_text())["write"]
        reference_writes = json.loads(reference.path("confinement.json").read_text())["write"]
        environment = dict(line.split("=", 1) for line in
                           Path(f"/proc/{candidate.process.pid}/environ").read_text().split("\0") if "=" in line)
        own = str(candidate.directory.resolve())
    assert all(path == "/proc/self" or path.startswith(own) for path in candidate_writes), candidate_writes
    for variable in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR"):
        assert environment[variable].startswith(str(candidate.directory)), variable
    for folder in reference_caches(cache).values():
        assert str(Path(folder).resolve()) in reference_writes
    assert not any(path.startswith(str(ArtifactStore.under(cache).root.resolve())) for path in reference_writes)


@pytest.mark.slow
@enforced
def test_a_candidate_cannot_poison_the_store_or_the_references_caches(honest: Stored, tmp_path: Path) -> None:
    reference = Path(reference_caches(honest.cache)["TORCHINDUCTOR_CACHE_DIR"]).parent
    planted = {reference / "inductor" / "planted.py": "x = 1\n", reference / "triton" / "planted.json": "{}\n"}
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    folder, library = honest.library.split("/")[1:]
    attacker = render(tmp_path, "poison_build_store", OBJECT=honest.object, ENTRY=honest.entry, REFERENCE=reference,
                      CACHE=honest.cache, FOLDER=folder, LIBRARY=library)
    entry_before = honest.entry.read_text()

    verdict = evaluate(LEAKY, attacker, options(honest.cache, policy=POLICY_OFF))
    assert verdict.verdict == "runtime_error"
    reason = str(verdict.reason)
    for what in ("append to the honest library in the store", "replace the honest manifest",
                 "read the honest manifest", "append code to the reference's Inductor cache",
                 "plant a file in the reference's Triton cache", "write the old shared build folder"):
        assert f"{what}: refused (errno 13)" in reason, reason
    assert "plant a library in its own build folder of the honest name: done" in reason

    assert sha256(honest.object) == honest.sha256 and honest.entry.read_text() == entry_before
    assert all(path.read_text() == text for path, text in planted.items())
    # Nothing it wrote is left in the cache but what the harness took from its own directory.
    left = {path.relative_to(honest.cache) for path in honest.cache.rglob("*") if path.is_file()}
    assert {path for path in left if path.parts[0] != "artifacts"} == {path.relative_to(honest.cache)
                                                                       for path in planted}
    assert not (honest.cache / "builds").exists()
    # What it left in its own directory was kept, under its own source only.
    stored, _ = only_library(honest.store._entry_path(artifact_key(attacker.read_text())))
    assert stored == honest.library

    again = evaluate(LEAKY, HONEST, options(honest.cache))
    assert again.verdict == "correct", again.reason
    assert again.build_s is not None and again.build_s < 5, "the stored library is loaded, nothing compiled"

    out = tmp_path / "export" / "solution.py"
    exported = export_solution(HONEST.read_text(), "cpu", out, cache=honest.cache)
    assert exported.note == "" and exported.libraries == 1
    assert sha256(out.parent / "build" / folder / library) == honest.sha256
    loaded = _import(out, "real-compiler", tmp_path)
    assert loaded["compiled"] == [] and loaded["agrees"] is True


@pytest.mark.slow
def test_a_build_worker_gets_the_stored_build_and_compiles_nothing(honest: Stored) -> None:
    built = prebuild(HONEST.read_text(), build_environment(CpuPlatform(), 1), honest.cache)
    assert built.ok, built.message
    assert built.build_s < 5 and built.stored == 0, "loaded from the store; nothing new to keep"
    assert only_library(honest.entry) == (honest.library, honest.sha256)


def tamper(path: Path) -> None:
    """Change one byte of a stored file on disk, keeping its size: only its hash can tell."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    os.chmod(path, 0o644)
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_stored_file_changed_on_disk_is_found_by_its_hash(honest: Stored, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tamper(honest.object)
    rebuilt = evaluate(LEAKY, HONEST, options(honest.cache))
    assert rebuilt.verdict == "correct", rebuilt.reason
    assert any("does not match the hash recorded" in warning for warning in rebuilt.warnings), rebuilt.warnings
    assert rebuilt.build_s is not None and rebuilt.build_s > 5, "built again"
    library, digest = only_library(honest.entry)
    assert library == honest.library and sha256(honest.store._object_path(digest)) == digest

    tamper(honest.store._object_path(digest))
    asked: list[str] = []

    def no_rebuild(source: str, *args: object, **kwargs: object) -> PrebuildResult:
        asked.append(source)
        return PrebuildResult(source, False, 0.0, "not rebuilt in this test")

    monkeypatch.setattr(bundle, "prebuild", no_rebuild)
    out = tmp_path / "export" / "solution.py"
    exported = export_solution(HONEST.read_text(), "cpu", out, cache=honest.cache)
    assert asked == [HONEST.read_text()], "the export refused the changed file and asked for a build"
    assert exported.libraries == 0 and "not rebuilt in this test" in exported.note
    assert not any(path.suffix == ".so" for path in out.parent.rglob("*"))
