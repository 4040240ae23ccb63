"""Webhook delivery (`terugkoppelen`) against a real receiver that verifies every call
with the NMC's JWKS, served by the real API running on a free port.

The worker reads its signing ring, peppers, event source and issuer from the environment as
`nmc worker` does; the receiver fetches the JWKS from the API; the DV resumes its webhook
through the API. Timers move with the NMC clock (nmc.advance_clock), never with sleep; only
the visibility watermark (any open transaction on the shared server holds it) is waited for,
with a bounded poll.
"""

import asyncio
import contextlib
import json
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from pipelinetest import API_KEY, DV_NAAM, DV_OIN, TEMPLATE_ID, Sims, advance, sim_get
from webhookreceiver import CONTENT_TYPE, Receiver

from nmc.admin.dev_iam import generate_dev_iam_key, issue_dev_token
from nmc.admin.onboarding import check_webhook
from nmc.config import Settings
from nmc.crypto.kek_ring import KekRing, new_kek_ring
from nmc.crypto.peppers import new_peppers
from nmc.database import with_overrides
from nmc.signing.webhook_signing import new_signing_ring
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc.worker.terugkoppelen import SOORT
from nmc_dev.sim.server import start_in_thread

NMC_OIN = "00000001999999999000"
NMC_SOURCE = f"urn:nld:oin:{NMC_OIN}:systeem:nmc"
NMC_ORIGIN = "nmc.webhook.test"
BASE = "/api/nmc/v1"
MAX_BATCH = 3
MAX_MISLUKT = 3


# --------------------------------------------------------------------------------------------
# Fixtures: the NMC's environment, the API, the receiver, the DV with a webhook, the workers


