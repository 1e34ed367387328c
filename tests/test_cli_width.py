"""`kforge` readable at 80 and 60 columns, by design: the real command with COLUMNS set.

Tables fold names only at `_ - : / .` or spaces and keep status words and figures whole (reports/fit.py); help
names each option whole, with the name of its value (SECONDS, N, FILE) rather than its Python type."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.store import Store

WIDTHS = [80, 60]
LONG = "level1_23_conv3d_group_norm_mean_with_a_long_name"
PROBLEMS = {"gated_channel_scale": "/home/u/examples/gated_channel_scale/problem.py", LONG: f"/p/{LONG}.py",
            "scan": "/p/scan.py", "softmax": "/p/softmax.py"}
SPEEDUPS = [(8.12, 3.31), (123.45, 10.5), (0.89, 0.42)]


def kforge(width: int, *args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(width), "LINES": "50"}
    return subprocess.run([sys.executable, "-m", "kforge", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("width") / "runs.db"
    with Store(path) as store:
        run = store.create_run(command="optimize", problem_path=PROBLEMS["gated_channel_scale"], platform="cpu",
                               language="cpp", model="openai:gpt-4o")
        makers = ["builtin:generate", "generator:generate", "generator:refine"]
        for number, ((eager, compile_), made_by) in enumerate(zip(SPEEDUPS, makers, strict=True)):
            attempt = store.record_attempt(run.id, source=f"# {number}", language="cpp", platform="cpu",
                                           made_by=made_by, round=number)
            usage = {"llm_usage": {"prompt_tokens": 12000, "completion_tokens": 3800, "cost_usd": 0.1234}}
            store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": 8.012 * (number + 1),
                                                 "speedup_vs_eager": eager, "speedup_vs_compile": compile_,
                                                 **(usage if number else {})})
        attempt = store.record_attempt(run.id, source="# broken", language="cpp", platform="cpu",
                                       made_by="generator:refine", round=3)
        store.record_evaluation(attempt.id, {"verdict": "compile_error", "reason": "no"})
        store.finish_run(run.id, "interrupted", "interrupted (Ctrl-C)")
        long = store.create_run(command="optimize", problem_path=PROBLEMS[LONG], platform="cuda", language="triton",
                                model="anthropic:claude-sonnet-4-5")
        attempt = store.record_attempt(long.id, source="x", language="triton", platform="cuda", made_by="builtin")
        store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": 0.01234, "speedup_vs_eager": 123.45,
                                             "speedup_vs_compile": 10.5})
        store.finish_run(long.id, "finished", "finished 3 optimization rounds")
        failed = store.create_run(command="optimize", problem_path=PROBLEMS["scan"], model="openai:m")
        store.finish_run(failed.id, "failed", "openai:m: server error (HTTP 500)")
        store.create_run(command="optimize", problem_path=PROBLEMS["softmax"], model="builtin")
    return path


def table_rows(text: str) -> list[list[str]]:
    """The rows of a printed table (after its header rule), each a list of cells with their folded lines joined
    (without a space after a line ending in `_ - : / .`, with one otherwise)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "━" in line) + 1
    rows: list[list[list[str]]] = []
    for line in lines[start:]:
        if "│" not in line:
            break
        cells = [cell.strip() for cell in line.split("│")]
        if cells[0]:
            rows.append([[cell] if cell else [] for cell in cells])
        else:
            for parts, cell in zip(rows[-1], cells, strict=True):
                if cell:
                    parts.append(cell)

    def joined(parts: list[str]) -> str:
        text = ""
        for part in parts:
            text += part if not text or text[-1] in "_-:/." else " " + part
        return text

    return [[joined(parts) for parts in row] for row in rows]


