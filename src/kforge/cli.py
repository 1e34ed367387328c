"""The `kforge` command line: parses, calls the library, prints. No logic of its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kforge import __version__
from kforge.platforms import PlatformError
from kforge.problem import ProblemError, SolutionError
from kforge.verify.evaluate import EvalOptions, TimingSettings, evaluate
from kforge.verify.policy import Policy
from kforge.verify.verdict import Verdict

app = typer.Typer(
    help="kforge: fast kernels written by LLM agents, proven correct and fast on real hardware.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()

EXIT_CORRECT, EXIT_NOT_CORRECT, EXIT_BAD_INPUT = 0, 1, 2


def _version(value: bool) -> None:
    if value:
        out.print(f"kforge {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """kforge: fast kernels written by LLM agents, proven correct and fast on real hardware."""


@app.command("eval")
def eval_command(
    problem: Annotated[Path, typer.Argument(help="Problem file: class Model, get_inputs(), get_init_inputs().")],
    solution: Annotated[Path, typer.Argument(help="Solution file defining class ModelNew.")],
    platform: Annotated[str, typer.Option(help="cpu, cuda, or auto (cuda when a GPU is present).")] = "auto",
    language: Annotated[str | None, typer.Option(help="cpp, cuda or triton; inferred from the source.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds each step of running the candidate may take.")] = 120.0,
    build_timeout: Annotated[float, typer.Option(help="Seconds compiling the candidate may take.")] = 900.0,
    memory_mb: Annotated[int, typer.Option(help="Memory limit of the worker process, MiB (0: none).")] = 8192,
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials, each with fresh random inputs.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed for parameters and inputs.")] = 0,
    baseline: Annotated[list[str] | None, typer.Option(
        help="Baselines to time: eager, compile (repeatable); default both.")] = None,
    no_baselines: Annotated[bool, typer.Option("--no-baselines", help="Time only the candidate.")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness only.")] = False,
    rep_ms: Annotated[float, typer.Option(help="Milliseconds of timed calls per measurement.")] = 1000.0,
    allow_vendor_gemm: Annotated[bool, typer.Option(
        help="Let the candidate call the vendor's GEMM/convolution (cuBLAS, oneDNN, cuDNN).")] = False,
    allow_op: Annotated[list[str] | None, typer.Option(help="Allow one more ATen operator, e.g. aten::mm.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")] = False,
) -> None:
    """Judge a candidate kernel against its PyTorch reference: correctness, policy, and speed.

    Exit status: 0 correct, 1 evaluated and not correct, 2 bad input.
    """
    policy = Policy(allow_ops=frozenset(allow_op or ()))
    if allow_vendor_gemm:
        policy = policy.allowing_vendor_gemm()
    baselines = () if no_baselines else tuple(baseline or ("eager", "compile"))
    unknown = set(baselines) - {"eager", "compile"}
    if unknown:
        _bad_input(f"unknown baseline {', '.join(sorted(unknown))}; choose eager or compile", as_json)
    options = EvalOptions(platform=platform, language=language, timeout_s=timeout, build_timeout_s=build_timeout,
                          memory_mb=memory_mb or None, trials=trials, seed=seed, baselines=baselines,
                          measure=not no_timing, policy=policy, timing=TimingSettings(rep_ms=rep_ms))
    try:
        if as_json:
            verdict = evaluate(problem, solution, options)
        else:
            with err.status("evaluating", spinner="dots") as status:
                verdict = evaluate(problem, solution, options, progress=lambda m: status.update(m))
    except (ProblemError, SolutionError, PlatformError) as exc:
        _bad_input(str(exc), as_json)
    if as_json:
        sys.stdout.write(json.dumps(verdict.to_json_dict()) + "\n")
    else:
        _print_verdict(verdict, problem, solution)
    raise typer.Exit(EXIT_CORRECT if verdict.correct else EXIT_NOT_CORRECT)


def _bad_input(message: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": message}) + "\n")
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(EXIT_BAD_INPUT)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _print_verdict(verdict: Verdict, problem: Path, solution: Path) -> None:
    colour = "green" if verdict.correct else "red"
    table = Table(title=f"{solution} vs {problem}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("verdict", f"[{colour}]{verdict.verdict}[/]")
    table.add_row("reason", verdict.reason)
    if verdict.rule:
        table.add_row("rule", verdict.rule)
    table.add_row("platform", f"{verdict.platform} ({verdict.language})")
    if verdict.max_abs_error is not None:
        table.add_row("max abs error", f"{verdict.max_abs_error:.3g} (relative norm {verdict.max_rel_norm_error:.3g})")
    if verdict.timing:
        spread = f" ± {verdict.timing.iqr_ms / 2:.3g} (IQR/2, {verdict.timing.repeats} runs)"
        table.add_row("candidate", _ms(verdict.runtime_ms) + spread)
        table.add_row("eager", f"{_ms(verdict.eager_ms)}  speedup {_times(verdict.speedup_vs_eager)}")
        table.add_row("torch.compile", f"{_ms(verdict.compile_ms)}  speedup {_times(verdict.speedup_vs_compile)}")
    if verdict.build_s is not None:
        table.add_row("build", f"{verdict.build_s:.1f} s")
    if verdict.eval_s is not None:
        table.add_row("evaluation", f"{verdict.eval_s:.1f} s")
    out.print(table)
    for warning in verdict.warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
