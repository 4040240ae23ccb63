"""nmc_client, the DV client library, against the real API on a real database.

The fixtures (conftest.py) run the real app with its lifespan; the client talks to it through
the TestClient (an httpx.Client), or through `Relay`, a transport that passes each request to
the app and can drop the answer, as a broken connection would after the NMC committed. The
unit tests at the end feed the reader hand-made pages (the sequence rule with a reordered
page) through httpx.MockTransport.
"""

import ast
import asyncio
import json
import re
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import jwt
import pytest
from apitest import BASE, OIN_A, OIN_B, TEMPLATE_ID, centraal, decentraal, token
from feedtest import read_until, transition
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from nmc.adapters.webhook import WebhookClient
from nmc.adapters.webhook_validatie import Adresbeleid
from nmc.api.app import create_app
from nmc.crypto.peppers import load_peppers
from nmc.feed.cloudevents import event_source, to_cloudevent
from nmc.feed.feed_cursor import CursorCodec
from nmc.signing.webhook_signing import (
    issuer,
    load_signing_ring,
    new_signing_ring,
    parse_signing_ring,
)
from nmc_client import (
    BerichttypeUnavailable,
    Conflict,
    CursorExpired,
    FeedReader,
    FileCursorStore,
    JwksCache,
    MemoryCursorStore,
    MissingPersonalisation,
    NmcClient,
    NmcUnavailable,
    NotFound,
    RetryPolicy,
    ServerError,
    StatusChange,
    TooManyRequests,
    Unprocessable,
    WebhookRejected,
    WebhookVerifier,
    parse_batch,
)
from nmc_client.problems import retry_after_seconds

API = f"http://testserver{BASE}"
HOOK = "https://dv.example/nmc-webhook"
BATCH_TYPE = "application/cloudevents-batch+json"
ACK_PATH = f"{BASE}/notificaties/wijzigingen/bevestiging"


class Relay(httpx.BaseTransport):
    """Passes every request to the app behind `target` (a TestClient); the first `lose`
    answers are dropped after the app handled the request, as a reset connection would."""

    def __init__(self, target: TestClient, lose: int = 0):
        self.target = target
        self.lose = lose
        self.handled = 0
        self.answers: list[httpx.Response] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.target.request(
            request.method, str(request.url), headers=request.headers, content=request.read()
        )
        self.handled += 1
        self.answers.append(answer)
        if self.lose > 0:
            self.lose -= 1
            raise httpx.ReadError("connection reset by peer", request=request)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@pytest.fixture
def sleeps() -> list[float]:
    """What the client asked to sleep: the tests never wait for a backoff."""
    return []


def client_for(http: httpx.Client, sleeps: list[float], oin: str = OIN_A, **kwargs) -> NmcClient:
    return NmcClient(API, lambda: token(oin), http=http, sleep=sleeps.append, **kwargs)


@pytest.fixture
def nmc(client: TestClient, sleeps: list[float]) -> NmcClient:
    return client_for(client, sleeps)


def count_notificaties(conn) -> int:
    return conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0]


def acknowledged(conn, oin: str = OIN_A) -> tuple | None:
    return conn.execute(
        "SELECT b.epoch, b.xid::text, b.event_id, b.bevestigd_op FROM nmc.bevestiging AS b"
        " JOIN nmc.dienstverlener AS d USING (dv_id) WHERE d.oin = %s",
        (oin,),
    ).fetchone()


def covers(conn, event_ids, oin: str = OIN_A) -> bool:
    """Whether the acknowledged position (xid, event_id) is at or past every one of these
    events. A short page's cursor sits at the watermark (its event_id part is 0), so the
    position is compared as the feed orders it, not by event id alone."""
    [(covered,)] = conn.execute(
        "SELECT bool_and((b.xid, b.event_id) >= (e.xid, e.event_id)) FROM nmc.bevestiging AS b"
        " JOIN nmc.dienstverlener AS d USING (dv_id) CROSS JOIN nmc.event AS e"
        " WHERE d.oin = %s AND e.event_id = ANY(%s)",
        (oin, [int(i) for i in event_ids]),
    ).fetchall()
    return bool(covered)


