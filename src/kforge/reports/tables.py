"""Tables and records of runs, for the terminal (rich) and for export (JSON). Reads the store only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kforge.reports.fit import Column, Fitted
from kforge.store import Attempt, Evaluation, Run, Store
from kforge.verify.ratio import format_speedup, includes_one
from kforge.verify.verdict import Verdict


def _fmt(value: float | None, unit: str = "", digits: str = ".4g") -> str:
    return "-" if value is None else f"{value:{digits}}{unit}"


def run_summary(store: Store, run: Run) -> dict[str, Any]:
    """One run as `kforge runs --json` gives it: what it was, how it ended, and its best (its number within the run)
    with its figures (those of the end-of-run confirmation when there was one, which timed the reference beside
    it)."""
    best = store.best_attempt(run.id)
    figures: dict[str, Any] = {"runtime_ms": None, "speedup_vs_eager": None, "speedup_vs_compile": None}
    if best is not None:
        confirmed = confirmation_of(store, run.id, best.attempt.id)
        source = confirmed if confirmed is not None and confirmed.correct else best.evaluation
        figures = {"runtime_ms": source.runtime_ms, "speedup_vs_eager": source.speedup_vs_eager,
                   "speedup_vs_compile": source.speedup_vs_compile}
        if source is confirmed:
            figures.update(speedup_vs_eager_interval=confirmed.speedup_vs_eager_interval,
                           speedup_vs_compile_interval=confirmed.speedup_vs_compile_interval,
                           machine_busy=confirmed.machine_busy)
    return {"run": run.id, "created": run.created.isoformat(timespec="seconds"), "status": run.status,
            "stop_reason": run.stop_reason, "command": run.command, "problem": run.problem_path,
            "platform": run.platform, "language": run.language, "model": run.model,
            "best_attempt": best.attempt.number if best else None, **figures}


def problem_name(path: str | None) -> str:
    """A problem as a table names it: its file's stem, or its folder's name for a `NAME/problem.py`."""
    if not path:
        return "-"
    file = Path(path)
    return file.parent.name if file.stem == "problem" and file.parent.name else file.stem


def _speedups(vs_eager: float | None, vs_compile: float | None, stacked: bool) -> str:
    eager, compile_ = _fmt(vs_eager, "x", ".2f"), _fmt(vs_compile, "x", ".2f")
    return f"{eager}\n{compile_}" if stacked else f"{eager}/{compile_}"


def _reason(status: str, reason: str | None) -> str:
    """What a run's stop reason adds to its status word: nothing for a finished run (its table row has its
    figures), `(Ctrl-C)` for `interrupted (Ctrl-C)`, the whole reason otherwise."""
    if not reason or status == "finished":
        return ""
    return reason[len(status):].strip() if reason.startswith(status) else reason


def runs_table(rows: list[dict[str, Any]]) -> Fitted:
    """The runs of `run_summary`, laid out for the terminal's width (reports/fit.py): the status word whole with
    the reason the run stopped below it, the problem's name folded at `_`, figures whole with their `x`. When
    narrow (below about 80 columns), the time and then the model go, then the two speedups stack."""
    statuses = [row["status"] for row in rows]
    reasons = [_reason(row["status"], row["stop_reason"]) for row in rows]
    run = Column("run", [str(row["run"]) for row in rows], fixed=True, justify="right")
    when = Column("when", [row["created"][5:16].replace("T", " ") for row in rows], fixed=True)
    status = Column("status", [s + (f"\n{r}" if r else "") for s, r in zip(statuses, reasons, strict=True)],
                    whole=statuses, min_width=0, max_width=24)
    problem = Column("problem", [problem_name(row["problem"]) for row in rows], min_width=8, grows=0)
    models = [str(row["model"] or "-").split(":", 1)[-1] for row in rows]
    model = Column("model", models, whole=models)  # a model's name is never folded: `when` goes first
    best = Column("best", [_fmt(row["runtime_ms"], " ms") for row in rows], fixed=True, justify="right")

    def speedups(stacked: bool) -> Column:
        header = "×eager\n×compile" if stacked else "×eager\n/compile"
        return Column(header, [_speedups(row["speedup_vs_eager"], row["speedup_vs_compile"], stacked)
                               for row in rows], fixed=True, justify="right")

    return Fitted([[run, when, status, problem, model, best, speedups(False)],
                   [run, status, problem, model, best, speedups(False)],
                   [run, status, problem, best, speedups(False)],
                   [run, status, problem, best, speedups(True)]], title="kforge runs")


def attempts_table(store: Store, run_id: int, title: str | None = None) -> Fitted:
    """One row per attempt, numbered within the run: who made it, outcome, runtime, speedups, and the LLM tokens
    and cost behind it.

    Laid out for the terminal's width (reports/fit.py): the LLM column appears only when some attempt came from
    an LLM (a builtin engine's run has none), figures are whole with their unit, the maker's and outcome's names
    fold at `:` and `_`. When narrow, the round goes, then the LLM column (the costs line has the totals), then
    the two speedups stack in one column."""
    best = store.best_attempt(run_id)
    best_id = best.attempt.id if best else None
    rows: list[dict[str, Any]] = []
    for attempt in store.attempts_of(run_id):
        evaluation = store.evaluation_of(attempt.id)
        usage = (evaluation.verdict.get("llm_usage") or {}) if evaluation else {}
        rows.append({"number": f"{attempt.number}{' *' if attempt.id == best_id else ''}",
                     "made_by": attempt.made_by, "round": str(attempt.round),
                     "outcome": evaluation.outcome if evaluation else "(not evaluated)",
                     "runtime": _fmt(evaluation.runtime_ms if evaluation else None, " ms"),
                     "eager": evaluation.speedup_vs_eager if evaluation else None,
                     "compile": evaluation.speedup_vs_compile if evaluation else None,
                     "llm": _llm_usage(usage)})
    number = Column("#", [row["number"] for row in rows], fixed=True, justify="right")
    made_by = Column("made by", [row["made_by"] for row in rows])
    round_ = Column("rnd", [row["round"] for row in rows], fixed=True, justify="right")
    outcome = Column("outcome", [row["outcome"] for row in rows])
    runtime = Column("runtime", [row["runtime"] for row in rows], fixed=True, justify="right")
    eager = Column("×eager", [_fmt(row["eager"], "x", ".2f") for row in rows], fixed=True, justify="right")
    compile_ = Column("×compile", [_fmt(row["compile"], "x", ".2f") for row in rows], fixed=True, justify="right")
    both = Column("×eager\n×compile", [_speedups(row["eager"], row["compile"], True) for row in rows], fixed=True,
                  justify="right")
    llm = [Column("LLM", [row["llm"] for row in rows], fixed=True, justify="right")] \
        if any(row["llm"] != "-" for row in rows) else []
    caption = ("× figures: provisional, each against the reference timed once for the run; the best's line below "
               "has it timed in turn with the reference")
    return Fitted([[number, made_by, round_, outcome, runtime, eager, compile_, *llm],
                   [number, made_by, outcome, runtime, eager, compile_, *llm],
                   [number, made_by, outcome, runtime, eager, compile_],
                   [number, made_by, outcome, runtime, both]],
                  title=title or f"run {run_id}: attempts", caption=caption)


def _llm_usage(usage: dict[str, Any]) -> str:
    """An attempt's LLM tokens and cost in a few characters: `15.8k $0.123`, `15.8k cached`, or `-`."""
    if not usage:
        return "-"
    tokens = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    count = f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)
    cost = usage.get("cost_usd")
    if usage.get("cached_llm"):
        return f"{count} cached"
    return count if cost is None else f"{count} ${cost:.3f}"


