"""The busy-machine watch (verify/machine_load.py) counts other processes' CPU time, not kforge's own workers'."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from kforge.verify.machine_load import LoadReading, LoadWatch, _tree_cpu_seconds

SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {seconds}: pass\n"


def test_a_process_outside_kforges_tree_is_counted_as_other_work() -> None:
    # The shell starts the spinner in the background and exits: the spinner is no descendant of this process.
    out = subprocess.run(["sh", "-c", f'{sys.executable} -c "{SPIN.format(seconds=3)}" >/dev/null 2>&1 & echo $!'],
                         capture_output=True, text=True, check=True).stdout
    spinner = psutil.Process(int(out.strip()))
    assert spinner not in psutil.Process().children(recursive=True)
    time.sleep(0.3)
    before = sum(spinner.cpu_times()[:2])
    watch = LoadWatch().start()
    time.sleep(1.5)
    reading = watch.reading()
    spun = sum(spinner.cpu_times()[:2]) - before
    assert reading is not None and reading.seconds >= 1.4
    assert spun > 0 and reading.others_cores >= 0.8 * spun / reading.seconds  # however busy the machine


def test_kforges_own_workers_count_as_its_own() -> None:
    before = _tree_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=1.0)])
    worker = psutil.Process(child.pid)
    time.sleep(0.8)
    spun = sum(worker.cpu_times()[:2])
    counted = _tree_cpu_seconds() - before  # while the child lives
    child.wait()
    assert spun > 0 and counted >= 0.9 * spun


def test_a_busy_reading_says_how_and_a_quiet_one_says_nothing() -> None:
    quiet = LoadReading(seconds=2.0, cores=8, others_cores=1.5, steal_share=0.01)
    assert not quiet.busy and quiet.line() is None
    loaded = LoadReading(seconds=2.0, cores=2, others_cores=1.7, steal_share=0.0)
    line = loaded.line()
    assert loaded.busy and line is not None and "other processes kept 1.7 of its 2 cores busy" in line
    stolen = LoadReading(seconds=2.0, cores=4, others_cores=0.0, steal_share=0.2)
    assert stolen.busy and "hypervisor took 20%" in (stolen.line() or "")
