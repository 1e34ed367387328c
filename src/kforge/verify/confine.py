"""Kernel-enforced limits for a worker process, applied by the worker itself before it imports torch or any
candidate code (see worker_start.py), so that they hold for everything the candidate does, in any thread, and
for every program it or its build starts.

These tools, each used where the kernel offers it, in this order:
- namespaces of its own (as root, or through a user namespace where those are allowed): a network namespace,
  with nothing to reach, not even the host's loopback; a process namespace with /proc mounted for it, where the
  worker sees only its own processes and every process it starts dies with it;
- a user of its own where the harness is root (verify/worker_user.py), so that it owns nothing outside the
  worker; otherwise it stays the harness's user;
- every capability dropped, bounding set included;
- resource limits: processes (where they count the worker's alone) and CPU time; the file-size limit the harness
  set is reported with them;
- Landlock: files (read, write, execute, device ioctls) only beneath the plan's paths, TCP bind and connect
  refused, abstract Unix sockets and signals scoped to the worker's own processes; Landlock also refuses
  ptrace-mode access (another process's environment, memory, descriptors) to any process outside the domain;
- seccomp: the plan's system calls refused, and socket() for every family the plan does not allow.

What the kernel cannot enforce is reported in `ConfinementReport.missing`, one line each; nothing is skipped
silently. This module imports only the standard library and the two small bindings (py-landlock, pyseccomp).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import resource
import signal
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kforge.verify import worker_user

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNS = 0x00020000
# clone(2)'s flags, by name, for the rules of data/sandbox.toml (Python names few of them before 3.12).
CLONE_FLAGS = {
    "CLONE_VM": 0x00000100, "CLONE_FS": 0x00000200, "CLONE_FILES": 0x00000400, "CLONE_SIGHAND": 0x00000800,
    "CLONE_VFORK": 0x00004000, "CLONE_PARENT": 0x00008000, "CLONE_THREAD": 0x00010000, "CLONE_NEWNS": _CLONE_NEWNS,
    "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": _CLONE_NEWUSER, "CLONE_NEWPID": _CLONE_NEWPID, "CLONE_NEWNET": _CLONE_NEWNET,
    # Only clone3 and unshare take it (in clone's flags the low byte is the exit signal, never above 64).
    "CLONE_NEWTIME": 0x00000080,
}
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_CAPABILITY_VERSION_3 = 0x20080522
_SYS_CAPSET_BY_MACHINE = {"x86_64": 126, "aarch64": 91}  # capset(2) has no libc wrapper
_MAX_FAMILY = 64  # above every address family Linux defines (AF_MAX is 46)
_CAP_CHOWN, _CAP_SETGID, _CAP_SETUID, _CAP_SYS_ADMIN = 0, 6, 7, 21
# Since 5.14 the kernel counts RLIMIT_NPROC per user namespace, so a worker in a namespace of its own counts its
# own processes, not every process of the harness's user.
_NPROC_PER_NAMESPACE = (5, 14)


@dataclass(frozen=True)
class SyscallRule:
    """System calls refused with the error number `error` when a condition on argument `arg` holds: any bit of
    `any_bits` set, or every bit of `no_bits` clear; with neither, always. (sandbox_rules resolves the names.)"""

    calls: tuple[str, ...]
    error: int = errno.EPERM
    arg: int = 0
    any_bits: int = 0
    no_bits: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SyscallRule:
        fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value
                                  for key, value in data.items()}
        return cls(**fields)


@dataclass(frozen=True)
class Confinement:
    """What one worker may do: absolute paths (already resolved by sandbox_rules) and the system-call rules."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    execute: tuple[str, ...] = ()
    denied_syscalls: tuple[str, ...] = ()
    syscall_rules: tuple[SyscallRule, ...] = ()
    allowed_socket_families: tuple[str, ...] = ()
    network_namespace: bool = True
    process_namespace: bool = True
    # The user a worker started as root becomes (verify/worker_user.py): user_id + its process id, or user_id
    # itself where not `user_per_process` (the reference's workers). None keeps uid 0, and `user_refused` says
    # why (empty where the harness is not root).
    user_id: int | None = None
    user_per_process: bool = True
    user_refused: str = ""
    own: tuple[str, ...] = ()  # what a worker started as root takes before it switches: its directory, its caches
    processes: int = 0  # RLIMIT_NPROC, where it counts the worker's processes alone; 0: none
    cpu_seconds: int = 0  # RLIMIT_CPU of each process; 0: none

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Confinement:
        data = json.loads(text)
        rules = tuple(SyscallRule.from_dict(rule) for rule in data.pop("syscall_rules", []))
        fields: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value
                                  for key, value in data.items()}
        return cls(syscall_rules=rules, **fields)


