"""The `kforge` command line: parses, calls the library, prints. No logic of its own."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kforge import __version__
from kforge.verify.ratio import format_speedup, includes_one

if TYPE_CHECKING:
    from kforge.verify.verdict import Verdict

# Nothing that imports torch is imported here: `--version`, `--help`, `runs`, `show` and `rm` answer without it.
# Commands that judge or optimize import the harness when they start.
DEFAULT_TIMING_ROUNDS = 3  # TimingSettings().rounds (tests/test_cli.py checks they agree)

app = typer.Typer(
    help="kforge: fast kernels written by LLM agents, proven correct and fast on real hardware.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    # Click's plain help: option names whole, their help wrapped beside them at any width; every option that takes
    # a value names it (metavar=: SECONDS, N, FILE) instead of its Python type.
    rich_markup_mode=None,
)


class _Console(Console):
    """Rich's console, but a line printed where the output is no terminal (a pipe, a log, CI) stays whole: rich would
    wrap it at 80 columns there, and an error, a path or a `best:` line cut in two is hard to read or grep. Tables
    and other renderables keep their layout for the width (COLUMNS, else 80)."""

    def print(self, *objects: Any, **options: Any) -> None:
        if "soft_wrap" not in options and not self.is_terminal and all(isinstance(o, str) for o in objects):
            options["soft_wrap"] = True
        super().print(*objects, **options)


# No emoji codes: a reason such as "openai:m: error" must not print as "openaiⓂ error".
err = _Console(stderr=True, emoji=False)
out = _Console(emoji=False)

EXIT_CORRECT, EXIT_NOT_CORRECT, EXIT_BAD_INPUT = 0, 1, 2


class _Command(typer.core.TyperCommand):
    """Typer's command with its arguments shown as click shows them: by name (`PROBLEM`), without the Python type
    typer adds to their help (`PROBLEM <path>`) or the braces it puts around them in the usage line; and the
    options' help starting 26 columns in (click's 32 leaves 26 for it at 60 columns)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [piece[1:].replace("}", "", 1) if piece.startswith("{") else piece
                for piece in super().collect_usage_pieces(ctx)]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((record[0].split(" <", 1)[0], record[1]))
            else:
                options.append(record)
        for title, records in (("Arguments", arguments), ("Options", options)):
            if records:
                with formatter.section(title):
                    formatter.write_dl(records, col_max=24)  # longer names get a line of their own


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