def header(text: str) -> list[str]:
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "━" in line)
    names = [""] * (lines[rule].count("╇") + 1)
    for line in lines[:rule]:
        if "┃" in line:
            for index, cell in enumerate(line.split("┃")):
                names[index] = (names[index] + " " + cell.strip()).strip()
    return names


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_keep_status_words_problem_names_and_speedups_whole(db: Path, width: int) -> None:
    result = kforge(width, "runs", "--db", db)
    assert result.returncode == 0, result.stderr
    assert all(len(line) <= width for line in result.stdout.splitlines()), result.stdout
    assert "…" not in result.stdout and "Ⓜ" not in result.stdout, result.stdout
    names = header(result.stdout)
    rows = {row[0]: dict(zip(names, row, strict=True)) for row in table_rows(result.stdout)}
    assert set(rows) == {"1", "2", "3", "4"}, result.stdout
    assert rows["1"]["status"] == "interrupted (Ctrl-C)" and rows["1"]["problem"] == "gated_channel_scale"
    assert rows["2"]["status"] == "finished"
    assert rows["2"]["problem"] == LONG
    failed = rows["3"]["status"]  # the word, then the reason folded below it (spaces aside: folds drop them)
    assert failed.startswith("failed ") and failed.replace(" ", "") == "failedopenai:m:servererror(HTTP500)"
    assert rows["3"]["problem"] == "scan"
    assert rows["4"]["status"] == "running" and rows["4"]["problem"] == "softmax"
    for line in result.stdout.splitlines():  # a status word is never folded
        assert not re.search(r"│ (interrup|runn|finis|fail)[a-z]*\s*│", line) \
            or re.search(r"│ (interrupted|running|finished|failed)\s*│", line), line
    speedups = next(value for name, value in rows["1"].items() if name.startswith("×eager"))
    assert speedups.replace(" ", "") in ("8.12x/3.31x", "8.12x3.31x"), result.stdout  # a slash, or stacked
    assert "0.01234 ms" in result.stdout and "123.45x" in result.stdout and "10.50x" in result.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_show_keeps_every_speedup_with_its_x_and_every_outcome_whole(db: Path, width: int) -> None:
    result = kforge(width, "show", "1", "--db", db)
    assert result.returncode == 0, result.stderr
    # The table fits; a line beside it (the run's, `best:`) stays whole in a pipe, as a terminal would wrap it.
    assert all(len(line) <= width for line in result.stdout.splitlines() if "│" in line or "━" in line), \
        result.stdout
    assert "…" not in result.stdout
    rows = table_rows(result.stdout)
    names = header(result.stdout)
    assert [row[0] for row in rows] == ["1 *", "2", "3", "4"], rows
    by_name = [dict(zip(names, row, strict=True)) for row in rows]
    assert [row["outcome"] for row in by_name] == ["correct"] * 3 + ["compile_error"]
    assert [row["made by"] for row in by_name] == ["builtin:generate", "generator:generate", "generator:refine",
                                                     "generator:refine"]
    figures = " ".join(value for row in by_name for name, value in row.items() if name.startswith("×"))
    for eager, compile_ in SPEEDUPS:
        assert f"{eager:.2f}x" in figures and f"{compile_:.2f}x" in figures, result.stdout
    assert not re.search(r"\d\.\d\d(?!x)\b", figures), figures  # every speedup has its x
    assert "interrupted (Ctrl-C)" in " ".join(result.stdout.split())


@pytest.mark.parametrize("width", WIDTHS)
def test_help_names_every_option_whole_without_type_noise(width: int) -> None:
    import typer.main

    from kforge.cli import app

    group = typer.main.get_command(app)
    for name, command in [("", group), *group.commands.items()]:  # type: ignore[attr-defined]
        result = kforge(width, *([name] if name else []), "--help")
        assert result.returncode == 0, result.stderr
        text = result.stdout
        assert all(len(line) <= width for line in text.splitlines()), (name, text)
        for noise in ("<bool>", "<str>", "<int", "<float", "<path>", "<list", "BOOLEAN", "TEXT", "INTEGER",
                      "FLOAT", "…", "{"):
            assert noise not in text, (name, noise, text)
        for param in command.params:
            for option in (*param.opts, *param.secondary_opts):
                if option.startswith("-"):
                    assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), (name, option, text)
    optimize = " ".join(kforge(width, "optimize", "--help").stdout.split())
    for shown in ("--timeout SECONDS", "--out FILE", "--builtin-start / --no-builtin-start", "--rounds N",
                  "[default: 120.0]", "[default: builtin-start]", "Usage: kforge optimize [OPTIONS] [PROBLEM]"):
        assert shown in optimize, (shown, optimize)


