"""`nmc`: the one command line for everything an operator or developer runs.

Defaults come from NMC_ environment variables (see nmc.config). Failures print one clear
message on stderr and exit with code 1.
"""

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg

from nmc import clock, pgtap
from nmc.config import Settings
from nmc.database import ROLE_USERS, connect, connection_url
from nmc.embedded_db import EmbeddedCluster, Status
from nmc.errors import NmcError
from nmc.migrate import Plan, check, describe_database_error, migrate
from nmc.pg_binaries import client_tool
from nmc.queries import QUERIES

EXIT_NOT_RUNNING = 3  # as pg_ctl status and LSB init scripts
EXTERNAL_NOTE = "NMC_DATABASE_URL is set: the embedded cluster is not used"

Command = Callable[[argparse.Namespace, Settings], int]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args, Settings.from_env())
    except NmcError as error:
        print(f"nmc: {error}", file=sys.stderr)
    except psycopg.Error as error:
        print(f"nmc: {describe_database_error(error)}", file=sys.stderr)
    return 1


def db_start(args: argparse.Namespace, settings: Settings) -> int:
    print(EXTERNAL_NOTE if settings.database_url else EmbeddedCluster(settings).start())
    return 0


def db_stop(args: argparse.Namespace, settings: Settings) -> int:
    print(EXTERNAL_NOTE if settings.database_url else EmbeddedCluster(settings).stop())
    return 0


def db_status(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 0 when the database can be used, 3 when it is not running."""
    if settings.database_url:
        try:
            with connect(settings.database_url) as conn:
                version = conn.execute(QUERIES["server_version"]).fetchone()[0]
        except NmcError as error:
            print(f"external database not reachable: {error}")
            return EXIT_NOT_RUNNING
        print(f"external database reachable (PostgreSQL {version})")
        return 0
    cluster = EmbeddedCluster(settings)
    status = cluster.status()
    print(f"embedded PostgreSQL {status.value} ({cluster.describe()})")
    return 0 if status is Status.RUNNING else EXIT_NOT_RUNNING


def db_url(args: argparse.Namespace, settings: Settings) -> int:
    print(connection_url(settings, args.role, args.database))
    return 0


def db_psql(args: argparse.Namespace, settings: Settings) -> int:
    psql = str(client_tool("psql"))
    url = connection_url(settings, args.role, args.database)
    psql_args = args.psql_args[1:] if args.psql_args[:1] == ["--"] else args.psql_args
    os.execv(psql, [psql, f"--dbname={url}", *psql_args])  # noqa: S606 - replaces this process


def migrate_command(args: argparse.Namespace, settings: Settings) -> int:
    url = args.database_url or connection_url(settings)
    root = args.root or settings.root
    if args.check:
        plan = check(url, root)
        _print_check(plan)
        return 0 if plan.up_to_date else 1
    _print_migration(migrate(url, root))
    return 0


def clock_advance(args: argparse.Namespace, settings: Settings) -> int:
    print(f"nmc.now() = {clock.advance(settings, args.duration).isoformat()}")
    return 0


def clock_show(args: argparse.Namespace, settings: Settings) -> int:
    print(clock.show(settings).isoformat())
    return 0


def dev_pgtap(args: argparse.Namespace, settings: Settings) -> int:
    return pgtap.run(settings, args.files)


def _print_migration(plan: Plan) -> None:
    for schema_file in plan.pending_schema:
        print(f"applied  {schema_file.path}")
    for change in plan.modules:
        print(f"applied  {change.file.path} ({change.reason} module)")
    if plan.up_to_date:
        print("up to date: nothing to apply; grants re-applied")
    else:
        print(f"migrated: {plan.summary()}; grants re-applied")


def _print_check(plan: Plan) -> None:
    for schema_file in plan.pending_schema:
        print(f"pending  {schema_file.path}")
    for schema_file in plan.drifted_schema:
        print(f"DRIFTED  {schema_file.path} (edited after it was applied; schema is append-only)")
    for change in plan.modules:
        print(f"{change.reason:<8} {change.file.path} (module)")
    if plan.up_to_date:
        print("check: up to date")
    else:
        drifted = f"; {len(plan.drifted_schema)} drifted" if plan.drifted_schema else ""
        print(f"check: to apply {plan.summary()}{drifted}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmc", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    db = _group(commands, "db", "the database: embedded cluster, or NMC_DATABASE_URL")
    _command(db, "start", db_start, "initialise and start the embedded cluster (idempotent)")
    _command(db, "stop", db_stop, "stop the embedded cluster (idempotent)")
    _command(db, "status", db_status, "exit 0 if the database is up, 3 if not")
    url = _command(db, "url", db_url, "print the connection URL")
    psql = _command(db, "psql", db_psql, "open psql on the database")
    for target in (url, psql):
        target.add_argument("--role", choices=list(ROLE_USERS), default="admin")
        target.add_argument("--database", metavar="NAME")
    psql.add_argument("psql_args", nargs=argparse.REMAINDER, help="passed on to psql")

    migration = _command(commands, "migrate", migrate_command, "apply pending SQL")
    migration.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything is pending"
    )
    migration.add_argument("--database-url", metavar="URL", help="default: nmc db url")
    migration.add_argument("--root", type=Path, metavar="DIR", help="default: NMC_ROOT")

    admin = _group(commands, "admin", "operator tasks")
    clock_group = _group(admin, "clock", "the database clock nmc.now()")
    advance = _command(
        clock_group, "advance", clock_advance, "move the clock forward (NMC_TEST_CLOCK=1)"
    )
    advance.add_argument("duration", help="7d, 1h, 90m, 30s or any PostgreSQL interval")
    _command(clock_group, "show", clock_show, "print nmc.now()")

    dev = _group(commands, "dev", "developer tools")
    pgtap_command = _command(dev, "pgtap", dev_pgtap, "run the pgTAP tests on a fresh database")
    pgtap_command.add_argument("files", nargs="*", help="default: tests_sql/*.sql")
    return parser


def _group(commands: argparse._SubParsersAction, name: str, help_text: str):
    group = commands.add_parser(name, help=help_text, description=help_text)
    return group.add_subparsers(required=True, metavar="COMMAND")


def _command(
    commands: argparse._SubParsersAction, name: str, handler: Command, help_text: str
) -> argparse.ArgumentParser:
    command = commands.add_parser(name, help=help_text, description=help_text)
    command.set_defaults(command=handler)
    return command