def poll_until(reader: FeedReader, done: Callable[[], bool], within: float = 20.0) -> list:
    """Poll until `done()`: the feed only shows events below the cluster-wide watermark, which
    other tests' open transactions hold back for a moment."""
    results = []
    deadline = time.monotonic() + within
    while True:
        results.append(reader.poll())
        if done() or time.monotonic() > deadline:
            return results
        if results[-1].events == 0:
            time.sleep(0.02)


# --------------------------------------------------------------------------------------------
# Intake


def test_submit_decentraal_and_centraal_then_read_the_status(nmc):
    accepted = [nmc.submit("decentraal", decentraal()), nmc.submit("centraal", centraal())]
    for regie, one in zip(("decentraal", "centraal"), accepted, strict=True):
        assert one.location == f"{BASE}/notificaties/{one.notificatie_id}"
        status = nmc.status(one.notificatie_id)
        assert (status.status, status.versie, status.etag) == ("aangenomen", 1, '"1"')
        assert status.data["regie"] == regie
        assert status.data["pogingen"] == []


def test_a_batch_and_the_same_batch_again_give_the_same_ids(nmc, conn):
    items = [decentraal() for _ in range(3)]
    first = nmc.submit_batch("decentraal", items)
    assert len(set(first.notificatie_ids)) == 3
    assert str(uuid.UUID(first.batch_id)) == first.batch_id  # made by the client
    again = nmc.submit_batch("decentraal", items)  # another batch id, the same notifications
    assert again.batch_id != first.batch_id
    assert again.notificatie_ids == first.notificatie_ids
    centraal_batch = nmc.submit_batch("centraal", [centraal(), centraal()], batch_id=None)
    assert len(centraal_batch.notificatie_ids) == 2
    assert count_notificaties(conn) == 5


def test_a_batch_of_1000_and_the_limits(nmc, conn):
    accepted = nmc.submit_batch("decentraal", [decentraal() for _ in range(1000)])
    assert len(set(accepted.notificatie_ids)) == 1000
    assert count_notificaties(conn) == 1000
    for size in (0, 1001):
        with pytest.raises(ValueError, match="1 to 1000"):
            nmc.submit_batch("decentraal", [decentraal() for _ in range(size)])


def test_a_replay_returns_the_same_id_and_another_payload_is_409(nmc, conn):
    body = decentraal()
    first = nmc.submit("decentraal", body)
    assert nmc.submit("decentraal", dict(body)).notificatie_id == first.notificatie_id
    with pytest.raises(Conflict) as caught:
        nmc.submit("decentraal", {**body, "berichtgegevens": {"naam": "Ander B.V."}})
    problem = caught.value.problem
    assert (caught.value.status, problem.slug) == (409, "conflict")
    assert [v["field"] for v in problem.violations] == ["dvRef"]
    assert body["dvRef"] not in str(caught.value)  # the message never quotes the request
    assert count_notificaties(conn) == 1


def test_the_template_refusals_are_typed_errors_naming_the_fields(nmc, conn):
    conn.execute(
        "SELECT nmc.record_template('standaard', %s, 'gelezen', 1, '{naam,datum}',"
        " '{naam,datum}', NULL)",
        [TEMPLATE_ID],
    )
    with pytest.raises(MissingPersonalisation) as caught:
        nmc.submit("decentraal", decentraal(berichtgegevens={"naam": "Voorbeeld B.V."}))
    assert (caught.value.status, caught.value.problem.slug) == (422, "ontbrekende-personalisatie")
    assert caught.value.missing == ["berichtgegevens.datum"]
    assert "Voorbeeld" not in str(caught.value)
    conn.execute(
        "SELECT nmc.record_template('standaard', %s, 'verdwenen', NULL, NULL, NULL, NULL)",
        [TEMPLATE_ID],
    )
    with pytest.raises(BerichttypeUnavailable):
        nmc.submit_batch("decentraal", [decentraal()])
    assert count_notificaties(conn) == 0


def test_an_address_notifynl_would_refuse_is_unprocessable(nmc, conn):
    with pytest.raises(Unprocessable) as caught:
        nmc.submit("decentraal", decentraal(emailAdres="jan@voor---beeld.nl"))
    problem = caught.value.problem
    assert (caught.value.status, problem.slug) == (422, "emailadres-geweigerd")
    assert [v["field"] for v in problem.violations] == ["emailAdres"]
    assert "voor---beeld" not in str(caught.value)
    assert count_notificaties(conn) == 0


