"""Autotuning through the harness: judge a backend's variants, keep the fastest correct one.

A backend offers variants, each a configuration (block sizes, warps, stages, tiles, threads) and the source
it renders to. The evaluator judges one source and returns its Verdict; in kforge it is the harness
(`kforge.verify.evaluate.evaluate`, which runs the candidate in a sandboxed worker), so nothing here ever
imports candidate code. Backend-agnostic: Triton and C++ variants are searched alike.

The search: every variant when there are few; otherwise a coarse grid spread over the configuration space
first, then the neighbours of the best (one step of one tunable, then two) until none improves. Incorrect
variants are recorded and skipped. A variant replaces the best only when its median is lower beyond noise
(`kforge.verify.compare.is_faster`, the loop's rule too). Evaluations stop when the next one would overrun the wall
budget, though the first always runs so that a result exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kforge.verify.compare import is_faster
from kforge.verify.verdict import Evaluator, Verdict

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Variant:
    """One point of a backend's configuration space and the source it renders to."""

    config: Mapping[str, Any]
    source: str

    def label(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.config.items()) or "default"


@dataclass(frozen=True)
class Trial:
    """A variant as the harness judged it."""

    variant: Variant
    verdict: Verdict
    seconds: float

    @property
    def config(self) -> Mapping[str, Any]:
        return self.variant.config

    @property
    def correct(self) -> bool:
        return self.verdict.correct

    @property
    def median_ms(self) -> float | None:
        return self.verdict.timing.median_ms if self.verdict.timing else None


@dataclass(frozen=True)
class TuneSettings:
    budget_s: float = 600.0  # wall time for all evaluations together
    exhaustive_up_to: int = 8  # judge every variant when there are at most this many
    coarse_size: int = 8  # variants in the first, coarse sweep of a larger space
    max_step: int = 2  # the widest neighbourhood searched around the best (in steps of one tunable)


@dataclass
class TuneResult:
    trials: list[Trial] = field(default_factory=list)  # in the order they were judged
    best: Trial | None = None
    stop_reason: str = ""

    @property
    def ranked(self) -> list[Trial]:
        """Correct trials, fastest median first; untimed ones (no timing on this platform) last, in order."""
        correct = [trial for trial in self.trials if trial.correct]
        timed = sorted((t for t in correct if t.median_ms is not None), key=lambda t: t.median_ms or 0.0)
        return timed + [t for t in correct if t.median_ms is None]

    @property
    def best_config(self) -> Mapping[str, Any] | None:
        return self.best.config if self.best else None


def tune(variants: Iterable[Variant | tuple[Mapping[str, Any], str]], evaluate: Evaluator,
         settings: TuneSettings | None = None, progress: Progress | None = None,
         clock: Callable[[], float] = time.monotonic) -> TuneResult:
    """Search `variants` (the first is the backend's default) with `evaluate`; see the module docstring."""
    search = _Search(_as_variants(variants), evaluate, settings or TuneSettings(), progress, clock)
    return search.run()


def _as_variants(items: Iterable[Variant | tuple[Mapping[str, Any], str]]) -> list[Variant]:
    variants: list[Variant] = []
    seen: set[str] = set()
    for item in items:
        variant = item if isinstance(item, Variant) else Variant(dict(item[0]), item[1])
        if variant.source not in seen:  # two configurations may render the same source: judge it once
            seen.add(variant.source)
            variants.append(variant)
    return variants


