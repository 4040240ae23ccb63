"""The operator's commands for the feed and operations:
`nmc admin epoch|report|tasks|notificatie|kek|notify-service`.

They run as the admin connection and call the SQL functions made for them (raise_epoch,
report_onbevestigd, metrics, list_taken, reopen_taak, force_transition, kek_status,
list_rewrap, store_rewrap); every rule stays in SQL (a forced transition goes through the
single writer, along allowed pairs, audited). Output: a table for people, `--json` for
scripts (cli.py chooses). Nothing here prints personal data: rows hold ids, kinds, statuses,
counts and error classes only.
"""

import json
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import psycopg

from nmc.config import Settings
from nmc.crypto.kek_ring import KekRing, UnknownKekError
from nmc.crypto.sealing import DecryptionError, rewrap
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc.queries import QUERIES

REWRAP_BATCH = 500


def _rows(settings: Settings, name: str, params: dict[str, Any] | None = None) -> list[dict]:
    with connect(connection_url(settings)) as conn:
        cursor = conn.execute(QUERIES[name], params or {})
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# --------------------------------------------------------------------------------------------
# Epoch and reports


def raise_epoch(settings: Settings) -> int:
    [row] = _rows(settings, "admin_raise_epoch")
    return row["epoch"]


def report_onbevestigd(settings: Settings) -> list[dict]:
    return _rows(settings, "admin_report_onbevestigd")


def report_geen_contactgegevens(settings: Settings, drempel: float) -> list[dict]:
    """Per DV the share of geen-contactgegevens (from nmc.metrics()), flagged above `drempel`."""
    names = {dv["dv_id"]: dv["naam"] for dv in _rows(settings, "list_dienstverleners")}
    report = []
    for row in _rows(settings, "api_metrics"):
        if row["naam"] != "nmc_geen_contactgegevens_aandeel":
            continue
        dv_id = int(row["labels"]["dv"])
        aandeel = float(row["waarde"])
        report.append(
            {
                "dv_id": dv_id,
                "naam": names.get(dv_id, ""),
                "aandeel": round(aandeel, 4),
                "boven_drempel": aandeel > drempel,
            }
        )
    return sorted(report, key=lambda r: (not r["boven_drempel"], -r["aandeel"], r["dv_id"]))


# --------------------------------------------------------------------------------------------
# Tasks and forced transitions


def list_tasks(settings: Settings, staat: str, soort: str | None, limiet: int) -> list[dict]:
    return _rows(settings, "admin_list_taken", {"staat": staat, "soort": soort, "limiet": limiet})


def reopen_task(settings: Settings, taak_id: int, toelichting: str, door: str) -> None:
    _rows(
        settings,
        "admin_reopen_taak",
        {"taak_id": taak_id, "toelichting": toelichting, "door": door},
    )


def force_notificatie(
    settings: Settings,
    notificatie_id: uuid.UUID,
    naar: str,
    reden: str | None,
    toelichting: str,
    door: str,
) -> int:
    [row] = _rows(
        settings,
        "admin_force_transition",
        {
            "notificatie_id": notificatie_id,
            "naar": naar,
            "reden": reden,
            "toelichting": toelichting,
            "door": door,
        },
    )
    return row["versie"]


# --------------------------------------------------------------------------------------------
# KEK


def list_notify_services(settings: Settings) -> list[dict]:
    return _rows(settings, "admin_list_notify_services")


def set_notify_service(
    settings: Settings,
    code: str,
    *,
    per_minuut: int | None = None,
    navraag_aandeel: float | None = None,
    burst: int | None = None,
    dag_limiet: int | None = None,
    burst_afleiden: bool = False,
) -> dict:
    """Sets a service's limits (NULL keeps a value) and returns them as the budget applies
    them; a value the database refuses is an NmcError naming the setting."""
    params = {
        "code": code, "per_minuut": per_minuut, "navraag_aandeel": navraag_aandeel,
        "burst": burst, "dag_limiet": dag_limiet, "burst_afleiden": burst_afleiden,
    }  # fmt: skip
    try:
        _rows(settings, "admin_set_notify_service", params)
    except (psycopg.errors.CheckViolation, psycopg.errors.InvalidParameterValue) as refused:
        raise NmcError(f"notify service {code}: refused ({refused.diag.message_primary})") from None
    [row] = [r for r in list_notify_services(settings) if r["code"] == code]
    return row


NOTIFY_SERVICE_MEMBERS = {
    "perMinuut": "per_minuut", "navraagAandeel": "navraag_aandeel", "burst": "burst",
    "dagLimiet": "dag_limiet",
}  # fmt: skip


