"""`benchmark import-legacy`: convert PaddlePaddle benchmark API configs (JSON) into YAML case files.

The command parses its options and calls `benchmark.legacy.files.import_files`: one YAML file per
input file (``<out>/<input stem>.yaml``), then the written files are validated exactly as
`benchmark validate` would. Ops resolve through the operator allowlist
(`benchmark.runners.paddle_ops.resolve_op`) and the alias table `benchmark.legacy.ops`. Prints one
line per converted config and, for each config that could not be converted, why (with its reason
category), then a table counting configs per outcome.
Exit status: 0 when every written file is valid, 1 when nothing could be converted, 2 when an input
cannot be read or is not a list of configs, or an output does not validate.
"""

from __future__ import annotations

import argparse

from benchmark import legacy  # the converter itself: standard library and yaml (~30 ms)
from benchmark.commands._common import command, positive_int


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
    p.add_argument(
        "--tag",
        default="imported",
        metavar="TAG",
        help="the tag of every case written (default: imported; the in-tree corpus uses pb)",
    )
    p.add_argument(
        "--snapshot",
        default=None,
        metavar="TEXT",
        help="where the legacy files came from, named in each file's header (e.g. a repository at a commit)",
    )
    p.set_defaults(func=cmd_import_legacy)


@command("import-legacy")
def cmd_import_legacy(args: argparse.Namespace) -> int:
    from benchmark.legacy.files import import_files

    return import_files(
        args.files,
        args.out,
        batch_size=args.batch_size,
        unknown_dim=args.unknown_dim,
        backward=args.backward,
        tag=args.tag,
        snapshot=args.snapshot,
    )
