"""The development tools' commands, registered on the one `nmc` command line by nmc.cli:
`nmc db …` (the embedded cluster), `nmc admin clock …` (the test clock), `nmc sim …`,
`nmc demo`, `nmc soak`, `nmc drill …` and `nmc dev pgtap`.
"""

import argparse
import os
import sys

from nmc.config import Settings
from nmc.database import ROLE_USERS, connect, connection_url
from nmc.errors import NmcError
from nmc_dev import clock, pgtap
from nmc_dev.embedded_db import EmbeddedCluster, Status
from nmc_dev.pg_binaries import client_tool
from nmc_dev.queries import QUERIES
from nmc_dev.sim.cli import add_arguments as add_sim_arguments

EXIT_NOT_RUNNING = 3  # as pg_ctl status and LSB init scripts
EXTERNAL_NOTE = "NMC_DATABASE_URL is set: the embedded cluster is not used"


def add_commands(commands: argparse._SubParsersAction, admin, _group, _command) -> None:
    """Add the development tools' commands to `nmc` (and `clock` to `nmc admin`)."""
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

    clock_group = _group(admin, "clock", "the database clock nmc.now()")
    advance = _command(
        clock_group, "advance", clock_advance, "move the clock forward (NMC_TEST_CLOCK=1)"
    )
    advance.add_argument("duration", help="7d, 1h, 90m, 30s or any PostgreSQL interval")
    _command(clock_group, "show", clock_show, "print nmc.now()")

    sim = _group(commands, "sim", "simulators of NotifyNL, the Profielservice and the LDV")
    for name, help_text in (
        ("notifynl", "a NotifyNL simulator (tests and demo only)"),
        ("profielservice", "a Profielservice simulator (tests and demo only)"),
        ("ldv", "an LDV collector simulator (tests and demo only)"),
    ):
        add_sim_arguments(name, _command(sim, name, sim_command, help_text))

    dev = _group(commands, "dev", "developer tools")
    pgtap_command = _command(dev, "pgtap", dev_pgtap, "run the pgTAP tests on a fresh database")
    pgtap_command.add_argument("files", nargs="*", help="default: tests_sql/*.sql")

    _add_demo_command(commands, _command)
    _add_soak_command(commands, _command)
    _add_drill_command(commands, _command)


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


def clock_advance(args: argparse.Namespace, settings: Settings) -> int:
    print(f"nmc.now() = {clock.advance(settings, args.duration).isoformat()}")
    return 0


def clock_show(args: argparse.Namespace, settings: Settings) -> int:
    print(clock.show(settings).isoformat())
    return 0


def dev_pgtap(args: argparse.Namespace, settings: Settings) -> int:
    return pgtap.run(settings, args.files)


def sim_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc_dev.sim import cli as sim_cli

    sim_cli.serve(args)
    return 0


# --- The demo: `nmc demo` ---


def demo_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc_dev.demo.run import Options, run

    options = Options(
        count=args.count,
        workers=args.workers,
        keep_running=args.keep_running,
        tty=sys.stdout.isatty() and not args.no_tty,
        phase_timeout_s=args.phase_timeout,
    )
    return run(settings, options)


def _add_demo_command(commands: argparse._SubParsersAction, _command) -> None:
    demo = _command(
        commands, "demo", demo_command,
        "start a local NMC and send notifications through every outcome",
    )  # fmt: skip
    demo.add_argument("--count", type=int, default=300, help="notifications to send (300)")
    demo.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    demo.add_argument("--keep-running", action="store_true", help="leave the stack up until Ctrl-C")
    demo.add_argument(
        "--no-tty", action="store_true", help="a progress line every few seconds, no redraw"
    )
    demo.add_argument(
        "--phase-timeout", type=float, default=120.0, help="seconds a phase may take (120)"
    )


# --- end of the demo block ---


# --- The chaos soak: `nmc soak` ---


