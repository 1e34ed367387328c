"""Loading the shipped knowledge files, and the one-line errors a malformed file gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.knowledge import STAGES, KnowledgeFileError, load_knowledge, loader, targets

SHIPPED = [("cpu", "cpp"), ("cuda", "cuda"), ("cuda", "triton"), ("mps", "metal"), ("xpu", "triton")]


def test_every_shipped_target_is_found() -> None:
    assert set(SHIPPED) <= set(targets())


@pytest.mark.parametrize(("platform", "language"), SHIPPED)
def test_shipped_files_load_and_cover_the_stages(platform: str, language: str) -> None:
    base = load_knowledge(platform, language)
    assert 5 <= len(base.constraints) <= 12
    assert len(base.examples) >= 2
    stages = {pattern.stage for pattern in base.patterns}
    expected = set(STAGES) - ({"block_pointers"} if language != "triton" else set())
    assert stages == expected
    ids = [entry.id for entry in [*base.constraints, *base.patterns, *base.examples]]
    assert len(ids) == len(set(ids))


def test_cuda_targets_share_the_common_entries() -> None:
    cuda, triton = load_knowledge("cuda", "cuda"), load_knowledge("cuda", "triton")
    shared = {c.id for c in cuda.constraints} & {c.id for c in triton.constraints}
    assert "cuda-cover-every-element" in shared
    assert "nv-fuse-epilogue" in {p.id for p in triton.patterns}


def test_unknown_target_gives_an_empty_base() -> None:
    assert len(load_knowledge("quantum", "qasm")) == 0
    assert len(load_knowledge("cuda", "fortran")) == 0
    assert len(load_knowledge("cuda", "common")) == 0  # the shared folder is not a target of its own


def test_the_returned_lists_do_not_alias_the_cache() -> None:
    first = load_knowledge("cuda", "triton")
    first.constraints.clear()
    assert load_knowledge("cuda", "triton").constraints


def _write_target(root: Path, text: str, name: str = "patterns.yaml") -> None:
    folder = root / "gpu" / "lang"
    folder.mkdir(parents=True)
    (folder / name).write_text(text)


@pytest.fixture
def fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(loader, "knowledge_root", lambda: tmp_path)
    loader._load.cache_clear()
    yield tmp_path
    loader._load.cache_clear()


def test_a_bad_entry_names_the_file_and_the_entry(fake_root: Path) -> None:
    _write_target(fake_root, """
- id: fine
  stage: fusion
  title: A pattern
  when: Whenever it applies to something.
  before: y = a
  after: y = b
  rationale: Because it is faster than before.
  source: Some guide
- id: broken
  stage: warp_magic
  title: Another
  when: Whenever it applies to something.
  before: y = a
  after: y = b
  rationale: Because it is faster than before.
  source: Some guide
""")
    with pytest.raises(KnowledgeFileError) as error:
        load_knowledge("gpu", "lang")
    message = str(error.value)
    assert "gpu/lang/patterns.yaml" in message and "entry 2" in message and "'broken'" in message
    assert "stage" in message and "\n" not in message


def test_an_unknown_validator_is_refused(fake_root: Path) -> None:
    _write_target(fake_root, """
- id: rule
  severity: error
  text: Something that must hold for every kernel.
  validator: no_such_check
  source: Some guide
""", "constraints.yaml")
    with pytest.raises(KnowledgeFileError, match="unknown validator 'no_such_check'"):
        load_knowledge("gpu", "lang")


def test_invalid_yaml_is_reported_with_its_line(fake_root: Path) -> None:
    _write_target(fake_root, "- id: x\n  stage: [unclosed\n")
    with pytest.raises(KnowledgeFileError, match=r"gpu/lang/patterns.yaml: not valid YAML at line \d+"):
        load_knowledge("gpu", "lang")


def test_repeated_ids_are_refused(fake_root: Path) -> None:
    entry = """
- id: same
  severity: warning
  text: Something that should hold for every kernel.
  source: Some guide
"""
    _write_target(fake_root, entry + entry, "constraints.yaml")
    with pytest.raises(KnowledgeFileError, match="'same' repeats an id"):
        load_knowledge("gpu", "lang")


def test_data_files_are_package_data() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"data/**/*"' in pyproject  # kforge/data/knowledge/**.yaml and templates ship with the package