@pytest.fixture
def nmc_env(db_url: str, sim: Sims, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One environment for the API and the worker, as a deployment would give both."""
    geheimen = tmp_path / "secrets"
    geheimen.mkdir()
    (geheimen / "kek.json").write_text(json.dumps(new_kek_ring("kek-webhook")))
    (geheimen / "signing.json").write_text(json.dumps(new_signing_ring("nmc-webhook-test")))
    generate_dev_iam_key(geheimen / "iam.pem", geheimen / "iam-jwks.json")
    for name, value in {
        "NMC_API_DATABASE_URL": with_overrides(db_url, user="nmc_api"),
        "NMC_WORKER_DATABASE_URL": with_overrides(db_url, user="nmc_worker"),
        "NMC_KEK_FILE": str(geheimen / "kek.json"),
        "NMC_PEPPERS": json.dumps(new_peppers()),
        "NMC_WEBHOOK_SIGNING_KEYS_FILE": str(geheimen / "signing.json"),
        "NMC_OIN": NMC_OIN,
        "NMC_OAUTH_ISSUER": "https://iam.webhook.test",
        "NMC_OAUTH_AUDIENCE": "nmc-webhook-test",
        "NMC_OAUTH_JWKS_FILE": str(geheimen / "iam-jwks.json"),
        "NMC_DEV_IAM_KEY_FILE": str(geheimen / "iam.pem"),
        "NMC_NOTIFYNL_URL": sim.notifynl_url,
        "NMC_NOTIFYNL_API_KEY": API_KEY,
        "NMC_LDV_URL": sim.ldv_url,
        "NMC_API_POOL_MIN": "1",
        "NMC_API_POOL_MAX": "4",
        "NMC_API_ACCESS_LOG": "0",
        # The receivers listen on loopback: explicitly allowed as webhook targets here.
        "NMC_WEBHOOK_TOEGESTANE_NETWERKEN": "127.0.0.0/8",
        "NMC_WEBHOOK_ORIGIN": NMC_ORIGIN,
    }.items():
        monkeypatch.setenv(name, value)
    for name in (
        "NMC_PEPPERS_FILE",
        "NMC_OAUTH_JWKS_URL",
        "NMC_OAUTH_OIN_CLAIM",
        "NMC_API_EVENT_SOURCE",
        "NMC_WEBHOOK_ISSUER",
        "NMC_LDV_FILE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api(nmc_env: None) -> Iterator[str]:
    """The real DV API: it publishes the JWKS and takes the DV's resume request."""
    from nmc.api.app import create_app

    server = start_in_thread(create_app())
    yield server.url
    server.stop()


@pytest.fixture
def receiver(api: str) -> Iterator[Receiver]:
    hook = Receiver(
        jwks_url=f"{api}/.well-known/jwks.json", issuer=NMC_SOURCE, origins=(NMC_ORIGIN,)
    )
    server = start_in_thread(hook.app)
    yield hook.serving(server.url)
    hook.release()
    server.stop()


@pytest.fixture
def webhook_dv(conn: psycopg.Connection, dv_id: int, receiver: Receiver) -> int:
    """The pipeline's DV (the `intake` fixture's), now with a webhook at the receiver."""
    document = {
        "oin": DV_OIN,
        "naam": DV_NAAM,
        "quotumPerMinuut": 100000,
        "webhook": {"url": receiver.url, "maxMislukt": MAX_MISLUKT, "maxBatch": MAX_BATCH},
        "berichttypen": [
            {"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID},
            {"code": "herinnering", "notifynlTemplateId": TEMPLATE_ID, "geldigheidMax": "60 days"},
        ],
    }
    conn.execute("SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)])
    # Validated as `nmc admin dv apply` validates it (the handshake, the allowed target).
    status = check_webhook(conn, dv_id)
    assert status is not None and status.gevalideerd, status
    return dv_id


@pytest.fixture
def unvalidated_webhook_dv(
    conn: psycopg.Connection, dv_id: int, receiver: Receiver, nmc_env: None
) -> int:
    """The DV with a webhook whose handshake failed when it was applied: not in use yet."""
    document = {
        "oin": DV_OIN,
        "naam": DV_NAAM,
        "quotumPerMinuut": 100000,
        "webhook": {"url": receiver.url, "maxBatch": MAX_BATCH},
        "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
    }
    conn.execute("SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)])
    receiver.handshake = False
    status = check_webhook(conn, dv_id)
    assert status is not None and not status.gevalideerd
    assert status.validatie.describe() == "geen-handshake (http-405)"
    return dv_id


@pytest.fixture
def start_worker(nmc_env: None, ring: KekRing) -> Callable:
    """start_worker(**overrides): a worker of only this kind, configured from the environment."""

    @contextlib.asynccontextmanager
    async def start(**overrides) -> AsyncIterator[Worker]:
        settings = {"kinds": (SOORT,), "pool_size": 3, "poll_interval": 0.02, **overrides}
        config = WorkerConfig.from_env(Settings.from_env(), **settings)
        async with Worker.started(
            config, ring=ring, pseudonym_key=secrets.token_bytes(32)
        ) as worker:
            yield worker

    return start


# --------------------------------------------------------------------------------------------
# Helpers


def dv_token() -> dict[str, str]:
    return {"Authorization": f"Bearer {issue_dev_token(DV_OIN)}"}


def make_events(intake, count: int) -> list:
    return [intake(f"bezorgd+{n}@voorbeeld.nl") for n in range(count)]


def wait_visible(conn: psycopg.Connection, dv_id: int, count: int, within: float = 30.0) -> None:
    """Until `count` events of the DV are below the visibility watermark (another test's open
    transaction on the shared server may hold it back for a moment)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        [visible] = conn.execute(
            "SELECT count(*) FROM nmc.event WHERE dv_id = %s"
            " AND xid < pg_snapshot_xmin(pg_current_snapshot())",
            [dv_id],
        ).fetchone()
        if visible >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{count} events did not pass the watermark")


async def prepared(worker: Worker, conn, intake, dv_id: int, count: int) -> list:
    """The worker's first round plans the DV's task (at the watermark: older events are the
    feed's); then `count` new events, visible, with the task due."""
    assert await worker.run_once(SOORT) == 1, "the first round plans and claims the task"
    ids = make_events(intake, count)
    wait_visible(conn, dv_id, count)
    advance(conn, "2 seconds")  # the webhook interval after the empty first round
    return ids


async def pump(worker: Worker, conn, done: Callable[[], bool], within: float = 30.0) -> None:
    """Worker rounds until `done()`; an idle task comes due again with the interval."""
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("the webhook did not deliver in time")
        if await worker.run_once(SOORT) == 0:
            advance(conn, "2 seconds")
            await asyncio.sleep(0.02)


def positie(conn, dv_id: int) -> dict:
    row = conn.execute(
        "SELECT w.xid::text::bigint, w.event_id, w.mislukt, w.gepauzeerd_tot - w.bijgewerkt_op,"
        " w.uitgeschakeld, t.staat::text, t.due - w.bijgewerkt_op"
        " FROM nmc.webhookpositie AS w LEFT JOIN nmc.taak AS t ON t.dv_id = w.dv_id"
        " AND t.soort = 'terugkoppelen' AND t.staat IN ('open', 'claimed')"
        " WHERE w.dv_id = %s",
        [dv_id],
    ).fetchone()
    keys = ("xid", "event_id", "mislukt", "pauze", "uitgeschakeld", "taak", "wacht")
    return dict(zip(keys, row, strict=True))


def plek(row: dict) -> tuple[int, int]:
    """The delivery position (xid, event id) of a `positie` row."""
    return row["xid"], row["event_id"]


def feed(api: str, cursor: str | None = None) -> dict:
    params = {"cursor": cursor} if cursor else {}
    response = httpx.get(f"{api}{BASE}/notificaties/wijzigingen", params=params, headers=dv_token())
    assert response.status_code == 200, response.text
    return response.json()


def hervatten(api: str) -> None:
    response = httpx.post(f"{api}{BASE}/webhook/hervatten", headers=dv_token())
    assert response.status_code == 204, response.text


# --------------------------------------------------------------------------------------------
# Batching, the cursor, 2xx is not an acknowledgement


async def test_batches_are_the_feed_in_order_each_event_once(
    start_worker, webhook_dv, receiver, intake, conn, api, sim
):
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 7)
        await pump(worker, conn, lambda: sum(map(len, receiver.batches())) >= 7)
        advance(conn, "2 seconds")
        assert await worker.run_once(SOORT) == 1
        assert len(receiver.calls) == 3, "an empty batch is not sent"

    assert receiver.refusals == []
    assert [len(batch) for batch in receiver.batches()] == [3, 3, 1], "maxBatch, full batches"
    delivered = [event for call in receiver.calls for event in call.events]
    served = feed(api)["events"]
    assert delivered == served, "the same CloudEvents as the feed, in feed order, each once"
    assert {event["source"] for event in delivered} == {NMC_SOURCE}

    # The token: the NMC as issuer, this URL as audience, short-lived, a fresh jti per call.
    claims = [call.claims for call in receiver.calls]
    assert all(c["aud"] == receiver.url and c["iss"] == NMC_SOURCE for c in claims)
    assert all(c["exp"] - c["iat"] <= 300 for c in claims)
    assert len({c["jti"] for c in claims}) == 3

    # One LDV record per batch, written before the call that carries its span id.
    records = {r["span_id"]: r for r in sim_get(sim.ldv_url, "") if r["name"] == "webhook.batch"}
    assert len(records) == 3
    for call in receiver.calls:
        record = records[call.traceparent.split("-")[2]]
        assert record["attributes"]["nmc.notificatie_ids"] == sorted(
            event["subject"] for event in call.events
        )
        assert record["attributes"]["dpl.core.processing_activity_id"] == "nmc-status-verstrekken"

    # A 2xx moved the delivery position only: the DV acknowledged nothing.
    assert conn.execute("SELECT count(*) FROM nmc.bevestiging").fetchone()[0] == 0
    last = conn.execute(
        "SELECT xid::text::bigint, event_id FROM nmc.event WHERE event_id = %s",
        [int(served[-1]["id"])],
    ).fetchone()
    assert plek(positie(conn, webhook_dv)) > tuple(last)

    # Nmc-Cursor is the feed cursor after the batch's last event: the feed continues there,
    # and the DV can acknowledge it.
    first, second, _ = receiver.calls
    assert feed(api, first.cursor)["events"] == served[3:]
    response = httpx.put(
        f"{api}{BASE}/notificaties/wijzigingen/bevestiging",
        json={"cursor": second.cursor},
        headers=dv_token(),
    )
    assert response.status_code == 204 and response.headers["nmc-bevestiging"] == "bevestigd"
    assert conn.execute("SELECT event_id FROM nmc.bevestiging").fetchone()[0] == int(
        served[5]["id"]
    )


def test_the_receiver_refuses_a_call_it_cannot_verify(receiver):
    """The receiver's checks can fail: a token from another ring, the wrong audience."""
    other = foreign_ring_token(receiver.url)
    wrong_audience = own_ring_token("https://elders.example/hook")
    for token in (other, wrong_audience):
        response = httpx.post(
            receiver.url,
            content=b"[]",
            headers={
                "Content-Type": CONTENT_TYPE,
                "Authorization": f"Bearer {token}",
                "Nmc-Cursor": "x",
            },
        )
        assert response.status_code == 401
    assert receiver.calls == []
    assert [reason.split(":")[1].strip() for reason in receiver.refusals] == [
        "InvalidSignatureError",
        "InvalidAudienceError",
    ]


def foreign_ring_token(audience: str) -> str:
    """A token signed by a ring the NMC does not publish (with the NMC's kid)."""
    from nmc.signing.webhook_signing import parse_signing_ring

    ring = parse_signing_ring(new_signing_ring("nmc-webhook-test"))
    return ring.sign(audience, issuer=NMC_SOURCE)


def own_ring_token(audience: str) -> str:
    from nmc.signing.webhook_signing import load_signing_ring

    ring = load_signing_ring()
    assert ring is not None
    return ring.sign(audience, issuer=NMC_SOURCE)


# --------------------------------------------------------------------------------------------
# Failures: backoff, pause, growing waits, resume


async def test_failures_back_off_then_pause_with_growing_waits_until_resumed(
    start_worker, webhook_dv, receiver, intake, conn, api
):
    receiver.answers.extend([500, 503, 502, 500, 500, 500])
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 2)
        start = positie(conn, webhook_dv)

        async def attempt() -> dict:
            calls = len(receiver.calls)
            assert await worker.run_once(SOORT) == 1
            assert len(receiver.calls) == calls + 1, "one call per attempt"
            return positie(conn, webhook_dv)

        async def nothing_due() -> None:
            calls = len(receiver.calls)
            assert await worker.run_once(SOORT) == 0
            assert len(receiver.calls) == calls

        # Before maxMislukt: backoff (uitstel_basis 5 s, doubling), no pause.
        first = await attempt()
        assert (first["mislukt"], first["pauze"], first["wacht"]) == (1, None, timedelta(seconds=5))
        assert plek(first) == plek(start), "a failure does not move the position"
        await nothing_due()
        advance(conn, "5 seconds")
        second = await attempt()
        assert (second["mislukt"], second["pauze"], second["wacht"]) == (
            2,
            None,
            timedelta(seconds=10),
        )

        # The maxMislukt-th failure pauses the webhook; every later failure doubles the pause.
        advance(conn, "10 seconds")
        pauses = []
        for wait in ("0 seconds", "1 minute", "2 minutes"):
            advance(conn, wait)
            paused = await attempt()
            assert paused["pauze"] == paused["wacht"]
            pauses.append(paused["pauze"])
            await nothing_due()
        assert pauses == [timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4)]
        advance(conn, "3 minutes 59 seconds")
        await nothing_due()

        # The pause grows up to a day and no further.
        conn.execute("UPDATE nmc.webhookpositie SET mislukt = 40 WHERE dv_id = %s", [webhook_dv])
        advance(conn, "1 second")
        capped = await attempt()
        assert capped["pauze"] == timedelta(days=1)

        # The DV resumes at once through the API; the same batch goes out and is delivered.
        hervatten(api)
        delivered = await attempt()
        assert (delivered["mislukt"], delivered["pauze"]) == (0, None)
        assert plek(delivered) > plek(start)

    assert receiver.refusals == []
    assert [call.status for call in receiver.calls] == [500, 503, 502, 500, 500, 500, 200]
    assert len({tuple(ids) for ids in receiver.batches()}) == 1, "always the whole batch"
    assert len(receiver.batches()[0]) == 2


async def test_a_410_disables_the_webhook_until_the_dv_resumes_it(
    start_worker, webhook_dv, receiver, intake, conn, api
):
    receiver.answers.append(410)
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 1)
        assert await worker.run_once(SOORT) == 1
        gone = positie(conn, webhook_dv)
        assert gone["uitgeschakeld"] is True and gone["taak"] is None

        advance(conn, "7 days")
        assert conn.execute("SELECT nmc.ensure_terugkoppelen()").fetchone()[0] == 0
        assert await worker.run_once(SOORT) == 0

        hervatten(api)
        assert await worker.run_once(SOORT) == 1
        resumed = positie(conn, webhook_dv)
        assert resumed["uitgeschakeld"] is False
        assert plek(resumed) > plek(gone)

    assert [call.status for call in receiver.calls] == [410, 200]
    assert receiver.batches()[0] == receiver.batches()[1], "from the kept position, not zero"
    assert receiver.refusals == []


async def test_a_resumed_webhook_delivers_nothing_past_a_gap_until_the_dv_sets_its_position(
    start_worker, webhook_dv, receiver, intake, conn, api
):
    receiver.answers.append(410)
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 2)
        assert await worker.run_once(SOORT) == 1  # 410: off, the position before both events
        # While it was off, the range holding its next events was dropped (the register says
        # so: the feed answers 410 for this position).
        [einde] = conn.execute(
            "WITH laatste AS (SELECT max(xid) AS xid FROM nmc.event WHERE dv_id = %s)"
            " UPDATE nmc.event_partitie AS p SET verwijderd_op = nmc.now(),"
            " xid_tot = (l.xid::text::bigint + 1)::text::xid8 FROM laatste AS l"
            " WHERE p.xid_van <= l.xid AND p.xid_tot > l.xid RETURNING p.xid_tot::text",
            [webhook_dv],
        ).fetchone()
        hervatten(api)  # the DV resumes its webhook
        assert await worker.run_once(SOORT) == 1
        assert len(receiver.calls) == 1, "no batch past the gap"
        [gat_op] = conn.execute(
            "SELECT gat_op FROM nmc.webhookpositie WHERE dv_id = %s", [webhook_dv]
        ).fetchone()
        assert gat_op is not None and positie(conn, webhook_dv)["taak"] is None
        gap = httpx.post(f"{api}{BASE}/webhook/hervatten", headers=dv_token())
        assert gap.status_code == 409, "resuming again does not skip it"

        # The way back: the DV sets its position to the oldest available event.
        response = httpx.put(
            f"{api}{BASE}/webhook/positie", json={"vanaf": "oudste"}, headers=dv_token()
        )
        assert response.status_code == 204, response.text
        assert plek(positie(conn, webhook_dv)) == (int(einde), 0)
        later = make_events(intake, 1)
        wait_visible(conn, webhook_dv, 3)
        await pump(worker, conn, lambda: len(receiver.calls) >= 2)
    assert [call.status for call in receiver.calls] == [410, 200]
    assert [e["subject"] for e in receiver.calls[1].events] == [str(n) for n in later]