@dataclass
class ConfinementReport:
    """What was enforced, and one line for each limit this kernel could not enforce."""

    enforced: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"enforced": self.enforced, "missing": self.missing}


def apply(plan: Confinement) -> ConfinementReport:
    """Confine the calling process (single-threaded, before torch is imported) by `plan`. Every layer leaves one
    line, in `enforced` or in `missing`."""
    report = ConfinementReport()
    pid = os.getpid()  # as the harness sees it, before a process namespace renumbers the worker
    # Loaded first: finding libseccomp runs ldconfig, which Landlock would refuse to start.
    seccomp = _seccomp_binding(report)
    namespaces = _namespaces(plan, report)
    _drop_bounding_set()  # while CAP_SETPCAP is there: leaving uid 0 takes it
    processes = _unprivileged_user(plan, pid, namespaces, report)
    _drop_capabilities(report)
    _limits(plan, processes, report)
    _landlock(plan, report)
    if seccomp is not None:
        _seccomp(plan, report, seccomp)
    return report


def probe() -> list[str]:
    """What this machine could not enforce, found without confining anything: one line for each missing tool
    (Landlock, seccomp) and for workers of a root harness that cannot run as users of their own. For a line per
    run before any worker starts; each worker reports what it enforced."""
    missing = []
    try:
        from py_landlock import LandlockError, get_abi_version

        get_abi_version()
    except ImportError:
        missing.append("files, programs and other processes: the py-landlock package is not installed")
    except (LandlockError, OSError) as exc:
        missing.append(f"files, programs and other processes: this kernel offers no Landlock ({exc})")
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError) as exc:
        missing.append(f"system calls and sockets: seccomp is not available ({exc})")
    from kforge.verify.worker_user import planned_base

    base, why_not = planned_base()
    if base is None and why_not:  # a harness running as root whose workers cannot take users of their own
        missing.append(f"a user of the worker's own (root's files out of its reach): {why_not}")
    return missing


# ---- namespaces ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Namespaces:
    flags: int  # the CLONE_NEW* flags unshare granted
    private_mounts: bool  # a mount namespace of the worker's own, whose mounts reach no other


def _namespaces(plan: Confinement, report: ConfinementReport) -> _Namespaces:
    """A network namespace and a process namespace of the worker's own, as far as the system allows: as root
    directly, otherwise inside a user namespace that maps the worker's ids to themselves."""
    wanted = (_CLONE_NEWNET if plan.network_namespace else 0) | (
        _CLONE_NEWPID | _CLONE_NEWNS if plan.process_namespace else 0)
    got = next((flags for flags in _namespace_attempts(wanted) if _unshare(flags, report)), 0) if wanted else 0
    if not plan.network_namespace:
        report.missing.append("network namespace: switched off in sandbox.toml")
    elif got & _CLONE_NEWNET:
        report.enforced.append("network namespace")
    else:
        report.missing.append("network namespace: refused by the system (seccomp and Landlock still refuse "
                              "the network)")
    private = False
    if not plan.process_namespace:
        report.missing.append("process namespace: switched off in sandbox.toml")
    elif got & _CLONE_NEWPID:
        private = _become_first_process(report)
    else:
        report.missing.append("process namespace: refused by the system (Landlock still guards the other "
                              "processes' files, but their list and command lines show in /proc)")
    return _Namespaces(got, private)


def _namespace_attempts(wanted: int) -> list[int]:
    """What to ask unshare(2) for, best first: everything, then the network alone; each through a user namespace
    where the caller is not root."""
    attempts = [wanted, wanted & _CLONE_NEWNET] if wanted & _CLONE_NEWNET else [wanted]
    if os.getuid() != 0:
        attempts = [flags | _CLONE_NEWUSER for flags in attempts]
    return [flags for flags in attempts if flags & ~_CLONE_NEWUSER]


def _unshare(flags: int, report: ConfinementReport) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags) != 0:
        return False
    if flags & _CLONE_NEWUSER:
        try:  # the same ids inside as outside, so files keep their owners
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError as exc:
            report.missing.append(f"user namespace: mapping ids failed ({exc.strerror})")
    return True


def _become_first_process(report: ConfinementReport) -> bool:
    """Fork into the new process namespace: the child goes on as its first process (and every process it starts
    dies with it); this process only waits, and ends as the child ends. /proc is mounted afresh for the
    namespace, so that it lists the worker's own processes only. Whether the mount namespace is private."""
    child = os.fork()
    if child:
        _mirror_exit(child)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # fork cleared the one the harness set
    private = libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) == 0
    if private and libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None) == 0:
        report.enforced.append("process namespace")
        return True
    report.missing.append(f"process namespace: /proc could not be mounted for it ({os.strerror(ctypes.get_errno())};"
                          " the other processes' list shows in /proc)")
    return private


