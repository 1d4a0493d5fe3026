"""The core a run's timing workers run on (`--bench-pin`).

A worker pinned to one core, with every thread it starts, does not wait for a wake-up on another
core when the framework hands work between its threads: small static programs took a third of
their unpinned time on a 2-core VM, with half the run-to-run noise (docs/measurement.md). Two runs
on one machine must not pin to the same core, so a run claims its core with an advisory lock
(`flock` on a file in the temporary directory, one per core), held until the process ends; `auto`
takes the highest free core and leaves the workers unpinned when every core is claimed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from typing import IO

try:
    import fcntl
except ImportError:  # not POSIX: cores are taken unlocked
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = "paddle-benchmark-core-{core}.lock"


def allowed() -> set[int]:
    """The cores this process may run on (empty where the system has no affinity call)."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


def pin_process(pid: int, core: int) -> None:
    """Run process `pid` on `core`: every thread it has now and, by inheritance, every thread it
    starts later (for a worker that has already imported the framework, where one pinned before
    its start would import on a shared core). Nothing where the system has no affinity call; a
    thread or process that has ended meanwhile is skipped."""
    if not hasattr(os, "sched_setaffinity"):
        return
    try:
        threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for tid in threads:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.sched_setaffinity(tid, {core})


def candidates(choice: str, threads: int | None, cores: set[int]) -> list[int]:
    """The cores `--bench-pin CHOICE` may take, in order of preference; [] for none (unpinned).

    'auto': every core in `cores` (this process's affinity), highest first, when CPU cases run with
    one thread (`threads` == 1) and there are two or more; with several threads one core would
    serialize them, and with one core there is nothing to choose. 'off': none. A number: that core,
    which must be in `cores`. ValueError names what was expected."""
    choice = str(choice).strip().lower()
    if choice == "off":
        return []
    if choice == "auto":
        return sorted(cores, reverse=True) if threads == 1 and len(cores) > 1 else []
    try:
        core = int(choice)
    except ValueError:
        raise ValueError(f"--bench-pin {choice!r}: expected auto, off or a core number") from None
    if core not in cores:
        raise ValueError(
            f"--bench-pin {core}: this process may run on core(s) {', '.join(map(str, sorted(cores)))} only"
        )
    return [core]


@dataclass
class Claim:
    """The core a run took (None: its workers are unpinned), and why not where it wanted one."""

    core: int | None
    note: str | None = None
    lock: IO | None = None

    def release(self) -> None:
        if self.lock is not None:
            self.lock.close()  # closing the file releases its flock
            self.lock = None


def _try_lock(path: str) -> IO | None:
    assert fcntl is not None
    try:
        handle = open(path, "a")  # noqa: SIM115 - held open for the run: the lock lives as long as it
    except OSError:
        return None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666)  # another user's run may claim it after this one
    return handle


def claim(cores: list[int], *, explicit: bool = False, lock_dir: str | None = None) -> Claim:
    """Take the first of `cores` no other run holds. `explicit` (a core the user named): it is
    taken even when another run holds it, with a note saying so. Without `fcntl` (not POSIX) the
    first core is taken unlocked."""
    if not cores:
        return Claim(None)
    if fcntl is None:
        return Claim(cores[0])
    where = lock_dir or tempfile.gettempdir()
    for core in cores:
        lock = _try_lock(os.path.join(where, LOCK_NAME.format(core=core)))
        if lock is not None:
            return Claim(core, lock=lock)
    if explicit:
        return Claim(cores[0], note=f"core {cores[0]} is also claimed by another run on this machine")
    return Claim(
        None,
        note=f"every core ({', '.join(map(str, cores))}) is claimed by another run on this machine: workers unpinned",
    )


def claim_for(choice: str, threads: int | None) -> Claim:
    """Claim a core for `--bench-pin CHOICE` (or compare's `--pin`) among this process's cores: a
    core the user named is explicit, `auto` is not. ValueError as `candidates`."""
    wanted = candidates(choice, threads, allowed())
    return claim(wanted, explicit=str(choice).strip().lower() not in ("auto", "off"))