def soak_command(args: argparse.Namespace, settings: Settings) -> int:
    if args.year:
        from nmc_dev.soak.year import YearOptions
        from nmc_dev.soak.year import run as run_year

        year = YearOptions(
            days=args.days,
            per_day=args.per_day,
            term=args.term,
            partition_width=args.partition_width,
            probe=args.probe,
            throughput_share=args.throughput_share,
            seed=args.seed,
            tty=sys.stdout.isatty() and not args.no_tty,
        )
        return run_year(settings, year)
    from nmc_dev.soak.run import run

    return run(settings, _run_options(args))


def _run_options(args: argparse.Namespace):
    """The soak's run options, which the drills share (the same workload and phases)."""
    from nmc_dev.soak.run import Options

    return Options(
        count=args.count,
        workers=args.workers,
        submit_seconds=args.submit_seconds,
        phase_timeout_s=args.phase_timeout,
        seed=args.seed,
        tty=sys.stdout.isatty() and not args.no_tty,
    )


def _add_run_arguments(parser: argparse.ArgumentParser, *, count: int, workers: int, seed: str):
    """The arguments _run_options reads, shared by the soak and the drills."""
    parser.add_argument("--count", type=int, default=count, help=f"notifications ({count})")
    parser.add_argument(
        "--workers", type=int, default=workers, help=f"worker processes ({workers})"
    )
    parser.add_argument(
        "--submit-seconds", type=float, default=20.0,
        help="spread the intake over at least this many seconds (20)",
    )  # fmt: skip
    parser.add_argument(
        "--phase-timeout", type=float, help="seconds a phase may take (120 + count/40)"
    )
    parser.add_argument("--seed", type=int, help=f"seed of {seed}")
    parser.add_argument("--no-tty", action="store_true", help="a progress line every few seconds")


def _add_soak_command(commands: argparse._SubParsersAction, _command) -> None:
    soak = _command(
        commands, "soak", soak_command,
        "send N notifications through a local NMC under chaos, then check every promise",
    )  # fmt: skip
    _add_run_arguments(soak, count=20_000, workers=3, seed="the workload and the chaos dice")
    year = soak.add_argument_group(
        "the year run (--year)",
        "a simulated year of traffic in the shipped shape (the workers as docker-compose.yml "
        "runs them, maintenance among their tasks), then the upkeep checked",
    )
    year.add_argument("--year", action="store_true", help="run the year instead of the chaos")
    year.add_argument("--days", type=int, default=400, help="simulated days of traffic (400)")
    year.add_argument("--per-day", type=int, default=100, help="notifications a day (100)")
    year.add_argument(
        "--term", default="1 year", help="the delivery-proof retention ('1 year', as shipped)"
    )
    year.add_argument(
        "--partition-width", type=int, help="xids per event partition (default: from --per-day)"
    )
    year.add_argument(
        "--probe", type=int, default=1000, help="notifications per throughput probe (1000)"
    )
    year.add_argument(
        "--throughput-share", type=float, default=0.9,
        help="the last month's throughput at least this share of the first's (0.9)",
    )  # fmt: skip


# --- end of the chaos soak block ---


# --- Replication drills: `nmc drill failover|restore` ---


def drill_command(args: argparse.Namespace, settings: Settings) -> int:
    options = _run_options(args)
    if args.mode == "restore":
        from nmc_dev.drill.restore import run as run_restore

        return run_restore(settings, options)
    from nmc_dev.drill.failover import run as run_failover

    return run_failover(settings, options)


def _add_drill_command(commands: argparse._SubParsersAction, _command) -> None:
    drill = _command(
        commands, "drill", drill_command,
        "real PostgreSQL replication on this machine: lose the primary mid-stream "
        "(failover), or restore a base backup to a point in time (restore), then check",
    )  # fmt: skip
    drill.add_argument("mode", choices=("failover", "restore"))
    _add_run_arguments(drill, count=2000, workers=2, seed="the workload")


# --- end of the drill block ---
