"""The `benchmark` command. Each sub-command lives in a module under benchmark/commands/ that
exposes `register(subparsers)`; add a module to COMMAND_MODULES to add a command."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

COMMAND_MODULES = [
    "benchmark.commands.validate",
    "benchmark.commands.report",
    "benchmark.commands.legacy",
    "benchmark.commands.store",
    "benchmark.commands.detect",
    "benchmark.commands.profile",
    "benchmark.commands.gate",
    "benchmark.commands.scope",
    "benchmark.commands.compare",
    "benchmark.commands.bisect",
    "benchmark.commands.ack",
    "benchmark.commands.night",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark",
        description="Benchmark harness and regression tracker for PaddlePaddle. "
        "Run the suite with `pytest benchmark/`; use these commands to validate configs and to "
        "read, compare and gate the history.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped early (`benchmark gate | head`): say nothing, and let Python not
        # complain either when it flushes stdout on the way out.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (stays open until exit)
        return 0


if __name__ == "__main__":
    sys.exit(main())
