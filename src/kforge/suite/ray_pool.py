"""A suite's slots on a Ray cluster (`kforge suite --ray auto|ADDRESS`, `pip install kforge[ray]`): one actor per
GPU of the cluster, on any number of nodes (or `workers` CPU actors where it has no GPU). Each actor runs its
tasks as the local pool does, a process of its own per task, pinned to the actor's GPU; it returns the row to the
driver, which writes results.jsonl. An actor that dies (its process killed, its node lost) loses its problem to
another actor, once.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kforge.suite.results import SuiteRow
from kforge.suite.runner import SlotLost, SlotRunner, log_name, task_row
from kforge.suite.task import TaskSpec
from kforge.suite.task_process import TaskProcess


class RayUnavailable(RuntimeError):
    """Ray is not installed or no cluster could be reached; one line for the user."""


def connect(address: str) -> Any:
    """The `ray` module, connected: to the cluster at `address`, or with `auto` to a running one, else a new
    local one."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'kforge[ray]'") from None
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except ConnectionError:
            if address != "auto":
                raise RayUnavailable(f"no Ray cluster answers at {address}") from None
            ray.init(include_dashboard=False, log_to_driver=False)
    return ray


class _TaskActor:
    """Runs on a node of the cluster: one task at a time, each a process of its own on the actor's GPU."""

    def __init__(self) -> None:
        self.logs = Path(tempfile.mkdtemp(prefix="kforge-suite-ray-"))
        self.tasks: TaskProcess | None = None  # kept for the actor's life, its tasks one after another

    def where(self) -> str:
        import ray

        gpus = [str(gpu) for gpu in ray.get_gpu_ids()]
        node = ray.util.get_node_ip_address()
        return f"gpu {','.join(gpus)} on {node}" if gpus else f"cpu on {node} (pid {os.getpid()})"

    def run(self, spec_json: str) -> str:
        import ray

        gpus = [str(gpu) for gpu in ray.get_gpu_ids()]
        environment = {"CUDA_VISIBLE_DEVICES": ",".join(gpus)} if gpus else {}
        spec = TaskSpec.model_validate_json(spec_json)
        if self.tasks is None:
            self.tasks = TaskProcess(environment, self.logs / "slot.log")
        row = task_row(spec, self.where(), self.tasks, self.logs / log_name(spec.problem))
        return row.model_dump_json()


class RaySlot:
    """A SlotRunner backed by one Ray actor; a lost actor is replaced by a fresh one."""

    def __init__(self, ray: Any, gpus: int) -> None:
        self.ray = ray
        self.gpus = gpus
        self.gpu: str | None = None  # Ray gives each actor a GPU of its own: nothing to admit by memory
        self.actor = ray.remote(num_gpus=gpus, num_cpus=0 if gpus else 1)(_TaskActor).remote()
        self.name = ray.get(self.actor.where.remote())

    def run(self, spec: TaskSpec, show: Callable[[str], None]) -> SuiteRow:
        show("running on the Ray cluster")
        try:
            return SuiteRow.model_validate_json(self.ray.get(self.actor.run.remote(spec.model_dump_json())))
        except self.ray.exceptions.RayActorError as exc:
            raise SlotLost(str(exc).splitlines()[0][:200]) from None

    def replacement(self) -> SlotRunner | None:
        try:
            return RaySlot(self.ray, self.gpus)
        except Exception:  # the cluster has no room left for it: the other slots go on
            return None

    def close(self) -> None:
        pass  # the actor (and its task process, which dies with it) ends with the suite's Ray session


def ray_slots(address: str, workers: int | None) -> list[SlotRunner]:
    """One slot per GPU of the cluster (at most `workers`), else `workers` CPU slots (default 1)."""
    ray = connect(address)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    count = min(gpus, workers) if gpus and workers else gpus or max(1, workers or 1)
    return [RaySlot(ray, 1 if gpus else 0) for _ in range(count)]