def test_a_lost_answer_is_retried_and_makes_one_notification(client, conn, sleeps):
    relay = Relay(client, lose=2)
    nmc = client_for(httpx.Client(transport=relay), sleeps)
    accepted = nmc.submit("decentraal", decentraal())
    assert relay.handled == 3  # the NMC processed all three requests …
    assert len(sleeps) == 2 and all(0 <= s <= 1.0 for s in sleeps)  # backoff 0.5 s, 1 s
    assert {a.json()["notificatieId"] for a in relay.answers} == {accepted.notificatie_id}
    assert count_notificaties(conn) == 1  # … and it is one notification


def test_without_any_answer_the_client_gives_up_after_its_attempts(client, conn, sleeps):
    relay = Relay(client, lose=10)
    nmc = client_for(httpx.Client(transport=relay), sleeps, retry=RetryPolicy(attempts=3))
    with pytest.raises(NmcUnavailable, match="3 attempt"):
        nmc.submit("decentraal", decentraal())
    assert relay.handled == 3 and len(sleeps) == 2
    assert count_notificaties(conn) == 1


def test_a_503_is_retried_after_exactly_its_retry_after(api_env, dvs, monkeypatch, sleeps):
    monkeypatch.setenv("NMC_LDV_URL", "http://127.0.0.1:9/ldv")  # nothing listens: feed 503
    with TestClient(create_app(), raise_server_exceptions=False) as app_client:
        relay = Relay(app_client)
        nmc = client_for(httpx.Client(transport=relay), sleeps, retry=RetryPolicy(attempts=3))
        nmc.submit("decentraal", decentraal())
        with pytest.raises(ServerError) as caught:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # empty pages until the event is visible
                assert nmc.read_changes().events == []
    refused = [a for a in relay.answers if a.status_code == 503]
    assert len(refused) == 3
    asked = [float(a.headers["retry-after"]) for a in refused]
    assert sleeps == asked[:2]
    assert caught.value.retry_after == asked[2] and caught.value.status == 503


def test_a_retry_after_beyond_max_wait_is_raised_at_once(client, apply_dv, sleeps):
    oin = "00000001005005005000"
    apply_dv(oin, quotumPerMinuut=100, quotumPerDag=1)
    nmc = client_for(client, sleeps, oin=oin, retry=RetryPolicy(max_wait=0))
    nmc.submit("decentraal", decentraal())
    with pytest.raises(TooManyRequests) as caught:
        nmc.submit("decentraal", decentraal())
    assert caught.value.problem.slug == "quotum-overschreden"
    assert caught.value.retry_after >= 1
    assert sleeps == []


# --------------------------------------------------------------------------------------------
# Status, search, cancel


def test_status_is_etag_aware(nmc, conn):
    accepted = nmc.submit("decentraal", decentraal())
    first = nmc.status(accepted.notificatie_id)
    assert nmc.status(accepted.notificatie_id, etag=first.etag) is None  # 304: unchanged
    transition(conn, accepted.notificatie_id, "in-verzending")
    moved = nmc.status(accepted.notificatie_id, etag=first.etag)
    assert (moved.status, moved.versie, moved.etag) == ("in-verzending", 2, '"2"')


def test_another_dvs_notification_does_not_exist(client, nmc, sleeps):
    accepted = nmc.submit("decentraal", decentraal())
    other = client_for(client, sleeps, oin=OIN_B)
    with pytest.raises(NotFound) as caught:
        other.status(accepted.notificatie_id)
    assert caught.value.problem.slug == "niet-gevonden"
    with pytest.raises(NotFound):
        other.cancel(accepted.notificatie_id)
    assert sleeps == []  # a 404 is an answer, not a reason to retry


def test_find_by_dvref(nmc, client, sleeps):
    body = decentraal()
    accepted = nmc.submit("decentraal", body)
    found = list(nmc.find(body["dvRef"], limiet=1))
    assert [n["notificatieId"] for n in found] == [accepted.notificatie_id]
    assert found[0]["status"] == "aangenomen" and "pogingen" not in found[0]
    assert list(nmc.find("zaak-die-niet-bestaat")) == []
    assert list(client_for(client, sleeps, oin=OIN_B).find(body["dvRef"])) == []