@pytest.mark.parametrize("eerder", ["bestaand", "geldig"])
async def test_every_delivery_checks_the_address_again(
    start_worker, webhook_dv, receiver, intake, conn, eerder
):
    """A webhook in use from before validation existed (`bestaand`, never checked) or one
    validated when its address was fine: at delivery its address is checked again. Here the
    receiver's loopback address is no longer allowed (as a name now resolving into the
    platform would be refused): no call, the refusal recorded, the task waits."""
    conn.execute(
        "UPDATE nmc.webhookvalidatie SET uitkomst = %s WHERE dv_id = %s", [eerder, webhook_dv]
    )
    handshakes = len(receiver.handshakes)  # the fixture's validation
    async with start_worker(webhook_toegestane_netwerken="") as worker:
        await prepared(worker, conn, intake, webhook_dv, 1)
        assert await worker.run_once(SOORT) == 1
        assert receiver.calls == [], "nothing went to the refused address"
        assert conn.execute(
            "SELECT uitkomst, detail FROM nmc.webhookvalidatie WHERE dv_id = %s", [webhook_dv]
        ).fetchone() == ("adres-geweigerd", "loopback")
        [(staat, fout, mislukt)] = conn.execute(
            "SELECT t.staat::text, t.laatste_fout, w.mislukt FROM nmc.taak AS t"
            " JOIN nmc.webhookpositie AS w ON w.dv_id = t.dv_id"
            " WHERE t.soort = 'terugkoppelen' AND t.staat <> 'done'"
        ).fetchall()
        assert (staat, fout, mislukt) == ("open", "webhook-adres-geweigerd", 0)
        # Validated again by its task (with backoff) before anything is delivered.
        advance(conn, "1 minute")
        assert await worker.run_once(SOORT) == 1
        assert receiver.calls == [] and len(receiver.handshakes) == handshakes


