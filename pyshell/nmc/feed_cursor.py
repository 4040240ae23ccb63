"""The opaque feed cursor and the snapshot page token (SPEC §7): encoded, authenticated, per DV.

A feed position is (cluster epoch, xid, event id) plus the moment the NMC handed it out
(`uitgegeven_op`, for the max cursor age). The DV sees it only as an opaque string; the
API, and the worker on its webhook calls (`Nmc-Cursor`), make it with `CursorCodec`.

Byte layout, before base64url without padding:

    kind (1) | key id (2) | dv_id (4) | epoch (4) | xid (8, unsigned) | event id (8) |
    uitgegeven_op (8, microseconds since the Unix epoch) | [na (16, snapshot token only)] |
    tag (16)

All integers big endian, signed unless noted. kind 0x01 is a feed cursor, 0x02 a snapshot
page token (the feed position of the snapshot's first page and the last notification id
shown). tag = HMAC-SHA256("nmc/cursor/v1" 0x00 | everything before it), truncated to 128
bits. The dv_id is inside the MAC: another DV's cursor, a tampered one and a token of the
wrong kind all fail alike (`InvalidCursor`, a 400); whether a genuine position has expired
is the database's judgement (nmc.check_cursor, a 410).

The key is the `cursor` pepper (key id = its version, 1..32767) when one is configured, else
derived from the `dvref` pepper (key id = 0x8000 | its version), so no extra secret is
needed and adding a `cursor` pepper later does not invalidate cursors already handed out.
"""

import base64
import binascii
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nmc.peppers import PURPOSE_DVREF, Peppers
from nmc.secret_files import CryptoConfigError

PURPOSE_CURSOR = "cursor"

KIND_FEED = 0x01
KIND_SNAPSHOT = 0x02

_MAC_PREFIX = b"nmc/cursor/v1\x00"
_DERIVE_LABEL = b"nmc/cursor-key/v1"
_DERIVED = 0x8000
_TAG_BYTES = 16
_HEAD_BYTES = 1 + 2 + 4 + 4 + 8 + 8 + 8
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_XID_MAX = 2**64 - 1

MAX_TOKEN_CHARS = 128
"""A longer string cannot be one of ours; refused before decoding."""


class InvalidCursor(ValueError):
    """Not a cursor this NMC issued to this DV (tampered, another DV's, or malformed)."""


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
        self._keys: dict[int, bytes] = {}
        if PURPOSE_CURSOR in peppers.purposes:
            own = peppers.for_purpose(PURPOSE_CURSOR)
            for version, key in own.versions.items():
                if not 0 < version < _DERIVED:
                    raise CryptoConfigError("cursor pepper versions must be 1..32767")
                self._keys[version] = key
            self._current = own.current
        dvref = peppers.for_purpose(PURPOSE_DVREF)
        for version, key in dvref.versions.items():
            if 0 < version < _DERIVED:
                derived = hmac.new(key, _DERIVE_LABEL, hashlib.sha256).digest()
                self._keys[_DERIVED | version] = derived
        if PURPOSE_CURSOR not in peppers.purposes:
            self._current = _DERIVED | dvref.current
        if self._current not in self._keys:
            raise CryptoConfigError("the current pepper version cannot key cursors (1..32767)")

    def encode(self, dv_id: int, position: Position) -> str:
        return self._seal(KIND_FEED, dv_id, position, b"")

    def decode(self, dv_id: int, token: str) -> Position:
        position, _ = self._open(KIND_FEED, dv_id, token)
        return position

    def encode_snapshot(self, dv_id: int, position: Position, na: uuid.UUID) -> str:
        return self._seal(KIND_SNAPSHOT, dv_id, position, na.bytes)

    def decode_snapshot(self, dv_id: int, token: str) -> tuple[Position, uuid.UUID]:
        position, rest = self._open(KIND_SNAPSHOT, dv_id, token)
        return position, uuid.UUID(bytes=rest)

    def _seal(self, kind: int, dv_id: int, position: Position, rest: bytes) -> str:
        if not 0 <= position.xid <= _XID_MAX:
            raise ValueError("xid out of range")
        micros = (position.uitgegeven_op - _UNIX_EPOCH) // timedelta(microseconds=1)
        body = (
            bytes([kind])
            + self._current.to_bytes(2, "big")
            + dv_id.to_bytes(4, "big", signed=True)
            + position.epoch.to_bytes(4, "big", signed=True)
            + position.xid.to_bytes(8, "big")
            + position.event_id.to_bytes(8, "big", signed=True)
            + micros.to_bytes(8, "big", signed=True)
            + rest
        )
        raw = body + self._tag(self._keys[self._current], body)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def _open(self, kind: int, dv_id: int, token: str) -> tuple[Position, bytes]:
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            raise InvalidCursor("malformed")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise InvalidCursor("not base64url") from None
        rest_len = 16 if kind == KIND_SNAPSHOT else 0
        if len(raw) != _HEAD_BYTES + rest_len + _TAG_BYTES or raw[0] != kind:
            raise InvalidCursor("unknown format")
        body, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        key = self._keys.get(int.from_bytes(body[1:3], "big"))
        if key is None or not hmac.compare_digest(tag, self._tag(key, body)):
            raise InvalidCursor("not authentic")
        if int.from_bytes(body[3:7], "big", signed=True) != dv_id:
            raise InvalidCursor("another DV's cursor")
        micros = int.from_bytes(body[27:35], "big", signed=True)
        try:
            uitgegeven_op = _UNIX_EPOCH + timedelta(microseconds=micros)
        except OverflowError:
            raise InvalidCursor("time out of range") from None
        position = Position(
            epoch=int.from_bytes(body[7:11], "big", signed=True),
            xid=int.from_bytes(body[11:19], "big"),
            event_id=int.from_bytes(body[19:27], "big", signed=True),
            uitgegeven_op=uitgegeven_op,
        )
        return position, body[_HEAD_BYTES:]

    @staticmethod
    def _tag(key: bytes, body: bytes) -> bytes:
        return hmac.new(key, _MAC_PREFIX + body, hashlib.sha256).digest()[:_TAG_BYTES]


def _timestamp(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        raise ValueError("a cursor time needs a time zone")
    return moment.astimezone(UTC)
