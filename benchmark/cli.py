"""The `benchmark` command. Each sub-command lives in a module under benchmark/commands/ that
exposes `register(subparsers)` and is named after its command (`-` as `_`, a trailing `_` on a Python
keyword): a new module in benchmark/commands/ is a new command."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import sys


def command_modules() -> list[str]:
    """Every module of benchmark/commands/ whose name does not start with `_`, one per command."""
    import benchmark.commands

    return sorted(
        f"benchmark.commands.{m.name}"
        for m in pkgutil.iter_modules(benchmark.commands.__path__)
        if not m.name.startswith("_")
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark",
        description="Benchmark harness and regression tracker for PaddlePaddle. "
        "Run the suite with `pytest benchmark/`; use these commands to validate configs and to "
        "read, compare and gate the history.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_modules():
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