def parse_notify_services(document: Any) -> dict[str, dict[str, Any]]:
    """The deployment's NotifyNL services (NMC_NOTIFY_SERVICES_FILE): `{code: {perMinuut,
    navraagAandeel, burst, dagLimiet}}`, each member optional (absent: keep; burst null: one
    second of the rate). The database's checks judge the values; this judges the shape."""
    if not isinstance(document, dict) or not document:
        raise NmcError("notify services: a JSON object of services, {code: {perMinuut, …}}")
    services: dict[str, dict[str, Any]] = {}
    for code, limits in document.items():
        if not isinstance(limits, dict):
            raise NmcError(f"notify service {code}: an object of limits")
        unknown = sorted(set(limits) - set(NOTIFY_SERVICE_MEMBERS))
        if unknown:
            raise NmcError(f"notify service {code}: unknown member(s) {unknown}")
        for name, value in limits.items():
            ok = (
                value is None if name == "burst" and value is None
                else isinstance(value, int | float) and not isinstance(value, bool)
            )
            if not ok or (name != "navraagAandeel" and value is not None and value != int(value)):
                raise NmcError(f"notify service {code}: {name} must be a number")
        services[code] = {NOTIFY_SERVICE_MEMBERS[n]: v for n, v in limits.items()}
    return services


def apply_notify_services(settings: Settings, document: Any) -> list[dict]:
    """Sets every service of the deployment's document; returns the services as applied."""
    for code, limits in parse_notify_services(document).items():
        burst_afleiden = "burst" in limits and limits["burst"] is None
        set_notify_service(
            settings, code,
            per_minuut=limits.get("per_minuut"), navraag_aandeel=limits.get("navraag_aandeel"),
            burst=limits.get("burst"), dag_limiet=limits.get("dag_limiet"),
            burst_afleiden=burst_afleiden,
        )  # fmt: skip
    return list_notify_services(settings)


def kek_status(settings: Settings, ring: KekRing | None) -> list[dict]:
    """Live data keys per KEK, whether maintenance re-wraps to it (`doel`: the newest KEK a
    worker reported active) and since when, and (with the ring at hand) whether it is in the
    ring/active. Every key not under the target is what the rotation still has to do."""
    rows = _rows(settings, "admin_kek_status")
    if ring is not None:
        counted = {row["kek_id"] for row in rows}
        rows += [
            {"kek_id": k, "sleutels": 0, "doel": False, "actief_gemeld_op": None}
            for k in sorted(ring.keys)
            if k not in counted
        ]
        for row in rows:
            row["in_ring"] = row["kek_id"] in ring.keys
            row["actief"] = row["kek_id"] == ring.active_id
    return rows


def rewrap_to_do(rows: Sequence[dict]) -> tuple[str | None, int]:
    """From `kek_status` rows: the re-wrap target and how many live keys are not under it."""
    target = next((row["kek_id"] for row in rows if row.get("doel")), None)
    return target, sum(row["sleutels"] for row in rows if row["kek_id"] != target)


def rotate_kek(
    settings: Settings,
    ring: KekRing,
    to: str,
    *,
    batch: int = REWRAP_BATCH,
    progress: Callable[[int, int], None] = lambda stored, total: None,
) -> int:
    """Re-wrap every live data key under KEK `to`, in short batches; returns how many.

    One pass over the notifications in id order. Each batch: read the next `batch`
    notifications after the cursor (one statement, at most one batch of rows read, so it
    stays far below the admin statement timeout however large the table), re-wrap in memory
    those whose key is under another KEK, store them (one statement; a row erased or
    re-wrapped meanwhile is skipped). Every statement is its own short transaction. The data
    ciphertexts are not touched. A key that does not unwrap stops the run after the batch,
    naming the notifications (ids only).
    """
    if to not in ring.keys:
        raise NmcError(f"KEK {to!r} is not in the KEK ring (NMC_KEK_FILE)")
    target = KekRing(active_id=to, keys=ring.keys)
    total = 0
    after: uuid.UUID | None = None
    with connect(connection_url(settings)) as conn:
        while True:
            listed = conn.execute(
                QUERIES["admin_list_rewrap"], {"naar_kek": to, "na": after, "batch": batch}
            ).fetchall()
            if not listed:
                return total
            after = listed[-1][0]
            ids, old_keks, keys, failed = [], [], [], []
            for notificatie_id, kek_id, wrapped in listed:
                if wrapped is None:
                    continue  # erased, or under `to` already
                try:
                    new_key, _ = rewrap(bytes(wrapped), notificatie_id, kek_id, ring=target)
                except (DecryptionError, UnknownKekError):
                    failed.append(str(notificatie_id))
                    continue
                ids.append(notificatie_id)
                old_keks.append(kek_id)
                keys.append(new_key)
            if ids:
                [(stored,)] = conn.execute(
                    QUERIES["admin_store_rewrap"],
                    {"ids": ids, "oude_kek": old_keks, "sleutels": keys, "naar_kek": to},
                ).fetchall()
                total += stored
                progress(stored, total)
            if failed:
                raise NmcError(
                    f"{len(failed)} data key(s) do not unwrap with the KEK ring; stopped after "
                    f"{total} re-wrapped. Notifications: {', '.join(failed[:20])}"
                )


# --------------------------------------------------------------------------------------------
# Output


def to_json(rows: Any) -> str:
    return json.dumps(rows, indent=2, default=_json_default, ensure_ascii=False)


def format_table(rows: Sequence[dict], columns: Sequence[str]) -> str:
    """A plain aligned table; an empty list says so."""
    if not rows:
        return "(geen)"
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(c) for c in column) for column in zip(columns, *cells, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in (list(columns), *cells)
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "ja" if value else "nee"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):  # a share (numeric): a JSON number
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
