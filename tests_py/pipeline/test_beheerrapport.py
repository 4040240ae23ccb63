"""The daily beheer report (`beheerrapport`) end to end: a real worker, the NotifyNL and LDV
simulators, and a DV's https: endpoint that verifies the NMC's signature.

Once a day per DV with a beheer channel: the unacknowledged terminal statuses past its
bevestigingstermijn (their notification ids, oldest first) and a flag for a share of
geen-contactgegevens above the threshold. `mailto:` goes through NotifyNL with the NMC's own
template (configured like a berichttype), `https:` as a signed POST; once per DV and day; a
send whose answer was lost is found by its reference, not sent again. The NMC clock moves;
nothing sleeps for a timer.
"""

import dataclasses
import json
import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import jwt
import psycopg
import pytest
from pipelinetest import DV_OIN, TEMPLATE_ID, Sims, advance, set_faults, sim_get
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nmc.crypto.kek_ring import KekRing
from nmc.crypto.sealing import seal
from nmc.signing.webhook_signing import SigningRing, parse_signing_ring
from nmc.signing.webhook_signing import new_signing_ring as make_ring
from nmc.worker.beheerrapport import SOORT
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc_dev.sim.server import start_in_thread
from privacy_scan import SCAN

BEHEER_ADRES = "functioneel-beheer@testdorp.example"
RAPPORT_TEMPLATE = "a0a0a0a0-0000-4000-8000-0000000000bb"
TWEEDE_OIN = "00000001888888888000"
ISSUER = "urn:nld:oin:00000001999999999000:systeem:nmc"


class Endpoint:
    """The second DV's https: beheer channel: checks the token, keeps what it accepted."""

    def __init__(self, ring: SigningRing) -> None:
        self.keys = jwt.PyJWKSet.from_dict(ring.jwks())
        self.url = ""
        self.accepted: list[dict[str, Any]] = []
        self.refusals: list[str] = []
        self.app = Starlette(routes=[Route("/beheer", self._post, methods=["POST"])])

    async def _post(self, request: Request) -> Response:
        if request.headers.get("content-type") != "application/cloudevents+json":
            self.refusals.append("content-type")
            return Response(status_code=415)
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        try:
            key = self.keys[jwt.get_unverified_header(token)["kid"]]
            claims = jwt.decode(
                token, key.key, algorithms=["ES256", "RS256"], audience=self.url, issuer=ISSUER
            )
        except (jwt.PyJWTError, KeyError) as error:
            self.refusals.append(type(error).__name__)
            return Response(status_code=401)
        body = json.loads(await request.body())
        self.accepted.append(
            {"claims": claims, "body": body, "traceparent": request.headers.get("traceparent")}
        )
        return Response(status_code=202)


@pytest.fixture
def signing_ring() -> SigningRing:
    return parse_signing_ring(make_ring("nmc-beheer-test"))


@pytest.fixture
def endpoint(signing_ring: SigningRing) -> Iterator[Endpoint]:
    hook = Endpoint(signing_ring)
    server = start_in_thread(hook.app)
    hook.url = f"{server.url}/beheer"
    yield hook
    server.stop()


@pytest.fixture
def kanalen(conn: psycopg.Connection, dv_id: int, endpoint: Endpoint) -> tuple[int, int]:
    """The pipeline's DV reports by e-mail, a second DV to its https: endpoint; the NMC's own
    report template is configured like a berichttype."""
    conn.execute(
        "UPDATE nmc.dienstverlener SET beheerkanaal = %s, bevestigingstermijn = '36 hours'"
        " WHERE dv_id = %s",
        [f"mailto:{BEHEER_ADRES}", dv_id],
    )
    document = {
        "oin": TWEEDE_OIN,
        "naam": "Gemeente Beheerstad",
        "beheerkanaal": endpoint.url,
        "bevestigingstermijn": "1 day",
        "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
    }
    tweede = conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)]
    ).fetchone()[0]
    conn.execute(
        "SELECT nmc.configure_beheerrapport(%s::jsonb)",
        [json.dumps({"notifynlTemplateId": RAPPORT_TEMPLATE, "notifyService": "standaard"})],
    )
    return dv_id, tweede