def test_cancel_only_while_aangenomen_and_again_is_done(nmc, conn):
    first = nmc.submit("decentraal", decentraal())
    nmc.cancel(first.notificatie_id)
    assert nmc.status(first.notificatie_id).status == "geannuleerd"
    nmc.cancel(first.notificatie_id)  # a repeat (after a lost answer) meets its own success
    second = nmc.submit("decentraal", decentraal())
    transition(conn, second.notificatie_id, "in-verzending")
    with pytest.raises(Conflict) as caught:
        nmc.cancel(second.notificatie_id)
    assert caught.value.problem.members["notificatieStatus"] == "in-verzending"
    with pytest.raises(NotFound):
        nmc.cancel(str(uuid.uuid4()))


# --------------------------------------------------------------------------------------------
# The feed reader


def test_the_reader_hands_every_change_then_commits_and_acknowledges(nmc, conn):
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(3)]
    changes: list[StatusChange] = []
    store = MemoryCursorStore()
    reader = FeedReader(nmc, changes.append, store, limiet=2)
    poll_until(reader, lambda: len(changes) >= 3)
    assert sorted(c.notificatie_id for c in changes) == sorted(ids)
    assert {(c.status, c.versie, c.van, c.from_snapshot) for c in changes} == {
        ("aangenomen", 1, None, False)
    }
    assert store.versions() == dict.fromkeys(ids, 1)
    assert store.cursor() is not None
    assert covers(conn, [c.event["id"] for c in changes])
    position = acknowledged(conn)

    transition(conn, ids[0], "in-verzending")
    poll_until(reader, lambda: len(changes) >= 4)
    moved = changes[3]
    assert (moved.notificatie_id, moved.van, moved.status, moved.versie) == (
        ids[0], "aangenomen", "in-verzending", 2,
    )  # fmt: skip
    assert covers(conn, [moved.event["id"]])  # the acknowledgement moved on
    assert acknowledged(conn)[1:3] != position[1:3]
    assert store.version(ids[0]) == 2


def test_a_failing_handler_leaves_the_page_unacknowledged(nmc, client, conn):
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(2)]
    read_until(client, 2)  # both events are below the watermark now

    def failing(change: StatusChange) -> None:
        raise RuntimeError("the DV's database is down")

    store = MemoryCursorStore()
    reader = FeedReader(nmc, failing, store)
    with pytest.raises(RuntimeError):
        reader.poll()
    assert (store.cursor(), store.versions(), acknowledged(conn)) == (None, {}, None)

    changes: list[StatusChange] = []
    reader.handler = changes.append
    poll_until(reader, lambda: len(changes) >= 2)
    assert sorted(c.notificatie_id for c in changes) == sorted(ids)
    assert acknowledged(conn) is not None


def test_what_the_store_holds_is_not_handed_again(nmc, conn):
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(2)]
    transition(conn, ids[0], "in-verzending")
    first: list[StatusChange] = []
    store = MemoryCursorStore()
    poll_until(FeedReader(nmc, first.append, store), lambda: len(first) >= 3)

    # From the oldest event again (all three are below the watermark now), holding the
    # versions: every event is at or below them, so the handler gets none.
    again: list[StatusChange] = []
    reader = FeedReader(nmc, again.append, MemoryCursorStore(versions=store.versions()))
    result = reader.poll()
    assert (result.events, result.handled, result.skipped) == (3, 0, 3)
    assert again == []


