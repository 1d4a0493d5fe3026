"""What every `benchmark` command shares: `--db`, `--run`, the error guard and the read-only store.

Importing this module is cheap (standard library only): commands import their heavy dependencies
(the store, the analysis, matplotlib, paddle) inside the function that runs them, so `benchmark
--help` and each command's `--help` start fast.

Conventions: an expected failure (bad input, no such run, no history, an unreadable database) is one
line on stderr, ``benchmark COMMAND: error: ...``, and exit status 2. Commands that only read never
create a database or a directory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark import paths
from benchmark.text import safe_line, safe_text

if TYPE_CHECKING:
    from benchmark.store import Store

DB_HELP = (
    f"history database: a SQLAlchemy URL or a SQLite file path (default: ${paths.DB_URL_ENV}, "
    "else results/history.sqlite of the project)"
)
LATEST = "latest"
MIN_EFFECT_SOURCE = "configs/gates.yaml"


class CommandError(ValueError):
    """An expected failure of a command: printed as one line on stderr, exit status 2 (a ValueError,
    so that guards that catch bad input catch it too)."""


# ----------------------------------------------------------------------------------------- arguments


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1, with a clear message otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_db(parser: argparse.ArgumentParser) -> None:
    """`--db URL|PATH`: the history to read or write."""
    parser.add_argument("--db", metavar="URL", help=DB_HELP)


def add_run(
    parser: argparse.ArgumentParser,
    *,
    flag: str = "--run",
    default: str | None = LATEST,
    help: str = "the run: an id or 'latest' (default)",
) -> None:
    """`--run ID|latest` (kept as text; :func:`resolve_run` turns it into a stored run id)."""
    parser.add_argument(flag, default=default, metavar="ID", help=help)


def add_case_selection(
    parser: argparse.ArgumentParser, *, place: str | None = None, modes: bool = False
) -> None:
    """The case selection of the commands that run cases in other environments (`compare`,
    `bisect`, `night`): config files, `-k`, `--tags` and `--place` (default `place`: all places when
    None), and with `modes` also `--modes`, as the suite's `--bench-modes`."""
    parser.add_argument(
        "configs",
        nargs="*",
        metavar="CONFIG",
        help="config files or directories (default: the project's configs/)",
    )
    parser.add_argument(
        "-k",
        dest="keyword",
        default=None,
        metavar="EXPR",
        help="select cases as pytest -k does: substrings of the case id with and/or/not "
        "(e.g. 'abs and not bwd')",
    )
    parser.add_argument(
        "--tags",
        default=None,
        metavar="TAG,...",
        help="only cases with one of these tags ('all': every case; default: all but 'slow')",
    )
    parser.add_argument(
        "--place",
        default=place,
        metavar="PLACE,...",
        help="only cases on these places (globs, e.g. cpu or 'gpu*'; default: "
        f"{place or 'all'}; a place this machine lacks is reported as skipped)",
    )
    if modes:
        parser.add_argument(
            "--modes", default=None, metavar="MODES", help="comma-separated modes: dynamic,static,to_static"
        )


def add_format(
    parser: argparse.ArgumentParser, *, help: str, choices: tuple[str, ...] = ("text", "json")
) -> None:
    """`--format NAME`: the format of the command's main output (its first choice the default)."""
    parser.add_argument("--format", choices=choices, default=choices[0], help=help)


def add_min_effect(
    parser: argparse.ArgumentParser,
    *,
    source: str = MIN_EFFECT_SOURCE,
    also: str = "",
    type: Callable[[str], float] = float,
) -> None:
    """`--min-effect X`: the smallest relative change that counts, the same in every command that
    judges; its default is `defaults.min_effect` of configs/gates.yaml (:func:`default_min_effect`)."""
    parser.add_argument(
        "--min-effect",
        type=type,
        default=None,
        metavar="X",
        help="smallest relative change that counts, 0.05 = 5%% (default: defaults.min_effect of "
        f"{source}{also})",
    )


def default_min_effect(gates: str | None = None) -> float:
    """The default of `--min-effect`: `defaults.min_effect` of the gate settings (`gates`, else
    configs/gates.yaml), read through the gate settings' own loader."""
    from benchmark.gate.settings import DEFAULT_GATES_PATH, load_gates

    return load_gates(gates or DEFAULT_GATES_PATH).spec.defaults.min_effect


class _Deprecated(argparse.Action):
    """An old spelling of an option: one line on stderr, then it stores what the new one would."""

    def __init__(self, option_strings, dest, *, new: str, prog: str, **kwargs) -> None:
        self.new, self.prog = new, prog
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(
            f"{self.prog}: {option_string} is deprecated, use {self.new} (removed in the next release)",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, *, const: Any = None) -> None:
    """Accept `old` as the deprecated spelling of the option `new` of `parser` (already added): it
    prints `benchmark CMD: OLD is deprecated, use NEW (removed in the next release)` on stderr and
    stores what NEW would. With `const`, OLD is a flag that stores `const` (`--json` for
    `--format json`: give `new="--format json"`). Hidden from --help; docs/cli.md lists it."""
    target = parser._option_string_actions[new.split()[0]]
    kwargs: dict[str, Any] = {"dest": target.dest, "help": argparse.SUPPRESS, "new": new, "prog": parser.prog}
    if const is None:
        kwargs.update(type=target.type, choices=target.choices, metavar=target.metavar)
    else:
        kwargs.update(nargs=0, const=const)
    parser.add_argument(old, action=_Deprecated, **kwargs)


def deprecated_actions(parser: argparse.ArgumentParser) -> list[_Deprecated]:
    """The deprecated spellings `parser` still accepts (for docs/cli.md and its test)."""
    return [a for a in parser._actions if isinstance(a, _Deprecated)]


