"""Helpers of the console tests: operator tokens and a database with something to show.

`populate` fills a test database the way the NMC would have: DVs onboarded, notifications
accepted through the real intake (recipients sealed, and registered with the personal-data
scan, so a console page that showed one would fail the run), moved through their statuses
by the single writer over several hours of the NMC clock, a paused webhook, budget used,
and tasks left mislukt as five internal failures leave them.
"""

import json
import secrets
import uuid
from dataclasses import dataclass

import psycopg

from nmc.admin.dev_iam import issue_dev_claims
from nmc.crypto.kek_ring import KekRing
from nmc.crypto.sealing import seal
from privacy_scan import DVREF, SCAN

ISSUER = "https://iam.console.test"
AUDIENCE = "nmc-console"
DV_AUDIENCE = "nmc"
OPERATOR = "nmc-beheerder"
READER = "nmc-lezer"
TEMPLATE = "f33517ff-2a88-4f6e-b855-c550268ce08a"


def token(rol: str | None = OPERATOR, sub: str = "op-1", **claims) -> str:
    roles = {"roles": [rol]} if rol else {}
    return issue_dev_claims({"sub": sub, **roles, **claims}, audience=AUDIENCE)


@dataclass
class Populated:
    dv_een: int
    dv_twee: int
    mislukt_wissen: int
    mislukt_ongeldig: int
    aangenomen: uuid.UUID
    recipients: list[str]


def _dv(conn: psycopg.Connection, oin: str, naam: str, **extra) -> int:
    document = {
        "oin": oin,
        "naam": naam,
        "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE}],
        **extra,
    }
    return conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)]
    ).fetchone()[0]


def _intake(conn: psycopg.Connection, dv_id: int, ring: KekRing, recipient: str) -> uuid.UUID:
    notificatie_id = uuid.uuid4()
    dvref = f"dossier-{secrets.token_hex(6)}"
    SCAN.register_sealed(recipient, {"naam": "Jansen-Testpersoon"})
    SCAN.register(DVREF, dvref)
    sealed = seal(notificatie_id, dv_id, recipient, {"naam": "Jansen-Testpersoon"}, ring=ring)
    conn.execute(
        "SELECT nmc.intake_notificatie_v3(%s, %s, 'aanslag', 'decentraal', %s, 1::smallint, %s,"
        " 0::smallint, %s, %s, %s, %s, NULL, NULL, %s, NULL, NULL)",
        [
            notificatie_id, dv_id, secrets.token_bytes(32),
            secrets.token_bytes(32), sealed.recipient, sealed.berichtgegevens,
            sealed.wrapped_key, sealed.kek_id, secrets.token_hex(16),
        ],
    )  # fmt: skip
    return notificatie_id


def _walk(conn: psycopg.Connection, notificatie_id: uuid.UUID, *steps: tuple[str, str | None]):
    for naar, reden in steps:
        conn.execute(
            "SELECT nmc.transition_notificatie(%s, %s::nmc.notificatie_status, %s::nmc.reden)",
            [notificatie_id, naar, reden],
        )


