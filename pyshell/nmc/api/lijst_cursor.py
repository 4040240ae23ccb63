"""The opaque `cursor` of GET /notificaties?dvRef=: the position after the last row shown.

Keyset pagination on (aangenomen_op, id), newest first (nmc.find_notificaties). The cursor
is base64url without padding of: version byte 0x01 | aangenomen_op as microseconds since the
Unix epoch (8 bytes, signed big endian) | id (16 bytes). It only holds a position among the
caller's own rows (every query is bounded to the caller's DV and dvRef HMACs), so it needs no
signature; it is opaque so the format may change.
"""

import base64
import binascii
import uuid
from datetime import UTC, datetime, timedelta

_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LENGTH = 1 + 8 + 16


class InvalidCursor(ValueError):
    """The cursor was not made by `encode`."""


def encode(aangenomen_op: datetime, notificatie_id: uuid.UUID) -> str:
    micros = (aangenomen_op - _EPOCH) // timedelta(microseconds=1)
    raw = bytes([_VERSION]) + micros.to_bytes(8, "big", signed=True) + notificatie_id.bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidCursor("not base64url") from None
    if len(raw) != _LENGTH or raw[0] != _VERSION:
        raise InvalidCursor("unknown cursor format")
    micros = int.from_bytes(raw[1:9], "big", signed=True)
    try:
        moment = _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise InvalidCursor("time out of range") from None
    return moment, uuid.UUID(bytes=raw[9:])