def test_fold_breaks_only_after_separators_or_at_spaces() -> None:
    from kforge.reports.fit import fold, longest_piece

    assert fold("gated_channel_scale", 10) == "gated_\nchannel_\nscale"
    assert fold("generator:generate", 12) == "generator:\ngenerate"
    assert fold("openai:m: server error (HTTP 500)", 12) == "openai:m:\nserver error\n(HTTP 500)"
    assert fold("interrupted\n(Ctrl-C)", 11) == "interrupted\n(Ctrl-C)"
    assert fold("abcdefghij", 4) == "abcd\nefgh\nij"  # a piece longer than the width is the only one split
    assert longest_piece("level1_23_conv3d") == len("level1_")


def test_a_table_narrower_than_its_columns_drops_the_less_important_ones() -> None:
    from rich.console import Console

    from kforge.reports import runs_table

    rows = [{"run": 1, "created": "2025-12-04T18:49:00", "status": "interrupted", "stop_reason": None,
             "problem": "/p/gated_channel_scale.py", "model": "openai:gpt-4o", "runtime_ms": 8.012,
             "speedup_vs_eager": 8.12, "speedup_vs_compile": 3.31}]
    seen = {}
    for width in (100, 60, 52):
        console = Console(width=width, record=True, color_system=None)
        console.print(runs_table(rows))
        seen[width] = console.export_text()
        assert max(len(line) for line in seen[width].splitlines()) <= width
        assert "interrupted" in seen[width] and "8.12x" in seen[width] and "3.31x" in seen[width]
    assert "when" in seen[100] and "gpt-4o" in seen[100]
    assert "when" not in seen[60] and "gpt-4o" not in seen[60]


def test_runs_at_80_columns_drop_when_before_folding_a_model_name() -> None:
    from rich.console import Console

    from kforge.reports import runs_table

    def row(run: int, problem: str, model: str) -> dict[str, object]:
        return {"run": run, "created": "2025-12-04T18:49:00", "status": "finished", "stop_reason": None,
                "problem": problem, "model": model, "runtime_ms": 8.012, "speedup_vs_eager": 123.45,
                "speedup_vs_compile": 10.5}

    def printed(rows: list[dict[str, object]], width: int) -> tuple[list[str], dict[str, str], str]:
        console = Console(width=width, record=True, color_system=None)
        console.print(runs_table(rows))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        names = header(text)
        return names, {cells[0]: dict(zip(names, cells, strict=True))["model"] for cells in table_rows(text)}, text

    long = [row(1, f"/p/{LONG}.py", "anthropic:claude-sonnet-4-5"), row(2, "/p/scan.py", "openai:gpt-4o")]
    names, models, text = printed(long, 80)
    assert "when" not in names and models == {"1": "claude-sonnet-4-5", "2": "gpt-4o"}
    assert "claude-sonnet-4-5" in text  # on one line
    names, models, _ = printed(long, 120)
    assert names[1] == "when" and models["1"] == "claude-sonnet-4-5"
    names, _, _ = printed([row(1, "/p/scan.py", "openai:gpt-4o")], 80)  # short names: everything fits
    assert names[1] == "when"


def test_lines_printed_to_a_pipe_stay_whole_and_tables_keep_their_width(tmp_path: Path) -> None:
    # No terminal and no COLUMNS: rich lays tables out at 80 columns, and printed a line longer than that (a
    # `best:` line, an error) cut in two.
    path = tmp_path / "runs.db"
    with Store(path) as store:
        run = store.create_run(command="optimize", problem_path="/p/softmax.py", model="builtin")
        attempt = store.record_attempt(run.id, source="# slow", language="cpp", platform="cpu", made_by="builtin")
        store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": 8.012, "speedup_vs_eager": 0.89,
                                             "speedup_vs_compile": 0.42})
        store.finish_run(run.id, "finished", "finished")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    result = subprocess.run([sys.executable, "-m", "kforge", "show", "1", "--db", str(path)], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    best = [line for line in result.stdout.splitlines() if line.startswith("best:")]
    assert len(best) == 1 and len(best[0]) > 80 and best[0].endswith("the baseline is the better choice here")
    table = [line for line in result.stdout.splitlines() if "│" in line or "━" in line]
    assert table and all(len(line) <= 80 for line in table)