@app.command("eval", cls=_Command, short_help="Judge a kernel: correctness, policy, speed.")
def eval_command(
    problem: Annotated[Path, typer.Argument(metavar="PROBLEM",
        help="Problem file: class Model, get_inputs(), get_init_inputs().")],
    solution: Annotated[Path, typer.Argument(metavar="SOLUTION", help="Solution file defining class ModelNew.")],
    platform: Annotated[str, typer.Option(metavar="PLATFORM",
        help="cpu, cuda, rocm, xpu, mps, or auto (a GPU when present; see kforge targets).")] = "auto",
    language: Annotated[str | None, typer.Option(metavar="LANGUAGE",
        help="cpp, cuda, triton, metal, sycl or hip; inferred from the source.")] = None,
    timeout: Annotated[float, typer.Option(metavar="SECONDS",
        help="Seconds each step of running the candidate may take.")] = 120.0,
    build_timeout: Annotated[float, typer.Option(metavar="SECONDS",
        help="Seconds compiling the candidate may take.")] = 900.0,
    memory_mb: Annotated[int, typer.Option(metavar="MIB",
        help="Memory limit of the worker process, MiB (0: none).")] = 8192,
    trials: Annotated[int, typer.Option(metavar="N", min=1,
        help="Correctness trials, each with fresh random inputs.")] = 3,
    seed: Annotated[int, typer.Option(metavar="N", help="Seed the models' parameters are drawn after.")] = 0,
    input_seed: Annotated[int | None, typer.Option(metavar="SEED", min=0, max=2**62 - 1, help=(
        "Base of the seeds every input is drawn after. Default: a secret one for each evaluation, so that a "
        "candidate cannot know its inputs ahead; give a verdict's input seed back to draw the same inputs."))] = None,
    baseline: Annotated[list[str] | None, typer.Option(metavar="NAME",
        help="Baselines to time: eager, compile (repeatable); default both.")] = None,
    no_baselines: Annotated[bool, typer.Option("--no-baselines", help="Time only the candidate.")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness only.")] = False,
    rep_ms: Annotated[float, typer.Option(metavar="MS", help="Milliseconds of timed calls per measurement.")] = 1000.0,
    rounds: Annotated[int, typer.Option(metavar="N", min=1, help=(
        "Rounds each measurement's timed calls are split into, taken in turn by the candidate and the "
        "baselines, so that a slow stretch of the machine weighs on all of them alike."))] = DEFAULT_TIMING_ROUNDS,
    allow_vendor_gemm: Annotated[bool, typer.Option(
        help="Let the candidate call the vendor's GEMM/convolution (cuBLAS, oneDNN, cuDNN).")] = False,
    allow_op: Annotated[list[str] | None, typer.Option(metavar="OP",
        help="Allow one more ATen operator, e.g. aten::mm.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")] = False,
    require_sandbox: Annotated[bool, typer.Option(
        "--require-sandbox", help="Refuse to run candidates where the kernel cannot enforce the sandbox "
                                  "(default: go on, with a warning).")] = False,
) -> None:
    """Judge a candidate kernel against its PyTorch reference: correctness, policy, and speed.

    Exit status: 0 correct, 1 evaluated and not correct, 2 bad input.
    """
    _need_file(problem, "problem", as_json)
    _need_file(solution, "solution", as_json)
    from kforge.platforms import PlatformError
    from kforge.problem import ProblemError, SolutionError
    from kforge.verify.evaluate import evaluate
    from kforge.verify.policy import Policy
    from kforge.verify.sandbox import SandboxUnavailable
    policy = Policy(allow_ops=frozenset(allow_op or ()))
    if allow_vendor_gemm:
        policy = policy.allowing_vendor_gemm()
    options = _eval_options(as_json, rep_ms=rep_ms, rounds=rounds, baselines=baseline, no_baselines=no_baselines,
                            platform=platform, language=language, timeout_s=timeout, build_timeout_s=build_timeout,
                            memory_mb=memory_mb or None, trials=trials, seed=seed, input_seed=input_seed,
                            measure=not no_timing, policy=policy, require_sandbox=require_sandbox)
    try:
        if as_json:
            verdict = evaluate(problem, solution, options)
        else:
            with err.status("evaluating", spinner="dots") as status:
                verdict = evaluate(problem, solution, options, progress=lambda m: status.update(Text(m)))
    except (ProblemError, SolutionError, PlatformError, SandboxUnavailable) as exc:
        _bad_input(str(exc), as_json)
    if as_json:
        sys.stdout.write(json.dumps(verdict.to_json_dict()) + "\n")
    else:
        _print_verdict(verdict, problem, solution)
    raise typer.Exit(EXIT_CORRECT if verdict.correct else EXIT_NOT_CORRECT)


def _say_sandbox(required: bool) -> None:
    """One line when this machine cannot enforce the whole sandbox; with `required`, that is an error."""
    from kforge.verify.confine import probe
    from kforge.verify.sandbox import SandboxUnavailable

    missing = probe()
    if not missing:
        return
    if required:
        raise SandboxUnavailable(f"the sandbox cannot be enforced here: {'; '.join(missing)}")
    err.print(f"[yellow]warning:[/] sandbox not fully enforced on this machine: {escape('; '.join(missing))}",
              highlight=False)


def _bad_input(message: str, as_json: bool) -> NoReturn:
    if as_json:
        sys.stdout.write(json.dumps({"error": message}) + "\n")
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(EXIT_BAD_INPUT)


def _eval_options(as_json: bool = False, *, rep_ms: float, rounds: int, baselines: list[str] | None,
                  no_baselines: bool = False, **settings: Any) -> Any:
    """The one way a command's flags become EvalOptions: baselines default to both and are checked by name, the
    timing from --rep-ms and --timing-rounds (--rounds for eval); bad input (exit 2) for anything EvalOptions
    refuses."""
    from pydantic import ValidationError

    from kforge.verify.evaluate import EvalOptions, TimingSettings

    try:
        return EvalOptions(baselines=() if no_baselines else tuple(baselines or ("eager", "compile")),
                           timing=TimingSettings(rep_ms=rep_ms, rounds=rounds), **settings)
    except ValidationError as exc:
        _bad_input("; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()), as_json)


def _need_file(path: Path, what: str, as_json: bool) -> None:
    """Bad input, said before anything imports torch (seconds), when `path` is no file."""
    if not path.is_file():
        _bad_input(f"{what} file not found: {path}", as_json)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"


def _speedup(value: float | None, interval: tuple[float, float] | None) -> str:
    """`1.90x (1.62-2.31)`, and where the interval holds 1.0 that the candidate is not shown faster."""
    text = format_speedup(value, interval)
    return text + ", not shown faster or slower (the interval holds 1.0x)" if includes_one(interval) else text


def _print_verdict(verdict: Verdict, problem: Path, solution: Path) -> None:
    colour = "green" if verdict.correct else "red"
    table = Table(title=f"{solution} vs {problem}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("verdict", f"[{colour}]{verdict.verdict}[/]")
    table.add_row("reason", Text(verdict.reason))
    if verdict.rule:
        table.add_row("rule", Text(verdict.rule))
    table.add_row("platform", f"{verdict.platform} ({verdict.language})")
    if verdict.max_abs_error is not None:
        table.add_row("max abs error", f"{verdict.max_abs_error:.3g} (relative norm {verdict.max_rel_norm_error:.3g})")
    if verdict.timing:
        spread = f" ± {verdict.timing.iqr_ms / 2:.3g} (IQR/2, {verdict.timing.repeats} runs)"
        table.add_row("candidate", _ms(verdict.runtime_ms) + spread)
        table.add_row("eager", f"{_ms(verdict.eager_ms)}  speedup "
                      f"{_speedup(verdict.speedup_vs_eager, verdict.speedup_vs_eager_interval)}")
        table.add_row("torch.compile", f"{_ms(verdict.compile_ms)}  speedup "
                      f"{_speedup(verdict.speedup_vs_compile, verdict.speedup_vs_compile_interval)}")
        if verdict.timing_rounds is not None:
            table.add_row("rounds", f"{verdict.timing_rounds} (candidate and baselines timed in turn)")
        if verdict.machine_busy:
            table.add_row("machine", Text(verdict.machine_busy))
    if verdict.build_s is not None:
        table.add_row("build", f"{verdict.build_s:.1f} s")
    if verdict.eval_s is not None:
        table.add_row("evaluation", f"{verdict.eval_s:.1f} s")
    if verdict.input_seed is not None:
        seed = verdict.input_seed
        table.add_row("input seed", f"{seed} (--input-seed {seed} draws these inputs again)")
    out.print(table)
    for warning in verdict.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


DbOption = Annotated[Path | None, typer.Option("--db", metavar="FILE",
        help="Run database (default: per-user, see docs).")]


# The options of `optimize --resume` besides the run's own settings: its store, where the best goes, the bar it must
# pass, the model's server, the budgets, the cache and the sandbox (pipelines/request.py, ResumeChanges). A resumed
# run takes everything else from its record.
_SAID_AGAIN_ON_RESUME = frozenset({"resume", "db", "out_file", "min_speedup", "base_url", "time_budget", "max_usd",
                                   "max_calls", "no_cache", "require_sandbox"})


@app.command("optimize", cls=_Command, short_help="Find a fast, correct kernel for a problem.")
def optimize_command(
    ctx: typer.Context,
    problem: Annotated[Path | None, typer.Argument(metavar="PROBLEM",
        help="Problem file (not needed with --resume).")] = None,
    platform: Annotated[str, typer.Option(metavar="PLATFORM",
        help="cpu, cuda, rocm, xpu, mps, or auto (see kforge targets).")] = "auto",
    language: Annotated[str | None, typer.Option(metavar="LANGUAGE",
        help="cpp, cuda, triton, metal, sycl or hip (default: the platform's first).")] = None,
    model: Annotated[str | None, typer.Option(metavar="PROVIDER:MODEL",
        help="PROVIDER:MODEL, e.g. openai:gpt-4o or anthropic:claude-x; builtin for the engine (no LLM).")] = None,
    base_url: Annotated[str | None, typer.Option(metavar="URL",
        help="Server URL of an OpenAI- or Anthropic-compatible API.")] = None,
    reference: Annotated[Path | None, typer.Option(metavar="FILE",
        help="A working solution for another platform, to translate from.")] = None,
    builtin_start: Annotated[bool, typer.Option(
        help="Start the LLM loop from the builtin engine's kernel, and let it serve the staged pipeline's "
             "autotuning stage, when it can lower the problem.")] = True,
    rounds: Annotated[int, typer.Option(metavar="N", min=0,
        help="Optimization rounds after the first correct kernel.")] = 3,
    attempts: Annotated[int, typer.Option(metavar="N", min=1, help="Attempts allowed to reach a correct kernel.")] = 5,
    candidates: Annotated[int, typer.Option(metavar="N", min=1,
        help="Candidates requested concurrently per step.")] = 1,
    patience: Annotated[int, typer.Option(metavar="N", min=1,
        help="Stop after this many rounds without improvement.")] = 2,
    out_file: Annotated[Path | None, typer.Option("--out", metavar="FILE",
        help="Write the best solution here (a standalone file that runs without kforge).")] = None,
    resume: Annotated[int | None, typer.Option(metavar="RUN", help=(
        "Resume run RUN where it stopped (interrupted, killed, failed or finished), with every setting it "
        "started with, --out included. Given again, --out and the options of the speedup bar, the server, "
        "the budgets, the cache and the sandbox hold for this resume; any other option is refused "
        "(docs/optimize.md, Resuming)."))] = None,
    db: DbOption = None,
    images: Annotated[bool, typer.Option(help="Send profile charts as images (for models that accept them).")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Always ask the model, never the store.")] = False,
    max_usd: Annotated[float | None, typer.Option(metavar="USD", help="Budget: US dollars for the run.")] = None,
    max_calls: Annotated[int | None, typer.Option(metavar="N", help="Budget: LLM calls for the run.")] = None,
    timeout: Annotated[float, typer.Option(metavar="SECONDS",
        help="Seconds each step of running a candidate may take.")] = 120.0,
    rep_ms: Annotated[float, typer.Option(metavar="MS", help="Milliseconds of timed calls per measurement.")] = 1000.0,
    timing_rounds: Annotated[int, typer.Option(metavar="N", min=1, help=(
        "Rounds each measurement's timed calls are split into, taken in turn with the baselines' "
        "(see kforge eval --rounds)."))] = DEFAULT_TIMING_ROUNDS,
    baseline: Annotated[list[str] | None, typer.Option(metavar="NAME",
        help="Baselines to time: eager, compile.")] = None,
    pipeline: Annotated[str, typer.Option(metavar="NAME",
        help="loop (KForge: generate, analyse, refine) or staged (Xe-Forge: analyzer, planner, stages).")] = "loop",
    kernel: Annotated[Path | None, typer.Option(metavar="FILE",
        help="Staged: a correct starting kernel (default: the loop's first correct candidate).")] = None,
    stages: Annotated[str | None, typer.Option(metavar="LIST",
        help="Staged: stages to use, comma-separated (e.g. fusion,memory_access), or -name to skip one.")] = None,
    retries: Annotated[int, typer.Option(metavar="N", min=0,
        help="Staged: retries per stage after its first try.")] = 2,
    allow_vendor_gemm: Annotated[bool, typer.Option(
        help="Let candidates call the vendor's GEMM/convolution (cuBLAS, oneDNN, cuDNN); the builtin engine "
             "then offers variants that do.")] = False,
    require_sandbox: Annotated[bool, typer.Option(
        "--require-sandbox", help="Refuse to run candidates where the kernel cannot enforce the sandbox "
                                  "(default: go on, with a warning).")] = False,
    min_speedup: Annotated[float | None, typer.Option(metavar="X",
        help="Count the run as not successful (exit 1) when its best is not at least this many times faster "
             "than PyTorch eager; the kernel is still written.")] = None,
    time_budget: Annotated[float | None, typer.Option(metavar="SECONDS", min=1,
        help="Seconds of search: the builtin engine's tuning and the model's calls (default: the model's "
                    "budgets alone; the engine tunes for at most 600 s).")] = None,
) -> None:
    """Generate, verify and refine a kernel: the KForge loop, or the staged pipeline (--pipeline staged).

    Exit status: 0 when a correct solution was found (and written with --out), 1 when none was, 2 for bad input.
    """
    if problem is not None:
        _need_file(problem, "problem", False)
    from kforge.config import ConfigError, load_settings
    from kforge.engine.capture import LoweringError
    from kforge.llm import LLMError
    from kforge.pipelines.loop import LoopSettings
    from kforge.pipelines.optimize import OptimizeError, StoreError, check_builtin, resume_request, start_run
    from kforge.pipelines.request import BUILTIN, ResumeChanges, build_request, resumed_budget
    from kforge.platforms import PlatformError
    from kforge.problem import ProblemError, SolutionError
    from kforge.store import Store
    from kforge.verify.sandbox import SandboxUnavailable

    try:
        settings = load_settings({"model": model, "base_url": base_url, "db": db, "no_cache": no_cache or None,
                                  "max_usd": max_usd, "max_calls": max_calls})
        eval_options = _eval_options(rep_ms=rep_ms, rounds=timing_rounds, baselines=baseline, timeout_s=timeout,
                                     require_sandbox=require_sandbox)
        with Store(settings.db_path) as store:
            if resume is not None:
                _refuse_settings_given_again(ctx, resume)
                recorded = resume_request(store, resume, eval_options, base_url=settings.base_url)
                changes = ResumeChanges(out=out_file, min_speedup=min_speedup, base_url=base_url,
                                        time_budget_s=time_budget, require_sandbox=require_sandbox)
                request = changes.applied_to(recorded)
                for note in changes.notes(recorded):
                    err.print(note, markup=False, highlight=False, soft_wrap=True)
                budget = resumed_budget(store, resume, settings.budget())
                run_id = resume
            else:
                if problem is None:
                    _bad_input("give a PROBLEM file, or --resume RUN_ID", False)
                if settings.model is None:
                    err.print("no model configured: using the builtin engine (--model PROVIDER:MODEL for an LLM)",
                              markup=False, highlight=False)
                request = build_request(
                    problem, model=settings.model, platform=platform, language=language, pipeline=pipeline,
                    kernel=kernel, stages=stages, reference=reference, retries=retries, eval_options=eval_options,
                    loop=LoopSettings(attempts=attempts, rounds=rounds, candidates=candidates, patience=patience),
                    send_images=images, max_output_tokens=settings.max_output_tokens,
                    temperature=settings.temperature, builtin_start=builtin_start, allow_vendor_gemm=allow_vendor_gemm,
                    time_budget_s=time_budget, base_url=settings.base_url, out=out_file, min_speedup=min_speedup)
                if request.model == BUILTIN:
                    check_builtin(request)  # a problem it cannot lower ends here, before a run is recorded
                budget = settings.budget()
            _say_sandbox(request.eval_options.require_sandbox)
            chat = _chat_model(request, settings)  # a model that cannot be used ends here too
            if resume is None:
                run_id = start_run(store, request, budget)
            else:
                store.resume_run(resume)  # refused while another process still runs it
            _run_and_report(store, run_id, request, chat, budget, not settings.no_cache, db)
    except (ProblemError, SolutionError, PlatformError, ConfigError, OptimizeError, StoreError,
            SandboxUnavailable) as exc:
        _bad_input(str(exc), False)
    except (LLMError, LoweringError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_NOT_CORRECT) from None


def _refuse_settings_given_again(ctx: typer.Context, run_id: int) -> None:
    """Bad input when the command line of `--resume` names a setting the run keeps from its record."""
    def typed(param: Any) -> bool:
        # By the source's name: typer carries its own copy of click, whose ParameterSource is not click's.
        source = ctx.get_parameter_source(param.name or "")
        return source is not None and source.name == "COMMANDLINE"

    given = [param for param in ctx.command.params if param.name not in _SAID_AGAIN_ON_RESUME and typed(param)]
    if given:
        names = ", ".join("/".join(p.opts + p.secondary_opts) if p.param_type_name == "option"
                          else str(getattr(p, "human_readable_name", p.name)) for p in given)
        _bad_input(f"run {run_id} keeps the settings it started with: drop {names} from --resume, or start a new "
                   "run to change them", False)


def _chat_model(request: Any, settings: Any) -> Any:
    """The request's chat model (None for the builtin engine); a model name or key that cannot work is bad input,
    said before any run is recorded."""
    from kforge.llm import LLMError
    from kforge.pipelines.request import BUILTIN

    if request.model == BUILTIN:
        return None
    try:
        return settings.model_copy(update={"model": request.model, "base_url": request.base_url}).chat_model()
    except LLMError as exc:
        _bad_input(str(exc), False)


def _run_and_report(store: Any, run_id: int, request: Any, chat: Any, budget: Any, use_cache: bool,
                    db: Path | None) -> None:
    """Run the request with live progress, print its attempts and its best, write the best to the request's `out`.
    Whatever stops the run, the best correct kernel so far is written, and a run that can go on says how to resume
    it."""
    from kforge.pipelines.events import Event
    from kforge.pipelines.optimize import run_request
    from kforge.reports import attempts_table, costs_line, stored_best_line
    from kforge.reports.trial_tree import trial_tree

    resume = f"kforge optimize --resume {run_id}" + (f" --db {db}" if db else "")
    err.print(f"run {run_id}: {request.problem} on {request.platform} ({request.language}) with {request.model}",
              markup=False, highlight=False)
    try:
        with err.status("starting", spinner="dots") as status:
            def on_event(event: Event) -> None:
                status.update(Text(event.text))
                # On a terminal the spinner shows each step; elsewhere (a log, CI) each step is a line.
                if event.lasting or (event.kind == "status" and not err.is_terminal):
                    err.print(f"  {event.text}", markup=False, highlight=False)

            outcome = run_request(store, run_id, request, chat, budget, use_cache=use_cache, on_event=on_event)
    except KeyboardInterrupt:
        _write_best_so_far(store, run_id, request.out)
        err.print(f"interrupted; everything judged is kept. Resume with: {resume}", markup=False, highlight=False)
        raise typer.Exit(130) from None
    out.print(attempts_table(store, run_id))
    tree = trial_tree(store, run_id)
    if tree is not None:
        out.print(tree, markup=False, highlight=False)
    out.print(costs_line(store, run_id), markup=False, highlight=False)
    result = outcome.result
    err.print(f"stopped: {result.stop_reason}", markup=False, highlight=False)
    can_go_on = result.stop.can_go_on
    resume = _resume_hint(result.stop, resume)
    if result.best is None:
        if can_go_on:
            err.print(f"resume with: {resume}", markup=False, highlight=False)
        raise typer.Exit(EXIT_NOT_CORRECT)
    verdict = result.best.verdict
    assert verdict is not None
    again = outcome.confirmation
    shown = again if again is not None and again.correct else verdict
    out.print(stored_best_line(store, run_id), markup=False, highlight=False)  # the same line `kforge show` prints
    if request.out is not None:
        request.out.parent.mkdir(parents=True, exist_ok=True)
        request.out.write_text(result.best.source)
        out.print(f"wrote {request.out}", markup=False, highlight=False, soft_wrap=True)  # a path stays whole
    if again is not None and not again.correct:
        err.print(f"[bold red]the best did not pass when judged again at the end:[/] {again.verdict}: "
                  f"{escape(again.reason)}", highlight=False)
        raise typer.Exit(EXIT_NOT_CORRECT)
    if can_go_on:
        err.print(f"the run stopped early; resume with: {resume}", markup=False, highlight=False)
    bar = request.min_speedup
    if bar is not None and (shown.speedup_vs_eager or 0.0) < bar:
        achieved = ("not timed" if shown.speedup_vs_eager is None else
                    format_speedup(shown.speedup_vs_eager, shown.speedup_vs_eager_interval))
        err.print(f"[bold red]below --min-speedup:[/] the best is {achieved} vs eager, {bar:g}x asked",
                  highlight=False)
        raise typer.Exit(EXIT_NOT_CORRECT)


def _resume_hint(stop: Any, resume: str) -> str:
    """The command that resumes the run (`stop`: its StopKind). A resumed run keeps the LLM budget it started with,
    and what it spent counts again, so one stopped by that budget needs a larger one (the time budget starts
    afresh)."""
    from kforge.pipelines.stop import StopKind

    if stop is StopKind.LLM_BUDGET:
        return f"{resume} and a larger budget (--max-usd, --max-calls, or KFORGE_MAX_TOKENS)"
    return resume


def _write_best_so_far(store: Any, run_id: int, out_file: Path | None) -> None:
    """The run's best correct kernel so far, from the store, to `out_file` (a run cut short keeps its work)."""
    best = store.best_attempt(run_id)
    if out_file is None or best is None:
        return
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(best.attempt.source)
    err.print(f"wrote the best so far (attempt {best.attempt.number}) to {out_file}", markup=False, highlight=False,
              soft_wrap=True)


@app.command("suite", cls=_Command, short_help="Optimize or judge a folder of problems.")
def suite_command(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH",
        help="Problem files, or folders searched for them recursively.")],
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR",
        help="Folder for results.jsonl, summary.json and the reports.")],
    model: Annotated[str | None, typer.Option(metavar="PROVIDER:MODEL",
        help="PROVIDER:MODEL, or builtin for the engine (the default when no model is configured).")] = None,
    base_url: Annotated[str | None, typer.Option(metavar="URL",
        help="Server URL of an OpenAI- or Anthropic-compatible API.")] = None,
    platform: Annotated[str, typer.Option(metavar="PLATFORM",
        help="cpu, cuda, rocm, xpu, mps, or auto (see kforge targets).")] = "auto",
    language: Annotated[str | None, typer.Option(metavar="LANGUAGE",
        help="cpp, cuda, triton, metal, sycl or hip (default: the platform's first).")] = None,
    solutions: Annotated[Path | None, typer.Option(metavar="DIR",
        help="Judge the solutions in this folder (same file names as the problems) instead of optimizing.")] = None,
    workers: Annotated[int | None, typer.Option(metavar="N", min=1,
        help="Problems at once: default one per GPU on a GPU platform, one on a CPU. More than one per device "
             "overlap their builds and checks; timing still runs alone.")] = None,
    ray: Annotated[str | None, typer.Option("--ray", metavar="ADDRESS",
        help="Run on a Ray cluster: auto (a running one, else a local one) or its ADDRESS; one slot per "
                      "GPU of the cluster (pip install 'kforge[ray]').")] = None,
    time_budget: Annotated[float | None, typer.Option(metavar="SECONDS", help="Seconds of search per problem.")] = None,
    db: DbOption = None,
    timeout: Annotated[float, typer.Option(metavar="SECONDS",
        help="Seconds each step of running a candidate may take.")] = 120.0,
    rep_ms: Annotated[float, typer.Option(metavar="MS", help="Milliseconds of timed calls per measurement.")] = 1000.0,
    timing_rounds: Annotated[int, typer.Option(metavar="N", min=1, help=(
        "Rounds each measurement's timed calls are split into, taken in turn with the baselines' "
        "(see kforge eval --rounds)."))] = DEFAULT_TIMING_ROUNDS,
    baseline: Annotated[list[str] | None, typer.Option(metavar="NAME",
        help="Baselines to time: eager, compile.")] = None,
    require_sandbox: Annotated[bool, typer.Option(
        "--require-sandbox", help="Refuse to run candidates where the kernel cannot enforce the sandbox.")] = False,
) -> None:
    """Optimize (or, with --solutions, judge) every problem of a folder; results.jsonl, summary.json,
    report.md and report.html in --out. Run the same command again to continue where it stopped.

    Exit status: 0 when every problem has its row (solved or not), 2 for bad input, 130 when interrupted.
    """
    from kforge.suite.discover import SuiteError, find_problems

    try:
        problems = find_problems(paths)  # read, not imported: a wrong path is answered before torch loads
    except SuiteError as exc:
        _bad_input(str(exc), False)
    from kforge.suite.admission import gb
    from kforge.suite.ray_pool import RayUnavailable, ray_slots
    from kforge.suite.runner import LocalSlot, SlotRunner, finish, gpu_memory, run_suite, slots_for
    from kforge.suite.task import TaskSpec
    from kforge.verify.sandbox import SandboxUnavailable

    try:
        _say_sandbox(require_sandbox)
        options = _eval_options(rep_ms=rep_ms, rounds=timing_rounds, baselines=baseline, timeout_s=timeout,
                                require_sandbox=require_sandbox)
    except SandboxUnavailable as exc:
        _bad_input(str(exc), False)

    def spec(problem: Any) -> TaskSpec:
        judged = None if solutions is None else str((solutions / Path(problem.name)).resolve())
        return TaskSpec(problem=problem.name, path=str(problem.path), mode="judge" if solutions else "optimize",
                        solution=judged, model=model, base_url=base_url, platform=platform, language=language,
                        db=str(db) if db else None, time_budget_s=time_budget, eval_options=options)

    try:
        slots = slots_for(platform, workers) if not ray else []
        runners: list[SlotRunner] = ray_slots(ray, workers) if ray else [LocalSlot(slot, out_dir) for slot in slots]
    except RayUnavailable as exc:
        _bad_input(str(exc), False)
    memory = gpu_memory(platform, slots)
    err.print(f"suite: {len(problems)} problems, {len(runners)} at once ({', '.join(r.name for r in runners)}), "
              f"results in {out_dir}", markup=False, highlight=False)
    if memory is not None:
        err.print("slots sharing a GPU start a problem once its estimated memory fits: "
                  + ", ".join(f"gpu {gpu} {gb(usable)}" for gpu, usable in memory.usable.items()),
                  markup=False, highlight=False)
    try:
        rows = _with_progress(lambda show, line, note: run_suite(problems, spec, out_dir, runners, show, line,
                                                                 memory, note))
    except KeyboardInterrupt:
        err.print("interrupted: every finished problem is kept; run the same command again to continue",
                  markup=False, highlight=False)
        raise typer.Exit(130) from None
    summary = finish(rows, out_dir)
    from kforge.suite.report import headline

    for line in headline(summary):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    out.print(f"wrote {out_dir / 'report.html'}", markup=False, highlight=False, soft_wrap=True)


