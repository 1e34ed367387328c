"""Nsight Compute, where it is installed: the command line that profiles a script, and its CSV as a Profile.

ncu replays each kernel in isolation, so its durations carry no launch gaps and no host overhead; the
profile it gives has no wall time. It is optional: `ncu_path()` says whether this machine has it.

The command asks for the raw page with one metric (`gpu__time_duration.sum`), which is one CSV row per
kernel launch. The parser also reads the default details page, where the duration is the `Duration` row
of the Speed Of Light section, so a CSV produced by hand with either page works.
"""

from __future__ import annotations

import csv
import io
import shutil
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from kforge.profiling.schema import Profile, kernel_rows

DURATION_METRIC = "gpu__time_duration.sum"
#: a push/pop range to wrap each forward call in (torch.cuda.nvtx.range) so only those kernels are profiled
NVTX_RANGE = "kforge_forward"

_NAME_COLUMNS = ("Kernel Name", "Function Name", "Name")
_DURATION_NAMES = ("Duration", DURATION_METRIC)
_TO_MICROSECONDS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                    "second": 1e6, "s": 1e6}


class NcuError(RuntimeError):
    """ncu is missing or its output cannot be read; the message is one line for the user."""


def ncu_path() -> str | None:
    """Where `ncu` is on PATH, or None."""
    return shutil.which("ncu")


def ncu_command(script: str | Path, script_args: Sequence[str] = (), *, python: str = sys.executable,
                ncu: str | None = None, nvtx_range: str | None = NVTX_RANGE, kernel_regex: str | None = None,
                launch_skip: int = 0, launch_count: int | None = None) -> list[str]:
    """The command that profiles `python script *script_args` and prints one CSV row per kernel launch.

    With `nvtx_range`, only kernels inside that NVTX push/pop range are profiled (pass None when the
    script does not mark its forward calls). Raises NcuError when ncu is not installed.
    """
    executable = ncu or ncu_path()
    if executable is None:
        raise NcuError("Nsight Compute (ncu) is not on PATH; install the CUDA toolkit's nsight-compute")
    command = [executable, "--csv", "--page", "raw", "--metrics", DURATION_METRIC, "--target-processes", "all"]
    if nvtx_range:
        command += ["--nvtx", "--nvtx-include", f"{nvtx_range}/"]
    if kernel_regex:
        command += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip:
        command += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        command += ["--launch-count", str(launch_count)]
    return [*command, python, str(script), *script_args]


def parse_ncu_csv(text: str) -> dict[str, tuple[int, float]]:
    """{kernel name: (launches, total microseconds)} from ncu's CSV (raw or details page)."""
    lines = text.splitlines()
    start = next((index for index, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise NcuError("no ncu CSV table found (was ncu run with --csv?)")
    records = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    if not records:
        return {}
    columns = records[0].keys()
    name_column = next((column for column in _NAME_COLUMNS if column in columns), None)
    if name_column is None:
        raise NcuError("the ncu CSV has no kernel name column")
    launches = _details_launches(records, name_column) if "Metric Name" in columns else \
        _raw_launches(records, name_column)
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for name, microseconds in launches.values():
        totals[name][0] += 1
        totals[name][1] += microseconds
    return {name: (int(count), total) for name, (count, total) in totals.items()}


def _raw_launches(records: list[dict[str, str]], name_column: str) -> dict[str, tuple[str, float]]:
    if DURATION_METRIC not in records[0]:
        raise NcuError(f"the ncu CSV has no {DURATION_METRIC} column (profile with --metrics {DURATION_METRIC})")
    # The row after the header gives each metric's unit and has no ID.
    unit = records[0][DURATION_METRIC] if not records[0].get("ID") else "nsecond"
    launches: dict[str, tuple[str, float]] = {}
    for record in records:
        if record.get("ID"):
            launches[record["ID"]] = (record[name_column], _microseconds(record[DURATION_METRIC], unit))
    return launches


def _details_launches(records: list[dict[str, str]], name_column: str) -> dict[str, tuple[str, float]]:
    launches: dict[str, tuple[str, float]] = {}
    for record in records:
        if record.get("Metric Name") in _DURATION_NAMES and record.get("ID"):
            launches[record["ID"]] = (record[name_column],
                                      _microseconds(record["Metric Value"], record.get("Metric Unit", "")))
    return launches


def _microseconds(value: str, unit: str) -> float:
    scale = _TO_MICROSECONDS.get(unit.strip())
    if scale is None:
        raise NcuError(f"unknown duration unit {unit!r} in the ncu CSV")
    try:
        # ncu groups thousands with commas ("2,816"); the decimal separator is always a point.
        return float(value.replace(",", "")) * scale
    except ValueError:
        raise NcuError(f"unreadable duration {value!r} in the ncu CSV") from None


def profile_from_ncu(text: str, *, platform: str, device: str, calls: int) -> Profile:
    """A Profile from ncu's CSV of `calls` forward calls (no wall time: ncu replays kernels one by one)."""
    totals = parse_ncu_csv(text)
    rows = kernel_rows(totals)
    return Profile(source="ncu", platform=platform, device=device, calls=calls, row_kind="kernel", rows=rows,
                   device_time_us_per_call=sum(row.total_us for row in rows) / calls,
                   wall_time_us_per_call=None,
                   launches_per_call=sum(count for count, _ in totals.values()) / calls)
