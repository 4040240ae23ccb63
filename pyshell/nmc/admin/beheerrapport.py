"""`nmc admin beheerrapport configure|list`: the daily beheer report's own template and its
recent reports (functions/beheer/rapportage.sql; the worker kind is nmc.worker.beheerrapport).

The report to a `mailto:` beheer channel goes through NotifyNL with a template of the NMC's
own, configured like a berichttype: the NotifyNL template (`--template-id`) and the Notify
service it is sent through (`--notify-service`: its key and send budget). Best a service of
its own whose NotifyNL callback does not point at the NMC (a receipt for a report matches no
attempt and is counted as an unknown reference). The template receives as personalisation:
dienstverlener, oin, dag, onbevestigd_aantal, bevestigingstermijn, onbevestigd_oudste,
notificatie_ids (one per line), notificatie_ids_meer, geen_contactgegevens_aandeel,
geen_contactgegevens_drempel, geen_contactgegevens_boven_drempel (the share over the recent
window `--venster`, default 7 days), webhook_gat (ja: the DV's webhook is paused for a gap
until it sets its position), onverwerkbaar and onverwerkbaar_dag (yesterday's notifications
NotifyNL could not render), berichttypen_niet_beschikbaar (the DV's berichttypen whose
NotifyNL template is gone).
"""

import argparse
import json
import uuid
from collections.abc import Callable
from typing import Any

from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc.queries import QUERIES


def configure(settings: Settings, document: dict[str, Any]) -> None:
    with connect(connection_url(settings)) as conn:
        conn.execute(QUERIES["configure_beheerrapport"], {"config": json.dumps(document)})


def list_reports(settings: Settings, limit: int) -> list[dict[str, Any]]:
    with connect(connection_url(settings)) as conn:
        cursor = conn.execute(QUERIES["list_beheerrapporten"], {"limiet": limit})
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def document_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The members given on the command line (the others keep their value)."""
    document: dict[str, Any] = {}
    if args.geen_template:
        document["notifynlTemplateId"] = None
    elif args.template_id is not None:
        try:
            document["notifynlTemplateId"] = str(uuid.UUID(args.template_id))
        except ValueError:
            raise NmcError(f"--template-id must be a UUID, not {args.template_id!r}") from None
    if args.notify_service is not None:
        document["notifyService"] = args.notify_service
    if args.tijd is not None:
        document["tijd"] = args.tijd
    if args.max_ids is not None:
        document["maxIds"] = args.max_ids
    if args.venster is not None:
        document["venster"] = args.venster
    if not document:
        raise NmcError("nothing to configure: give --template-id, --notify-service, --tijd …")
    return document


def cmd_configure(args: argparse.Namespace, settings: Settings) -> int:
    document = document_from_args(args)
    configure(settings, document)
    print("beheerrapport configured: " + ", ".join(f"{k} {v}" for k, v in document.items()))
    return 0


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    rows = list_reports(settings, args.limit)
    columns = (
        "dv_id", "dag", "kanaal", "onbevestigd", "onbevestigd_afgekapt",
        "geen_contactgegevens_aandeel", "boven_drempel", "uitkomst", "afgerond_op",
    )  # fmt: skip
    print(admin_ops.to_json(rows) if args.json else admin_ops.format_table(rows, columns))
    return 0


def add_commands(
    admin: argparse._SubParsersAction,
    group: Callable[..., argparse._SubParsersAction],
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """`nmc admin beheerrapport …`, registered with the CLI's own helpers."""
    rapport = group(admin, "beheerrapport", "the daily report on each DV's beheer channel")
    configure_cmd = command(
        rapport, "configure", cmd_configure,
        "the NMC's own NotifyNL template for reports by e-mail, like a berichttype",
    )  # fmt: skip
    which = configure_cmd.add_mutually_exclusive_group()
    which.add_argument("--template-id", help="the NotifyNL template (UUID) of the report e-mail")
    which.add_argument(
        "--geen-template", action="store_true", help="clear it (e-mail reports then wait)"
    )
    configure_cmd.add_argument(
        "--notify-service", help="the Notify service it is sent through (default standaard)"
    )
    configure_cmd.add_argument("--tijd", help="time of day the reports go out (Europe/Amsterdam)")
    configure_cmd.add_argument("--max-ids", type=int, help="notification ids listed at most")
    configure_cmd.add_argument(
        "--venster",
        help="the recent window of the geen-contactgegevens share (an interval, e.g. '7 days')",
    )
    listing = command(rapport, "list", cmd_list, "the latest reports, newest day first")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--json", action="store_true")
