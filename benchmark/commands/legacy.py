"""`benchmark import-legacy`: convert PaddlePaddle benchmark API configs (JSON) into YAML case files.

One YAML file per input file (``<out>/<input stem>.yaml``), then the written files are validated
exactly as `benchmark validate` would (op names resolved when paddle is importable). Prints one line
per converted config and, for each config that could not be converted, why.
Exit status: 0 when every written file is valid, 1 when nothing could be converted, 2 when an input
cannot be read or an output does not validate.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmark import legacy
from benchmark.commands import positive_int
from benchmark.config import load_paths


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None


def _validate(paths: list[Path]) -> list[str]:
    from benchmark import runners

    _, issues = load_paths(
        [str(p) for p in paths], resolver=runners.op_resolver(), models=runners.model_names()
    )
    return [str(i) for i in issues]


def cmd_import_legacy(args) -> int:
    out_dir = Path(args.out)
    written: list[Path] = []
    converted = skipped = 0
    for name in args.files:
        path = Path(name)
        try:
            data = _read(path)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        conv = legacy.convert(data, source=path.name, batch_size=args.batch_size, backward=args.backward)
        for report in conv.reports:
            print(report, file=sys.stdout if report.status == "converted" else sys.stderr)
        converted += len(conv.cases)
        skipped += len(conv.skipped)
        if conv.cases:
            out_dir.mkdir(parents=True, exist_ok=True)
            target = out_dir / f"{path.stem}.yaml"
            target.write_text(legacy.to_yaml(conv), encoding="utf-8")
            written.append(target)
    issues = _validate(written) if written else []
    for issue in issues:
        print(f"invalid output: {issue}", file=sys.stderr)
    print(
        f"{converted} case(s) written to {len(written)} file(s) in {out_dir}; {skipped} config(s) not converted"
    )
    if issues:
        return 2
    return 0 if converted else 1


def register(sub) -> None:
    p = sub.add_parser(
        "import-legacy",
        help="convert PaddlePaddle benchmark API configs (JSON) into YAML cases",
        description="Convert legacy PaddlePaddle benchmark API configs (api/tests_v2/configs/*.json) into "
        "YAML case files, one per input, and validate them. Prints what could not be converted and why.",
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
        help=f"replaces a -1 batch dimension (default {legacy.DEFAULT_BATCH_SIZE})",
    )
    p.add_argument(
        "--backward",
        action="store_true",
        help="emit forward and backward variants of op cases (default: forward only)",
    )
    p.set_defaults(func=cmd_import_legacy)