def best_line(number: int | None, runtime_ms: float | None, vs_eager: float | None = None,
              vs_compile: float | None = None, confirmed: bool = False, *,
              eager_interval: Sequence[float] | None = None, compile_interval: Sequence[float] | None = None,
              busy: str | None = None) -> str:
    """One line for a run's best attempt (`number`: within the run; None: no correct attempt); a correct one that
    was not timed (no timing on its platform) says so. `confirmed`: the figures are those of the best judged again
    at the run's end (pipelines/confirm.py), each speedup with its interval where one was measured (`1.90x
    (1.62-2.31)`). A speedup whose interval holds 1.0 is called neither faster nor slower; `busy` (a verdict's
    `machine_busy`) adds that the machine was busy."""
    if number is None:
        return "best: none correct"
    line = f"best: attempt {number}, " + ("correct (not timed on this platform)" if runtime_ms is None
                                           else f"{runtime_ms:.4g} ms")
    if vs_eager:
        line += f", {format_speedup(vs_eager, eager_interval)} vs eager"
    if vs_compile:
        line += f", {format_speedup(vs_compile, compile_interval)} vs torch.compile"
    if confirmed:
        line += " (judged again at the end, timed in turn with the reference)"
    figures = (("PyTorch eager", vs_eager, eager_interval), ("torch.compile", vs_compile, compile_interval))
    even = [name for name, value, interval in figures if value is not None and includes_one(interval)]
    slower = [name for name, value, interval in figures
              if value is not None and value < 1.0 and not includes_one(interval)]
    if slower:
        line += f"; SLOWER than {' and '.join(slower)}: the baseline is the better choice here"
    if even:
        line += f"; not shown faster than {' or '.join(even)}: the interval holds 1.0x"
    if busy:
        line += "; timed on a busy machine, so the figures are less sure"
    return line


def verdict_best_line(number: int, verdict: Verdict, confirmed: bool = False) -> str:
    """`best_line` with a verdict's figures, intervals and busy-machine note."""
    return best_line(number, verdict.runtime_ms, verdict.speedup_vs_eager, verdict.speedup_vs_compile, confirmed,
                     eager_interval=verdict.speedup_vs_eager_interval,
                     compile_interval=verdict.speedup_vs_compile_interval, busy=verdict.machine_busy)


