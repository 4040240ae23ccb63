"""The feed as Server-Sent Events: frames, keep-alives, resume by Last-Event-ID, 410 on connect,
events arriving during the stream, the stream limit, and a disconnect that frees the slot.

Streams are short here (NMC_API_SSE_MAX_SECONDS): TestClient returns a response once it ends.
One test runs a real uvicorn server to read a stream while it is open and hang up on it.
"""

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import psycopg
import pytest
import uvicorn
from apitest import OIN_A, OIN_B, auth
from feedtest import FEED, intake, read_until, tamper, transition
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.feed.cloudevents import ATTRIBUTES, TYPE_PREFIX

SSE = {"Accept": "text/event-stream"}


@pytest.fixture
def sse_env(api_env, monkeypatch):
    monkeypatch.setenv("NMC_API_SSE_POLL_SECONDS", "0.05")
    monkeypatch.setenv("NMC_API_SSE_KEEPALIVE_SECONDS", "0.2")
    monkeypatch.setenv("NMC_API_SSE_MAX_SECONDS", "1.0")
    return api_env


@pytest.fixture
def sse_client(sse_env, dvs) -> Iterator[TestClient]:
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        yield client


def frames(text: str) -> list[dict[str, list[str]]]:
    """Parse an event stream into frames of {field: [values]} (comments under "")."""
    parsed = []
    for block in text.split("\n\n"):
        if not block:
            continue
        frame: dict[str, list[str]] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            frame.setdefault(name, []).append(value.removeprefix(" "))
        parsed.append(frame)
    return parsed


def stream(client: TestClient, **headers: str) -> tuple[httpx.Response, list[dict]]:
    response = client.get(FEED, headers={**auth(), **SSE, **headers})
    return response, frames(response.text) if response.status_code == 200 else []


def events_of(parsed: list[dict]) -> list[tuple[str, dict]]:
    return [(f["id"][0], json.loads(f["data"][0])) for f in parsed if "data" in f]


def test_a_stream_carries_cloudevents_with_cursor_ids_and_keepalives(sse_client):
    ids = intake(sse_client, 3)
    read_until(sse_client, 3)  # all three below the watermark
    response, parsed = stream(sse_client)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-store"
    assert parsed[0] == {"retry": ["2000"]}
    events = events_of(parsed)
    assert [e["subject"] for _, e in events] == ids
    for cursor, event in events:
        assert set(event) == set(ATTRIBUTES)
        assert event["type"] == TYPE_PREFIX + "aangenomen"
        assert len(cursor) > 20
    assert all("event" not in f for f in parsed), "plain message frames, no event: field"
    assert any(f.get("") == ["keep-alive"] for f in parsed), "a keep-alive within the stream"


def test_resume_by_last_event_id(sse_client):
    ids = intake(sse_client, 3)
    read_until(sse_client, 3)
    _, parsed = stream(sse_client)
    [(_, _), (second, _), (_, _)] = events_of(parsed)
    _, resumed = stream(sse_client, **{"Last-Event-ID": second})
    assert [e["subject"] for _, e in events_of(resumed)] == ids[2:]
    # Last-Event-ID wins over the cursor in the URL (EventSource keeps its URL on reconnect).
    response = sse_client.get(
        FEED, params={"cursor": "A" * 40}, headers={**auth(), **SSE, "Last-Event-ID": second}
    )
    assert [e["subject"] for _, e in events_of(frames(response.text))] == ids[2:]


def test_a_stream_sees_events_that_commit_while_it_is_open(sse_client, db_url):
    [notificatie_id] = intake(sse_client)
    read_until(sse_client, 1)

    def later():
        time.sleep(0.3)
        with psycopg.connect(db_url, autocommit=True) as conn:
            transition(conn, notificatie_id, "in-verzending")

    writer = threading.Thread(target=later)
    writer.start()
    _, parsed = stream(sse_client)
    writer.join()
    types = [e["type"] for _, e in events_of(parsed)]
    assert types == [TYPE_PREFIX + "aangenomen", TYPE_PREFIX + "in-verzending"]


def test_an_expired_last_event_id_is_410_before_the_stream(sse_client, conn):
    intake(sse_client)
    read_until(sse_client, 1)
    _, parsed = stream(sse_client)
    [(cursor, _)] = events_of(parsed)
    conn.execute("SELECT nmc.raise_epoch()")
    response, _ = stream(sse_client, **{"Last-Event-ID": cursor})
    assert response.status_code == 410
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/cursor-vervallen")