def _with_progress(run: Any) -> Any:
    """Call `run(show, line, note)` with a live view on a terminal (done/total, each slot's problem, ETA), or one
    line per finished problem otherwise; `note` prints a line either way."""
    from rich.live import Live

    def line(row: Any) -> None:
        speedup = (f" {format_speedup(row.speedup_vs_eager, row.speedup_vs_eager_interval)} vs eager"
                   if row.speedup_vs_eager else "")
        if row.machine_busy:
            speedup += " (busy machine)"
        err.print(f"{row.problem}: {row.status}{speedup} ({row.wall_s:.0f} s)", markup=False, highlight=False,
                  soft_wrap=True)

    def note(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    if not err.is_terminal:
        return run(None, line, note)
    with Live(console=err, refresh_per_second=2, transient=True) as live:
        def show(progress: Any) -> None:
            with progress.lock:
                eta = progress.eta_s()
                rows = [f"{progress.done}/{progress.total} done"
                        + (f", about {eta / 60:.0f} min left" if eta is not None else "")]
                rows += [f"  {slot}: {text}" for slot, text in sorted(progress.running.items())]
            live.update("\n".join(rows))

        return run(show, lambda row: live.console.print(f"{row.problem}: {row.status}", markup=False, highlight=False),
                   lambda text: live.console.print(text, markup=False, highlight=False, soft_wrap=True))


@app.command("targets", cls=_Command, short_help="List platforms and languages: device here, where verified.")
def targets_command(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per target, one per line.")] = False,
) -> None:
    """Every platform and language kforge can target: whether its device is on this machine, and where the
    target last passed its tests on real hardware."""
    from kforge.platforms.targets import target_statuses

    rows = target_statuses()
    if as_json:
        sys.stdout.write("".join(json.dumps(row.as_dict()) + "\n" for row in rows))
    else:
        for row in rows:  # on a terminal, folded at words to its width, the rest of a line indented under it
            line = textwrap.fill(row.line, out.width, subsequent_indent="    ", break_long_words=False,
                                 break_on_hyphens=False) if out.is_terminal else row.line
            out.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("runs", cls=_Command, short_help="List recorded runs and how each ended.")
def runs_command(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(metavar="N", help="Show at most this many runs.")] = 20,
    status: Annotated[str | None, typer.Option(metavar="STATUS",
        help="Only runs with this status: running, finished, failed, "
                                                    "interrupted.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per run, one per line.")] = False,
) -> None:
    """List recorded runs, newest first: how each ended, and its best kernel's runtime and speedups. A run whose
    process is gone without ending it (killed, say) is listed as interrupted."""
    from kforge.config import ConfigError, load_settings
    from kforge.reports import run_summary, runs_table
    from kforge.store import RUN_STATUSES, Store, StoreError

    if status is not None and status not in RUN_STATUSES:
        _bad_input(f"unknown status {status!r}; choose one of {', '.join(RUN_STATUSES)}", as_json)
    try:
        with Store(load_settings({"db": db}).db_path) as store:
            rows = [run_summary(store, run) for run in store.list_runs(limit=limit, status=status)]  # type: ignore[arg-type]
    except (ConfigError, StoreError) as exc:
        _bad_input(str(exc), as_json)
    if as_json:
        sys.stdout.write("".join(json.dumps(row) + "\n" for row in rows))
    else:
        out.print(runs_table(rows))