async def test_an_ldv_outage_defers_without_counting_against_the_dv(
    start_worker, webhook_dv, receiver, intake, conn, sim
):
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 1)
        ldv_base = sim.ldv_url.rsplit("/ldv/", 1)[0]
        httpx.post(f"{ldv_base}/_sim/outage", json={"status": 503}).raise_for_status()
        assert await worker.run_once(SOORT) == 1
        assert receiver.calls == [], "no provision without its LDV record"
        [(uitstellen, fout)] = conn.execute(
            "SELECT uitstellen, laatste_fout FROM nmc.taak WHERE soort = 'terugkoppelen'"
            " AND staat = 'open'"
        ).fetchall()
        assert (uitstellen, fout) == (1, "ldv-http-503")
        assert positie(conn, webhook_dv)["mislukt"] == 0

        httpx.post(f"{ldv_base}/_sim/outage", json={}).raise_for_status()
        advance(conn, "5 seconds")
        assert await worker.run_once(SOORT) == 1
    assert len(receiver.calls) == 1 and receiver.calls[0].status == 200


async def test_the_task_of_a_deactivated_dv_ends_without_a_call(
    start_worker, webhook_dv, receiver, intake, conn
):
    async with start_worker() as worker:
        await prepared(worker, conn, intake, webhook_dv, 1)
        conn.execute("UPDATE nmc.dienstverlener SET actief = false WHERE dv_id = %s", [webhook_dv])
        assert await worker.run_once(SOORT) == 1
        assert positie(conn, webhook_dv)["taak"] is None
        assert conn.execute("SELECT nmc.ensure_terugkoppelen()").fetchone()[0] == 0
    assert receiver.calls == []