class _Search:
    def __init__(self, variants: list[Variant], evaluate: Evaluator, settings: TuneSettings,
                 progress: Progress | None, clock: Callable[[], float]) -> None:
        self.variants = variants
        self.evaluate = evaluate
        self.settings = settings
        self.say = progress or (lambda _text: None)
        self.clock = clock
        self.started = clock()
        self.result = TuneResult()
        self.judged: set[int] = set()
        self.space = _Space([variant.config for variant in variants])

    def run(self) -> TuneResult:
        if not self.variants:
            self.result.stop_reason = "no variants to judge"
            return self.result
        if len(self.variants) <= self.settings.exhaustive_up_to:
            finished = self.judge_all(range(len(self.variants)))
            self.result.stop_reason = "judged every variant" if finished else "wall budget spent"
            return self.result
        if not self.judge_all(self.space.coarse(self.settings.coarse_size)):
            self.result.stop_reason = "wall budget spent during the coarse sweep"
            return self.result
        self.result.stop_reason = self.climb()
        return self.result

    def climb(self) -> str:
        """Judge the neighbours of the best, one step away then further, moving whenever one is faster."""
        step = 1
        while step <= self.settings.max_step:
            if self.result.best is None:
                return "no correct variant in the coarse sweep"
            center = self.variants.index(self.result.best.variant)
            before = self.result.best
            untried = [i for i in self.space.neighbours(center, step) if i not in self.judged]
            if not self.judge_all(untried):
                return "wall budget spent"
            step = 1 if self.result.best is not before else step + 1
        return "no neighbour of the best is faster"

    def judge_all(self, indices: Iterable[int]) -> bool:
        """Judge each index in turn; False when the budget stopped the sweep early."""
        for index in indices:
            if index in self.judged:
                continue
            if self.result.trials and not self.time_for_another():
                return False
            self.judge(index)
        return True

    def time_for_another(self) -> bool:
        spent = self.clock() - self.started
        typical = max(trial.seconds for trial in self.result.trials)
        return spent + typical <= self.settings.budget_s

    def judge(self, index: int) -> None:
        variant = self.variants[index]
        self.judged.add(index)
        started = self.clock()
        verdict = self.evaluate(variant.source)
        trial = Trial(variant, verdict, self.clock() - started)
        self.result.trials.append(trial)
        timing = f"{trial.median_ms:.4f} ms" if trial.median_ms is not None else "untimed"
        self.say(f"tune: {variant.label()}: {verdict.verdict}" + (f", {timing}" if trial.correct else ""))
        best = self.result.best
        if trial.correct and (best is None or is_faster(verdict, best.verdict)):
            self.result.best = trial


class _Space:
    """The variants' configurations as points on a grid: each tunable's distinct values, in order, are its steps."""

    def __init__(self, configs: Sequence[Mapping[str, Any]]) -> None:
        keys: list[str] = []
        for config in configs:
            keys.extend(key for key in config if key not in keys)
        self.levels = {key: _ordered({config.get(key) for config in configs}) for key in keys}
        self.points = [tuple(self.levels[key].index(config.get(key)) for key in keys) for config in configs]

    def coarse(self, size: int) -> list[int]:
        """The default (index 0), then variants whose every tunable sits at its first, middle or last step;
        thinned evenly to `size`, or an even stride over all variants where that grid is empty."""
        counts = [len(levels) for levels in self.levels.values()]
        marks = [{0, (count - 1) // 2, count - 1} for count in counts]
        grid = [i for i, point in enumerate(self.points) if all(p in m for p, m in zip(point, marks, strict=True))]
        pool = grid if len(grid) > 1 else list(range(len(self.points)))
        return [0, *_spread([i for i in pool if i != 0], max(size - 1, 0))]

    def neighbours(self, center: int, step: int) -> list[int]:
        """Variants whose grid distance (total steps over all tunables) from `center` is exactly `step`."""
        origin = self.points[center]
        return [i for i, point in enumerate(self.points)
                if sum(abs(a - b) for a, b in zip(point, origin, strict=True)) == step]


def _ordered(values: set[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # mixed or unorderable values (None beside numbers): a stable order by text
        return sorted(values, key=repr)


def _spread(items: list[int], count: int) -> list[int]:
    """`count` items taken at even intervals (all of them when there are not more)."""
    if len(items) <= count:
        return items
    if count <= 0:
        return []
    stride = len(items) / count
    return [items[int(k * stride)] for k in range(count)]