def _mirror_exit(child: int) -> None:
    """Wait for `child` and end the same way: its exit status, or its signal. (The harness kills workers with
    SIGKILL to the whole process group, which reaches the child too.)"""
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


# ---- the worker's user ------------------------------------------------------------------------------------
def _unprivileged_user(plan: Confinement, pid: int, namespaces: _Namespaces,
                       report: ConfinementReport) -> tuple[bool, str]:
    """Where the harness is root, leave uid 0 for the worker's own user (verify/worker_user.py); elsewhere stay the
    harness's user. One line either way. Returns whether RLIMIT_NPROC would count the worker's processes alone
    (the kernel never applies it to uid 0), and why not, or what it counts besides."""
    if os.getuid() != 0:
        report.enforced.append(f"unprivileged user (uid {os.getuid()}, the harness's own)")
        if not namespaces.flags & _CLONE_NEWUSER:
            return False, "no user namespace of its own: the limit would count every process of the harness's user"
        if _kernel() < _NPROC_PER_NAMESPACE:
            return False, f"kernel {os.uname().release[:40]} counts it for the harness's user, not per namespace"
        return True, ""
    exempt = "uid 0 is exempt from it"
    if plan.user_id is None:
        report.missing.append(f"unprivileged user: {plan.user_refused or 'none planned'}; the worker stays uid 0 "
                              "without capabilities")
        _give_back(plan.own)
        return False, exempt
    uid = worker_user.worker_id(plan.user_id, plan.user_per_process, pid)
    refusal = _switch_refusal(plan, uid, namespaces)
    if refusal:
        report.missing.append(f"unprivileged user: {refusal}; the worker stays uid 0 without capabilities")
        _give_back(plan.own)
        return False, exempt
    try:
        worker_user.take_ownership(plan.own, uid, uid)
        for folder in _closed(plan, uid):
            worker_user.make_passable(folder)
        worker_user.switch(uid, uid, worker_user.device_groups(plan.devices))
    except OSError as exc:
        if os.getuid() == 0:
            _give_back(plan.own)
        report.missing.append(f"unprivileged user: becoming uid {uid} failed ({str(exc)[:200]})")
        return os.getuid() != 0, "" if os.getuid() != 0 else exempt
    report.enforced.append(f"unprivileged user (uid {uid})")
    return True, "" if plan.user_per_process else "the reference's workers together"


def _switch_refusal(plan: Confinement, uid: int, namespaces: _Namespaces) -> str:
    """Why a root worker cannot become `uid` here, checked before anything changes; empty when it can."""
    lacking = [name for cap, name in ((_CAP_CHOWN, "CAP_CHOWN"), (_CAP_SETUID, "CAP_SETUID"),
                                      (_CAP_SETGID, "CAP_SETGID")) if not _effective(cap)]
    if lacking:
        return f"the worker was started without {', '.join(lacking)}"
    closed = _closed(plan, uid)
    if closed and not (namespaces.private_mounts and _effective(_CAP_SYS_ADMIN)):
        return (f"uid {uid} could not pass {closed[0][:150]} (a folder closed to other users) and the worker has no "
                "mount namespace of its own to open a way")
    return ""


def _closed(plan: Confinement, uid: int) -> list[str]:
    """The folders on the way to the plan's paths that `uid` could not pass (its own folders it takes first)."""
    paths = [path for path in (*plan.read, *plan.write, *plan.devices, *plan.execute)
             if not path.startswith("/proc/self")]
    groups = worker_user.device_groups(plan.devices)
    return [folder for folder in worker_user.closed_folders(paths, uid, groups) if folder not in plan.own]


def _give_back(paths: tuple[str, ...]) -> None:
    """A worker that stays uid 0 takes back for root what an earlier worker's user owned (the reference's caches):
    without its capabilities, root may write only what it owns."""
    with contextlib.suppress(OSError):  # what it cannot write shows as the failure of whatever needed it
        worker_user.take_ownership(paths, 0, 0)


def _kernel() -> tuple[int, int]:
    major, minor, *_ = [*(int(part) for part in os.uname().release.split(".")[:2] if part.isdigit()), 0, 0]
    return major, minor


