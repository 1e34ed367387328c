"""The system-call rules of the kernel sandbox (issue 38), checked on `confine` itself in a fresh interpreter that
confines itself as a worker does: clone into new namespaces, execveat and memfd_create refused, clone3 answered
as missing while threads and programs still start; then the run phase, on every thread; and the file-size limit
between fork and exec."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kforge
from kforge.verify import confine
from kforge.verify.sandbox import Limits, _limit_child
from kforge.verify.sandbox_rules import rules, run_phase_rules

enforced = pytest.mark.skipif(
    bool(confine.probe()) or platform.machine() != "x86_64",
    reason="needs Landlock and seccomp (the raw system call numbers are x86-64)")

PROBE = textwrap.dedent('''
    import ctypes, json, os, socket, sys, threading
    from pathlib import Path
    from kforge.verify import confine
    from kforge.verify.sandbox_rules import confinement_for, run_phase_rules

    work = Path(sys.argv[1])
    environment = {**os.environ, "TMPDIR": str(work), "HOME": str(work)}
    report = confine.apply(confinement_for(work, [work / "cache"], environment))
    os.environ.update(environment)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    seen = {"missing": report.missing}

    def raw(number, *args):
        result = libc.syscall(number, *[ctypes.c_long(arg) for arg in args])
        return result if result >= 0 else -ctypes.get_errno()

    def child(result):  # a child made by a raw clone leaves at once
        if result == 0:
            os._exit(0)
        if result > 0:
            os.waitpid(result, 0)
        return min(result, 1)

    def attempt(call):
        try:
            call()
            return "ok"
        except OSError as exc:
            return exc.errno

    def thread_runs():
        done = []
        worker = threading.Thread(target=lambda: done.append(1))
        worker.start()
        worker.join()
        return done == [1]

    def fork_once():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)

    def program_runs():
        import subprocess
        return subprocess.run(["/bin/sh", "-c", "exit 3"]).returncode == 3

    path = ctypes.create_string_buffer(b"/bin/true")
    seen["clone_new_user_and_network"] = child(raw(56, 0x10000000 | 0x40000000 | 17, 0, 0, 0, 0))
    seen["clone_new_pid"] = child(raw(56, 0x20000000 | 17, 0, 0, 0, 0))
    seen["clone_plain"] = child(raw(56, 17, 0, 0, 0, 0))
    seen["clone3"] = raw(435, 0, 0)
    seen["execveat"] = raw(322, -100, ctypes.addressof(path), 0, 0, 0)
    seen["memfd_create"] = attempt(lambda: os.memfd_create("code"))
    seen["thread"] = thread_runs()
    seen["program"] = program_runs()

    # The run phase, stacked while a thread already runs: the filter must reach it too (TSYNC).
    phase = run_phase_rules(sys.argv[2], sys.argv[3])
    asked, answer = threading.Event(), {}
    def earlier_thread():
        asked.wait()
        answer["fork"] = raw(57)
        if answer["fork"] == 0:
            os._exit(0)
    earlier = threading.Thread(target=earlier_thread)
    earlier.start()
    seen["restrict"] = confine.restrict(phase)
    asked.set()
    earlier.join()
    seen["fork_from_an_earlier_thread"] = min(answer["fork"], 1)
    seen["thread_after"] = thread_runs()
    seen["program_after"] = attempt(program_runs)
    seen["fork_after"] = attempt(fork_once)
    # /bin/true is no program Landlock allows (EACCES): EPERM shows seccomp refused it first.
    seen["execve_after"] = attempt(lambda: os.execv("/bin/true", ["/bin/true"]))
    seen["socket_after"] = attempt(lambda: socket.socket(socket.AF_UNIX).close())
    seen["socketpair_after"] = attempt(socket.socketpair)
    print(json.dumps(seen))
''')


def probe(tmp_path: Path, language: str = "cpp", platform_name: str = "cpu") -> dict[str, object]:
    work = tmp_path / "worker"
    work.mkdir(parents=True)
    # The kforge this test imported, whatever the PYTHONPATH said (the probe runs in the worker's directory).
    package_root = str(Path(kforge.__file__).resolve().parent.parent)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
    # Started with a worker's resource limits, as the harness starts one (the probe reports them).
    result = subprocess.run([sys.executable, "-c", PROBE, str(work), language, platform_name], capture_output=True,
                            text=True, timeout=120, cwd=work, env=environment,
                            preexec_fn=lambda: _limit_child(Limits()))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@enforced
def test_the_start_filter_refuses_namespaces_execveat_and_memfd_while_threads_and_programs_start(
        tmp_path: Path) -> None:
    seen = probe(tmp_path)
    assert seen["missing"] == []
    assert seen["clone_new_user_and_network"] == -1 and seen["clone_new_pid"] == -1  # -EPERM
    assert seen["clone_plain"] == 1  # a plain child (what fork does) still starts before the run phase
    assert seen["clone3"] == -38  # ENOSYS: glibc falls back to clone, whose flags seccomp reads
    assert seen["execveat"] == -1
    assert seen["memfd_create"] == 38
    assert seen["thread"] is True and seen["program"] is True


@enforced
def test_the_run_phase_refuses_processes_programs_and_sockets_on_every_thread(tmp_path: Path) -> None:
    seen = probe(tmp_path)
    assert seen["restrict"] is None
    assert seen["fork_from_an_earlier_thread"] == -1, "a thread started before the phase escaped its filter"
    assert seen["thread_after"] is True  # OpenMP and torch's pools keep starting threads
    assert seen["program_after"] == 1 and seen["fork_after"] == 1 and seen["execve_after"] == 1  # EPERM
    assert seen["socket_after"] == 13 and seen["socketpair_after"] == 13  # EACCES


@enforced
def test_on_cuda_the_run_phase_keeps_sockets_and_triton_keeps_everything(tmp_path: Path) -> None:
    cuda = probe(tmp_path / "cuda", "cuda", "cuda")
    assert cuda["fork_after"] == 1 and cuda["socket_after"] == "ok"  # the CUDA driver's Unix socket
    triton = probe(tmp_path / "triton", "triton", "cpu")
    assert triton["program_after"] == "ok" and triton["socket_after"] == "ok"  # Triton runs ptxas at first call


def test_the_run_phase_is_data_with_a_reason_for_each_rule() -> None:
    phase = rules()["run_phase"]
    assert phase["languages"] == ["cpp", "cuda"]  # type: ignore[index]
    for rule in [*rules()["syscall_rules"], *phase["syscall_rules"]]:  # type: ignore[index, misc]
        assert str(rule.get("why", "")).strip() and rule["calls"], rule
    assert run_phase_rules("triton", "cpu") == () and run_phase_rules(None, "cpu") == ()
    calls = {call for rule in run_phase_rules("cpp", "cpu") for call in rule.calls}
    assert {"execve", "execveat", "fork", "vfork", "clone", "socket", "connect"} <= calls
    assert "socket" not in {call for rule in run_phase_rules("cuda", "cuda") for call in rule.calls}


def test_a_worker_cannot_write_a_file_larger_than_its_memory(tmp_path: Path) -> None:
    """RLIMIT_FSIZE, set between fork and exec: a write past memory_mb fails with EFBIG (the red team left
    256 MiB in /dev/shm). Here with a 1 MiB limit, so the test writes little."""
    target = tmp_path / "big.bin"
    script = ("import errno, sys\nwith open(sys.argv[1], 'wb') as f:\n    f.write(b'x' * (512 << 10))\n"
              "    try:\n        f.write(b'x' * (1 << 20))\n    except OSError as exc:\n"
              "        print(errno.errorcode[exc.errno])\n")
    limits = Limits(memory_mb=1, limit_address_space=False)
    result = subprocess.run([sys.executable, "-S", "-c", script, str(target)], capture_output=True, text=True,
                            timeout=60, preexec_fn=lambda: _limit_child(limits), env={"PATH": os.defpath})
    assert result.stdout.strip() == "EFBIG", result.stderr
    assert target.stat().st_size <= 1 << 20
