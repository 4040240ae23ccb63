"""`nmc`: the one command line for everything an operator or developer runs.

Defaults come from NMC_ environment variables (see nmc.config). Failures print one clear
message on stderr and exit with code 1. The product's commands are defined here; other
distributions add theirs through the entry-point group `nmc.commands` (the development
tools, nmc-dev: `nmc db|sim|demo|soak|drill|dev`, `nmc admin clock`). Without them those
commands say in one line what to install.
"""

import argparse
import dataclasses
import importlib.metadata
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from nmc import settings_env
from nmc.admin import beheerrapport as admin_rapportage
from nmc.admin import onboarding as admin_tasks
from nmc.admin import operations as admin_ops
from nmc.admin import templates as admin_templates
from nmc.admin.migrate import Plan, check, describe_database_error, migrate
from nmc.config import Settings
from nmc.database import connection_url
from nmc.errors import NmcError

Command = Callable[[argparse.Namespace, Settings], int]

COMMAND_GROUP = "nmc.commands"  # the entry points that add commands to `nmc`
# The development tools' commands (nmc-dev, pyshell/dev), by name: without that distribution
# each still parses, and says what to install (tests_py/test_product_alone.py holds this list
# against the commands nmc-dev adds).
DEV_TOOLS = "nmc-dev"
DEV_TOOLS_INSTALL = "pip install -e ./pyshell/client -e ./pyshell/dev (from a checkout of the NMC)"
DEV_COMMANDS = ("db", "sim", "dev", "demo", "soak", "drill")
DEV_ADMIN_COMMANDS = ("clock",)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args, Settings.from_env())
    except NmcError as error:
        print(f"nmc: {error}", file=sys.stderr)
    except psycopg.Error as error:
        print(f"nmc: {describe_database_error(error)}", file=sys.stderr)
    return 1


