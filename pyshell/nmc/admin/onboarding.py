"""`nmc admin dv …`, `nmc admin token` and `nmc admin keys init`: onboarding and dev secrets.
(The operator's other commands are in nmc.admin.operations.)

Onboarding runs as the admin connection (nmc.apply_dienstverlener is not granted to the API).
The dev token issuer and `keys init` are for development and demos: production has an IAM
gateway and a key provider, and no NMC_DEV_IAM_KEY_FILE.
"""

import json
import os
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from nmc.adapters.webhook_validatie import Adresbeleid, Validatie, validate_now
from nmc.admin import templates as admin_templates
from nmc.admin.dev_iam import generate_dev_iam_key, issue_dev_token
from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring
from nmc.crypto.peppers import PURPOSE_DVREF, PURPOSE_PAYLOAD, new_peppers
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc.feed.feed_cursor import PURPOSE_CURSOR
from nmc.queries import QUERIES
from nmc.signing.afleverbewijs_signing import new_afleverbewijs_ring
from nmc.signing.webhook_signing import new_signing_ring, parse_signing_ring, write_public_keys

DEV_ISSUER = "https://iam.nmc.localhost"
DEV_AUDIENCE = "nmc"
# The Notify services the dev secrets hold a NotifyNL key for (the demo's and the soak's
# berichttypen use both; a berichttype without notifyService uses `standaard`).
DEV_NOTIFY_SERVICES = ("standaard", "besluiten")
SECRET_FILES = (
    "kek.json",
    "peppers.json",
    "notifynl-keys.json",
    "dev-iam-key.pem",
    "jwks.json",
    "webhook-signing.json",
    "webhook-public-keys.json",
    "afleverbewijs-signing.json",
    "dev.env",
)


# --------------------------------------------------------------------------------------------
# The DV register