@pytest.mark.parametrize("expiry", ["epoch raise", "max cursor age"])
def test_an_expired_cursor_restarts_from_the_snapshot(nmc, conn, expiry):
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(3)]
    changes: list[StatusChange] = []
    store = MemoryCursorStore()
    reader = FeedReader(nmc, changes.append, store, snapshot_limiet=2)
    poll_until(reader, lambda: len(changes) >= 3)
    expired = store.cursor()
    if expiry == "epoch raise":
        conn.execute("SELECT nmc.raise_epoch()")
    else:
        conn.execute("SELECT nmc.advance_clock('31 days')")  # maxCursorleeftijd is 30 days
    # While the reader was away one notification moved on and one came in.
    transition(conn, ids[0], "in-verzending")
    newcomer = nmc.submit("decentraal", decentraal()).notificatie_id
    changes.clear()

    result = reader.poll()
    assert result.restarted and result.handled == 2
    assert {(c.notificatie_id, c.status, c.versie, c.from_snapshot) for c in changes} == {
        (ids[0], "in-verzending", 2, True),
        (newcomer, "aangenomen", 1, True),
    }
    assert store.cursor() != expired
    epoch, _, _, _ = acknowledged(conn)
    assert epoch == conn.execute("SELECT epoch FROM nmc.cluster_epoch").fetchone()[0]

    # Deltas continue from the snapshot's cursor; what the snapshot showed is not repeated.
    transition(conn, newcomer, "in-verzending")
    poll_until(reader, lambda: changes[-1].versie == 2 and changes[-1].notificatie_id == newcomer)
    assert not changes[-1].from_snapshot
    seen = [(c.notificatie_id, c.versie) for c in changes]
    assert len(seen) == len(set(seen)) == 3

    # A consumer that holds nothing gets every current status from the snapshot.
    fresh: list[StatusChange] = []
    FeedReader(nmc, fresh.append, MemoryCursorStore(cursor=expired), snapshot_limiet=2).poll()
    assert {(c.notificatie_id, c.status) for c in fresh} == {
        (ids[0], "in-verzending"),
        (ids[1], "aangenomen"),
        (ids[2], "aangenomen"),
        (newcomer, "in-verzending"),
    }


def test_a_file_store_survives_a_restart_of_the_consumer(nmc, conn, tmp_path):
    path = tmp_path / "consumer" / "feed.json"
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(2)]
    changes: list[StatusChange] = []
    poll_until(FeedReader(nmc, changes.append, FileCursorStore(path)), lambda: len(changes) >= 2)
    saved = json.loads(path.read_text())
    assert saved["versions"] == dict.fromkeys(ids, 1) and saved["cursor"]
    assert [p.name for p in path.parent.iterdir()] == ["feed.json"]  # no temporary file left

    transition(conn, ids[1], "in-verzending")
    later: list[StatusChange] = []
    reopened = FeedReader(nmc, later.append, FileCursorStore(path))
    poll_until(reopened, lambda: len(later) >= 1)
    assert [(c.notificatie_id, c.versie) for c in later] == [(ids[1], 2)]


# --------------------------------------------------------------------------------------------
# Webhook: the NMC's own signing code makes the tokens


@pytest.fixture
def ring(api_env):
    return load_signing_ring(api_env.secrets / "webhook-signing.json")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def jwks_clock() -> Clock:
    return Clock()


@pytest.fixture
def verifier(nmc, client, jwks_clock) -> WebhookVerifier:
    jwks = JwksCache(nmc.jwks_url, http=client, clock=jwks_clock)
    return WebhookVerifier(jwks, audience=HOOK, issuer=issuer())


def webhook_call(authorization: str, events: list, cursor: str = "AYAB-cursor_1") -> tuple:
    headers = {
        "Authorization": authorization,
        "Content-Type": BATCH_TYPE,
        "Nmc-Cursor": cursor,
    }
    return headers, json.dumps(events).encode()


def test_a_webhook_call_signed_by_the_nmc_is_accepted(ring, verifier, nmc, client, conn):
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(2)]
    events, cursor = read_until(client, 2)  # the events a webhook call would carry
    token = ring.sign(HOOK, issuer=issuer())
    batch = verifier.receive(*webhook_call(f"Bearer {token}", events, cursor))
    assert batch.claims["aud"] == HOOK and batch.claims["iss"] == issuer()
    assert (batch.events, batch.cursor) == (events, cursor)

    # The batch goes through the reader like a feed page; its Nmc-Cursor is acknowledged.
    changes: list[StatusChange] = []
    store = MemoryCursorStore()
    result = FeedReader(nmc, changes.append, store).handle_batch(batch.events, batch.cursor)
    assert result.handled == 2 and sorted(c.notificatie_id for c in changes) == sorted(ids)
    assert store.cursor() == cursor
    assert covers(conn, [e["id"] for e in events])

    with pytest.raises(WebhookRejected, match="used before"):
        verifier.verify(f"Bearer {token}")  # the same jti again


def page_of_events(conn, dv_id: int, count: int, within: float = 20.0) -> dict:
    """A page of nmc.page_events from the oldest event, once it holds `count` events."""
    deadline = time.monotonic() + within
    while True:
        [(page,)] = conn.execute(
            "SELECT nmc.page_events(%s, NULL, NULL, NULL, NULL, 100)", (dv_id,)
        ).fetchall()
        if len(page["events"]) >= count or time.monotonic() > deadline:
            return page
        time.sleep(0.02)