def migrate_command(args: argparse.Namespace, settings: Settings) -> int:
    url = args.database_url or connection_url(settings)
    root = args.root or settings.root
    if args.check:
        plan = check(url, root)
        _print_check(plan)
        return 0 if plan.up_to_date else 1
    _print_migration(migrate(url, root))
    # The deployment's NotifyNL services, when it names them: applied with every migrate.
    services_file = settings_env.path(os.environ, "NMC_NOTIFY_SERVICES_FILE")
    if services_file is not None:
        migrated = dataclasses.replace(settings, database_url=url)
        rows = admin_ops.apply_notify_services(migrated, _read_json(services_file))
        print(f"applied  {services_file} ({len(rows)} NotifyNL service(s) known)")
    return 0


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
    path = args.file or settings_env.text(os.environ, "NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    if not path:
        raise NmcError("name the ring with --file or NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    return Path(path)


def admin_afleverbewijs_list(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.signing import afleverbewijs_signing as proof

    for kid, alg, state in proof.describe(proof.read_ring_document(_afleverbewijs_file(args))):
        print(f"{kid}  {alg}  {state}")
    return 0


def admin_afleverbewijs_add(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.signing import afleverbewijs_signing as proof

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

    from nmc.signing import afleverbewijs_signing as proof

    path = _afleverbewijs_file(args)
    if args.bewaar_dagen is None:
        # The database's clock and its delivery-proof retention: a proof issued by the
        # retiring key carries the database's time, and lives as long as the retention.
        now, keep = admin_tasks.bewijs_sleutel_bewaring(settings)
    else:
        now, keep = None, timedelta(days=args.bewaar_dagen)
    document = proof.activate_key(proof.read_ring_document(path), args.kid, now=now, keep=keep)
    proof.write_ring_document(path, document)
    retired = ", ".join(sorted(document["retired"])) or "none"
    print(f"key {args.kid} signs proofs now; retired (still published): {retired}. Roll the API.")
    return 0


def admin_webhook_public(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.signing import webhook_signing

    ring = webhook_signing.load_signing_ring(args.file)
    if ring is None:
        raise NmcError("name the ring with --file or NMC_WEBHOOK_SIGNING_KEYS_FILE")
    webhook_signing.write_public_keys(args.out, ring)
    print(f"the ring's public keys written to {args.out}: give it to the API, then roll it")
    return 0


def _add_afleverbewijs_keys_commands(keys: argparse._SubParsersAction) -> None:
    public = _command(
        keys, "webhook-public", admin_webhook_public,
        "write the webhook ring's public JWKS for the API (NMC_WEBHOOK_PUBLIC_KEYS_FILE)",
    )  # fmt: skip
    public.add_argument("--file", type=Path, help="default: $NMC_WEBHOOK_SIGNING_KEYS_FILE")
    public.add_argument("--out", type=Path, required=True, help="the public JWKS file to write")
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
        default=None,
        help="drop retired keys retired longer ago (default: the database's delivery-proof "
        "retention + 1 day, retiring at the database's clock)",
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
    from nmc.admin.dev_iam import issue_dev_claims
    from nmc.console.settings import DEFAULT_ROLE_CLAIM

    claim = settings_env.text(os.environ, "NMC_CONSOLE_ROLE_CLAIM", DEFAULT_ROLE_CLAIM)
    if "." in claim:
        raise NmcError("console-token writes a top-level role claim; unset NMC_CONSOLE_ROLE_CLAIM")
    audience = settings_env.text(os.environ, "NMC_CONSOLE_OAUTH_AUDIENCE", "nmc-console")
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


# --- The send pipeline: `nmc worker` ---


def worker_command(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.runtime import aio
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


def _add_worker_command(commands: argparse._SubParsersAction) -> None:
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
        "--poll-interval",
        type=float,
        default=0.5,
        help="seconds between looks for work of the kinds that wait (0.5)",
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve /metrics and /health/* on this port (NMC_WORKER_METRICS_PORT; default off)",
    )
    worker.add_argument(
        "--metrics-host", help="address of that listener (NMC_WORKER_METRICS_HOST; 127.0.0.1)"
    )


# --- end of the send pipeline block ---


# --- Feed and operations: `nmc admin epoch|report|tasks|notificatie|kek` ---


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
    from nmc.config import geen_contactgegevens_drempel

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


NOTIFY_SERVICE_COLUMNS = (
    "code", "per_minuut", "navraag_aandeel", "burst", "burst_ingesteld", "dag_limiet", "eigen_rij"
)


def admin_notify_service_list(args: argparse.Namespace, settings: Settings) -> int:
    rows = admin_ops.list_notify_services(settings)
    table = admin_ops.format_table(rows, NOTIFY_SERVICE_COLUMNS)
    print(admin_ops.to_json(rows) if args.json else table)
    return 0


def admin_notify_service_apply(args: argparse.Namespace, settings: Settings) -> int:
    rows = admin_ops.apply_notify_services(settings, _read_json(args.file))
    print(admin_ops.format_table(rows, NOTIFY_SERVICE_COLUMNS))
    return 0


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise NmcError(f"{path}: not a readable JSON file ({type(error).__name__})") from None


def admin_notify_service_set(args: argparse.Namespace, settings: Settings) -> int:
    row = admin_ops.set_notify_service(
        settings, args.code, per_minuut=args.per_minuut, navraag_aandeel=args.navraag_aandeel,
        burst=None if args.burst == "afgeleid" else args.burst, dag_limiet=args.dag_limiet,
        burst_afleiden=args.burst == "afgeleid",
    )  # fmt: skip
    print(admin_ops.format_table([row], NOTIFY_SERVICE_COLUMNS))
    return 0


def _burst(value: str) -> int | str:
    return value if value == "afgeleid" else int(value)


def admin_notificatie_force(args: argparse.Namespace, settings: Settings) -> int:
    versie = admin_ops.force_notificatie(
        settings, args.id, args.status, args.reden, args.toelichting, args.door
    )
    print(f"notificatie {args.id} is now {args.status} (versie {versie})")
    return 0


def admin_kek_status(args: argparse.Namespace, settings: Settings) -> int:
    from nmc.crypto.kek_ring import load_kek_ring
    from nmc.crypto.secret_files import CryptoConfigError

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
    from nmc.crypto.kek_ring import load_kek_ring

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

    notify = _group(admin, "notify-service", "the limits of a NotifyNL service (the send budget)")
    notify_list = _command(notify, "list", admin_notify_service_list, "services and their limits")
    notify_set = _command(notify, "set", admin_notify_service_set, "set a service's limits")
    notify_apply = _command(
        notify, "apply", admin_notify_service_apply,
        "set the services of a JSON file ({code: {perMinuut, navraagAandeel, burst, dagLimiet}})",
    )  # fmt: skip
    notify_apply.add_argument("file", type=Path)
    notify_set.add_argument("code", help="the service's code (a berichttype's notifyService)")
    notify_set.add_argument(
        "--per-minuut", type=int, help="NotifyNL's rate limit of the service, per 60 s (3000)"
    )
    notify_set.add_argument(
        "--navraag-aandeel", type=float, help="the share of it kept for reconciliation (0.1)"
    )
    notify_set.add_argument(
        "--burst", type=_burst, help="sends at most at once, or 'afgeleid' (one second's worth)"
    )
    notify_set.add_argument(
        "--dag-limiet", type=int, help="NotifyNL's daily limit of the service, per UTC day (250000)"
    )

    for listing in (onbevestigd, geen, task_list, kek_status_command, notify_list):
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

    migration = _command(commands, "migrate", migrate_command, "apply pending SQL")
    migration.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything is pending"
    )
    migration.add_argument("--database-url", metavar="URL", help="default: nmc db url")
    migration.add_argument("--root", type=Path, metavar="DIR", help="default: NMC_ROOT")

    admin = _group(commands, "admin", "operator tasks")

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

    _add_operations_commands(admin)  # the feed and operations
    admin_rapportage.add_commands(admin, _group, _command)  # the daily beheer report
    admin_templates.add_commands(admin, _group, _command)  # the berichttypen's templates

    _add_console_commands(commands, admin)  # the operator console

    _add_worker_command(commands)  # the send pipeline

    for entry_point in importlib.metadata.entry_points(group=COMMAND_GROUP):
        entry_point.load()(commands, admin, _group, _command)  # nmc-dev: db|sim|demo|…
    _add_missing_dev_commands(commands, DEV_COMMANDS)
    _add_missing_dev_commands(admin, DEV_ADMIN_COMMANDS, prefix="admin ")

    return parser


def _add_missing_dev_commands(
    commands: argparse._SubParsersAction, names: tuple[str, ...], prefix: str = ""
) -> None:
    """A stand-in for each development command no entry point added: it takes any
    arguments and says, in one line on stderr, which distribution to install (exit 1)."""
    for name in names:
        if name in commands.choices:
            continue
        help_text = f"(the development tools, {DEV_TOOLS}: not installed)"
        # No option prefix: `--count 3` or `--help` is one of the arguments it ignores.
        stand_in = commands.add_parser(name, help=help_text, add_help=False, prefix_chars="\0")
        stand_in.add_argument("arguments", nargs=argparse.REMAINDER)
        stand_in.set_defaults(command=_dev_tools_missing(f"{prefix}{name}"))


def _dev_tools_missing(name: str) -> Command:
    def missing(args: argparse.Namespace, settings: Settings) -> int:
        raise NmcError(
            f"`nmc {name}` is one of the development tools ({DEV_TOOLS}), which are not "
            f"installed: {DEV_TOOLS_INSTALL}"
        )

    return missing


def _group(commands: argparse._SubParsersAction, name: str, help_text: str):
    group = commands.add_parser(name, help=help_text, description=help_text)
    return group.add_subparsers(required=True, metavar="COMMAND")


def _command(
    commands: argparse._SubParsersAction, name: str, handler: Command, help_text: str
) -> argparse.ArgumentParser:
    command = commands.add_parser(name, help=help_text, description=help_text)
    command.set_defaults(command=handler)
    return command