async def test_without_a_signing_ring_the_worker_does_not_deliver(
    start_worker, monkeypatch, caplog
):
    monkeypatch.delenv("NMC_WEBHOOK_SIGNING_KEYS_FILE")
    async with start_worker() as worker:
        assert SOORT not in worker.kinds
    assert "terugkoppelen-zonder-sleutels" in caplog.messages


# --------------------------------------------------------------------------------------------
# Validation before the first delivery


async def test_a_webhook_that_failed_its_handshake_is_validated_by_its_task_before_delivery(
    start_worker, unvalidated_webhook_dv, receiver, intake, conn
):
    dv = unvalidated_webhook_dv
    taak = "SELECT staat::text, laatste_fout FROM nmc.taak WHERE soort = 'terugkoppelen'"
    async with start_worker() as worker:
        assert await worker.run_once(SOORT) == 1, "planned, claimed, validated again: refused"
        make_events(intake, 2)
        wait_visible(conn, dv, 2)
        assert conn.execute(taak).fetchone() == ("open", "webhook-geen-handshake")
        advance(conn, "10 minutes")
        assert await worker.run_once(SOORT) == 1
        assert receiver.calls == [], "no event goes to a webhook that did not pass"

        receiver.handshake = True  # the DV fixed its endpoint
        advance(conn, "10 minutes")
        assert await worker.run_once(SOORT) == 1
        validatie = conn.execute("SELECT nmc.get_webhookvalidatie(%s)", [dv]).fetchone()[0]
        assert (validatie["uitkomst"], validatie["gevalideerd"]) == ("geldig", True)
        await pump(worker, conn, lambda: sum(map(len, receiver.batches())) >= 2)

    assert receiver.refusals == []
    assert receiver.handshakes == [NMC_ORIGIN] * 4, "the apply's, then one per round"
    assert [len(batch) for batch in receiver.batches()] == [2]


