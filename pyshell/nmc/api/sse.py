"""The cursor feed as Server-Sent Events (GET /notificaties/wijzigingen, Accept text/event-stream).

The stream starts where `Last-Event-ID` (else `cursor`, else the oldest event) points. The
first page is read before the response starts, so a bad cursor (400), an expired one (410)
or the call rate (429) is an ordinary problem response. Then, per event:

    id: <cursor after this event>
    data: <the CloudEvent as JSON, one line>

There is no `event:` field: every frame is a plain `message` (EventSource.onmessage), and the
CloudEvent's `type` says what happened. A `: keep-alive` comment follows every
NMC_API_SSE_KEEPALIVE_SECONDS of silence; when the feed position moved without events (the
watermark went up), the comment carries an `id:` line so a reconnect starts from there. The
stream polls nmc.page_events every NMC_API_SSE_POLL_SECONDS (at once while pages come back
full), each poll one call under the DV's call rate; after a 429 it waits the Retry-After.

Bounded: at most NMC_API_SSE_MAX_STREAMS open streams per process (beyond: 503), of which at
most NMC_API_SSE_MAX_STREAMS_PER_DV for one DV (beyond: 429 aanroeplimiet-overschreden, so one
DV cannot take every slot), and each is closed after NMC_API_SSE_MAX_SECONDS; `retry:` tells
the client to come back after 2 s with Last-Event-ID. A cursor that expires during the
stream, an LDV or database failure, all close the stream (the reconnect then gets its answer
as a normal problem). Cancellation-safe: a disconnect cancels the generator at an await; no
connection is held between polls, and the stream slot is released by the response itself,
whatever ends it.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import psycopg
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from nmc import sqlstates
from nmc.api.problems import Problem, rate_limited, service_unavailable
from nmc.api.settings import SseSettings
from nmc.feed.cloudevents import to_cloudevent
from nmc.feed.feed_cursor import CursorCodec, Position

RETRY_MILLISECONDS = 2000
STREAM_RETRY_AFTER_SECONDS = 5
MAX_RETRY_AFTER_SECONDS = 60.0

PageReader = Callable[[Position | None], Any]  # async: position -> page of nmc.page_events
PageRecorder = Callable[[list[Mapping[str, Any]]], Any]  # async: write the LDV record


class StreamSlots:
    """How many streams this process has open, in all and per DV, against their limits."""

    def __init__(self, limit: int, per_dv_limit: int | None = None) -> None:
        self.limit = limit
        self.per_dv_limit = limit if per_dv_limit is None else per_dv_limit
        self.open = 0
        self._per_dv: dict[int, int] = {}

    def open_for(self, dv_id: int) -> int:
        return self._per_dv.get(dv_id, 0)

    def acquire(self, dv_id: int) -> Callable[[], None]:
        """Take a slot for the DV (or raise 429 / 503); returns the idempotent release."""
        if self.open_for(dv_id) >= self.per_dv_limit:
            # The DV's own streams fill its share: its doing, not the NMC's, hence 429.
            raise rate_limited(
                STREAM_RETRY_AFTER_SECONDS,
                "Deze dienstverlener heeft al het maximum aantal stromen open; sluit er een of "
                "probeer het later opnieuw.",
            )
        if self.open >= self.limit:
            raise service_unavailable(
                "Er staan te veel stromen open; probeer het later opnieuw of lees de feed "
                "met polling.",
                retry_after=STREAM_RETRY_AFTER_SECONDS,
            )
        self.open += 1
        self._per_dv[dv_id] = self.open_for(dv_id) + 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.open -= 1
                left = self._per_dv[dv_id] - 1
                if left:
                    self._per_dv[dv_id] = left
                else:
                    del self._per_dv[dv_id]

        return release


class EventStreamResponse(StreamingResponse):
    """A StreamingResponse that releases its slot however the response ends."""

    def __init__(self, frames: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        super().__init__(frames, media_type="text/event-stream")
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class FeedStream:
    """The frames of one DV's stream, from a first page already read."""

    def __init__(
        self,
        *,
        settings: SseSettings,
        codec: CursorCodec,
        dv_id: int,
        source: str,
        read_page: PageReader,
        record_page: PageRecorder,
    ) -> None:
        self.settings = settings
        self.codec = codec
        self.dv_id = dv_id
        self.source = source
        self.read_page = read_page
        self.record_page = record_page

    async def frames(
        self, first_page: Mapping[str, Any], start: Position | None
    ) -> AsyncIterator[bytes]:
        """The stream: `start` is the position the client came with (None: the oldest)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.max_seconds
        next_keepalive = loop.time() + self.settings.keepalive_seconds
        yield f"retry: {RETRY_MILLISECONDS}\n\n".encode("ascii")
        page: Mapping[str, Any] | None = first_page
        position = Position.from_page(first_page)
        announced = start  # the last position the client holds an id for
        retry_after = self.settings.poll_seconds
        while True:
            delay = self.settings.poll_seconds
            if page is None:
                delay = retry_after  # the call rate was exceeded
            elif page["events"]:
                events = list(page["events"])
                try:
                    await self.record_page(events)
                except Problem:
                    return  # what cannot be logged is not provided
                yield self._event_frames(position, events)
                announced = position.after_event(events[-1])
                next_keepalive = loop.time() + self.settings.keepalive_seconds
                if announced == position:
                    delay = 0.0  # a full page: more is waiting
            wake = loop.time() + delay
            while (now := loop.time()) < wake or now >= next_keepalive:
                if now >= deadline:
                    return
                if now >= next_keepalive:
                    yield self._keepalive(position, announced)
                    announced = position
                    next_keepalive = now + self.settings.keepalive_seconds
                    continue
                await asyncio.sleep(min(wake, next_keepalive, deadline) - now)
            if loop.time() >= deadline:
                return
            try:
                page = await self.read_page(position)
            except psycopg.Error as error:
                if error.sqlstate != sqlstates.FEED_RATE_EXCEEDED:
                    return  # expired (NM018) or the database is gone: the client reconnects
                page, retry_after = None, _retry_after(error)
            except Problem:
                return  # not a page (a 500 the client would get): end the stream
            else:
                position = Position.from_page(page)

    def _event_frames(self, position: Position, events: list[Mapping[str, Any]]) -> bytes:
        frames = []
        for event in events:
            cursor = self.codec.encode(self.dv_id, position.after_event(event))
            data = json.dumps(to_cloudevent(event, self.source), ensure_ascii=False)
            frames.append(f"id: {cursor}\ndata: {data}\n\n")
        return "".join(frames).encode("utf-8")

    def _keepalive(self, position: Position, announced: Position | None) -> bytes:
        frame = ": keep-alive\n"
        if announced is None or _place(position) != _place(announced):
            frame += f"id: {self.codec.encode(self.dv_id, position)}\n"
        return (frame + "\n").encode("ascii")


def _place(position: Position) -> tuple[int, int, int]:
    return position.epoch, position.xid, position.event_id


def _retry_after(error: psycopg.Error) -> float:
    detail = (error.diag.message_detail or "").strip()
    seconds = float(detail) if detail.isascii() and detail.isdigit() else 5.0
    return min(max(seconds, 1.0), MAX_RETRY_AFTER_SECONDS)
