"""GET /notificaties/_snapshot, and a copy rebuilt from snapshot + deltas equals the source."""

import time
import uuid

import pytest
from apitest import OIN_A, OIN_B, auth
from feedtest import ACK, FEED, SNAPSHOT, intake, page, read_until, tamper, transition

PATH = [
    ("in-verzending", None),
    ("verzonden", None),
    ("bezorgd", None),
    ("definitief-bezorgd", None),
]


def snapshot_page(client, na=None, limiet=None, oin=OIN_A):
    params = {k: v for k, v in {"na": na, "limiet": limiet}.items() if v is not None}
    response = client.get(SNAPSHOT, params=params, headers=auth(oin))
    assert response.status_code == 200, response.text
    return response.json()


def advance(conn, notificatie_id, steps):
    """Move a notification `steps` further along aangenomen -> ... -> definitief-bezorgd."""
    [(status,)] = conn.execute(
        "SELECT status::text FROM nmc.notificatie WHERE id = %s", (notificatie_id,)
    ).fetchall()
    start = [s for s, _ in PATH].index(status) + 1 if status != "aangenomen" else 0
    for naar, reden in PATH[start : start + steps]:
        transition(conn, notificatie_id, naar, reden)


def source_of(conn, dv_id):
    rows = conn.execute(
        "SELECT n.id::text, nmc.get_notificatie(%s, n.id) FROM nmc.notificatie AS n"
        " WHERE n.dv_id = %s",
        (dv_id, dv_id),
    ).fetchall()
    return {i: (n["status"], n["reden"], n["versie"]) for i, n in rows}


def apply(copy, notificatie_id, status, reden, versie):
    """The DV's rule: per subject, only a higher sequence replaces what it holds."""
    held = copy.get(notificatie_id)
    if held is None or versie > held[2]:
        copy[notificatie_id] = (status, reden, versie)


def test_snapshot_plus_deltas_rebuilds_the_source(client, conn, dvs):
    ids = intake(client, 12)
    intake(client, 2, oin=OIN_B)
    for steps, notificatie_id in zip((4, 3, 2, 1, 1), ids, strict=False):
        advance(conn, notificatie_id, steps)
    transition(conn, ids[5], "geannuleerd", "geannuleerd")

    # The snapshot in pages of 5, with changes while it is being read.
    copy: dict[str, tuple] = {}
    first = snapshot_page(client, limiet=5)
    pages = [first]
    advance(conn, ids[3], 1)
    late = intake(client, 3)  # ids sort anywhere: some fall behind the pages already read
    while pages[-1]["volgende"]:
        pages.append(snapshot_page(client, na=pages[-1]["volgende"], limiet=5))
        advance(conn, ids[4], 1)
    assert len(pages) >= 3
    assert {p["cursor"] for p in pages} == {first["cursor"]}, "every page: the first position"
    assert pages[-1]["volgende"] is None
    for snapshot in pages:
        assert len(snapshot["notificaties"]) <= 5
        for n in snapshot["notificaties"]:
            assert set(n) == {"notificatieId", "status", "reden", "versie", "bijgewerktOp"}
            apply(copy, n["notificatieId"], n["status"], n["reden"], n["versie"])
    assert set(copy) <= set(ids) | set(late)

    # More changes after the snapshot; then the deltas from its cursor.
    advance(conn, ids[1], 1)
    advance(conn, ids[6], 2)
    intake(client, 1)
    expected = source_of(conn, dvs["A"])
    cursor = first["cursor"]
    deadline = time.monotonic() + 20
    while copy != expected and time.monotonic() < deadline:
        result = page(client, cursor, limiet=4)
        for event in result["events"]:
            data = event["data"]
            apply(copy, event["subject"], data["naar"], data["reden"], int(event["sequence"]))
        cursor = result["cursor"]
        if not result["events"]:
            time.sleep(0.02)
    assert copy == expected


def test_snapshot_pages_cover_every_notification_once(client):
    ids = intake(client, 7)
    seen = []
    result = snapshot_page(client, limiet=3)
    seen += result["notificaties"]
    while result["volgende"]:
        result = snapshot_page(client, na=result["volgende"], limiet=3)
        seen += result["notificaties"]
    assert sorted(n["notificatieId"] for n in seen) == sorted(ids)
    assert [n["notificatieId"] for n in seen] == sorted(
        (n["notificatieId"] for n in seen), key=uuid.UUID
    )
    assert all(n["status"] == "aangenomen" and n["versie"] == 1 for n in seen)


def test_an_empty_snapshot_still_gives_a_cursor(client):
    result = snapshot_page(client)
    assert result["notificaties"] == [] and result["volgende"] is None
    assert page(client, result["cursor"])["events"] == []


def test_the_snapshot_cursor_is_a_feed_cursor(client):
    ids = intake(client, 2)
    read_until(client, 2)  # both visible
    result = snapshot_page(client)
    assert {n["notificatieId"] for n in result["notificaties"]} == set(ids)
    ack = client.put(ACK, json={"cursor": result["cursor"]}, headers=auth())
    assert ack.status_code == 204


@pytest.mark.parametrize("kind", ["tampered", "other-dv", "feed-cursor", "limiet"])
def test_bad_snapshot_tokens_are_400(client, kind):
    intake(client, 3)
    intake(client, 2, oin=OIN_B)
    token = snapshot_page(client, limiet=1)["volgende"]
    params = {
        "tampered": {"na": tamper(token)},
        "other-dv": {"na": snapshot_page(client, limiet=1, oin=OIN_B)["volgende"]},
        "feed-cursor": {"na": page(client)["cursor"]},
        "limiet": {"limiet": "5001"},
    }[kind]
    response = client.get(SNAPSHOT, params=params, headers=auth())
    assert response.status_code == 400, response.text
    assert response.json()["violations"][0]["in"] == "query"


def test_a_snapshot_page_is_logged_in_the_ldv(client, tmp_path):
    ids = intake(client, 2)
    snapshot_page(client)
    records = (tmp_path / "ldv.jsonl").read_text()
    assert "feed.snapshot" in records and all(i in records for i in ids)


def test_the_snapshot_counts_against_the_feed_call_rate(client, apply_dv):
    apply_dv(OIN_A, feedAanroepenPerMinuut=3)
    intake(client, 2)
    for _ in range(3):
        snapshot_page(client, limiet=1)
    refused = client.get(SNAPSHOT, headers=auth())
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["type"].endswith("/aanroeplimiet-overschreden")
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    # One rate for the snapshot and the feed; another DV has its own.
    assert client.get(FEED, headers=auth()).status_code == 429
    snapshot_page(client, oin=OIN_B)
