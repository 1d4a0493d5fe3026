"""`benchmark import-legacy` as one library function, `import_files`: read legacy JSON files,
convert them (`benchmark.legacy.convert`), write one YAML file per input and validate what was
written exactly as `benchmark validate` would. Unlike the rest of the package it touches files, and
it imports the config loader and the runners (lazily, where used)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmark import legacy, runners
from benchmark.config import load_paths
from benchmark.sandbox.limits import DEFAULT_MAX_CASES

MAX_LEGACY_DEPTH = 32  # a legacy config is a list of flat configs, their param_info two levels down


def _depth_over(value: object, limit: int) -> bool:
    """True when lists and objects nest more than `limit` deep in `value` (walked without recursion,
    so that the converter's own recursion never meets a deeper one)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def read_legacy_file(path: Path) -> object:
    """The parsed JSON of one legacy file; ValueError naming the file when it cannot be read or
    is not a list (or object) of configs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: nested deeper than the JSON parser goes: not a legacy config") from None
    if _depth_over(data, MAX_LEGACY_DEPTH):
        raise ValueError(f"{path}: nested more than {MAX_LEGACY_DEPTH} deep: not a legacy config")
    if not isinstance(data, (list, dict)):
        raise ValueError(f"{path}: expected a JSON list of legacy configs, got {type(data).__name__}")
    return data


class _Validator:
    """The written files checked exactly as `benchmark validate` checks them, one file at a time (so
    memory stays bounded by the largest input file), with case ids unique across all of them."""

    def __init__(self):

        self.load_paths = load_paths
        self.checks = runners.config_checks()
        self.seen: dict[str, str] = {}  # case id -> the file that defined it

    def __call__(self, path: Path, expected_cases: int) -> list[str]:
        # The converter wrote the file: the case cap only guards against expanding more than it wrote.
        cap = max(DEFAULT_MAX_CASES, 8 * expected_cases)
        cases, issues = self.load_paths([str(path)], checks=self.checks, max_cases=cap)
        out = [str(i) for i in issues]
        for case in cases:
            first = self.seen.setdefault(case.id, str(path))
            if first != str(path):
                out.append(f"{path}: case id {case.id!r} is also defined in {first}")
        return out


def _resolver():
    """`paddle_ops.resolve_op` (allowlisted names only), or None where paddle is not importable."""

    ok, _ = runners.framework_available()
    if not ok:
        return None
    from benchmark.runners.paddle_ops import resolve_op  # imports paddle, only when it is there

    return resolve_op


def import_files(
    files: Sequence[str | Path],
    out: str | Path,
    *,
    batch_size: int = legacy.DEFAULT_BATCH_SIZE,
    unknown_dim: int = legacy.DEFAULT_UNKNOWN_DIM,
    backward: bool = False,
    tag: str = "imported",
    snapshot: str | None = None,
) -> int:
    """Convert each legacy file into ``<out>/<stem>.yaml`` and validate what was written; prints one
    line per config (converted: stdout; not converted, with why: stderr) and the table of configs
    per outcome. Returns the exit status: 0 every written file valid, 1 nothing converted, 2 an
    output does not validate. An unreadable input raises ValueError.

    All or nothing: the files are written and validated in a temporary directory and moved into
    `out` only when every one of them is valid, so a failure leaves nothing behind."""
    out_dir = Path(out)
    staging = Path(tempfile.mkdtemp(prefix="benchmark-import-legacy-"))
    try:
        return _import_files(files, out_dir, staging, batch_size, unknown_dim, backward, tag, snapshot)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _import_files(
    files: Sequence[str | Path],
    out_dir: Path,
    staging: Path,
    batch_size: int,
    unknown_dim: int,
    backward: bool,
    tag: str = "imported",
    snapshot: str | None = None,
) -> int:
    """`import_files`, writing into `staging` and moving the files to `out_dir` on success."""
    written = converted = skipped = 0
    resolve = _resolver()
    if resolve is None:
        print(
            "paddle is not importable here: only ops of the alias table convert, unchecked", file=sys.stderr
        )
    counts: Counter[str] = Counter()  # configs per outcome, kept as counts (bounded memory)
    validate = _Validator()
    issues: list[str] = []
    for name in files:
        path = Path(name)
        data = read_legacy_file(path)
        conv = legacy.convert(
            data,
            source=path.name,
            batch_size=batch_size,
            unknown_dim=unknown_dim,
            backward=backward,
            resolve=resolve,
        )
        del data
        for case in conv.cases:  # the tag the cases are selected by (`--bench-tags TAG`)
            case["tags"] = [tag]
        counts.update(legacy.reason_counts(conv.reports))
        for report in conv.reports:
            print(report, file=sys.stdout if report.status == "converted" else sys.stderr)
        converted += len(conv.cases)
        skipped += len(conv.skipped)
        if conv.cases:
            staged = staging / f"{path.stem}.yaml"
            staged.write_text(legacy.to_yaml(conv, snapshot=snapshot), encoding="utf-8")
            written += 1
            for issue in validate(staged, len(conv.cases)):
                issue = issue.replace(str(staging), str(out_dir))  # name the file as it would be
                print(f"invalid output: {issue}", file=sys.stderr)
                issues.append(issue)
    print(legacy.format_reason_table(counts))
    if issues:
        print(
            f"{converted} case(s) not written: the output does not validate; {skipped} config(s) not converted"
        )
        return 2
    for staged in sorted(staging.iterdir()):
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.move(staged, out_dir / staged.name)
    print(f"{converted} case(s) written to {written} file(s) in {out_dir}; {skipped} config(s) not converted")
    return 0 if converted else 1