# --------------------------------------------------------------------------------------------
# A worker killed mid-delivery: at least once for the last batch, nothing else again


@pytest.mark.parametrize("how", ["cancelled", "lease-expired"])
async def test_a_worker_lost_mid_delivery_repeats_at_most_the_last_batch(
    how, start_worker, webhook_dv, receiver, intake, conn
):
    async with start_worker(http_timeout=60.0) as first, start_worker() as second:
        await prepared(first, conn, intake, webhook_dv, 9)
        assert await first.run_once(SOORT) == 1
        assert receiver.batches() == [receiver.calls[0].ids] and len(receiver.calls[0].ids) == 3

        # The second batch: the receiver has it and holds the call open.
        hold = receiver.hold()
        kind = first.kinds[SOORT]
        [taak] = await kind.claim(first.ctx, 1)
        lost = asyncio.create_task(kind.handle(first.ctx, taak))
        assert await asyncio.to_thread(hold.reached.wait, 20), "the call reached the receiver"
        if how == "cancelled":
            lost.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lost

        advance(conn, "3 minutes")  # past the 2-minute lease
        await pump(second, conn, lambda: sum(map(len, receiver.batches())) >= 12)
        settled = positie(conn, webhook_dv)
        if how == "lease-expired":
            receiver.release()  # the first worker's late 2xx
            assert await lost == "overgenomen", "its finish is fenced off by the claim epoch"
            assert plek(positie(conn, webhook_dv)) == plek(settled)

    batches = receiver.batches()
    assert receiver.refusals == []
    assert len(batches) == 4 and batches[1] == batches[2], "only the lost batch again"
    counts = Counter(event_id for batch in batches for event_id in batch)
    assert len(counts) == 9
    assert {event_id for event_id, n in counts.items() if n == 2} == set(batches[1])
    assert max(counts.values()) == 2


