"""`benchmark db init|current|upgrade|backup`: the history database's schema and a consistent copy."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from benchmark.commands._common import (
    CommandError,
    add_db,
    command,
    open_writable,
)

if TYPE_CHECKING:
    pass


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "db",
        help="create, inspect or upgrade the history database",
        description="Manage the history database's schema (alembic migrations shipped with the harness).",
    )
    actions = parser.add_subparsers(dest="db_action", metavar="ACTION", required=True)
    for name, help_text, func in (
        ("init", "create an empty history at the newest schema", cmd_db_init),
        ("current", "show the schema revision of the history and whether it is current", cmd_db_current),
        ("upgrade", "migrate the history to the newest schema, keeping every row", cmd_db_upgrade),
    ):
        action = actions.add_parser(
            name, help=help_text, description=help_text[0].upper() + help_text[1:] + "."
        )
        add_db(action)
        action.set_defaults(func=func)
    backup = actions.add_parser(
        "backup",
        help="copy a SQLite history into one consistent file",
        description="Copy the SQLite history into the single file OUT with SQLite's online backup: "
        "a consistent snapshot of every committed run, safe while another process is writing, "
        "with no -wal or -shm file beside it (upload or attach OUT itself). OUT is written under a "
        "temporary name and renamed when complete. For a PostgreSQL history use pg_dump.",
    )
    backup.add_argument("out", metavar="OUT", help="the backup file to write (e.g. history-backup.sqlite)")
    backup.add_argument("--force", action="store_true", help="replace OUT if it exists")
    add_db(backup)
    backup.set_defaults(func=cmd_db_backup)


@command("db init")
def cmd_db_init(args: argparse.Namespace) -> int:
    with open_writable(args.db) as store:
        from benchmark.store import head_revision

        print(f"{store.display_url}: history at schema revision {head_revision()}")
    return 0


@command("db backup")
def cmd_db_backup(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store.backup import backup_sqlite

    done = backup_sqlite(db_url(args.db), args.out, force=args.force)
    print(f"{done.source}: {done.runs} runs, {done.results} results copied to {done.out} ({done.size} bytes)")
    return 0


@command("db current")
def cmd_db_current(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store import schema_status

    where, state = schema_status(db_url(args.db))
    if state.kind == "current":
        print(f"{where}: revision {state.revision} (current)")
        return 0
    if state.kind == "outdated":
        print(f"{where}: revision {state.revision}, the newest is {state.head}: run `benchmark db upgrade`")
        return 1
    if state.kind == "empty":
        print(f"{where}: no history yet (create one with `benchmark db init`)")
        return 1
    raise CommandError(
        f"{where}: revision {state.revision or 'none'} is not one this version knows ({state.head})"
    )


@command("db upgrade")
def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from benchmark.paths import db_url
    from benchmark.store import upgrade_store

    where, before, after = upgrade_store(db_url(args.db))
    if before == after:
        print(f"{where}: already at revision {after}")
    else:
        print(f"{where}: upgraded from revision {before or 'none (new history)'} to {after}")
    return 0