def add_run_group(parser: argparse.ArgumentParser, *, help: str) -> None:
    """`--run-group NAME` (the shards of one nightly; :func:`resolve_runs` turns it into run ids)."""
    parser.add_argument("--run-group", default=None, metavar="NAME", help=help)


# -------------------------------------------------------------------------------------- error guard


def _expected_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the input is wrong", not "the harness is broken": ours, and
    those of the store, the gate settings and the judge where the command has imported them (looked
    up in sys.modules so that the guard itself imports nothing)."""
    found: list[type[BaseException]] = [CommandError, ValueError, OSError]
    for module, name in (
        ("benchmark.store.engine", "StoreError"),
        ("benchmark.gate.settings", "GateError"),
        ("benchmark.gate.judge", "GateInputError"),
    ):
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def one_line(exc: BaseException) -> str:
    """The message of `exc` on one line (an OSError as `file: reason`)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split())


def fail(name: str, message: str) -> int:
    """Print `benchmark NAME: error: MESSAGE` on stderr; returns exit status 2."""
    print(safe_line(f"benchmark {name}: error: {message}"), file=sys.stderr)
    return 2


def command(name: str) -> Callable:
    """Decorate a command so that expected failures print one line on stderr and exit with 2."""

    def wrap(fn: Callable[[argparse.Namespace], int | None]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(fn)
        def run(args: argparse.Namespace) -> int:
            try:
                return int(fn(args) or 0)
            except Exception as exc:
                if isinstance(exc, BrokenPipeError):  # a reader that stopped early (| head): not an error
                    raise
                if isinstance(exc, _expected_errors()):
                    return fail(name, one_line(exc))
                raise

        return run

    return wrap


# -------------------------------------------------------------------------------------------- store


def open_history(db: str | None) -> Store:
    """The history at `db` (see :func:`benchmark.paths.db_url`), opened read-only.

    Never creates anything: a SQLite file that does not exist is a :class:`CommandError` naming the
    file, before any directory or database is touched.
    """
    url = paths.db_url(db)
    sqlite_file = _sqlite_file(url)
    if sqlite_file is not None and not sqlite_file.exists():
        raise CommandError(
            f"no history at {paths.shown_path(sqlite_file)} (run `pytest benchmark/` first, or give --db)"
        )
    from benchmark.store import open_store

    return open_store(url, create=False, readonly=True)


def open_writable(db: str | None) -> Store:
    """The history at `db`, created (with its directory) when it does not exist yet."""
    from benchmark.store import open_store

    return open_store(paths.db_url(db))


def _sqlite_file(url: str) -> Path | None:
    """The file of a sqlite URL (None for other databases and in-memory SQLite)."""
    if not url.startswith("sqlite"):
        return None
    _, _, rest = url.partition(":///")
    rest = rest.split("?", 1)[0]
    if not rest or rest == ":memory:" or rest.startswith("file:"):
        return None
    return Path(rest)


def resolve_run(store: Store, text: str | int) -> int:
    """A stored run id from `--run` text: 'latest' or an id that exists."""
    if text == LATEST:  # the latest run of the suite: compare and bisect sides and imports are not
        run_id = store.latest_run_id(suite=True)
        if run_id is None and store.latest_run_id() is not None:
            raise CommandError(
                f"the history at {store.display_url} has no suite run, only compare, bisect or imported "
                "runs: name one with --run ID or --run-group NAME (`benchmark runs` lists them)"
            )
        if run_id is None:
            raise CommandError(
                f"the history at {store.display_url} has no runs yet (run `pytest benchmark/` first)"
            )
        return run_id
    try:
        run_id = int(text)
    except (TypeError, ValueError):
        raise CommandError(f"--run takes a run id or 'latest', not {text!r}") from None
    if store.run(run_id) is None:
        raise CommandError(f"there is no run {run_id} in {store.display_url}")
    return run_id


def resolve_runs(store: Store, run: str | int, run_group: str | None) -> list[int]:
    """The runs `--run` and `--run-group` name: every run of the group (oldest first), else the one
    run; a CommandError when both are given or the group has no runs."""
    if not run_group:
        return [resolve_run(store, run)]
    if run != LATEST:
        raise CommandError("give --run ID or --run-group NAME, not both")
    run_ids = store.group_runs(run_group)
    if not run_ids:
        raise CommandError(f"there are no runs of group {run_group!r} in {store.display_url}")
    return run_ids


# ----------------------------------------------------------------------------------------- output


def format_timestamp(value: dt.datetime | None) -> str:
    """A timestamp in local time, to the second."""
    return "-" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def format_duration(start: dt.datetime | None, end: dt.datetime | None) -> str:
    """Wall time between two timestamps: 42 s, 3.5 min, 1.2 h."""
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_commit(commit: str | None, dirty: bool | None = None) -> str:
    """The first 10 characters of a commit, `+` when the tree was dirty."""
    if not commit:
        return "-"
    return commit[:10] + ("+" if dirty else "")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[int] = ()) -> None:
    """A table on stdout: rich on a terminal, plain aligned text otherwise (pipes, files, tests).
    Cells are printed with control characters escaped (:func:`benchmark.text.safe_text`)."""
    cells = [[("-" if c is None else safe_text(c)) for c in row] for row in rows]
    if sys.stdout.isatty():
        from rich import box
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD)
        for index, header in enumerate(headers):
            table.add_column(header, justify="right" if index in right else "left", overflow="fold")
        for row in cells:
            table.add_row(*(escape(c) for c in row))  # "[red]" in a case id is text
        Console().print(table)
        return
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return safe_line("  ".join(parts).rstrip())

    print(line(headers))
    for row in cells:
        print(line(row))
