"""What a pull request changes, read from git objects only (never from a checkout of the pull request).

The trusted GPU workflow asks two questions of a pull request whose head it fetched as objects:

* `scope`: is the change data only (case configs), or code that needs a maintainer's label?
* `extract`: the changed case configs themselves, written out of git blobs (`git cat-file`), so that
  the base branch's code can validate and run them.

A path is case data when `benchmark.pullrequest.review.code_paths` says so (a `.yaml`/`.yml` file under `configs/`,
the operator allowlist excluded), it is not the gate thresholds (`configs/gates.y*ml`: loosening a gate
is a reviewed change), and git records it as a regular, non-executable file (mode 100644) on both sides
of the change: a symlink (120000) would make the trusted job read whatever it points at, and a
submodule (160000) or an executable file is not a case config. Git's output is read NUL-separated
(`-z`), so names with spaces or newlines stay whole.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchmark.pullrequest.review import DATA_DIR, DATA_SUFFIXES, REVIEWED_DATA, code_paths

REGULAR = "100644"
ABSENT = "000000"
GATES = ("configs/gates.yaml", "configs/gates.yml")
MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 200


class ChangeError(ValueError):
    """git failed, or a change cannot be taken as data; the message is one line."""


@dataclass(frozen=True)
class Change:
    """One entry of `git diff --raw`: modes and blob ids before and after, the status letter, the path."""

    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    status: str
    path: str

    @property
    def deleted(self) -> bool:
        return self.new_mode == ABSENT


def git(args: Sequence[str], cwd: Path | str | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True)
    if proc.returncode != 0:
        reason = " ".join(proc.stderr.decode(errors="replace").split()) or f"exit status {proc.returncode}"
        raise ChangeError(f"git {' '.join(args[:1])} failed: {reason}")
    return proc.stdout


def parse_raw(out: bytes) -> list[Change]:
    """Parse `git diff --raw -z --no-renames --no-abbrev`: `:M1 M2 B1 B2 S\\0PATH\\0` per change."""
    fields = out.split(b"\0")
    changes = []
    i = 0
    while i + 1 < len(fields) and fields[i]:
        meta = fields[i].decode()
        if not meta.startswith(":"):
            raise ChangeError(f"unexpected git diff output: {meta[:80]!r}")
        old_mode, new_mode, old_blob, new_blob, status = meta[1:].split(" ")
        path = fields[i + 1].decode("utf-8", errors="surrogateescape")
        changes.append(Change(old_mode, new_mode, old_blob, new_blob, status[:1], path))
        i += 2
    return changes


def diff(base: str, head: str, cwd: Path | str | None = None) -> list[Change]:
    """The changes of `head` since its merge base with `base` (what a pull request adds)."""
    try:
        out = git(["diff", "--raw", "-z", "--no-renames", "--no-abbrev", f"{base}...{head}"], cwd)
    except ChangeError as exc:
        revs = " ".join(f"{base}...{head}".split())  # one line, whatever the arguments hold
        raise ChangeError(f"git diff {revs} failed: {str(exc).split(': ', 1)[1]}") from None
    return parse_raw(out)


def canonical_reason(path: str) -> str | None:
    """None when `path` is a plain relative POSIX path as git writes it (what the data check, the
    extraction and `validate` all see the same), else why not: a `.`, `..` or empty component, a
    leading or trailing slash, a backslash, or a control or non-printable character."""
    if not path or not path.isprintable() or any(c in path for c in "\\\x7f"):
        return "a name with a backslash or a control or non-printable character"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "a path with a '.', '..' or empty component (not canonical)"
    return None


def why_not_data(change: Change) -> str | None:
    """None when `change` is case data, else the reason in a few words. Only a canonical path can be
    data (`canonical_reason`): the check and the extraction then name the same file."""
    odd = canonical_reason(change.path)
    if odd:
        return f"{odd}: not case data"
    if change.path in REVIEWED_DATA:
        return "the operator allowlist (and its table of index inputs) is reviewed like code"
    p = PurePosixPath(change.path)
    in_configs = len(p.parts) > 1 and p.parts[0] == DATA_DIR and ".." not in p.parts
    if not in_configs or p.suffix not in DATA_SUFFIXES or code_paths([change.path]):
        return "not a case YAML under configs/"
    if change.path in GATES:
        return "the gate thresholds are reviewed like code"
    for mode in (change.old_mode, change.new_mode):
        if mode not in (REGULAR, ABSENT):
            kind = {"120000": "a symlink", "160000": "a submodule", "100755": "an executable file"}
            return f"{kind.get(mode, f'git mode {mode}')}, not a regular file"
    return None


def path_reasons(paths: Iterable[str], root: Path | str = ".") -> list[tuple[str, str]]:
    """(path, reason) for each named path (a working-tree check, `benchmark pr-scope PATH...`) that is
    not case data: the same rule as `why_not_data`, with the file's type read from the disk."""
    out = []
    for path in paths:
        if not path.strip():
            continue
        on_disk = Path(root) / path
        mode = ABSENT
        if on_disk.is_symlink():
            mode = "120000"
        elif on_disk.exists():
            mode = REGULAR if on_disk.is_file() else "040000"
        reason = why_not_data(Change(mode, mode, "", "", "M", path))
        if reason:
            out.append((path, reason))
    return out


def scope(changes: Iterable[Change]) -> list[tuple[str, str]]:
    """(path, reason) of every change that is not case data; empty means the change is data only."""
    return [(c.path, reason) for c in changes if (reason := why_not_data(c))]


def extract(
    changes: Sequence[Change],
    out: Path,
    cwd: Path | str | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_files: int = MAX_FILES,
) -> list[str]:
    """Write the added or changed case configs of a data-only change under `out` (as `out/configs/...`)
    from their git blobs, and return their paths. Refuses (ChangeError) a change that is not data only,
    a blob over `max_file_bytes`, more than `max_files` files, or an `out` that is not empty."""
    refused = scope(changes)
    if refused:
        path, reason = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise ChangeError(f"not a data-only change: {path!r}: {reason}{more}")
    wanted = [c for c in changes if not c.deleted]
    if len(wanted) > max_files:
        raise ChangeError(f"{len(wanted)} changed case files; at most {max_files} are taken")
    for c in wanted:
        size = int(git(["cat-file", "-s", c.new_blob], cwd).decode().strip())
        if size > max_file_bytes:
            raise ChangeError(f"{c.path!r} is {size} bytes; a case file may have at most {max_file_bytes}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ChangeError(f"{out} exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    root = out.resolve()
    written = []
    for c in wanted:
        rel = PurePosixPath(c.path)
        target = root.joinpath(*rel.parts)
        if rel.is_absolute() or ".." in rel.parts or not target.resolve().is_relative_to(root):
            raise ChangeError(f"{c.path!r} does not stay inside {out}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(["cat-file", "blob", c.new_blob], cwd))
        written.append(c.path)
    return written