def test_a_tampered_last_event_id_is_400(sse_client):
    intake(sse_client)
    read_until(sse_client, 1)
    _, parsed = stream(sse_client)
    [(cursor, _)] = events_of(parsed)
    for bad in (tamper(cursor), "niet geldig"):
        response, _ = stream(sse_client, **{"Last-Event-ID": bad})
        assert response.status_code == 400
        assert response.json()["violations"] == [
            {"field": "Last-Event-ID", "in": "header", "message": "is geen geldige cursor"}
        ]


def test_beyond_the_stream_limit_is_503(sse_env, dvs, monkeypatch):
    monkeypatch.setenv("NMC_API_SSE_MAX_STREAMS", "0")
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        response, _ = stream(client)
        assert response.status_code == 503
        assert response.headers["retry-after"]
        assert client.get(FEED, headers=auth()).status_code == 200  # polling still works


def test_a_json_accept_is_the_page(sse_client):
    response = sse_client.get(
        FEED, headers={**auth(), "Accept": "application/json, text/event-stream;q=0"}
    )
    assert response.headers["content-type"] == "application/json"


# --------------------------------------------------------------------------------------------
# A real server: the stream is open while we read it, and hanging up frees its slot.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def live_server(sse_env, dvs, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("NMC_API_SSE_MAX_SECONDS", "30")
    port = _free_port()
    config = uvicorn.Config(
        create_app(), host="127.0.0.1", port=port, lifespan="on", log_config=None
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _open_streams(base: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    [line] = [line for line in text.splitlines() if line.startswith("nmc_sse_streams_open ")]
    return float(line.split()[1])


def test_an_open_stream_delivers_at_once_and_a_hang_up_frees_it(live_server):
    with httpx.Client(base_url=live_server, timeout=10) as http:
        response = http.post(
            "/api/nmc/v1/decentraal/notificaties",
            json={"dvRef": "live-1", "berichtType": "aanslag", "emailAdres": "a@voorbeeld.nl"},
            headers=auth(OIN_A),
        )
        assert response.status_code == 202
        notificatie_id = response.json()["notificatieId"]
        started = time.monotonic()
        with http.stream("GET", FEED, headers={**auth(), **SSE}) as sse:
            assert sse.status_code == 200
            chunks = sse.iter_text()
            seen = ""
            while notificatie_id not in seen:
                seen += next(chunks)
            assert time.monotonic() - started < 25, "the event came while the stream was open"
            assert _open_streams(live_server) == 1
    deadline = time.monotonic() + 10
    while _open_streams(live_server) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_streams(live_server) == 0


@pytest.fixture
def capped_server(sse_env, dvs, monkeypatch) -> Iterator[str]:
    """A live server with room for three streams, two of them per DV."""
    monkeypatch.setenv("NMC_API_SSE_MAX_STREAMS", "3")
    monkeypatch.setenv("NMC_API_SSE_MAX_STREAMS_PER_DV", "2")
    monkeypatch.setenv("NMC_API_SSE_MAX_SECONDS", "30")
    port = _free_port()
    config = uvicorn.Config(
        create_app(), host="127.0.0.1", port=port, lifespan="on", log_config=None
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_one_dv_cannot_take_every_stream_slot(capped_server):
    with httpx.Client(base_url=capped_server, timeout=10) as http, ExitStack() as held:
        for _ in range(2):
            sse = held.enter_context(http.stream("GET", FEED, headers={**auth(OIN_A), **SSE}))
            assert sse.status_code == 200
        third = http.get(FEED, headers={**auth(OIN_A), **SSE})
        assert third.status_code == 429, third.text
        assert third.headers["content-type"] == "application/problem+json"
        assert third.json()["type"].endswith("/aanroeplimiet-overschreden")
        assert int(third.headers["retry-after"]) >= 1
        # Another DV still gets its stream.
        other = held.enter_context(http.stream("GET", FEED, headers={**auth(OIN_B), **SSE}))
        assert other.status_code == 200
        assert _open_streams(capped_server) == 3
        # The process is full now: the process cap answers, as before.
        assert http.get(FEED, headers={**auth(OIN_B), **SSE}).status_code == 503
