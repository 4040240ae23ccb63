"""The berichttypen's NotifyNL templates for the operator: read at onboarding (`nmc admin dv
apply` refuses a berichttype whose template NotifyNL cannot give), listed (`nmc admin
templates list`) and read again on demand (`nmc admin templates verversen`; the worker's
maintenance job `templates` does the same every 15 minutes).

Reads go to NotifyNL (NMC_NOTIFYNL_URL, default https://api.notifynl.nl) with the Notify
service's key (NMC_NOTIFYNL_KEYS_FILE, or the one key NMC_NOTIFYNL_API_KEY), as the worker
reads them; what an answer means is nmc.record_template's. Names and version only.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx
import psycopg

from nmc.adapters.notifynl import NotifyKeysError, NotifyNL, load_notify_keys
from nmc.config import Settings
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc.notifynl.notifynl_templates import GELEZEN, Lezing, lees_template
from nmc.queries import QUERIES
from nmc.worker.config import DEFAULT_NOTIFYNL_URL

HTTP_TIMEOUT_S = 10.0
Template = tuple[str, str]  # (Notify service, template id)


def templates_of(document: Mapping[str, Any]) -> dict[Template, list[str]]:
    """(Notify service, template id) -> the codes of the document's berichttypen using it.
    A berichttype without a readable template id is left to nmc.apply_dienstverlener, which
    refuses it with its own message."""
    found: dict[Template, list[str]] = {}
    berichttypen = document.get("berichttypen")
    for berichttype in berichttypen if isinstance(berichttypen, list) else []:
        if not isinstance(berichttype, dict):
            continue
        template_id = berichttype.get("notifynlTemplateId")
        try:
            uuid.UUID(str(template_id))
        except ValueError:
            continue
        service = berichttype.get("notifyService") or "standaard"
        found.setdefault((str(service), str(template_id)), []).append(str(berichttype.get("code")))
    return found


def read_templates(
    templates: Iterable[Template], environ: Mapping[str, str] | None = None
) -> dict[Template, Lezing]:
    """Read each template from NotifyNL with its service's key."""
    env = os.environ if environ is None else environ
    try:
        keys = load_notify_keys(env)
    except NotifyKeysError as error:
        raise NmcError(
            f"the berichttypen's templates are read from NotifyNL with the Notify services' "
            f"keys: {error}"
        ) from None
    base_url = env.get("NMC_NOTIFYNL_URL") or DEFAULT_NOTIFYNL_URL

    async def read_all() -> dict[Template, Lezing]:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client:
            notifynl = NotifyNL(client, base_url, keys)
            return {t: await lees_template(notifynl, *t) for t in templates}

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(read_all())
    # Called from a running event loop (the demo onboards from its own): a loop of its own,
    # in a thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(read_all())).result()


def refusals(lezingen: Mapping[Template, Lezing], codes: Mapping[Template, list[str]]) -> list[str]:
    """One line per berichttype whose template could not be read as an e-mail template."""
    lines = []
    for (service, template_id), lezing in lezingen.items():
        if lezing.uitkomst == GELEZEN:
            continue
        why = {
            "niet-gevonden": "NotifyNL kent deze template niet (404)",
            "geen-email": "dit is geen e-mailtemplate",
            "geen-toegang": (
                f"de sleutel van Notify service {service} kan deze template niet lezen "
                f"({lezing.fout})"
            ),
        }.get(lezing.reden or "", f"NotifyNL gaf geen antwoord ({lezing.fout}); probeer het later")
        for code in codes.get((service, template_id), []):
            lines.append(
                f"berichttype {code}: template {template_id} (Notify service {service}): {why}"
            )
    return lines


def read_for_onboarding(
    document: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[Template, Lezing]:
    """The templates of a DV document, read; NmcError naming every berichttype whose
    template NotifyNL does not give as an e-mail template (nothing is applied then)."""
    codes = templates_of(document)
    lezingen = read_templates(codes, environ)
    refused = refusals(lezingen, codes)
    if refused:
        raise NmcError("not applied: " + "; ".join(refused))
    return lezingen


def record(conn: psycopg.Connection, lezingen: Mapping[Template, Lezing]) -> None:
    for (service, template_id), lezing in lezingen.items():
        conn.execute(QUERIES["record_template"], lezing.record_params(service, template_id))


def list_templates(settings: Settings) -> list[dict[str, Any]]:
    with connect(connection_url(settings)) as conn:
        cursor = conn.execute(QUERIES["list_templates"])
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def verversen(
    settings: Settings, *, alle: bool = True, environ: Mapping[str, str] | None = None
) -> dict[Template, Lezing]:
    """Read the templates of active berichttypen now (only those due when not `alle`) and
    record what NotifyNL answered."""
    with connect(connection_url(settings)) as conn:
        rows = conn.execute(QUERIES["lees_templates"], {"alle": alle}).fetchall()
        lezingen = read_templates([(r[0], str(r[1])) for r in rows], environ)
        record(conn, lezingen)
    return lezingen


def format_templates(rows: list[dict[str, Any]]) -> str:
    header = ("dv_id", "berichttype", "staat", "versie", "template", "placeholders")
    lines = [
        (
            str(r["dv_id"]),
            r["berichttype"] + ("" if r["actief"] else " (ingetrokken)"),
            r["staat"],
            "" if r["versie"] is None else str(r["versie"]),
            f"{r['notify_service']}/{r['template_id']}",
            ", ".join(r["placeholders"])
            + (f"  [{r['laatste_fout']}]" if r["laatste_fout"] else ""),
        )
        for r in rows
    ]
    widths = [max(len(c) for c in column) for column in zip(header, *lines, strict=True)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *lines)
    )


# --------------------------------------------------------------------------------------------
# The commands


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    rows = list_templates(settings)
    print(json.dumps(rows, indent=2, default=str) if args.json else format_templates(rows))
    return 0


def cmd_verversen(args: argparse.Namespace, settings: Settings) -> int:
    lezingen = verversen(settings, alle=not args.alleen_verouderd)
    gelezen = sum(1 for lezing in lezingen.values() if lezing.uitkomst == GELEZEN)
    print(f"{len(lezingen)} template(s) gelezen, {gelezen} beschikbaar")
    for (service, template_id), lezing in lezingen.items():
        if lezing.uitkomst != GELEZEN:
            print(f"  {service}/{template_id}: {lezing.uitkomst} ({lezing.fout or lezing.reden})")
    return 0


def add_commands(
    admin: argparse._SubParsersAction,
    group: Callable[..., argparse._SubParsersAction],
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """`nmc admin templates …`, registered with the CLI's own helpers."""
    templates = group(admin, "templates", "the berichttypen's NotifyNL templates")
    listing = command(templates, "list", cmd_list, "per berichttype its template as last read")
    listing.add_argument("--json", action="store_true")
    again = command(templates, "verversen", cmd_verversen, "read every template from NotifyNL now")
    again.add_argument("--alleen-verouderd", action="store_true", help="only those due for a read")
