"""The opaque `cursor` of GET /notificaties?dvRef=: the position after the last row shown.

Keyset pagination on (aangenomen_op, id), newest first (nmc.find_notificaties). The cursor
is an open one of nmc.feed.cursor_codec, kind 0x01: aangenomen_op as microseconds since the Unix
epoch (8 bytes, signed) | id (16 bytes). It only holds a position among the caller's own rows
(every query is bounded to the caller's DV and dvRef HMACs), so it needs no signature; it is
opaque so the format may change.
"""

import uuid
from datetime import datetime

from nmc.feed.cursor_codec import Codec, InvalidCursor, Layout, from_micros, to_micros

__all__ = ["InvalidCursor", "decode", "encode"]

_LAYOUT = Layout(kind=0x01, fields="q16s")
_CODEC = Codec()


def encode(aangenomen_op: datetime, notificatie_id: uuid.UUID) -> str:
    return _CODEC.encode(_LAYOUT, to_micros(aangenomen_op), notificatie_id.bytes)


def decode(cursor: str) -> tuple[datetime, uuid.UUID]:
    micros, notificatie_id = _CODEC.decode(_LAYOUT, cursor)
    return from_micros(micros), uuid.UUID(bytes=notificatie_id)