@app.command("rm", cls=_Command, short_help="Remove runs from the store.")
def rm_command(
    run_ids: Annotated[list[int], typer.Argument(metavar="RUN",
        help="The runs to remove, with everything recorded with them.")],
    db: DbOption = None,
) -> None:
    """Remove runs from the store (their attempts, evaluations, model calls and profiles too)."""
    from kforge.config import ConfigError, load_settings
    from kforge.store import Store, StoreError

    try:
        with Store(load_settings({"db": db}).db_path) as store:
            missing = [run_id for run_id in run_ids if store.get_run(run_id) is None]
            if missing:
                _bad_input(f"no run {', '.join(map(str, missing))} in the store (nothing was removed)", False)
            for run_id in run_ids:
                store.delete_run(run_id)
                out.print(f"removed run {run_id}", markup=False, highlight=False)
    except (ConfigError, StoreError) as exc:
        _bad_input(str(exc), False)


@app.command("show", cls=_Command, short_help="Show a run's attempts, best and costs.")
def show_command(run_id: Annotated[int, typer.Argument(metavar="RUN",
        help="The run to show.")], db: DbOption = None) -> None:
    """Show a run's attempts, its best candidate and its costs; for a staged run, its trial tree."""
    from kforge.config import ConfigError, load_settings
    from kforge.reports import attempts_table, costs_line, stored_best_line
    from kforge.reports.trial_tree import trial_tree
    from kforge.store import Store, StoreError

    try:
        with Store(load_settings({"db": db}).db_path) as store:
            run = store.get_run(run_id)
            if run is None:
                _bad_input(f"no run {run_id} in the store", False)
            assert run is not None
            problem = f" {run.problem_path}" if run.problem_path else ""
            target = f" on {run.platform}/{run.language}" if run.platform and run.language else ""
            out.print(f"run {run.id}: {run.command}{problem}{target} "
                      f"with {run.model or '-'} ({_ending(run.status, run.stop_reason)})", markup=False,
                      highlight=False)
            out.print(attempts_table(store, run_id))
            tree = trial_tree(store, run_id)
            if tree is not None:
                out.print(tree, markup=False, highlight=False)
            out.print(stored_best_line(store, run_id), markup=False, highlight=False)
            out.print(costs_line(store, run_id), markup=False, highlight=False)
    except (ConfigError, StoreError) as exc:
        _bad_input(str(exc), False)


