"""`benchmark import-legacy`: convert PaddlePaddle benchmark API configs (JSON) into YAML case files.

One YAML file per input file (``<out>/<input stem>.yaml``), then the written files are validated
exactly as `benchmark validate` would. Ops resolve through the operator allowlist
(`benchmark.runners.paddle_ops.resolve_op`) and the alias table `benchmark.legacy.ops`. Prints one
line per converted config and, for each config that could not be converted, why (with its reason
category), then a table counting configs per outcome.
Exit status: 0 when every written file is valid, 1 when nothing could be converted, 2 when an input
cannot be read or is not a list of configs, or an output does not validate.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from benchmark import legacy  # the converter itself: standard library and yaml (~30 ms)
from benchmark.commands._common import positive_int
from benchmark.limits import DEFAULT_MAX_CASES


def _read(path: Path) -> object:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    if not isinstance(data, (list, dict)):
        raise ValueError(f"{path}: expected a JSON list of legacy configs, got {type(data).__name__}")
    return data


class _Validator:
    """The written files checked exactly as `benchmark validate` checks them, one file at a time (so
    memory stays bounded by the largest input file), with case ids unique across all of them."""

    def __init__(self):
        from benchmark import runners
        from benchmark.config import load_paths

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
    from benchmark import runners

    ok, _ = runners.framework_available()
    if not ok:
        return None
    from benchmark.runners.paddle_ops import resolve_op

    return resolve_op


def cmd_import_legacy(args) -> int:
    out_dir = Path(args.out)
    written = converted = skipped = 0
    resolve = _resolver()
    if resolve is None:
        print(
            "paddle is not importable here: only ops of the alias table convert, unchecked", file=sys.stderr
        )
    counts: Counter[str] = Counter()  # configs per outcome, kept as counts (bounded memory)
    validate = _Validator()
    issues: list[str] = []
    for name in args.files:
        path = Path(name)
        try:
            data = _read(path)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        conv = legacy.convert(
            data,
            source=path.name,
            batch_size=args.batch_size,
            unknown_dim=args.unknown_dim,
            backward=args.backward,
            resolve=resolve,
        )
        del data
        counts.update(legacy.reason_counts(conv.reports))
        for report in conv.reports:
            print(report, file=sys.stdout if report.status == "converted" else sys.stderr)
        converted += len(conv.cases)
        skipped += len(conv.skipped)
        if conv.cases:
            out_dir.mkdir(parents=True, exist_ok=True)
            target = out_dir / f"{path.stem}.yaml"
            target.write_text(legacy.to_yaml(conv), encoding="utf-8")
            written += 1
            for issue in validate(target, len(conv.cases)):
                print(f"invalid output: {issue}", file=sys.stderr)
                issues.append(issue)
    print(legacy.format_reason_table(counts))
    print(f"{converted} case(s) written to {written} file(s) in {out_dir}; {skipped} config(s) not converted")
    if issues:
        return 2
    return 0 if converted else 1


def register(sub) -> None:
    p = sub.add_parser(
        "import-legacy",
        help="convert PaddlePaddle benchmark API configs (JSON) into YAML cases",
        description="Convert legacy PaddlePaddle benchmark API configs (api/tests_v2/configs/*.json) into "
        "YAML case files, one per input, and validate them. Ops resolve through the operator allowlist "
        "and the alias table benchmark/legacy/ops.py. Prints what could not be converted and why, then "
        "a table of configs per reason.",
    )
    p.add_argument("files", nargs="+", metavar="FILE.json", help="legacy config files")
    p.add_argument(
        "--out", required=True, metavar="DIR", help="directory for the YAML files (e.g. configs/imported)"
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=legacy.DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"replaces a -1 batch dimension, the first (default {legacy.DEFAULT_BATCH_SIZE})",
    )
    p.add_argument(
        "--unknown-dim",
        type=positive_int,
        default=legacy.DEFAULT_UNKNOWN_DIM,
        metavar="N",
        help="replaces a -1 in any other dimension, as the legacy harness did "
        f"(default {legacy.DEFAULT_UNKNOWN_DIM})",
    )
    p.add_argument(
        "--backward",
        action="store_true",
        help="emit forward and backward variants of op cases (default: forward only)",
    )
    p.set_defaults(func=cmd_import_legacy)
