"""The opaque feed cursor and the snapshot page token (SPEC §7): encoded, authenticated, per DV.

A feed position is (cluster epoch, xid, event id) plus the moment the NMC handed it out
(`uitgegeven_op`, for the max cursor age). The DV sees it only as an opaque string; the
API, and the worker on its webhook calls (`Nmc-Cursor`), make it with `CursorCodec`.

Both are sealed cursors of nmc.feed.cursor_codec. Byte layout, before base64url without padding:

    kind (1) | key id (2) | dv_id (4) | epoch (4) | xid (8, unsigned) | event id (8) |
    uitgegeven_op (8, microseconds since the Unix epoch) | [na (16, snapshot token only)] |
    tag (16)

All integers big endian, signed unless noted. kind 0x01 is a feed cursor, 0x02 a snapshot
page token (the feed position of the snapshot's first page and the last notification id
shown). tag = HMAC-SHA256("nmc/cursor/v1" 0x00 | everything before it), truncated to 128
bits. The dv_id is inside the MAC: another DV's cursor, a tampered one and a token of the
wrong kind all fail alike (`InvalidCursor`, a 400); whether a genuine position has expired
is the database's judgement (nmc.check_cursor, a 410).

The history's page cursor (kind 0x03) is sealed the same way, with its own layout:

    kind 0x03 | key id (2) | dv_id (4) | notificatie id (16) | sequence (4) | receipts (4) |
    tag (16)

the position after a page of one notification's history: the last event's sequence and how
many of its receipts were shown. Both numbers are the notification's own, so the cursor
carries no NMC-wide figure; the notification id is inside the MAC too, so the cursor of one
notification is no cursor for another (nor for another DV's).

The key is the `cursor` pepper (key id = its version, 1..32767) when one is configured, else
derived from the `dvref` pepper (key id = 0x8000 | its version), so no extra secret is
needed and adding a `cursor` pepper later does not invalidate cursors already handed out.
"""

import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nmc.crypto.peppers import PURPOSE_DVREF, Peppers
from nmc.crypto.secret_files import CryptoConfigError
from nmc.feed.cursor_codec import Codec, InvalidCursor, Keys, Layout, from_micros, to_micros

__all__ = ["PURPOSE_CURSOR", "CursorCodec", "InvalidCursor", "Position"]

PURPOSE_CURSOR = "cursor"

# dv_id, epoch, xid (unsigned), event id, uitgegeven_op; the snapshot token adds `na`.
FEED = Layout(kind=0x01, fields="iiQqq")
SNAPSHOT = Layout(kind=0x02, fields="iiQqq16s")
# dv_id, notificatie id, the last event's sequence, the receipts shown.
GESCHIEDENIS = Layout(kind=0x03, fields="i16sii")

_MAC_CONTEXT = b"nmc/cursor/v1\x00"
_DERIVE_LABEL = b"nmc/cursor-key/v1"
_DERIVED = 0x8000


@dataclass(frozen=True)
class Position:
    """A place in the event log: after (xid, event_id) in cluster epoch `epoch`."""

    epoch: int
    xid: int
    event_id: int
    uitgegeven_op: datetime

    @classmethod
    def from_page(cls, page: Mapping[str, Any]) -> "Position":
        """The position in an answer of nmc.page_events or nmc.snapshot_notificaties."""
        return cls(
            epoch=int(page["epoch"]),
            xid=int(page["xid"]),
            event_id=int(page["eventId"]),
            uitgegeven_op=_timestamp(page["uitgegevenOp"]),
        )

    def after_event(self, event: Mapping[str, Any]) -> "Position":
        """The position right after one event of a page (its xid and eventId)."""
        return Position(self.epoch, int(event["xid"]), int(event["eventId"]), self.uitgegeven_op)

    def sql_params(self) -> dict[str, Any]:
        """The cursor arguments of nmc.page_events and nmc.acknowledge_cursor."""
        return {
            "epoch": self.epoch,
            "xid": str(self.xid),
            "event_id": self.event_id,
            "uitgegeven_op": self.uitgegeven_op,
        }


class CursorCodec:
    """Seals positions into opaque strings for one NMC's peppers, and opens them again."""

    def __init__(self, peppers: Peppers):
        keys: dict[int, bytes] = {}
        if PURPOSE_CURSOR in peppers.purposes:
            own = peppers.for_purpose(PURPOSE_CURSOR)
            for version, key in own.versions.items():
                if not 0 < version < _DERIVED:
                    raise CryptoConfigError("cursor pepper versions must be 1..32767")
                keys[version] = key
            current = own.current
        dvref = peppers.for_purpose(PURPOSE_DVREF)
        for version, key in dvref.versions.items():
            if 0 < version < _DERIVED:
                derived = hmac.new(key, _DERIVE_LABEL, hashlib.sha256).digest()
                keys[_DERIVED | version] = derived
        if PURPOSE_CURSOR not in peppers.purposes:
            current = _DERIVED | dvref.current
        if current not in keys:
            raise CryptoConfigError("the current pepper version cannot key cursors (1..32767)")
        self._codec = Codec(Keys(keys, current, _MAC_CONTEXT))

    def encode(self, dv_id: int, position: Position) -> str:
        return self._codec.encode(FEED, dv_id, *_fields(position))

    def decode(self, dv_id: int, token: str) -> Position:
        owner, *fields = self._codec.decode(FEED, token)
        return _position(dv_id, owner, *fields)

    def encode_snapshot(self, dv_id: int, position: Position, na: uuid.UUID) -> str:
        return self._codec.encode(SNAPSHOT, dv_id, *_fields(position), na.bytes)

    def decode_snapshot(self, dv_id: int, token: str) -> tuple[Position, uuid.UUID]:
        owner, *fields, na = self._codec.decode(SNAPSHOT, token)
        return _position(dv_id, owner, *fields), uuid.UUID(bytes=na)

    def encode_geschiedenis(
        self, dv_id: int, notificatie_id: uuid.UUID, sequence: int, receipts: int
    ) -> str:
        """The cursor after a history page of one notification of `dv_id`."""
        return self._codec.encode(GESCHIEDENIS, dv_id, notificatie_id.bytes, sequence, receipts)

    def decode_geschiedenis(
        self, dv_id: int, notificatie_id: uuid.UUID, token: str
    ) -> tuple[int, int]:
        """(sequence, receipts) of a history cursor; InvalidCursor unless it was handed out
        for this notification to this DV (or is not a position at all)."""
        owner, owned_by, sequence, receipts = self._codec.decode(GESCHIEDENIS, token)
        if owner != dv_id or owned_by != notificatie_id.bytes:
            raise InvalidCursor("another notification's cursor")
        if sequence < 0 or receipts < 0:
            raise InvalidCursor("not a position")
        return sequence, receipts


def _fields(position: Position) -> tuple[int, int, int, int]:
    return position.epoch, position.xid, position.event_id, to_micros(position.uitgegeven_op)


def _position(dv_id: int, owner: int, epoch: int, xid: int, event_id: int, micros: int) -> Position:
    if owner != dv_id:
        raise InvalidCursor("another DV's cursor")
    return Position(epoch, xid, event_id, from_micros(micros))


def _timestamp(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        raise ValueError("a cursor time needs a time zone")
    return moment.astimezone(UTC)
