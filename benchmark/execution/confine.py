"""A worker confines itself once the framework is imported, before it prepares its first case
(docs/sandbox.md, "Confinement"): Landlock (filesystem and, from ABI 4, TCP; from ABI 6, signals and
abstract UNIX sockets) and a seccomp filter, both irrevocable for the process and its threads.

- no `execve`/`execveat`, no new processes (`fork`, `vfork`, `clone` without CLONE_THREAD; `clone3`
  answers ENOSYS so the C library falls back to `clone` for its threads), no `ptrace`: seccomp;
- no network sockets: `socket` of any family but AF_UNIX is refused (seccomp), and TCP bind and
  connect are handled by Landlock with no rule that allows them (ABI 4 and later);
- writes only beneath the worker's scratch directory (and the directories its parent names, e.g.
  the profile traces'): Landlock;
- reads only beneath the interpreter's and its packages' directories, the harness's package and
  configs, and the system's (/usr, /lib*, /etc, /sys, /dev, and of /proc its own directory and the
  machine's figures): not the history database, not the runner's home, not the checkout's results,
  not another process's /proc entries. The parent also starts the worker without the environment's
  secrets (`worker_env`), so neither its environment nor its /proc/self/environ holds them.

Each call is a ctypes syscall; no libseccomp or landlock binding is needed (the PyPI bindings are
unmaintained, pyseccomp since 2021, or pre-release, landlock 1.0.0.dev5). Where the kernel (or an
emulator such as valgrind) lacks Landlock or seccomp, `confine` says so in one line and the worker
goes on with what it has.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import struct
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchmark.paths import CHECKOUT_DIR, CONFIGS_DIR, PACKAGE_DIR

# Landlock (include/uapi/linux/landlock.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_WRITE_DIR = sum(1 << b for b in range(4, 13))  # remove dir/file, make char/dir/reg/sock/fifo/block/sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a file may hold
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# seccomp: syscall numbers per audit architecture
_ARCH = {
    "x86_64": (0xC000003E, {"execve": 59, "execveat": 322, "fork": 57, "vfork": 58, "clone": 56,
                            "clone3": 435, "socket": 41, "ptrace": 101}),
    "aarch64": (0xC00000B7, {"execve": 221, "execveat": 281, "clone": 220, "clone3": 435, "socket": 198,
                             "ptrace": 117}),
}  # fmt: skip
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_CLONE_THREAD, _AF_UNIX = 0x00010000, 1
# Names of environment variables a worker never gets (tokens, passwords, database URLs).
SECRET_ENV = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|COOKIE|DB_URL|DATABASE|^PG", re.I
)


def worker_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the variables whose names say they hold a secret (`SECRET_ENV`): a worker's
    /proc/self/environ is its starting environment, so it must never have held them."""
    return {k: v for k, v in env.items() if not SECRET_ENV.search(k)}


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _syscall(libc, nr: int, *args) -> int:
    libc.syscall.restype = ctypes.c_long
    return int(libc.syscall(ctypes.c_long(nr), *args))


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is absent or disabled."""
    if sys.platform != "linux":
        return 0
    libc = _libc()
    abi = _syscall(
        libc, _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(abi, 0)


def read_roots() -> list[Path]:
    """What a confined worker may read: the interpreter's prefixes and every import path but the
    working directory and the checkout (whose results hold the history), the harness's package and
    configs, and the system's directories."""
    home = Path.home().resolve()
    skip = {Path.cwd().resolve(), CHECKOUT_DIR.resolve(), Path("/"), home}
    roots = [Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    roots += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    out = []
    for root in [*roots, PACKAGE_DIR, CONFIGS_DIR]:
        root = root.resolve()
        if root in skip or root in home.parents or root in out:
            continue
        out.append(root)
    system = ["/usr", "/lib", "/lib64", "/lib32", "/etc", "/sys", "/dev", "/bin"]
    # /proc: this process's own directory and the machine's figures, never another process's
    # (its environ would hold what the worker's own environment was spared)
    proc = ["/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/sys",
            "/proc/filesystems", "/proc/version", "/proc/uptime"]  # fmt: skip
    return out + [Path(p) for p in system + proc]


def _landlock(writable: Iterable[Path], readable: Iterable[Path]) -> str:
    libc = _libc()
    abi = landlock_abi()
    if abi <= 0:
        return "landlock: not available on this kernel (or not enabled): filesystem and network rules not applied"
    fs = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _WRITE_DIR
    fs |= REFER if abi >= 2 else 0
    fs |= TRUNCATE if abi >= 3 else 0
    fs |= IOCTL_DEV if abi >= 5 else 0
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    buf = ctypes.create_string_buffer(attr[:size], size)
    ruleset = _syscall(libc, _SYS_CREATE_RULESET, buf, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock: ruleset refused ({os.strerror(ctypes.get_errno())}): not applied"
    try:
        read = (EXECUTE | READ_FILE | READ_DIR) & fs
        write = fs & ~EXECUTE
        rules = (
            [(p, read) for p in readable]
            + [(p, write) for p in writable]
            + [(Path("/dev/null"), READ_FILE | WRITE_FILE)]
        )
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # absent here
            try:
                if not os.path.isdir(path):
                    access &= _FILE_RIGHTS
                rule = ctypes.create_string_buffer(struct.pack("=Qi", access & fs, fd), 12)
                if _syscall(libc, _SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) < 0:  # fmt: skip
                    return (
                        f"landlock: rule for {path} refused ({os.strerror(ctypes.get_errno())}): not applied"
                    )
            finally:
                os.close(fd)
        if _syscall(libc, _SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return f"landlock: restrict_self refused ({os.strerror(ctypes.get_errno())}): not applied"
    finally:
        os.close(ruleset)
    extra = ", TCP" if net else ""
    extra += ", signals and abstract sockets" if scoped else ""
    return f"landlock ABI {abi}: filesystem{extra}"


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


# classic BPF opcodes
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter as classic BPF for this architecture (None where it has no table here)."""
    arch, nr = _ARCH.get(machine or platform.machine(), (None, {}))
    if arch is None:
        return None
    deny = _RET_ERRNO | errno.EPERM
    # fmt: off
    head = [_bpf(_LD_W_ABS, 4), _bpf(_JEQ_K, arch, 1, 0), _bpf(_RET_K, deny), _bpf(_LD_W_ABS, 0),
            _bpf(_JGE_K, 0x40000000, 0, 1), _bpf(_RET_K, deny)]  # another ABI (x32): refused
    # fmt: on
    body: list[bytes] = []
    for name in ("execve", "execveat", "fork", "vfork", "ptrace"):
        if name in nr:
            body += [_bpf(_JEQ_K, nr[name], 0, 1), _bpf(_RET_K, deny)]
    body += [_bpf(_JEQ_K, nr["clone3"], 0, 1), _bpf(_RET_K, _RET_ERRNO | errno.ENOSYS)]
    # clone: a thread (CLONE_THREAD in its flags, args[0]) is allowed, a process is not
    body += [_bpf(_JEQ_K, nr["clone"], 0, 4), _bpf(_LD_W_ABS, 16), _bpf(_JSET_K, _CLONE_THREAD, 0, 1),
             _bpf(_RET_K, _RET_ALLOW), _bpf(_RET_K, deny)]  # fmt: skip
    # socket: AF_UNIX only (args[0] is the family); the number is reloaded after the clone branch
    body = [_bpf(_LD_W_ABS, 0)] + body
    body += [_bpf(_LD_W_ABS, 0), _bpf(_JEQ_K, nr["socket"], 0, 4), _bpf(_LD_W_ABS, 16),
             _bpf(_JEQ_K, _AF_UNIX, 0, 1), _bpf(_RET_K, _RET_ALLOW), _bpf(_RET_K, deny)]  # fmt: skip
    return b"".join(head + body + [_bpf(_RET_K, _RET_ALLOW)])


def _seccomp() -> str:
    program = seccomp_program()
    if program is None:
        return f"seccomp: no syscall table for {platform.machine()}: not applied"
    libc = _libc()
    n = len(program) // 8
    filt = ctypes.create_string_buffer(program, len(program))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(n, ctypes.addressof(filt))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"seccomp: filter refused ({os.strerror(ctypes.get_errno())}): not applied"
    return "seccomp: no exec, no new process, no ptrace, no socket but AF_UNIX"


def confine(scratch: str | Path, writable: Iterable[str | Path] = ()) -> list[str]:
    """Confine this process (and every thread it starts) for good; one line per layer saying what
    holds, or why it does not. `scratch` becomes the only place it may write, with `writable`."""
    if sys.platform != "linux":
        return [f"confinement: not on Linux ({sys.platform}): nothing applied"]
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return [f"confinement: no_new_privs refused ({os.strerror(ctypes.get_errno())}): nothing applied"]
    scratch = Path(scratch).resolve()
    os.environ["TMPDIR"] = str(scratch)
    notes = [_landlock([scratch, *(Path(p).resolve() for p in writable)], read_roots())]
    notes.append(_seccomp())
    return notes