def confirmation_of(store: Store, run_id: int, attempt_id: int) -> Verdict | None:
    """The verdict of `attempt_id` judged again at the end of the run, if that is what the run recorded."""
    run = store.get_run(run_id)
    record = run.confirmation if run is not None else None
    if not record or record.get("attempt_id") != attempt_id:
        return None
    return Verdict.model_validate(record["verdict"])


def stored_best_line(store: Store, run_id: int) -> str:
    """`best_line` for the best attempt the store holds for the run."""
    best = store.best_attempt(run_id)
    if best is None:
        return best_line(None, None)
    again = confirmation_of(store, run_id, best.attempt.id)
    if again is not None and again.correct:
        return verdict_best_line(best.attempt.number, again, confirmed=True)
    line = best_line(best.attempt.number, best.evaluation.runtime_ms, best.evaluation.speedup_vs_eager,
                     best.evaluation.speedup_vs_compile)
    if again is not None:
        line += f"; judged again at the end: {again.verdict}: {again.reason}"
    return line + _noise_note(store, run_id, best)


def _noise_note(store: Store, run_id: int, best: Any) -> str:
    """'; attempts 4 and 6 are within its noise' where other correct attempts' medians lie within the
    best's or their own spread (half the interquartile range) of the best's: which of them is fastest is not
    settled by the measurement."""
    mine = best.evaluation.runtime_ms
    if mine is None:
        return ""
    close = []
    for attempt in store.attempts_of(run_id):
        evaluation = store.evaluation_of(attempt.id)
        if attempt.id == best.attempt.id or evaluation is None or evaluation.outcome != "correct" \
                or evaluation.runtime_ms is None:
            continue
        spread = max(_half_iqr(best.evaluation.verdict), _half_iqr(evaluation.verdict))
        if abs(evaluation.runtime_ms - mine) <= spread:
            close.append(str(attempt.number))
    if not close:
        return ""
    named = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " and " + close[-1]
    return f"; attempt{'s' if len(close) > 1 else ''} {named} {'are' if len(close) > 1 else 'is'} within its noise"


def _half_iqr(verdict: dict[str, Any]) -> float:
    timing = verdict.get("timing") or {}
    return float(timing.get("iqr_ms") or 0.0) / 2


def costs_line(store: Store, run_id: int) -> str:
    costs = store.costs_of(run_id)
    unpriced = f", {costs.unpriced_calls} without a price" if costs.unpriced_calls else ""
    return (f"LLM: {costs.calls} calls ({costs.cached_calls} from cache), {costs.tokens} tokens, "
            f"${costs.cost_usd:.4f}{unpriced}")


def run_record(store: Store, run_id: int) -> dict[str, Any]:
    """The whole run as JSON data: its settings, every attempt with its verdict, the LLM calls' usage.

    Attempts are named by their number within the run (`number`, and `parent`, `best_attempt` and the
    confirmation's `attempt` refer to numbers); `id` is the store's key of the attempt, for joining with the
    database."""
    run = store.get_run(run_id)
    if run is None:
        raise KeyError(run_id)
    best = store.best_attempt(run_id)
    costs = store.costs_of(run_id)
    attempts = store.attempts_of(run_id)
    numbers = {a.id: a.number for a in attempts}
    return {
        "run": {"id": run.id, "created": run.created.isoformat(), "status": run.status, "command": run.command,
                "problem": run.problem_path, "problem_hash": run.problem_hash, "platform": run.platform,
                "language": run.language, "model": run.model, "settings": run.settings},
        "best_attempt": best.attempt.number if best else None,
        "confirmation": _confirmation_record(run.confirmation, numbers),
        "attempts": [_attempt_record(a, store.evaluation_of(a.id), numbers) for a in attempts],
        "llm": {"calls": costs.calls, "cached_calls": costs.cached_calls, "prompt_tokens": costs.prompt_tokens,
                "completion_tokens": costs.completion_tokens, "cost_usd": costs.cost_usd},
    }


def _attempt_record(attempt: Attempt, evaluation: Evaluation | None, numbers: dict[int, int]) -> dict[str, Any]:
    parent = numbers.get(attempt.parent_attempt_id) if attempt.parent_attempt_id is not None else None
    return {"number": attempt.number, "id": attempt.id, "parent": parent, "made_by": attempt.made_by,
            "round": attempt.round, "source_hash": attempt.source_hash, "created": attempt.created.isoformat(),
            "verdict": evaluation.verdict if evaluation else None}


def _confirmation_record(confirmation: dict[str, Any] | None, numbers: dict[int, int]) -> dict[str, Any] | None:
    """The run's end-of-run judgement with its attempt named by number, as the rest of the record names them."""
    if confirmation is None:
        return None
    return {"attempt": numbers.get(confirmation.get("attempt_id", -1)), "verdict": confirmation.get("verdict")}