def test_the_nmcs_own_webhook_call_is_verified_and_applied(nmc, client, conn, dvs, ring):
    """The worker's webhook adapter makes the call; a DV endpoint built from the client
    verifies it, applies the batch and acknowledges its Nmc-Cursor."""
    ids = [nmc.submit("decentraal", decentraal()).notificatie_id for _ in range(2)]
    page = page_of_events(conn, dvs["A"], 2)
    changes: list[StatusChange] = []
    reader = FeedReader(nmc, changes.append, MemoryCursorStore())
    verifier = WebhookVerifier(JwksCache(nmc.jwks_url, http=client), audience=HOOK, issuer=issuer())

    async def hook(request: Request) -> Response:
        try:
            batch = verifier.receive(request.headers, await request.body())
        except WebhookRejected as rejected:
            return Response(status_code=rejected.status)
        reader.handle_batch(batch.events, batch.cursor)
        return Response(status_code=204)

    receiver = Starlette(routes=[Route("/nmc-webhook", hook, methods=["POST"])])

    async def public_resolver(host: str, port: int) -> list[str]:
        return ["145.21.10.1"]  # dv.example, as DNS would answer it

    async def deliver():
        transport = httpx.ASGITransport(app=receiver)
        async with httpx.AsyncClient(transport=transport) as http:
            webhook = WebhookClient(
                http,
                ring,
                issuer=issuer(),
                source=event_source(),
                cursors=CursorCodec(load_peppers()),
                beleid=Adresbeleid(),
                resolver=public_resolver,
            )
            target = await webhook.target(HOOK)
            return await webhook.deliver(target, webhook.batch(dvs["A"], page))

    assert asyncio.run(deliver()).uitkomst == "geleverd"
    assert sorted(c.notificatie_id for c in changes) == sorted(ids)
    assert covers(conn, [event["eventId"] for event in page["events"]])


@pytest.mark.parametrize("alg", ["ES256", "RS256"])
def test_both_algorithms_verify(api_env, dvs, alg):
    ring_document = new_signing_ring("nmc-" + alg.lower(), alg)
    (api_env.secrets / "webhook-signing.json").write_text(json.dumps(ring_document))
    with TestClient(create_app(), raise_server_exceptions=False) as app_client:
        jwks = JwksCache(f"{API}/.well-known/jwks.json", http=app_client)
        verifier = WebhookVerifier(jwks, audience=HOOK, issuer=issuer())
        token = parse_signing_ring(ring_document).sign(HOOK, issuer=issuer())
        assert verifier.verify(f"Bearer {token}")["aud"] == HOOK


def test_webhook_tokens_that_must_be_refused(ring, verifier):
    key = ring.keys[ring.active_id]
    kid = {"kid": ring.active_id}
    now = int(time.time())
    claims = {"iss": issuer(), "aud": HOOK, "iat": now, "exp": now + 60, "jti": "j"}
    impostor = parse_signing_ring(new_signing_ring("other")).keys["other"].private_key
    refused = [
        ("another webhook (aud)", ring.sign("https://elders.example/hook", issuer=issuer())),
        ("not from this NMC (iss)", ring.sign(HOOK, issuer="urn:nld:oin:1:systeem:nmc")),
        ("has expired", ring.sign(HOOK, issuer=issuer(), now=now - 1000)),
        ("algorithm not allowed", jwt.encode(claims, None, algorithm="none", headers=kid)),
        ("algorithm not allowed", jwt.encode(claims, "a-shared-secret-32-bytes-or-more!", "HS256")),
        (
            "lives longer",
            jwt.encode({**claims, "exp": now + 3600}, key.private_key, key.alg, headers=kid),
        ),
        (
            "required claim",
            jwt.encode({**claims, "jti": None}, key.private_key, key.alg, headers=kid),
        ),
        ("signature", jwt.encode(claims, impostor, algorithm="ES256", headers=kid)),
        ("no bearer token", ""),
    ]
    for reason, bad in refused:
        with pytest.raises(WebhookRejected, match=re.escape(reason)) as caught:
            verifier.verify(f"Bearer {bad}" if bad else None)
        assert caught.value.status == 401
        if bad:
            assert bad not in str(caught.value)