@pytest.fixture
async def rapporteur(
    worker_config: WorkerConfig, signing_ring: SigningRing, ring: KekRing, sim: Sims
) -> AsyncIterator[Worker]:
    """A worker of only this kind; the endpoint listens on loopback: explicitly allowed."""
    config = dataclasses.replace(
        worker_config,
        kinds=(SOORT,),
        webhook_toegestane_netwerken="127.0.0.0/8",
        webhook_issuer=ISSUER,
    )
    async with Worker.started(
        config,
        ring=ring,
        pseudonym_key=secrets.token_bytes(32),
        signing=signing_ring,
    ) as started:
        yield started


def terminal(conn: psycopg.Connection, dv_id: int, intake, count: int) -> list[uuid.UUID]:
    """`count` notifications of the DV cancelled (a terminal status nobody acknowledges)."""
    ids = [intake(f"burger+{n}@voorbeeld.nl") for n in range(count)]
    for notificatie_id in ids:
        conn.execute("SELECT nmc.cancel_notificatie(%s, %s)", [dv_id, notificatie_id])
    return ids


def geen_contactgegevens(conn: psycopg.Connection, intake) -> uuid.UUID:
    notificatie_id = intake("999993653", regie="centraal")
    conn.execute(
        "SELECT nmc.transition_notificatie(%s, 'in-verzending'::nmc.notificatie_status, NULL)",
        [notificatie_id],
    )
    conn.execute(
        "SELECT nmc.transition_notificatie(%s, 'niet-bezorgbaar'::nmc.notificatie_status,"
        " 'geen-contactgegevens'::nmc.reden)",
        [notificatie_id],
    )
    return notificatie_id


def rapporten(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT dv_id, kanaal, onbevestigd, boven_drempel, uitkomst, notifynl_id IS NOT NULL"
        " FROM nmc.beheerrapport ORDER BY dv_id, dag"
    ).fetchall()


def mails(sim: Sims) -> list[dict[str, Any]]:
    return [
        n
        for n in sim_get(sim.notifynl_url, "/_sim/sent")["notifications"]
        if n["template_id"] == RAPPORT_TEMPLATE
    ]


def next_day(conn: psycopg.Connection) -> None:
    """Past the next report time (07:00 in Amsterdam), wherever today's clock stands."""
    advance(conn, "1 day")


def to_five_to_midnight(conn: psycopg.Connection) -> None:
    """On to the next 23:55 in Amsterdam."""
    conn.execute(
        "SELECT nmc.advance_clock(((d.t + CASE WHEN d.t > nmc.now() THEN interval '0'"
        " ELSE interval '1 day' END) - nmc.now()))"
        " FROM (SELECT (((nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date + time '23:55')"
        " AT TIME ZONE 'Europe/Amsterdam') AS t) AS d"
    )


