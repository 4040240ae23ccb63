"""Helpers of the feed tests: intake over the API, reading the feed with a bounded retry, admin SQL.

The feed only serves events below the cluster-wide visibility watermark: any open writer on the
test server (another test, autovacuum) holds a just-committed event back for a moment, so
reads poll until they have what they expect (as tests_py/test_feed_watermark.py does).
"""

import time
from typing import Any

import psycopg
from apitest import BASE, OIN_A, auth, decentraal
from starlette.testclient import TestClient

FEED = f"{BASE}/notificaties/wijzigingen"
SNAPSHOT = f"{BASE}/notificaties/_snapshot"
ACK = f"{BASE}/notificaties/wijzigingen/bevestiging"


def intake(client: TestClient, count: int = 1, oin: str = OIN_A) -> list[str]:
    ids = []
    for _ in range(count):
        response = client.post(
            f"{BASE}/decentraal/notificaties", json=decentraal(), headers=auth(oin)
        )
        assert response.status_code == 202, response.text
        ids.append(response.json()["notificatieId"])
    return ids


def page(
    client: TestClient, cursor: str | None = None, *, oin: str = OIN_A, **params: Any
) -> dict[str, Any]:
    query = {k: v for k, v in {"cursor": cursor, **params}.items() if v is not None}
    response = client.get(FEED, params=query, headers=auth(oin))
    assert response.status_code == 200, response.text
    return response.json()


def read_until(
    client: TestClient,
    count: int,
    cursor: str | None = None,
    *,
    oin: str = OIN_A,
    within: float = 20.0,
    **params: Any,
) -> tuple[list[dict[str, Any]], str]:
    """Pages from `cursor` until `count` events came (or the time is up); (events, cursor)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + within
    while True:
        result = page(client, cursor, oin=oin, **params)
        events += result["events"]
        cursor = result["cursor"]
        if len(events) >= count or time.monotonic() > deadline:
            return events, cursor
        if not result["events"]:
            time.sleep(0.02)


def transition(conn: psycopg.Connection, notificatie_id: str, naar: str, reden: str | None = None):
    """A status change through the single writer, as the pipeline would make it (admin)."""
    conn.execute(
        "SELECT nmc.transition_notificatie(%s::uuid, %s::nmc.notificatie_status, %s::nmc.reden)",
        (notificatie_id, naar, reden),
    )


def tamper(token: str) -> str:
    """The same token with one character in the middle changed."""
    middle = len(token) // 2
    replacement = "A" if token[middle] != "A" else "B"
    return token[:middle] + replacement + token[middle + 1 :]