# ---- capabilities -------------------------------------------------------------------------------------------
class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_bounding_set() -> None:
    """Empty the bounding set, so that no program started later regains a capability. Done first: it needs
    CAP_SETPCAP, which a worker leaving uid 0 loses."""
    if not _capability_sets().get("CapBnd"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):  # past the kernel's last capability, prctl answers EINVAL: harmless
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)


def _drop_capabilities(report: ConfinementReport) -> None:
    """Empty every set of this process (leaving uid 0 emptied the permitted and effective ones already), and check
    that none is left."""
    if any(_capability_sets().values()):
        number = _SYS_CAPSET_BY_MACHINE.get(os.uname().machine)
        if number is None:
            report.missing.append(f"capabilities: not dropped on {os.uname().machine}")
            return
        libc = ctypes.CDLL(None, use_errno=True)
        header = _CapHeader(_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        if libc.syscall(number, ctypes.byref(header), data) != 0:
            report.missing.append(f"capabilities: could not drop them ({os.strerror(ctypes.get_errno())})")
            return
    left = sorted(name for name, value in _capability_sets().items() if value)
    if left:
        report.missing.append(f"capabilities: {', '.join(left)} still held")
        return
    report.enforced.append("no capabilities")


def _capability_sets() -> dict[str, int]:
    """This process's capability sets, by their names in /proc/self/status (CapInh, CapPrm, CapEff, CapBnd,
    CapAmb); where it cannot be read, every set full for root and empty for anyone else."""
    names = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    try:
        found = {}
        for line in Path("/proc/self/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in names:
                found[name] = int(value.strip(), 16)
        return found
    except (OSError, ValueError):
        return dict.fromkeys(names, (1 << 41) - 1 if os.geteuid() == 0 else 0)


def _effective(cap: int) -> bool:
    return bool(_capability_sets().get("CapEff", 0) >> cap & 1)


# ---- resource limits ----------------------------------------------------------------------------------------
def _limits(plan: Confinement, processes: tuple[bool, str], report: ConfinementReport) -> None:
    """RLIMIT_NPROC (where it counts the worker's processes alone: `processes`, from _unprivileged_user) and
    RLIMIT_CPU, set here; RLIMIT_FSIZE and RLIMIT_AS, which the harness set before the worker started
    (verify/sandbox.py), reported with them. Memory itself the harness watches from outside."""
    held = []
    size = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    if size == resource.RLIM_INFINITY:
        report.missing.append("file size: not limited (no memory limit was asked for)")
    else:
        held.append(f"files up to {size >> 20} MiB")
    space = resource.getrlimit(resource.RLIMIT_AS)[1]
    if space != resource.RLIM_INFINITY:
        held.append(f"address space {space >> 20} MiB")
    counted, note = processes
    if not plan.processes:
        report.missing.append("process count: not limited (sandbox.toml sets none)")
    elif not counted:
        report.missing.append(f"process count: not limited ({note})")
    else:
        held.append(f"{_lower(resource.RLIMIT_NPROC, plan.processes)} processes" + (f" ({note})" if note else ""))
    if plan.cpu_seconds:
        held.append(f"{_lower(resource.RLIMIT_CPU, plan.cpu_seconds)} s of CPU time a process")
    else:
        report.missing.append("CPU time: not limited (sandbox.toml sets none)")
    if held:
        report.enforced.append("limits: " + ", ".join(held))


def _lower(which: int, value: int) -> int:
    """Set the limit `which` to `value`, or keep a lower one already set; the limit now held."""
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
    return value


# ---- Landlock ----------------------------------------------------------------------------------------------
def _landlock(plan: Confinement, report: ConfinementReport) -> None:
    try:
        from py_landlock import AccessFs, Landlock, LandlockError, get_abi_version
    except ImportError:
        report.missing.append("files, programs and other processes: the py-landlock package is not installed")
        return
    try:
        abi = int(get_abi_version())
    except (LandlockError, OSError) as exc:
        report.missing.append(f"files, programs and other processes: this kernel offers no Landlock ({exc})")
        return
    read = AccessFs.READ_FILE | AccessFs.READ_DIR
    writes = (AccessFs.WRITE_FILE | AccessFs.TRUNCATE | AccessFs.MAKE_REG | AccessFs.MAKE_DIR | AccessFs.MAKE_SYM
              | AccessFs.REMOVE_FILE | AccessFs.REMOVE_DIR | AccessFs.REFER)
    device = AccessFs.READ_FILE | AccessFs.WRITE_FILE | AccessFs.READ_DIR | AccessFs.IOCTL_DEV
    # What Landlock accepts on a rule for a single file; directory rights there are an error.
    file_rights = (AccessFs.EXECUTE | AccessFs.WRITE_FILE | AccessFs.READ_FILE | AccessFs.TRUNCATE
                   | AccessFs.IOCTL_DEV)
    ruleset = Landlock(strict=False)
    try:
        for paths, access in ((plan.read, read), (plan.write, read | writes), (plan.devices, device),
                              (plan.execute, read | AccessFs.EXECUTE)):
            for path in paths:
                path = os.path.realpath(path)  # /proc/self: this process, resolved here
                rights = access if Path(path).is_dir() else access & file_rights
                ruleset.add_path_rule(path, access=rights)
        ruleset.apply()
    except (LandlockError, OSError) as exc:
        report.missing.append(f"files, programs and other processes: Landlock failed ({exc})")
        return
    report.enforced.append(f"Landlock ABI {abi}: files, programs, other processes")
    if abi < 4:
        report.missing.append(f"TCP rules: Landlock ABI {abi} has none (4 needed; seccomp still refuses sockets)")
    if abi < 6:
        report.missing.append(f"signal and abstract-socket scoping: Landlock ABI {abi} has none (6 needed)")


# ---- seccomp -----------------------------------------------------------------------------------------------
def _seccomp_binding(report: ConfinementReport) -> Any:
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as exc:  # RuntimeError: libseccomp itself is missing
        report.missing.append(f"system calls and sockets: seccomp is not available ({exc})")
        return None
    return pyseccomp


def _seccomp(plan: Confinement, report: ConfinementReport, seccomp: Any) -> None:
    try:
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in plan.denied_syscalls:
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (OSError, ValueError):
                continue  # a call this architecture does not have
        _add_rules(rules, seccomp, plan.syscall_rules)
        _socket_rules(rules, seccomp, plan.allowed_socket_families)
        rules.load()
    except OSError as exc:
        report.missing.append(f"system calls and sockets: seccomp failed ({exc})")
        return
    report.enforced.append("seccomp: system calls and sockets")


def seccomp_available() -> bool:
    """Whether the seccomp binding (and libseccomp beneath it) can be loaded here."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError):
        return False
    return True


def restrict(rules: tuple[SyscallRule, ...]) -> str | None:
    """Stack one more seccomp filter refusing `rules`, on every thread of this process (the worker's run phase,
    verify/run_phase.py: by then torch has started its thread pools, which a filter on the calling thread alone
    would leave out). None when it holds; otherwise why not, in one line. Filters only ever add refusals: this
    one cannot undo the first."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError) as exc:
        return f"seccomp is not available ({exc})"
    try:
        stacked = seccomp.SyscallFilter(seccomp.ALLOW)
        stacked.set_attr(seccomp.Attr.CTL_TSYNC, 1)
        _add_rules(stacked, seccomp, rules)
        stacked.load()
    except OSError as exc:
        return f"seccomp failed ({exc})"
    return None


def _add_rules(rules: Any, seccomp: Any, syscall_rules: tuple[SyscallRule, ...]) -> None:
    """Each rule as libseccomp rules: one per bit of `any_bits` (rules on one call are alternatives), one masked
    comparison for `no_bits`, one unconditional rule otherwise."""
    for rule in syscall_rules:
        action = seccomp.ERRNO(rule.error)
        if rule.any_bits:
            conditions = [seccomp.Arg(rule.arg, seccomp.MASKED_EQ, bit, bit) for bit in _bits(rule.any_bits)]
        elif rule.no_bits:
            conditions = [seccomp.Arg(rule.arg, seccomp.MASKED_EQ, rule.no_bits, 0)]
        else:
            conditions = [None]
        for name in rule.calls:
            for condition in conditions:
                try:
                    rules.add_rule(action, name, *([condition] if condition is not None else []))
                except (OSError, ValueError):
                    break  # a call this architecture does not have (fork and vfork on aarch64)


def _bits(value: int) -> list[int]:
    return [1 << index for index in range(64) if value >> index & 1]


def _socket_rules(rules: Any, seccomp: Any, allowed: tuple[str, ...]) -> None:
    """socket() refused (EACCES) for every address family but `allowed` (names such as AF_UNIX)."""
    refuse = seccomp.ERRNO(errno.EACCES)
    families = {int(getattr(socket, name)) for name in allowed if hasattr(socket, name)}
    if not families:
        rules.add_rule(refuse, "socket")
        return
    for family in set(range(_MAX_FAMILY)) - families:
        rules.add_rule(refuse, "socket", seccomp.Arg(0, seccomp.EQ, family))
    rules.add_rule(refuse, "socket", seccomp.Arg(0, seccomp.GE, _MAX_FAMILY))
