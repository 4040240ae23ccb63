"""Unit tests of nmc.api.sse.FeedStream with fake pages: full pages, the call rate, expiry,
the LDV refusal, keep-alives carrying a moved position, and the stream limit."""

import asyncio
import json
from datetime import UTC, datetime

import psycopg
import pytest

from nmc.api.problems import Problem
from nmc.api.settings import SseSettings
from nmc.api.sse import FeedStream, StreamSlots
from nmc.crypto.peppers import new_peppers, parse_peppers
from nmc.feed.feed_cursor import CursorCodec, Position

NOW = "2025-03-01T09:00:00+00:00"
CODEC = CursorCodec(parse_peppers(new_peppers()))


def db_error(sqlstate: str, detail: str | None = None) -> psycopg.Error:
    class Refusal(psycopg.Error):
        @property
        def diag(self):
            return type("Diag", (), {"message_detail": detail})()

    Refusal.sqlstate = sqlstate
    return Refusal("refused")


def event(event_id: int, xid: int = 100) -> dict:
    return {
        "eventId": event_id, "notificatieId": f"00000000-0000-4000-8000-{event_id:012d}",
        "sequence": 1, "van": None, "naar": "aangenomen", "reden": None, "tijdstip": NOW,
        "xid": str(xid),
    }  # fmt: skip


def page(events: list[dict], xid: int, event_id: int) -> dict:
    return {"events": events, "epoch": 1, "xid": str(xid), "eventId": event_id, "uitgegevenOp": NOW}


async def collect(stream: FeedStream, first: dict, start=None) -> list[str]:
    return [chunk.decode() async for chunk in stream.frames(first, start)]


def make(answers: list, *, recorded: list | None = None, refuse_ldv: bool = False, **settings):
    calls: list = []

    async def read(position):
        calls.append(position)
        answer = answers.pop(0) if answers else page([], 200, 0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def record(events):
        if refuse_ldv:
            raise Problem(None, "ldv weg", status=503)
        if recorded is not None:
            recorded.append([e["eventId"] for e in events])

    defaults = {"poll_seconds": 0.01, "keepalive_seconds": 10.0, "max_seconds": 0.5}
    stream = FeedStream(
        settings=SseSettings(**{**defaults, **settings}),
        codec=CODEC,
        dv_id=1,
        source="urn:test",
        read_page=read,
        record_page=record,
    )
    return stream, calls


def data_ids(chunks: list[str]) -> list[str]:
    text = "".join(chunks)
    return [
        json.loads(line.removeprefix("data: "))["id"]
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def test_full_pages_are_followed_at_once_and_the_stream_ends_on_expiry():
    recorded: list = []
    first = page([event(1), event(2)], 100, 2)  # full: the position is its last event
    answers = [page([event(3)], 150, 0), db_error("NM018")]
    stream, calls = make(answers, recorded=recorded, max_seconds=5.0)
    chunks = asyncio.run(collect(stream, first))
    assert data_ids(chunks) == ["1", "2", "3"]
    assert recorded == [[1, 2], [3]]
    assert (calls[0].xid, calls[0].event_id) == (100, 2)
    assert (calls[1].xid, calls[1].event_id) == (150, 0)
    assert len(calls) == 2, "NM018 closed the stream"


def test_the_call_rate_makes_the_stream_wait_then_continue():
    answers = [db_error("NM019", "1"), page([event(4)], 160, 0)]
    stream, _ = make(answers, max_seconds=3.0, keepalive_seconds=0.3)
    chunks, elapsed = asyncio.run(_timed(stream, page([], 100, 0)))
    assert "4" in data_ids(chunks)
    assert elapsed >= 1.0, "waited the Retry-After"


async def _timed(stream, first):
    loop = asyncio.get_running_loop()
    begin = loop.time()
    chunks = []
    async for chunk in stream.frames(first, None):
        chunks.append(chunk.decode())
        if "data:" in chunk.decode():
            return chunks, loop.time() - begin
    return chunks, loop.time() - begin


def test_what_the_ldv_cannot_log_is_not_sent():
    stream, _ = make([], refuse_ldv=True)
    chunks = asyncio.run(collect(stream, page([event(1)], 100, 0)))
    assert chunks == ["retry: 2000\n\n"]


def test_keepalives_carry_the_position_only_when_it_moved():
    start = Position(1, 50, 0, datetime(2025, 3, 1, tzinfo=UTC))
    quiet = [page([], 100, 0) for _ in range(100)]  # the watermark stays at 100
    stream, _ = make(quiet, keepalive_seconds=0.05, max_seconds=0.3)
    chunks = asyncio.run(collect(stream, page([], 100, 0), start))
    keepalives = [c for c in chunks if c.startswith(": keep-alive")]
    assert len(keepalives) >= 2
    moved = CODEC.decode(1, keepalives[0].split("id: ")[1].strip())
    assert (moved.xid, moved.event_id) == (100, 0), "the first carries the moved position"
    assert all(k == ": keep-alive\n\n" for k in keepalives[1:]), "then nothing moved"


def test_a_database_failure_closes_the_stream():
    stream, calls = make([db_error("08006")], max_seconds=5.0)
    chunks = asyncio.run(collect(stream, page([], 100, 0)))
    assert chunks == ["retry: 2000\n\n"] and len(calls) == 1


def test_stream_slots():
    slots = StreamSlots(1)
    release = slots.acquire(1)
    with pytest.raises(Problem) as refused:
        slots.acquire(2)
    assert refused.value.status == 503
    release()
    release()  # idempotent
    assert slots.open == 0


def test_stream_slots_per_dv():
    slots = StreamSlots(3, per_dv_limit=2)
    first, second = slots.acquire(1), slots.acquire(1)
    with pytest.raises(Problem) as refused:
        slots.acquire(1)
    assert (refused.value.status, refused.value.slug) == (429, "aanroeplimiet-overschreden")
    assert refused.value.headers["Retry-After"] == "5"
    other = slots.acquire(2)  # another DV still has room
    assert (slots.open, slots.open_for(1), slots.open_for(2)) == (3, 2, 1)
    with pytest.raises(Problem) as full:
        slots.acquire(3)
    assert full.value.status == 503
    first()
    first()  # idempotent: the DV's count drops once
    assert (slots.open, slots.open_for(1)) == (2, 1)
    slots.acquire(1)
    second()
    other()
    assert (slots.open, slots.open_for(1), slots.open_for(2)) == (1, 1, 0)
