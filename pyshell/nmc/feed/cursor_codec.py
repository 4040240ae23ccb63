"""The codec of the opaque cursors the API hands out: fixed fields behind a kind byte, base64url.

Byte layout, before base64url without padding:

    kind (1) | [key id (2)] | fields | [tag (16)]

`kind` names the cursor and the version of its layout; the fields have a fixed size, big
endian, as a `struct` format says (`q` 8 bytes signed, `Q` unsigned, `i` 4 bytes signed,
`16s` a UUID). A sealed cursor also carries the id of the key it was made with and
tag = HMAC-SHA256(context | everything before the tag), truncated to 128 bits; an open cursor
carries neither and is only opaque. A token of another kind or length, or (sealed) under an
unknown key or with a wrong tag, is refused alike: `InvalidCursor`.

The list cursor (nmc.api.lijst_cursor) is open, the feed cursor and the snapshot page token
(nmc.feed.feed_cursor) are sealed.
"""

import base64
import binascii
import hashlib
import hmac
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

MAX_TOKEN_CHARS = 128
"""A longer string is none of ours; refused before decoding."""

_TAG_BYTES = 16
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class InvalidCursor(ValueError):
    """Not a cursor this NMC issued (tampered, malformed, of another kind, or another DV's)."""


@dataclass(frozen=True)
class Layout:
    """One kind of cursor: its first byte and the `struct` format of its fields."""

    kind: int
    fields: str


@dataclass(frozen=True)
class Keys:
    """The keys that seal cursors, by key id (two bytes), and the one new cursors use."""

    by_id: Mapping[int, bytes]
    current: int
    context: bytes  # what the MAC input starts with: the purpose and its version


class Codec:
    """Packs fields into an opaque string of one layout and back; with `keys`, sealed."""

    def __init__(self, keys: Keys | None = None) -> None:
        self._keys = keys

    def encode(self, layout: Layout, *fields: Any) -> str:
        head = bytes([layout.kind])
        if self._keys is not None:
            head += self._keys.current.to_bytes(2, "big")
        try:
            body = head + struct.pack(">" + layout.fields, *fields)
        except struct.error as error:
            raise ValueError(f"a cursor field does not fit its layout: {error}") from None
        if self._keys is not None:
            body += _tag(self._keys.context, self._keys.by_id[self._keys.current], body)
        return base64.urlsafe_b64encode(body).rstrip(b"=").decode("ascii")

    def decode(self, layout: Layout, token: str) -> tuple[Any, ...]:
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            raise InvalidCursor("malformed")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            raise InvalidCursor("not base64url") from None
        head = 1 if self._keys is None else 3
        tag_bytes = 0 if self._keys is None else _TAG_BYTES
        length = head + struct.calcsize(">" + layout.fields) + tag_bytes
        if len(raw) != length or raw[0] != layout.kind:
            raise InvalidCursor("unknown format")
        if self._keys is not None:
            body, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
            key = self._keys.by_id.get(int.from_bytes(body[1:3], "big"))
            if key is None or not hmac.compare_digest(tag, _tag(self._keys.context, key, body)):
                raise InvalidCursor("not authentic")
        return struct.unpack_from(">" + layout.fields, raw, head)


def to_micros(moment: datetime) -> int:
    """A moment as microseconds since the Unix epoch, as cursors carry it."""
    return (moment - _UNIX_EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    """The moment a cursor carries; one out of datetime's range is no cursor of ours."""
    try:
        return _UNIX_EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise InvalidCursor("time out of range") from None


def _tag(context: bytes, key: bytes, body: bytes) -> bytes:
    return hmac.new(key, context + body, hashlib.sha256).digest()[:_TAG_BYTES]