def test_an_unknown_kid_refetches_the_jwks_but_not_too_often(ring, verifier, jwks_clock):
    verifier.verify(f"Bearer {ring.sign(HOOK, issuer=issuer())}")
    assert verifier.jwks.fetches == 1
    stranger = parse_signing_ring(new_signing_ring("nobody-knows-me"))
    jwks_clock.now += 60
    with pytest.raises(WebhookRejected, match="unknown key"):
        verifier.verify(f"Bearer {stranger.sign(HOOK, issuer=issuer())}")
    assert verifier.jwks.fetches == 2  # looked again: it might have been a rotation
    jwks_clock.now += 1
    with pytest.raises(WebhookRejected, match="unknown key"):
        verifier.verify(f"Bearer {stranger.sign(HOOK, issuer=issuer())}")
    assert verifier.jwks.fetches == 2  # not again within min_refetch_interval


def test_a_rotated_key_is_found_by_refetching(api_env, dvs, ring, sleeps):
    """The NMC publishes a new key (restart with a bigger ring), then signs with it."""
    path = api_env.secrets / "webhook-signing.json"
    clock = Clock()
    with TestClient(create_app(), raise_server_exceptions=False) as before:
        relay = Relay(before)
        jwks = JwksCache(f"{API}/.well-known/jwks.json", http=httpx.Client(transport=relay))
        jwks.clock = clock
        verifier = WebhookVerifier(jwks, audience=HOOK, issuer=issuer())
        verifier.verify(f"Bearer {ring.sign(HOOK, issuer=issuer())}")
    document = json.loads(path.read_text())
    document["keys"].update(new_signing_ring("nmc-test-2", "RS256")["keys"])
    document["active"] = "nmc-test-2"
    path.write_text(json.dumps(document))
    with TestClient(create_app(), raise_server_exceptions=False) as after:
        relay.target = after
        clock.now += 31
        rotated = parse_signing_ring(document).sign(HOOK, issuer=issuer())
        assert jwt.get_unverified_header(rotated)["kid"] == "nmc-test-2"
        assert verifier.verify(f"Bearer {rotated}")["aud"] == HOOK
        assert jwks.fetches == 2


def test_the_batch_itself_is_checked(ring):
    event = to_cloudevent(
        {
            "eventId": 7,
            "notificatieId": str(uuid.uuid4()),
            "sequence": 1,
            "van": None,
            "naar": "aangenomen",
            "reden": None,
            "tijdstip": "2025-03-01T09:00:00+00:00",
        },
        issuer(),
    )
    body = json.dumps([event]).encode()
    assert parse_batch(BATCH_TYPE + "; charset=utf-8", "AYAB_x-1", body) == ([event], "AYAB_x-1")
    cases = [
        ("application/json", "AYAB", body, 415),
        (BATCH_TYPE, None, body, 400),
        (BATCH_TYPE, "not a cursor!", body, 400),
        (BATCH_TYPE, "AYAB", b"{not json", 400),
        (BATCH_TYPE, "AYAB", json.dumps(event).encode(), 400),  # not an array
        (BATCH_TYPE, "AYAB", json.dumps([{**event, "sequence": "0"}]).encode(), 400),
        (BATCH_TYPE, "AYAB", json.dumps([{**event, "data": None}]).encode(), 400),
    ]
    for content_type, cursor, payload, status in cases:
        with pytest.raises(WebhookRejected) as caught:
            parse_batch(content_type, cursor, payload)
        assert caught.value.status == status, (content_type, cursor, payload)


# --------------------------------------------------------------------------------------------
# Unit level: the reader with hand-made pages, the problem parsing


def cloudevent(subject: str, versie: int, naar: str, event_id: int) -> dict:
    return to_cloudevent(
        {
            "eventId": event_id,
            "notificatieId": subject,
            "sequence": versie,
            "van": None,
            "naar": naar,
            "reden": None,
            "tijdstip": "2025-03-01T09:00:00+00:00",
        },
        "urn:nld:oin:00000001234567890000:systeem:nmc",
    )


