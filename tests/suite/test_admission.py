"""Slots that share a GPU admit a problem only when its estimated memory fits beside what runs there
(suite/admission.py). Run on the CPU with a fake GPU of a given size, fake estimates and fake slots that record how
many problems run at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kforge.suite.admission import SAFETY, GpuMemory
from kforge.suite.discover import FoundProblem
from kforge.suite.memory import GB, Estimate
from kforge.suite.results import SuiteRow
from kforge.suite.runner import SlotRunner, gpu_memory, run_suite, slots_for
from kforge.suite.task import TaskSpec


class Running:
    """Which problems run at each moment, as the fake slots report them."""

    def __init__(self) -> None:
        self.now: set[str] = set()
        self.together: list[set[str]] = []  # every set of problems that ran at once
        self.started: list[str] = []
        self.lock = threading.Lock()

    def run(self, problem: str, seconds: float) -> None:
        with self.lock:
            self.now.add(problem)
            self.started.append(problem)
            self.together.append(set(self.now))
        time.sleep(seconds)
        with self.lock:
            self.now.discard(problem)

    @property
    def most(self) -> int:
        return max(len(group) for group in self.together)


class FakeSlot:
    """A slot on `gpu` whose every problem takes `seconds`."""

    def __init__(self, name: str, gpu: str | None, running: Running, seconds: float = 0.3) -> None:
        self.name = name
        self.gpu = gpu
        self.running = running
        self.seconds = seconds

    def run(self, spec: TaskSpec, show: Callable[[str], None]) -> SuiteRow:
        self.running.run(spec.problem, self.seconds)
        return SuiteRow(problem=spec.problem, path=spec.path, status="solved")

    def replacement(self) -> SlotRunner | None:
        return None

    def close(self) -> None:
        pass


def spec(problem: FoundProblem) -> TaskSpec:
    return TaskSpec(problem=problem.name, path=str(problem.path), mode="judge", platform="cpu")


def suite_on_one_gpu(tmp_path: Path, sizes: dict[str, int | None], slots: int = 3,
                     gpu_gb: int = 80) -> tuple[list[SuiteRow], Running, list[str]]:
    """Problems of `sizes` (GB; None: not estimated) run on `slots` slots of one fake GPU of `gpu_gb`."""
    problems = [FoundProblem(name, tmp_path / name) for name in sizes]
    running = Running()
    notes: list[str] = []

    def estimator(path: Path) -> Estimate:
        size = sizes[path.name]
        return Estimate(None, "its reference could not be traced") if size is None else Estimate(size * GB)

    memory = GpuMemory({"0": gpu_gb * GB}, estimator)
    runners: list[SlotRunner] = [FakeSlot(f"gpu 0 slot {index + 1}", "0", running) for index in range(slots)]
    rows = run_suite(problems, spec, tmp_path / "out", runners, memory=memory, on_note=notes.append)
    return rows, running, notes


def test_three_problems_of_30_gb_on_one_80_gb_gpu_never_run_three_at_once(tmp_path: Path) -> None:
    rows, running, notes = suite_on_one_gpu(tmp_path, {"a.py": 30, "b.py": 30, "c.py": 30})
    assert running.most == 2  # 90 GB would pass the 68 GB (85% of 80) the estimates may fill
    assert [row.problem for row in rows] == ["a.py", "b.py", "c.py"]  # the problems' order, as without admission
    assert all(row.status == "solved" and row.memory_gb == 30.0 for row in rows)
    assert len(notes) == 1 and notes[0].endswith(": waiting for memory on gpu 0: needs 30 GB, 60 GB of 68 GB in use")


def test_without_admission_the_same_slots_run_all_three_at_once(tmp_path: Path) -> None:
    problems = [FoundProblem(name, tmp_path / name) for name in ("a.py", "b.py", "c.py")]
    running = Running()
    runners: list[SlotRunner] = [FakeSlot(f"gpu 0 slot {index + 1}", "0", running) for index in range(3)]
    rows = run_suite(problems, spec, tmp_path / "out", runners)
    assert running.most == 3
    assert all(row.memory_gb is None for row in rows)


def test_small_problems_share_the_gpu_as_freely_as_before(tmp_path: Path) -> None:
    rows, running, notes = suite_on_one_gpu(tmp_path, {"a.py": 2, "b.py": 2, "c.py": 2})
    assert running.most == 3 and notes == [] and len(rows) == 3


def test_a_problem_larger_than_the_gpu_runs_alone_with_a_warning(tmp_path: Path) -> None:
    rows, running, notes = suite_on_one_gpu(tmp_path, {"big.py": 100, "a.py": 5, "b.py": 5})
    assert all(len(group) == 1 for group in running.together if "big.py" in group)
    assert "big.py: needs 100 GB, more than gpu 0's 68 GB to share: it runs alone there" in notes
    assert {row.problem: row.status for row in rows} == {"big.py": "solved", "a.py": "solved", "b.py": "solved"}


def test_a_problem_without_an_estimate_gets_its_gpu_to_itself(tmp_path: Path) -> None:
    rows, running, notes = suite_on_one_gpu(tmp_path, {"a.py": 5, "odd.py": None, "b.py": 5})
    assert all(len(group) == 1 for group in running.together if "odd.py" in group)
    assert any(note.startswith("odd.py: no memory estimate (its reference could not be traced): it runs alone on "
                               "gpu 0") for note in notes)
    assert [row.memory_gb for row in rows] == [5.0, None, 5.0]


def test_slots_of_another_gpu_or_the_cpu_are_not_held_back(tmp_path: Path) -> None:
    problems = [FoundProblem(name, tmp_path / name) for name in ("a.py", "b.py", "c.py", "d.py")]
    running = Running()
    memory = GpuMemory({"0": 80 * GB}, lambda path: Estimate(50 * GB))
    runners: list[SlotRunner] = [FakeSlot("gpu 0", "0", running), FakeSlot("gpu 0 slot 2", "0", running),
                                 FakeSlot("cpu 0", None, running)]
    run_suite(problems, spec, tmp_path / "out", runners, memory=memory)
    for group in running.together:  # at most one 50 GB problem on gpu 0; the CPU's runs beside it
        assert len(group) <= 2


def test_problems_waiting_for_one_gpu_start_in_the_order_they_came() -> None:
    # A 40 GB problem waits on a GPU where 40 GB are in use; a 5 GB one that would fit comes after it and must
    # not start first: otherwise a stream of small problems could hold a large one back for ever.
    memory = GpuMemory({"0": 80 * GB}, lambda path: Estimate(0))
    started: list[str] = []
    waiting = {name: threading.Event() for name in ("large", "small")}
    release = threading.Event()

    def problem(name: str, size: int, hold: threading.Event | None = None) -> threading.Thread:
        def run() -> None:
            with memory.held("0", Estimate(size * GB), lambda _text: waiting[name].set()):
                started.append(name)
                if hold is not None:
                    hold.wait()

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    first = problem("first", 40, release)
    while not started:
        time.sleep(0.01)
    large = problem("large", 40)
    assert waiting["large"].wait(5)
    small = problem("small", 5)
    assert waiting["small"].wait(5)
    time.sleep(0.1)
    assert started == ["first"]  # 45 GB would fit beside the first, but the large one came before it
    release.set()
    for thread in (first, large, small):
        thread.join(5)
    assert started == ["first", "large", "small"]


def test_a_gpu_is_admitted_by_memory_only_where_slots_share_it(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    from kforge.platforms import platform_class

    monkeypatch.setenv("KFORGE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    sizes = {0: 80 * GB, 1: 40 * GB}  # by the index this process knows each GPU by: its place in the list
    monkeypatch.setattr(platform_class("cuda"), "device_memory", classmethod(lambda cls, index: sizes[index]))
    slots = slots_for("cuda", 3)  # gpu 2 twice, gpu 5 once
    memory = gpu_memory("cuda", slots)
    assert memory is not None and memory.usable == {"2": int(80 * GB * SAFETY)}
    assert [slot.gpu for slot in slots] == ["2", "5", "2"]
    assert gpu_memory("cuda", slots_for("cuda", None)) is None  # a GPU each: nothing to share
    assert gpu_memory("cpu", slots_for("cpu", 2)) is None
    monkeypatch.setattr(platform_class("cuda"), "device_memory", classmethod(lambda cls, index: None))
    assert gpu_memory("cuda", slots) is None  # a GPU whose memory is not told is not admitted by it