def read_dv_document(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NmcError(f"{path}: no such file") from None
    except ValueError as error:
        raise NmcError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(document, dict):
        raise NmcError(f"{path} must hold one JSON object (see README: onboarding)")
    return document


def notify_templates(*documents: dict[str, Any]) -> dict[str, list[str]]:
    """Notify service -> the NotifyNL templates the DV documents' berichttypen send with it
    (a berichttype without `notifyService` uses `standaard`, as nmc.apply_dienstverlener)."""
    templates: dict[str, list[str]] = {}
    for document in documents:
        for berichttype in document.get("berichttypen", []):
            service = berichttype.get("notifyService") or "standaard"
            known = templates.setdefault(service, [])
            if berichttype["notifynlTemplateId"] not in known:
                known.append(berichttype["notifynlTemplateId"])
    return templates


@dataclass(frozen=True)
class WebhookStatus:
    """The validation of the DV's current webhook URL: `nieuw` when it was made just now
    (a new or changed URL, or one that had not passed), else the recorded one."""

    validatie: Validatie
    gevalideerd: bool
    nieuw: bool


@dataclass(frozen=True)
class Onboarding:
    """What `nmc admin dv apply` did: the DV, and its webhook's validation (None: none)."""

    dv_id: int
    oin: str
    webhook: WebhookStatus | None


def apply_dv(
    settings: Settings, path: Path, *, notify_environ: Mapping[str, str] | None = None
) -> tuple[int, str]:
    """Create or update the DV described in `path` and validate a new or changed webhook;
    returns (dv_id, oin)."""
    done = onboard_dv(settings, path, notify_environ=notify_environ)
    return done.dv_id, done.oin


def onboard_dv(
    settings: Settings,
    path: Path,
    *,
    origin: str | None = None,
    beleid: Adresbeleid | None = None,
    notify_environ: Mapping[str, str] | None = None,
) -> Onboarding:
    """Create or update the DV described in `path`, then validate its webhook when its
    current URL has not passed yet (nmc.adapters.webhook_validatie) and record it.

    First every berichttype's NotifyNL template is read with its Notify service's key
    (`notify_environ`: NMC_NOTIFYNL_URL and the keys, default the process environment): a
    template NotifyNL does not give as an e-mail template (404, another type, the key cannot
    read it) refuses the document, naming the berichttype and template, and nothing is
    applied. Otherwise the DV and its templates' names and versions are committed together,
    before the webhook's validation."""
    document = read_dv_document(path)
    lezingen = admin_templates.read_for_onboarding(document, notify_environ)
    with connect(connection_url(settings)) as conn:
        with conn.transaction():
            row = conn.execute(QUERIES["apply_dienstverlener"], {"config": json.dumps(document)})
            dv_id = row.fetchone()[0]
            admin_templates.record(conn, lezingen)
        webhook = check_webhook(conn, dv_id, origin=origin, beleid=beleid)
    return Onboarding(dv_id, str(document.get("oin")), webhook)


def check_webhook(
    conn: psycopg.Connection,
    dv_id: int,
    *,
    origin: str | None = None,
    beleid: Adresbeleid | None = None,
) -> WebhookStatus | None:
    """Validate the DV's webhook unless its current URL passed already; record the outcome.
    `conn` is autocommit: no transaction is open during the validation's calls."""
    state = conn.execute(QUERIES["get_webhookvalidatie"], {"dv_id": dv_id}).fetchone()[0]
    url = state["webhookUrl"]
    if url is None:
        return None
    if state["gevalideerd"]:
        return WebhookStatus(Validatie(state["uitkomst"], state["detail"]), True, nieuw=False)
    validatie = validate_now(url, origin=origin, beleid=beleid)
    gevalideerd = conn.execute(
        QUERIES["record_webhookvalidatie"],
        {"dv_id": dv_id, "url": url, "uitkomst": validatie.uitkomst, "detail": validatie.detail},
    ).fetchone()[0]
    return WebhookStatus(validatie, bool(gevalideerd), nieuw=True)


def describe_webhook(status: WebhookStatus | None) -> str | None:
    """One line for `nmc admin dv apply` (no URL: the operator has it in the document)."""
    if status is None:
        return None
    if status.gevalideerd:
        return "webhook: gevalideerd" + ("" if status.nieuw else " (eerder)")
    return (
        f"webhook: NIET gevalideerd: {status.validatie.describe()}; it is not used until it "
        "is (fix it and apply again; the webhook task retries the validation)"
    )


def bewijs_sleutel_bewaring(settings: Settings) -> tuple[datetime, timedelta]:
    """The database's clock and how long a retired delivery-proof key stays published (the
    delivery-proof retention plus a day), for `nmc admin keys afleverbewijs activate`."""
    with connect(connection_url(settings)) as conn:
        [(now, seconds)] = conn.execute(QUERIES["admin_bewijs_sleutel_bewaring"]).fetchall()
    return now, timedelta(seconds=float(seconds))


def list_dvs(settings: Settings) -> list[dict[str, Any]]:
    with connect(connection_url(settings)) as conn:
        cursor = conn.execute(QUERIES["list_dienstverleners"])
        names = [column.name for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def format_dvs(dvs: list[dict[str, Any]]) -> str:
    header = ("dv_id", "oin", "naam", "actief", "quotum/min", "quotum/dag", "berichttypen")
    rows = [
        (
            str(dv["dv_id"]),
            dv["oin"],
            dv["naam"],
            "ja" if dv["actief"] else "nee",
            str(dv["quotum_per_minuut"]),
            str(dv["quotum_per_dag"]),
            ", ".join(dv["berichttypen"]),
        )
        for dv in dvs
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    )


# --------------------------------------------------------------------------------------------
# Dev token and dev secrets


def dev_token(oin: str, ttl: int) -> str:
    try:
        return issue_dev_token(oin, lifetime_seconds=ttl)
    except ValueError as error:
        raise NmcError(str(error)) from None


def init_secrets(directory: Path, *, force: bool = False) -> Path:
    """Write a dev KEK ring, peppers (dvref, payload, cursor), NotifyNL keys (one per service
    of DEV_NOTIFY_SERVICES), dev IAM key + JWKS, a webhook signing ring, a delivery-proof
    signing ring and dev.env into `directory`.

    Returns the path of dev.env, which exports every setting the API needs. Existing files
    are kept unless `force`: replacing a KEK makes stored notifications unreadable.
    """
    existing = [name for name in SECRET_FILES if (directory / name).exists()]
    if existing and not force:
        raise NmcError(
            f"{directory} already holds {', '.join(existing)}; pass --force to replace them "
            "(notifications sealed with the old KEK can then no longer be opened)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    _write_private(directory / "kek.json", json.dumps(new_kek_ring("dev-kek-1"), indent=2))
    peppers = new_peppers((PURPOSE_DVREF, PURPOSE_PAYLOAD, PURPOSE_CURSOR))
    _write_private(directory / "peppers.json", json.dumps(peppers, indent=2))
    webhook_ring = new_signing_ring("dev-webhook-1")
    _write_private(directory / "webhook-signing.json", json.dumps(webhook_ring, indent=2))
    # The API publishes these public keys; it never reads the ring the workers sign with.
    write_public_keys(directory / "webhook-public-keys.json", parse_signing_ring(webhook_ring))
    _write_private(
        directory / "afleverbewijs-signing.json",
        json.dumps(new_afleverbewijs_ring("dev-afleverbewijs-1"), indent=2),
    )
    # One NotifyNL key per Notify service, as NotifyNL issues them: {name}-{service id}-{secret}.
    notify_keys = {
        service: f"nmc-dev-{service}-{uuid.uuid4()}-{uuid.uuid4()}"
        for service in DEV_NOTIFY_SERVICES
    }
    _write_private(directory / "notifynl-keys.json", json.dumps(notify_keys, indent=2))
    generate_dev_iam_key(directory / "dev-iam-key.pem", directory / "jwks.json", overwrite=True)
    settings = {
        "NMC_KEK_FILE": directory / "kek.json",
        "NMC_PEPPERS_FILE": directory / "peppers.json",
        "NMC_NOTIFYNL_KEYS_FILE": directory / "notifynl-keys.json",
        "NMC_OAUTH_ISSUER": DEV_ISSUER,
        "NMC_OAUTH_AUDIENCE": DEV_AUDIENCE,
        "NMC_OAUTH_JWKS_FILE": directory / "jwks.json",
        "NMC_DEV_IAM_KEY_FILE": directory / "dev-iam-key.pem",
        "NMC_NOTIFYNL_CALLBACK_TOKEN": secrets.token_urlsafe(32),
        "NMC_WEBHOOK_SIGNING_KEYS_FILE": directory / "webhook-signing.json",
        "NMC_WEBHOOK_PUBLIC_KEYS_FILE": directory / "webhook-public-keys.json",
        "NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE": directory / "afleverbewijs-signing.json",
        # The operator console's tokens (`nmc admin console-token`) carry an audience of their
        # own, so a DV's token never opens it.
        "NMC_CONSOLE_OAUTH_AUDIENCE": "nmc-console",
    }
    env_file = directory / "dev.env"
    _write_private(
        env_file,
        "# Development secrets written by `nmc admin keys init`. Load with:\n"
        "#   set -a; . "
        + str(env_file)
        + "; set +a\n"
        + "".join(f"{name}={_shell_quote(str(value))}\n" for name, value in settings.items()),
    )
    return env_file


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    path.chmod(0o600)


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"