def _ending(status: str, reason: str | None) -> str:
    """How a run ended, as `show` says it: `failed: no API key`, `interrupted (Ctrl-C)`, `running`."""
    if not reason or reason == status:
        return status
    return reason if reason.startswith(status) else f"{status}: {reason}"


@app.command("export", cls=_Command, short_help="Write a run's best kernel, ready for your code.")
def export_command(
    run_id: Annotated[int, typer.Argument(metavar="RUN", help="The run to export.")],
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR", help="Directory for solution.py and run.json.")],
    as_op: Annotated[str | None, typer.Option(
        "--as-op", metavar="NAME", help="Also write NAME_op.py: the kernel as torch.ops.kforge.NAME, a layer "
                                        "usable in a model and under torch.compile.")] = None,
    build: Annotated[bool, typer.Option(
        help="Bundle the C++/CUDA libraries built for this machine, so the first import does not compile.")] = True,
    db: DbOption = None,
) -> None:
    """Write a run's best solution (with its libraries built for this machine), a JSON record of the whole
    run, and with --as-op a custom operator module. See docs/export.md."""
    from kforge.config import ConfigError, load_settings
    from kforge.export.custom_op import OperatorNameError
    from kforge.export.run import ExportError, export_run
    from kforge.store import Store, StoreError

    try:
        with Store(load_settings({"db": db}).db_path) as store, \
                err.status("exporting (building the kernel's libraries if the cache lacks them)"):
            report = export_run(store, run_id, out_dir, as_op=as_op, build=build)
    except (ConfigError, StoreError, ExportError, OperatorNameError) as exc:
        _bad_input(str(exc), False)
    for note in report.notes:
        err.print(f"note: {note}", markup=False, highlight=False)
    for path in report.written:
        out.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
