"""A suite's report: `report.md` (tables) and a self-contained `report.html` (the same tables, and plots embedded
as PNG: per-problem speedups against both baselines, the fast_p curve, where the time went, rejections by rule).
Drawn with matplotlib from the rows and the summary only."""

from __future__ import annotations

import base64
import functools
import html
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kforge.suite.results import BASELINES, FAST_P, SuiteRow, Summary, fast_p
from kforge.verify.ratio import format_speedup

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_LABELS = {"eager": "PyTorch eager", "compile": "torch.compile"}


def write_reports(rows: list[SuiteRow], summary: Summary, out: Path) -> None:
    (out / "report.md").write_text(markdown(rows, summary))
    (out / "report.html").write_text(page(rows, summary))


# ---- text ----------------------------------------------------------------------------------------------------
def headline(summary: Summary) -> list[str]:
    def mean(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"

    fast = summary.fast_p
    return [
        f"{summary.correct} of {summary.problems} problems correct ({summary.unsolved} without a correct kernel, "
        f"{summary.errors} not worked on)",
        f"geomean speedup: {mean(summary.geomean_vs_eager)} vs eager, {mean(summary.geomean_vs_compile)} vs "
        f"torch.compile ({summary.geomean_note})",
        "fast_p (correct and faster than p times the baseline): " + "; ".join(
            f"{_LABELS[b]} " + ", ".join(f"p={p} {share:.0%}" for p, share in fast[b].items()) for b in BASELINES),
        f"time {summary.totals.wall_s:.0f} s, {summary.totals.attempts} attempts, {summary.totals.llm_tokens} "
        f"tokens, ${summary.totals.cost_usd:.2f}",
    ] + ([f"correct but slower than eager: {', '.join(summary.slower_than_eager)}"]
         if summary.slower_than_eager else [])


def table_rows(rows: list[SuiteRow]) -> list[list[str]]:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    return [[row.problem, row.status, row.verdict or "-", ms(row.runtime_ms), share(row.spread),
             format_speedup(row.speedup_vs_eager, row.speedup_vs_eager_interval),
             format_speedup(row.speedup_vs_compile, row.speedup_vs_compile_interval), share(row.roofline_share),
             str(row.attempts), f"{row.wall_s:.0f}", row.rule or "", _one_line(row.reason)] for row in rows]


HEADER = ["problem", "status", "verdict", "runtime ms", "spread", "vs eager", "vs compile", "roofline", "attempts",
          "wall s", "rule", "reason"]


def markdown(rows: list[SuiteRow], summary: Summary) -> str:
    lines = ["# kforge suite report", "", *[f"- {line}" for line in headline(summary)], "",
             "| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |" for cells in table_rows(rows)]
    lines += ["", "Speedups come from one evaluation that timed each kernel and its baselines in rounds taken in "
              "turn, each with its 95% interval in brackets (rounds are added while it is wide); spread is the "
              "kernel's interquartile range over its median; roofline is left out where the machine was busy or "
              "the calls were host-bound."]
    busy = [row.problem for row in rows if row.machine_busy]
    if busy:
        lines.append(f"Timed while other work loaded the machine (figures less sure): {', '.join(busy)}.")
    lines.append("")
    return "\n".join(lines)


def page(rows: list[SuiteRow], summary: Summary) -> str:
    figures = [("Speedup per problem", speedup_chart), ("fast_p", fast_p_chart), ("Where the time went", time_chart),
               ("Rejections by rule", rules_chart)]
    images = []
    for title, draw in figures:
        png = _png(functools.partial(_drawn, draw, rows, summary))
        images.append(f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,'
                      f'{base64.b64encode(png).decode()}"><figcaption>{html.escape(title)}</figcaption></figure>')
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>"
                   for cells in table_rows(rows))
    items = "".join(f"<li>{html.escape(line)}</li>" for line in headline(summary))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>kforge suite report</title><style>{_STYLE}"
            f"</style></head><body><h1>kforge suite report</h1><ul>{items}</ul>{''.join(images)}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n")


_STYLE = ("body{font-family:sans-serif;margin:2em;color:#222}figure{display:inline-block;margin:0 1em 1em 0}"
          "img{max-width:640px;border:1px solid #ddd}table{border-collapse:collapse;font-size:90%}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}th{background:#f3f3f3}")


# ---- plots ---------------------------------------------------------------------------------------------------
def speedup_chart(axes: Axes, rows: list[SuiteRow], _summary: Summary) -> None:
    names = [row.problem for row in rows]
    width = 0.4
    for offset, baseline in ((-width / 2, "eager"), (width / 2, "compile")):
        values = [row.speedup(baseline) or 0.0 for row in rows]
        axes.bar([i + offset for i in range(len(rows))], values, width, label=_LABELS[baseline])
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(rows)), names, rotation=60, ha="right", fontsize=7)
    axes.set_ylabel("speedup (x), 0 where not correct")
    axes.legend()


def fast_p_chart(axes: Axes, rows: list[SuiteRow], _summary: Summary) -> None:
    thresholds = [step / 20 for step in range(0, 81)]
    for baseline in BASELINES:
        axes.plot(thresholds, [fast_p(rows, baseline, p) for p in thresholds],
                  label=_LABELS[baseline])
    for p in FAST_P:
        axes.axvline(p, color="grey", linewidth=0.5, linestyle=":")
    axes.set_xlabel("p (speedup threshold)")
    axes.set_ylabel("share of problems correct and faster than p x")
    axes.set_ylim(0, 1.05)
    axes.legend()


def time_chart(axes: Axes, rows: list[SuiteRow], _summary: Summary) -> None:
    axes.barh([row.problem for row in rows], [row.wall_s for row in rows])
    axes.set_xlabel("wall time, s")
    axes.tick_params(axis="y", labelsize=7)


def rules_chart(axes: Axes, _rows: list[SuiteRow], summary: Summary) -> None:
    rules = summary.rejections_by_rule
    if not rules:  # no bars to draw: an empty plot would read as missing data
        axes.text(0.5, 0.5, "no rejections", ha="center", va="center", fontsize=14, transform=axes.transAxes)
        axes.set_axis_off()
        return
    axes.barh(list(rules), list(rules.values()))
    axes.set_xlabel("problems whose last verdict named the rule")


def _drawn(chart: Callable[[Axes, list[SuiteRow], Summary], None], rows: list[SuiteRow], summary: Summary,
           axes: Axes) -> None:
    chart(axes, rows, summary)


def _png(draw: Callable[[Axes], None]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4.5), dpi=100)
    try:
        draw(axes)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        pyplot.close(figure)


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