async def test_reports_reach_the_channels_once_a_day(
    rapporteur, kanalen, conn, intake, sim, endpoint, ring
):
    eerste, tweede = kanalen
    oud = terminal(conn, eerste, intake, 2)
    geen = geen_contactgegevens(conn, intake)
    advance(conn, "2 days")  # past the first DV's ack term of 36 hours by the report time
    terminal(conn, eerste, intake, 1)  # within it yet: not reported

    assert await rapporteur.run_once(SOORT) == 0, "planned, not due before the report time"
    due = conn.execute(
        "SELECT count(*), bool_and(due > nmc.now()) FROM nmc.taak WHERE soort = 'beheerrapport'"
    ).fetchone()
    assert due == (2, True), "one task per DV with a beheer channel"
    next_day(conn)
    assert await rapporteur.run_once(SOORT) == 2

    # By e-mail, through NotifyNL with the NMC's template: ids and counts, no personal data.
    [mail] = mails(sim)
    assert mail["email_address"] == BEHEER_ADRES
    [(rapport_id, dag)] = conn.execute(
        "SELECT id, dag FROM nmc.beheerrapport WHERE dv_id = %s", [eerste]
    ).fetchall()
    assert mail["reference"] == str(rapport_id)
    gegevens = mail["personalisation"]
    assert gegevens["onbevestigd_aantal"] == "3"
    assert gegevens["notificatie_ids"].split("\n") == [str(i) for i in oud] + [str(geen)], (
        "every overdue terminal status, oldest first"
    )
    assert gegevens["dag"] == dag.isoformat() and gegevens["oin"] == DV_OIN
    assert gegevens["geen_contactgegevens_boven_drempel"] == "ja"
    assert gegevens["geen_contactgegevens_aandeel"] == "100,0%"
    assert "@voorbeeld.nl" not in json.dumps(gegevens) and "999993653" not in json.dumps(gegevens)

    # By https:, signed like the webhook: nothing overdue there, so nothing to report.
    assert endpoint.accepted == [] and endpoint.refusals == []
    assert rapporten(conn) == [
        (eerste, "mailto", 3, True, "verzonden", True),
        (tweede, "https", 0, False, "niets-te-melden", False),
    ]

    # An LDV record for the notification ids the report provides, before the call.
    [record] = [r for r in sim_get(sim.ldv_url, "") if r["name"] == "beheerrapport"]
    assert record["attributes"]["nmc.notificatie_ids"] == sorted(str(i) for i in [*oud, geen])

    # Once per DV and day: the task run again today sends nothing.
    conn.execute("UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'beheerrapport'")
    assert await rapporteur.run_once(SOORT) == 2
    assert len(mails(sim)) == 1
    assert conn.execute(
        "SELECT bool_and(due > nmc.now() + interval '6 hours') FROM nmc.taak"
        " WHERE soort = 'beheerrapport' AND staat = 'open'"
    ).fetchone()[0], "re-planned for the next day's report time"

    # The next day: overdue statuses at the second DV too, posted to its endpoint.
    tweede_ids = terminal(conn, tweede, intake_for(conn, tweede, ring), 1)
    advance(conn, "2 days")
    assert await rapporteur.run_once(SOORT) == 2
    assert len(mails(sim)) == 2, "the first DV's report of the new day"
    [post] = endpoint.accepted
    assert (
        post["claims"]["aud"] == endpoint.url
        and post["claims"]["exp"] - post["claims"]["iat"] <= 300
    )
    body = post["body"]
    assert body["type"] == "nl.overheid.moz.nmc.beheerrapport" and body["subject"] == TWEEDE_OIN
    assert body["data"]["onbevestigd"]["notificatieIds"] == [str(i) for i in tweede_ids]
    assert body["data"]["onbevestigd"]["aantal"] == 1
    assert body["data"]["geenContactgegevens"]["bovenDrempel"] is False
    assert post["traceparent"], "the LDV record's span travels on the call"


def intake_for(conn: psycopg.Connection, dv_id: int, ring: KekRing):
    """A decentraal intake of another DV (its berichttype aanslag), as the API calls it."""

    def accept(recipient: str) -> uuid.UUID:
        notificatie_id = uuid.uuid4()
        SCAN.register_sealed(recipient, None)
        sealed = seal(notificatie_id, dv_id, recipient, {"naam": "Test"}, ring=ring)
        return conn.execute(
            "SELECT notificatie_id FROM nmc.intake_notificatie_v3(%s, %s, 'aanslag', 'decentraal',"
            " %s, 1::smallint, %s, 0::smallint, %s, %s, %s, %s, NULL, NULL, %s, NULL, NULL)",
            [
                notificatie_id,
                dv_id,
                secrets.token_bytes(32),
                secrets.token_bytes(32),
                sealed.recipient,
                sealed.berichtgegevens,
                sealed.wrapped_key,
                sealed.kek_id,
                secrets.token_hex(16),
            ],
        ).fetchone()[0]

    return accept