async def test_a_traced_batch_links_to_the_intake_of_each_notification_in_it(
    traced, start_worker, webhook_dv, receiver, conn, api
):
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    async with start_worker() as worker:
        assert await worker.run_once(SOORT) == 1, "the first round plans and claims the task"
        ids = []
        for n in range(2):
            response = httpx.post(
                f"{api}{BASE}/decentraal/notificaties",
                json={
                    "dvRef": f"webhook-spoor-{n}-{secrets.token_hex(4)}",
                    "berichtType": "aanslag",
                    "emailAdres": f"bezorgd+spoor{n}@voorbeeld.nl",
                    "berichtgegevens": {"naam": "Spoorzoeker B.V."},
                },
                headers=dv_token(),
            )
            assert response.status_code == 202, response.text
            ids.append(response.json()["notificatieId"])
        wait_visible(conn, webhook_dv, 2)
        advance(conn, "2 seconds")
        await pump(worker, conn, lambda: sum(map(len, receiver.batches())) >= 2)

    spans = traced.get_finished_spans()
    intake_spans = {
        s.context.span_id: s
        for s in spans
        if s.kind == SpanKind.SERVER and s.name.endswith("/decentraal/notificaties")
    }
    # The first round delivered an empty page: no notification, no link.
    [delivery] = [
        s for s in spans
        if s.name == SOORT and any(k.attributes.get("nmc.link") == "intake" for k in s.links)
    ]  # fmt: skip
    links = {
        link.attributes["nmc.notificatie.id"]: link.context
        for link in delivery.links
        if link.attributes.get("nmc.link") == "intake"
    }
    assert set(links) == set(ids)
    assert {c.span_id for c in links.values()} == set(intake_spans)
    assert {c.trace_id for c in links.values()} == {
        s.context.trace_id for s in intake_spans.values()
    }
    # The call carries the traceparent of its client span, a child of the delivery's span.
    [call] = receiver.calls
    [client] = [
        s for s in spans
        if s.kind == SpanKind.CLIENT and s.parent is not None
        and s.parent.span_id == delivery.context.span_id
        and call.traceparent.startswith(
            f"00-{trace.format_trace_id(s.context.trace_id)}-{trace.format_span_id(s.context.span_id)}"
        )
    ]  # fmt: skip
    assert client.attributes["http.url"] == receiver.url.split("?")[0]