class FakeFeed:
    """Serves queued feed pages over httpx.MockTransport and records every request."""

    def __init__(self, pages: list[list[dict]]):
        self.pages = pages
        self.requests: list[tuple[str, str, dict]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append((request.method, request.url.path, body))
        if request.method == "PUT":
            return httpx.Response(204, headers={"Nmc-Bevestiging": "bevestigd"})
        events = self.pages.pop(0) if self.pages else []
        return httpx.Response(200, json={"events": events, "cursor": f"c{len(self.requests)}"})


def fake_client(feed: FakeFeed) -> NmcClient:
    return NmcClient(API, lambda: "t", http=httpx.Client(transport=httpx.MockTransport(feed)))


def test_the_sequence_rule_with_a_reordered_page(tmp_path):
    s, t = str(uuid.uuid4()), str(uuid.uuid4())
    feed = FakeFeed(
        [
            [
                cloudevent(s, 3, "verzonden", 12),
                cloudevent(s, 1, "aangenomen", 10),
                cloudevent(t, 1, "aangenomen", 13),
                cloudevent(s, 2, "in-verzending", 11),
            ],
            [cloudevent(s, 2, "in-verzending", 11), cloudevent(s, 4, "bezorgd", 14)],
        ]
    )
    handed: list[tuple[str, int]] = []
    path = tmp_path / "feed.json"
    reader = FeedReader(fake_client(feed), lambda c: handed.append((c.notificatie_id, c.versie)))
    reader.store = FileCursorStore(path)
    first = reader.poll()
    assert handed == [(s, 3), (t, 1)]
    assert (first.events, first.handled, first.skipped) == (4, 2, 2)
    assert feed.requests[-1] == (
        "PUT",
        f"{BASE}/notificaties/wijzigingen/bevestiging",
        {"cursor": "c1"},
    )

    # A consumer restarted on the file store remembers version 3: the late 2 is ignored.
    reader = FeedReader(reader.client, reader.handler, FileCursorStore(path))
    second = reader.poll()
    assert handed[2:] == [(s, 4)]
    assert (second.handled, second.skipped) == (1, 1)
    assert json.loads(path.read_text()) == {"cursor": "c3", "versions": {s: 4, t: 1}}


def test_an_empty_page_is_not_acknowledged():
    feed = FakeFeed([[]])
    reader = FeedReader(fake_client(feed), lambda c: None)
    assert reader.poll().events == 0
    assert [method for method, _, _ in feed.requests] == ["GET"]
    assert reader.store.cursor() == "c1"  # the first cursor is kept, to start from there


def test_find_follows_the_pages():
    pages = {None: (["a", "b"], "p2"), "p2": (["c"], None)}

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.params["dvRef"] == "zaak-1"
        names, cursor = pages[request.url.params.get("cursor")]
        found = [{"notificatieId": name} for name in names]
        return httpx.Response(200, json={"notificaties": found, "cursor": cursor})

    client = NmcClient(API, lambda: "t", http=httpx.Client(transport=httpx.MockTransport(answer)))
    assert [n["notificatieId"] for n in client.find("zaak-1")] == ["a", "b", "c"]


def test_problems_of_any_shape_become_typed_errors():
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/gateway"):
            return httpx.Response(502, text="<html>bad gateway</html>")
        return httpx.Response(
            410,
            json={"type": "https://x/problemen/cursor-vervallen", "title": "t", "status": 410,
                  "detail": "De cursor is vervallen."},
            headers={"content-type": "application/problem+json"},
        )  # fmt: skip

    slept: list[float] = []
    client = NmcClient(
        API,
        lambda: "t",
        http=httpx.Client(transport=httpx.MockTransport(answer)),
        retry=RetryPolicy(attempts=2, base_delay=0.25),
        sleep=slept.append,
    )
    with pytest.raises(ServerError) as caught:
        client.transport.call("GET", "/gateway", ok=(200,))
    assert caught.value.problem.slug is None and caught.value.problem.title == "Bad Gateway"
    assert len(slept) == 1 and 0 <= slept[0] <= 0.25
    with pytest.raises(CursorExpired) as expired:
        client.read_changes("c")
    assert expired.value.problem.slug == "cursor-vervallen"
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("12") == 12.0 and retry_after_seconds("soon") is None


def test_the_client_has_no_server_imports():
    """A DV may vendor nmc_client: it may use httpx, PyJWT and the standard library only."""
    allowed = {"httpx", "jwt"}
    client_dir = Path(__import__("nmc_client").__file__).parent
    for source in client_dir.glob("*.py"):
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            foreign = {r for r in roots if r not in allowed and r not in sys.stdlib_module_names}
            assert not foreign, f"{source.name} imports {foreign}"
