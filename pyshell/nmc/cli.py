"""`nmc`: the one command line for everything an operator or developer runs.

Defaults come from NMC_ environment variables (see nmc.config). Failures print one clear
message on stderr and exit with code 1.
"""

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg

from nmc import admin as admin_tasks
from nmc import admin_ops, admin_rapportage, clock, pgtap
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


# --- The DV API, onboarding and dev secrets: `nmc api`, `nmc admin dv|token|keys` ---


def api_serve(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.api.serve import serve  # uvicorn and the app load only for this command

    serve(args.host, args.port, workers=args.workers, access_log=args.access_log)
    return 0


def admin_dv_apply(args: argparse.Namespace, settings: Settings) -> int:
    done = admin_tasks.onboard_dv(settings, args.file)
    print(f"dienstverlener {done.oin} applied (dv_id {done.dv_id})")
    webhook = admin_tasks.describe_webhook(done.webhook)
    if webhook is not None:
        print(webhook)
    return 0


def admin_dv_list(args: argparse.Namespace, settings: Settings) -> int:
    dvs = admin_tasks.list_dvs(settings)
    print(json.dumps(dvs, indent=2) if args.json else admin_tasks.format_dvs(dvs))
    return 0


def admin_token(args: argparse.Namespace, settings: Settings) -> int:
    print(admin_tasks.dev_token(args.oin, args.ttl))
    return 0


def admin_keys_init(args: argparse.Namespace, settings: Settings) -> int:
    env_file = admin_tasks.init_secrets(args.dir or settings.home / "secrets", force=args.force)
    print(f"dev secrets written; load them with:  set -a; . {env_file}; set +a")
    return 0


# --- end of the DV API block ---


# --- The delivery-proof signing ring: `nmc admin keys afleverbewijs list|add|activate` ---


def _afleverbewijs_file(args: argparse.Namespace) -> Path:
    path = args.file or os.environ.get("NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    if not path:
        raise NmcError("name the ring with --file or NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    return Path(path)


def admin_afleverbewijs_list(args: argparse.Namespace, settings: Settings) -> int:
    from nmc import afleverbewijs_signing as proof

    for kid, alg, state in proof.describe(proof.read_ring_document(_afleverbewijs_file(args))):
        print(f"{kid}  {alg}  {state}")
    return 0


def admin_afleverbewijs_add(args: argparse.Namespace, settings: Settings) -> int:
    from nmc import afleverbewijs_signing as proof

    path = _afleverbewijs_file(args)
    document = proof.add_key(proof.read_ring_document(path), args.kid, args.alg)
    proof.write_ring_document(path, document)
    print(
        f"key {args.kid} added to {path} (published, not signing): roll the API, then "
        f"`nmc admin keys afleverbewijs activate --kid {args.kid}`"
    )
    return 0


def admin_afleverbewijs_activate(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import timedelta

    from nmc import afleverbewijs_signing as proof

    path = _afleverbewijs_file(args)
    document = proof.activate_key(
        proof.read_ring_document(path), args.kid, keep=timedelta(days=args.bewaar_dagen)
    )
    proof.write_ring_document(path, document)
    retired = ", ".join(sorted(document["retired"])) or "none"
    print(f"key {args.kid} signs proofs now; retired (still published): {retired}. Roll the API.")
    return 0


def _add_afleverbewijs_keys_commands(keys: argparse._SubParsersAction) -> None:
    ring = _group(keys, "afleverbewijs", "the delivery-proof signing ring (docs/afleverbewijs.md)")
    listing = _command(ring, "list", admin_afleverbewijs_list, "the keys and their state")
    add = _command(ring, "add", admin_afleverbewijs_add, "add a new key (published, not signing)")
    add.add_argument("--kid", required=True, help="the new key's id")
    add.add_argument("--alg", choices=("ES256", "RS256"), default="ES256")
    activate = _command(
        ring, "activate", admin_afleverbewijs_activate, "let a key sign; retire the others"
    )
    activate.add_argument("--kid", required=True, help="the key that signs from now on")
    activate.add_argument(
        "--bewaar-dagen",
        type=int,
        default=366,
        help="drop retired keys retired longer ago (the delivery-proof retention + 1 day; 366)",
    )
    for command in (listing, add, activate):
        command.add_argument(
            "--file", type=Path, help="default: $NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE"
        )


# --- The operator console: `nmc console`, `nmc admin console-token` ---


def console_serve(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.console.serve import serve  # uvicorn and the app load only for this command

    serve(args.host, args.port)
    return 0


def admin_console_token(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.api.auth import issue_dev_claims
    from nmc.console.settings import DEFAULT_ROLE_CLAIM

    claim = os.environ.get("NMC_CONSOLE_ROLE_CLAIM") or DEFAULT_ROLE_CLAIM
    if "." in claim:
        raise NmcError("console-token writes a top-level role claim; unset NMC_CONSOLE_ROLE_CLAIM")
    audience = os.environ.get("NMC_CONSOLE_OAUTH_AUDIENCE") or "nmc-console"
    claims = {"sub": args.sub, claim: [args.rol]}
    print(issue_dev_claims(claims, audience=audience, lifetime_seconds=args.ttl))
    return 0


def _add_console_commands(commands: argparse._SubParsersAction, admin) -> None:
    console = _command(
        commands, "console", console_serve,
        "serve the operator console on its own port (off unless started; docs/console.md)",
    )  # fmt: skip
    console.add_argument("--host", default="127.0.0.1")
    console.add_argument("--port", type=int, default=8090)
    token = _command(
        admin, "console-token", admin_console_token,
        "issue an operator's console token from the dev IAM key (development only)",
    )  # fmt: skip
    token.add_argument(
        "--rol", default="nmc-beheerder", help="the role claim's value (nmc-beheerder)"
    )
    token.add_argument("--sub", default="dev-beheerder", help="the operator's subject id")
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (3600)")


# --- end of the operator console block ---


# --- The send pipeline (issues 4 and 5): `nmc worker`, `nmc sim notifynl|profielservice|ldv` ---


def worker_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc import aio
    from nmc.worker import config as worker_config
    from nmc.worker import logs
    from nmc.worker.loop import main as run_worker

    config = worker_config.WorkerConfig.from_env(
        settings,
        kinds=worker_config.parse_kinds(args.kinds),
        batch=args.batch,
        concurrency=args.concurrency,
        poll_interval=args.poll_interval,
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
    )
    logs.configure()
    aio.run(run_worker(config))
    return 0


def sim_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.sim import cli as sim_cli

    sim_cli.serve(args)
    return 0


def _add_pipeline_commands(commands: argparse._SubParsersAction) -> None:
    from nmc.sim.cli import add_arguments as add_sim_arguments

    worker = _command(commands, "worker", worker_command, "claim and work tasks until SIGTERM")
    worker.add_argument(
        "--kinds",
        default="",
        help="comma-separated task kinds (default, or `all`: every kind, maintenance too)",
    )
    worker.add_argument("--batch", type=int, default=20, help="tasks per claim (20)")
    worker.add_argument(
        "--concurrency", type=int, default=20, help="tasks worked at once per kind (20)"
    )
    worker.add_argument(
        "--poll-interval", type=float, default=0.5, help="seconds to sleep when idle (0.5)"
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve /metrics and /health/* on this port (NMC_WORKER_METRICS_PORT; default off)",
    )
    worker.add_argument(
        "--metrics-host", help="address of that listener (NMC_WORKER_METRICS_HOST; 127.0.0.1)"
    )
    sim = _group(commands, "sim", "simulators of NotifyNL, the Profielservice and the LDV")
    for name, help_text in (
        ("notifynl", "a NotifyNL simulator (tests and demo only)"),
        ("profielservice", "a Profielservice simulator (tests and demo only)"),
        ("ldv", "an LDV collector simulator (tests and demo only)"),
    ):
        add_sim_arguments(name, _command(sim, name, sim_command, help_text))


# --- end of the send pipeline block ---


# --- The demo: `nmc demo` ---


def demo_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.demo.run import Options, run

    options = Options(
        count=args.count,
        workers=args.workers,
        keep_running=args.keep_running,
        tty=sys.stdout.isatty() and not args.no_tty,
        phase_timeout_s=args.phase_timeout,
    )
    return run(settings, options)


def _add_demo_command(commands: argparse._SubParsersAction) -> None:
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
        from nmc.soak.year import YearOptions
        from nmc.soak.year import run as run_year

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
    from nmc.soak.run import Options, run

    options = Options(
        count=args.count,
        workers=args.workers,
        submit_seconds=args.submit_seconds,
        phase_timeout_s=args.phase_timeout,
        seed=args.seed,
        tty=sys.stdout.isatty() and not args.no_tty,
    )
    return run(settings, options)


def _add_soak_command(commands: argparse._SubParsersAction) -> None:
    soak = _command(
        commands, "soak", soak_command,
        "send N notifications through a local NMC under chaos, then check every promise",
    )  # fmt: skip
    soak.add_argument("--count", type=int, default=20_000, help="notifications (20000)")
    soak.add_argument("--workers", type=int, default=3, help="worker processes (3)")
    soak.add_argument(
        "--submit-seconds", type=float, default=20.0,
        help="spread the intake over at least this many seconds (20)",
    )  # fmt: skip
    soak.add_argument(
        "--phase-timeout", type=float, help="seconds a phase may take (120 + count/40)"
    )
    soak.add_argument("--seed", type=int, help="seed of the workload and the chaos dice")
    soak.add_argument("--no-tty", action="store_true", help="a progress line every few seconds")
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
    from nmc.soak.run import Options

    options = Options(
        count=args.count,
        workers=args.workers,
        submit_seconds=args.submit_seconds,
        phase_timeout_s=args.phase_timeout,
        seed=args.seed,
        tty=sys.stdout.isatty() and not args.no_tty,
    )
    if args.mode == "restore":
        from nmc.drill.restore import run as run_restore

        return run_restore(settings, options)
    from nmc.drill.failover import run as run_failover

    return run_failover(settings, options)


def _add_drill_command(commands: argparse._SubParsersAction) -> None:
    drill = _command(
        commands, "drill", drill_command,
        "real PostgreSQL replication on this machine: lose the primary mid-stream "
        "(failover), or restore a base backup to a point in time (restore), then check",
    )  # fmt: skip
    drill.add_argument("mode", choices=("failover", "restore"))
    drill.add_argument("--count", type=int, default=2000, help="notifications (2000)")
    drill.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    drill.add_argument(
        "--submit-seconds", type=float, default=20.0,
        help="spread the intake over at least this many seconds (20)",
    )  # fmt: skip
    drill.add_argument(
        "--phase-timeout", type=float, help="seconds a phase may take (120 + count/40)"
    )
    drill.add_argument("--seed", type=int, help="seed of the workload")
    drill.add_argument("--no-tty", action="store_true", help="a progress line every few seconds")


# --- end of the drill block ---


# --- Feed and operations (issues 6 and 7): `nmc admin epoch|report|tasks|notificatie|kek` ---


def admin_epoch_raise(args: argparse.Namespace, settings: Settings) -> int:
    epoch = admin_ops.raise_epoch(settings)
    print(
        f"cluster epoch raised to {epoch}: every older cursor now gets 410; "
        "webhook deliveries restart at the oldest event"
    )
    return 0


def admin_report_onbevestigd(args: argparse.Namespace, settings: Settings) -> int:
    rows = admin_ops.report_onbevestigd(settings)
    # afgekapt "ja": aantal is the limit of what one report reads, and means "at least".
    columns = ("dv_id", "naam", "beheerkanaal", "aantal", "afgekapt", "oudste")
    print(admin_ops.to_json(rows) if args.json else admin_ops.format_table(rows, columns))
    return 0


def admin_report_geen_contactgegevens(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.api.settings import geen_contactgegevens_drempel

    drempel = args.drempel if args.drempel is not None else geen_contactgegevens_drempel(os.environ)
    rows = admin_ops.report_geen_contactgegevens(settings, drempel)
    if args.json:
        print(admin_ops.to_json({"drempel": drempel, "dienstverleners": rows}))
    else:
        print(f"drempel {drempel}")
        columns = ("dv_id", "naam", "aandeel", "boven_drempel")
        print(admin_ops.format_table(rows, columns))
    return 0


def admin_tasks_list(args: argparse.Namespace, settings: Settings) -> int:
    rows = admin_ops.list_tasks(settings, args.state, args.kind, args.limit)
    columns = ("id", "soort", "staat", "dv_id", "notificatie_id", "due", "pogingen",
               "laatste_fout")  # fmt: skip
    print(admin_ops.to_json(rows) if args.json else admin_ops.format_table(rows, columns))
    return 0


def admin_tasks_reopen(args: argparse.Namespace, settings: Settings) -> int:
    admin_ops.reopen_task(settings, args.id, args.toelichting, args.door)
    print(f"task {args.id} reopened (due now)")
    return 0


def admin_notificatie_force(args: argparse.Namespace, settings: Settings) -> int:
    versie = admin_ops.force_notificatie(
        settings, args.id, args.status, args.reden, args.toelichting, args.door
    )
    print(f"notificatie {args.id} is now {args.status} (versie {versie})")
    return 0


def admin_kek_status(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.crypto import CryptoConfigError, load_kek_ring

    try:
        ring = load_kek_ring()
    except CryptoConfigError:
        ring = None  # the counts alone still help
    rows = admin_ops.kek_status(settings, ring)
    if args.json:
        print(admin_ops.to_json(rows))
        return 0
    columns = ("kek_id", "sleutels", "doel", "actief_gemeld_op",
               *(("in_ring", "actief") if ring else ()))  # fmt: skip
    print(admin_ops.format_table(rows, columns))
    target, to_do = admin_ops.rewrap_to_do(rows)
    if target is not None:
        print(f"maintenance re-wraps to {target}: {to_do} live key(s) still under another KEK")
    return 0


def admin_kek_rotate(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.crypto import load_kek_ring

    def progress(stored: int, total: int) -> None:
        print(f"re-wrapped {stored} (total {total})", flush=True)

    total = admin_ops.rotate_kek(
        settings, load_kek_ring(), args.to, batch=args.batch, progress=progress
    )
    print(f"done: {total} data key(s) re-wrapped under {args.to}")
    return 0


def _add_operations_commands(admin: argparse._SubParsersAction) -> None:
    import getpass
    import uuid

    from nmc.status import NOTIFICATIE_STATUSES, REDENEN

    try:
        door = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container with an arbitrary uid)
        door = "onbekend"
    epoch = _group(admin, "epoch", "the cluster epoch of the feed cursors")
    _command(epoch, "raise", admin_epoch_raise, "raise it after a restore or a broken xid series")

    report = _group(admin, "report", "reports for the beheer channel")
    onbevestigd = _command(
        report, "onbevestigd", admin_report_onbevestigd,
        "unacknowledged terminal statuses older than each DV's ack term",
    )  # fmt: skip
    geen = _command(
        report, "geen-contactgegevens", admin_report_geen_contactgegevens,
        "share of geen-contactgegevens per DV, flagged above the threshold",
    )  # fmt: skip
    geen.add_argument(
        "--drempel", type=float, help="threshold share (default NMC_GEEN_CONTACTGEGEVENS_DREMPEL)"
    )

    tasks = _group(admin, "tasks", "tasks that need an operator")
    task_list = _command(tasks, "list", admin_tasks_list, "list tasks (default: mislukt)")
    task_list.add_argument(
        "--state", default="mislukt", choices=("open", "claimed", "done", "mislukt")
    )
    task_list.add_argument("--kind", help="one task kind, e.g. verzenden")
    task_list.add_argument("--limit", type=int, default=100, help="at most this many (100)")
    reopen = _command(tasks, "reopen", admin_tasks_reopen, "reopen a mislukt task (audited)")
    reopen.add_argument("id", type=int)

    notificatie = _group(admin, "notificatie", "one notification")
    force = _command(
        notificatie, "force", admin_notificatie_force,
        "force a status along an allowed transition (audited)",
    )  # fmt: skip
    force.add_argument("id", type=uuid.UUID)
    force.add_argument("status", choices=NOTIFICATIE_STATUSES)
    force.add_argument("--reden", choices=REDENEN)

    for audited in (reopen, force):
        audited.add_argument("--toelichting", required=True, help="why (kept in the audit)")
        audited.add_argument("--door", default=door, help=f"who (default: {door})")

    kek = _group(admin, "kek", "key-encryption keys")
    kek_status_command = _command(kek, "status", admin_kek_status, "live data keys per KEK")
    rotate = _command(
        kek, "rotate", admin_kek_rotate, "re-wrap every live data key under another KEK"
    )
    rotate.add_argument("--to", required=True, help="the KEK id (in NMC_KEK_FILE)")
    rotate.add_argument("--batch", type=int, default=admin_ops.REWRAP_BATCH, help="keys per batch")

    for listing in (onbevestigd, geen, task_list, kek_status_command):
        listing.add_argument("--json", action="store_true", help="print JSON")


# --- end of the feed and operations block ---


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

    # --- The DV API, onboarding and dev secrets ---
    api = _command(commands, "api", api_serve, "serve the DV API (uvicorn)")
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=8080)
    api.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    api.add_argument(
        "--no-access-log", dest="access_log", action="store_false", help="no access log lines"
    )
    dv = _group(admin, "dv", "the DV register (onboarding)")
    dv_apply = _command(dv, "apply", admin_dv_apply, "create or update a DV from a JSON file")
    dv_apply.add_argument("file", type=Path, help="the DV document (see README)")
    dv_list = _command(dv, "list", admin_dv_list, "list the DVs")
    dv_list.add_argument("--json", action="store_true", help="print JSON")
    token = _command(
        admin, "token", admin_token, "issue a token from the dev IAM key (development only)"
    )
    token.add_argument("--oin", required=True, help="the DV's OIN (20 digits)")
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (3600)")
    keys = _group(admin, "keys", "development secrets")
    keys_init = _command(
        keys, "init", admin_keys_init, "write dev KEK, peppers, dev IAM key and JWKS"
    )
    keys_init.add_argument("--dir", type=Path, help="default: $NMC_HOME/secrets")
    keys_init.add_argument("--force", action="store_true", help="replace existing files")
    _add_afleverbewijs_keys_commands(keys)  # the delivery-proof signing ring
    # --- end of the DV API block ---

    _add_operations_commands(admin)  # the feed and operations (issues 6 and 7)
    admin_rapportage.add_commands(admin, _group, _command)  # the daily beheer report

    _add_console_commands(commands, admin)  # the operator console

    _add_pipeline_commands(commands)  # the send pipeline (issues 4 and 5)

    _add_demo_command(commands)  # the demo

    _add_soak_command(commands)  # the chaos soak

    _add_drill_command(commands)  # failover and restore drills on real replication

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