def populate(conn: psycopg.Connection, ring: KekRing) -> Populated:
    dv_een = _dv(conn, "00000001800000001000", "DV Belastingen (test)")
    dv_twee = _dv(
        conn, "00000001800000002000", "DV Gemeente Voorbeeldstad (test)",
        webhook={"url": "https://hooks.voorbeeldstad.example/nmc/hook?sleutel=geheim-123"},
        beheerkanaal="mailto:beheer@voorbeeldstad.example",
    )  # fmt: skip
    recipients: list[str] = []

    def accept(dv_id: int) -> uuid.UUID:
        recipient = f"ontvanger.{secrets.token_hex(4)}@prive-voorbeeld.nl"
        recipients.append(recipient)
        return _intake(conn, dv_id, ring, recipient)

    # Cancelled over a week ago: its erasure is due.
    geannuleerd = accept(dv_een)
    conn.execute("SELECT nmc.cancel_notificatie(%s, %s)", [dv_een, geannuleerd])
    conn.execute("SELECT nmc.advance_clock('8 days')")

    sent = ("in-verzending", None), ("verzonden", None)
    # Six hours of outcomes, a few per hour and DV.
    for hour in range(6):
        for dv_id in (dv_een, dv_twee):
            for _ in range(1 + (hour + dv_id) % 3):
                _walk(conn, accept(dv_id), *sent, ("bezorgd", None), ("definitief-bezorgd", None))
            if hour % 2 == 0:
                _walk(conn, accept(dv_id), ("in-verzending", None),
                      ("niet-bezorgbaar", "geen-contactgegevens"))  # fmt: skip
            if hour == 3:
                _walk(conn, accept(dv_id), *sent, ("bezorgstatus-onbekend", None))
        conn.execute("SELECT nmc.advance_clock('1 hour')")
    # Still under way: accepted, sending, sent, delivered.
    aangenomen = accept(dv_een)
    accept(dv_twee)
    _walk(conn, accept(dv_een), ("in-verzending", None))
    for dv_id in (dv_een, dv_twee):
        _walk(conn, accept(dv_id), *sent)
        _walk(conn, accept(dv_id), *sent, ("bezorgd", None))

    # A report of an invalid address that failed five times inside the NMC; the erasure of
    # the one cancelled a week ago likewise.
    mislukt_wissen = conn.execute(
        "UPDATE nmc.taak SET staat = 'mislukt', pogingen = 5, laatste_fout = 'SerializationFailure'"
        " WHERE notificatie_id = %s AND soort = 'wissen' RETURNING id",
        [geannuleerd],
    ).fetchone()[0]
    onbereikbaar = accept(dv_twee)
    _walk(conn, onbereikbaar, ("in-verzending", None), ("niet-bezorgbaar", "onbereikbaar"))
    mislukt_ongeldig = conn.execute(
        "INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, staat, pogingen, laatste_fout,"
        " aangemaakt_op) VALUES ('ongeldig-melden', %s, %s, nmc.now(), 'mislukt', 5,"
        " 'DecryptionError', nmc.now()) RETURNING id",
        [dv_twee, onbereikbaar],
    ).fetchone()[0]

    # The webhook of DV twee failed ten times in a row and pauses.
    conn.execute("SELECT nmc.ensure_terugkoppelen()")
    conn.execute(
        "UPDATE nmc.webhookpositie SET mislukt = 10, gepauzeerd_tot = nmc.now() + interval '40 min'"
        " WHERE dv_id = %s",
        [dv_twee],
    )
    # The watchdog and maintenance plan themselves as tasks (ensure_onderhoud where this
    # database has maintenance as tasks); no worker runs here, so they come due.
    conn.execute("SELECT nmc.ensure_controle()")
    if conn.execute("SELECT to_regprocedure('nmc.ensure_onderhoud()')").fetchone()[0]:
        conn.execute("SELECT nmc.ensure_onderhoud()")
    # Budget of this minute and the ones before (the clock only moves forward); a burst of
    # 1000 lets each minute's take through whole (up to 1000).
    conn.execute("SELECT nmc.set_notify_service('standaard', p_burst => 1000)")
    for used in (412, 655, 1180):
        conn.execute("SELECT nmc.take_budget('standaard', 'verzenden', %s)", [used])
        conn.execute("SELECT nmc.take_budget('standaard', 'navraag', %s)", [used // 20])
        conn.execute("SELECT nmc.advance_clock('1 minute')")
    conn.execute("SELECT nmc.take_budget('standaard', 'verzenden', 97)")
    return Populated(
        dv_een=dv_een,
        dv_twee=dv_twee,
        mislukt_wissen=mislukt_wissen,
        mislukt_ongeldig=mislukt_ongeldig,
        aangenomen=aangenomen,
        recipients=recipients,
    )