async def test_a_send_whose_answer_was_lost_is_found_by_its_reference(
    rapporteur, kanalen, conn, intake, sim
):
    eerste, _ = kanalen
    terminal(conn, eerste, intake, 1)
    advance(conn, "2 days")
    assert await rapporteur.run_once(SOORT) == 0
    next_day(conn)
    # Late in the day, so that the re-claim comes after midnight: the report stays the same.
    to_five_to_midnight(conn)
    # NotifyNL accepts the e-mail but its answer never arrives (the worker times out).
    set_faults(sim, accept_timeout_rate=1.0)
    await rapporteur.run_once(SOORT)
    set_faults(sim)
    assert len(mails(sim)) == 1
    staat = conn.execute(
        "SELECT staat::text, laatste_fout FROM nmc.taak WHERE soort = 'beheerrapport'"
        " AND dv_id = %s",
        [eerste],
    ).fetchone()
    assert staat == ("open", "notifynl-timeout"), "deferred, not counted"

    advance(conn, "10 minutes")
    assert await rapporteur.run_once(SOORT) >= 1
    assert len(mails(sim)) == 1, "the re-claim finds it by reference and does not send again"
    [(uitkomst, notifynl_id)] = conn.execute(
        "SELECT uitkomst, notifynl_id::text FROM nmc.beheerrapport WHERE dv_id = %s", [eerste]
    ).fetchall()
    assert (uitkomst, notifynl_id) == ("verzonden", mails(sim)[0]["id"])


async def test_without_a_template_an_email_report_waits(rapporteur, kanalen, conn, intake, sim):
    eerste, _ = kanalen
    conn.execute("SELECT nmc.configure_beheerrapport('{\"notifynlTemplateId\": null}')")
    terminal(conn, eerste, intake, 1)
    advance(conn, "2 days")
    await rapporteur.run_once(SOORT)
    next_day(conn)
    await rapporteur.run_once(SOORT)
    assert mails(sim) == []
    assert conn.execute(
        "SELECT staat::text, laatste_fout FROM nmc.taak WHERE soort = 'beheerrapport'"
        " AND dv_id = %s",
        [eerste],
    ).fetchone() == ("open", "beheerrapport-geen-template")


def test_the_https_body_is_a_cloudevent(signing_ring):
    from nmc.adapters.beheerkanaal import BeheerkanaalClient
    from nmc.adapters.webhook_validatie import Adresbeleid

    client = BeheerkanaalClient(
        httpx.AsyncClient(), signing_ring, issuer=ISSUER, source=ISSUER, beleid=Adresbeleid()
    )
    body = json.loads(client.event("r-1", TWEEDE_OIN, {"dag": "2025-03-01"}))
    assert body["specversion"] == "1.0" and body["id"] == "r-1" and body["source"] == ISSUER
    assert body["datacontenttype"] == "application/json" and body["data"] == {"dag": "2025-03-01"}


async def test_the_report_counts_yesterdays_unrenderable_notifications(
    rapporteur, kanalen, conn, intake, sim
):
    """Notifications NotifyNL could not render (the template changed after the intake) end
    technisch-mislukt; the DV's next report counts them per berichttype, even with nothing
    else to report."""
    eerste, _ = kanalen
    assert await rapporteur.run_once(SOORT) == 0, "planned for the next report time"
    for _ in range(2):
        notificatie_id = intake("bezorgd+weergave@voorbeeld.nl")
        [(taak_id, epoch)] = conn.execute(
            "SELECT taak_id, claim_epoch FROM nmc.claim_verzenden('t', 10)"
            " WHERE notificatie_id = %s",
            [notificatie_id],
        ).fetchall()
        conn.execute("SELECT nmc.finish_verzenden(%s, %s, 'onverwerkbaar')", [taak_id, epoch])
    next_day(conn)
    assert await rapporteur.run_once(SOORT) == 2
    [mail] = mails(sim)
    assert mail["personalisation"]["onverwerkbaar"] == "aanslag: 2"
    assert mail["personalisation"]["onbevestigd_aantal"] == "0"
    assert [r[:1] + r[4:5] for r in rapporten(conn)] == [
        (eerste, "verzonden"),
        (kanalen[1], "niets-te-melden"),
    ]
