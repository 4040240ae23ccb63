"""Envelope encryption of a notificatie's personal data: the recipient and the berichtgegevens.

Envelope (SPEC §8). Every notificatie gets a fresh random 256-bit data key. The recipient
(e-mail address or identifying number) and the berichtgegevens are each encrypted with it using
AES-256-GCM; the data key itself is wrapped by the active KEK. Byte layouts, version byte first so
a later format can be read beside this one:

    field ciphertext = 0x01 | nonce (12) | AES-256-GCM(data key, plaintext, field AAD) + tag (16)
    wrapped key      = 0x01 | nonce (12) | AES-256-GCM(KEK, data key, wrap AAD) + tag (16)

    field AAD = "nmc/field/v1" 0x00 | notificatie_id (16) | dv_id (8, big endian) | field name
    wrap AAD  = "nmc/wrap/v1"  0x00 | notificatie_id (16) | kek id (UTF-8)

Every AAD part but the last has a fixed length, so the encoding is unambiguous. A ciphertext
copied to another row or another field, or a wrapped key relabelled with another KEK id or moved
to another notificatie, fails authentication.

The wrap uses AES-GCM rather than AES-KW (RFC 3394) because AES-KW takes no associated data, and
the wrap must be bound to the notificatie and the KEK id. Random 96-bit nonces are safe while one
key seals fewer than 2**32 messages (NIST SP 800-38D §8.3): a data key seals two, and a KEK is
rotated long before it wraps four billion data keys.

Erasure destroys the wrapped key (the `wissen` task); KEK rotation re-wraps data keys with
`rewrap` and never touches the field ciphertexts.

Nothing here logs, and no exception message carries plaintext, key material or ciphertext.
"""

import json
import os
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from nmc.crypto.kek_ring import KEY_BYTES, KekRing, kek_ring
from nmc.crypto.message_bytes import check_dv_id, utf8
from nmc.signing.canonical_json import berichtgegevens_json

FORMAT_V1 = 0x01
_FORMAT_V1_BYTE = bytes([FORMAT_V1])
NONCE_BYTES = 12
TAG_BYTES = 16

FIELD_RECIPIENT = "recipient"
FIELD_BERICHTGEGEVENS = "berichtgegevens"

_FIELD_AAD_PREFIX = b"nmc/field/v1\x00"
_WRAP_AAD_PREFIX = b"nmc/wrap/v1\x00"
_RECIPIENT_BYTES = FIELD_RECIPIENT.encode("ascii")
_GEGEVENS_BYTES = FIELD_BERICHTGEGEVENS.encode("ascii")


class DecryptionError(Exception):
    """A ciphertext or wrapped key did not authenticate for this notificatie, field and key."""


@dataclass(frozen=True)
class Sealed:
    """What goes on the notificatie row: two ciphertexts, the wrapped data key and its KEK id."""

    recipient: bytes
    berichtgegevens: bytes
    wrapped_key: bytes
    kek_id: str


@dataclass(frozen=True)
class Opened:
    """The plaintext, only ever held inside the send and invalid-report tasks."""

    recipient: str = field(repr=False)
    berichtgegevens: dict[str, str] = field(repr=False)


def seal(
    notificatie_id: uuid.UUID,
    dv_id: int,
    recipient: str,
    berichtgegevens: Mapping[str, str],
    *,
    ring: KekRing | None = None,
) -> Sealed:
    """Encrypt recipient and berichtgegevens under a fresh data key wrapped by the active KEK."""
    entry = (notificatie_id, recipient, berichtgegevens_json(berichtgegevens))
    columns = seal_many(dv_id, [entry], ring=ring)
    return Sealed(
        columns.recipients[0], columns.berichtgegevens[0], columns.wrapped_keys[0], columns.kek_id
    )


class SealedColumns(NamedTuple):
    """`Sealed` of many notificaties as columns: entry i of each list is notificatie i."""

    recipients: list[bytes]
    berichtgegevens: list[bytes]
    wrapped_keys: list[bytes]
    kek_id: str


def seal_many(
    dv_id: int,
    entries: Sequence[tuple[uuid.UUID, str, bytes]],
    *,
    ring: KekRing | None = None,
) -> SealedColumns:
    """`seal` each (notificatie_id, recipient, berichtgegevens_json(berichtgegevens)) of one DV.

    The result is what one `seal` per entry gives: a fresh data key per notificatie and a fresh
    nonce per encryption. Only the cost differs (the batch intake seals 1000 at a time): the
    randomness of all entries comes from one os.urandom call, sliced, instead of four calls
    each, and what is the same for every entry (DV, KEK) is prepared once. The berichtgegevens
    come encoded because the intake hashes the same bytes (`payload_hash`); the result comes
    as columns because the intake stores it as arrays (and a `Sealed` each costs as much as
    an encryption).
    """
    ring = kek_ring() if ring is None else ring
    check_dv_id(dv_id)
    dv_bytes = dv_id.to_bytes(8, "big", signed=True)
    kek_id = ring.active_id
    kek_cipher = ring.cipher(kek_id)
    kek_id_bytes = kek_id.encode("utf-8")
    step = KEY_BYTES + 3 * NONCE_BYTES  # data key, then the nonces of recipient, gegevens, wrap
    randomness = os.urandom(step * len(entries))
    columns = SealedColumns([], [], [], kek_id)
    for start, (notificatie_id, recipient, plain_gegevens) in zip(
        range(0, len(randomness), step), entries, strict=True
    ):
        if not isinstance(notificatie_id, uuid.UUID):
            raise TypeError("notificatie_id must be a uuid.UUID")
        if not isinstance(recipient, str):
            raise TypeError("recipient must be a str")
        if not isinstance(plain_gegevens, bytes):
            raise TypeError("berichtgegevens must come as berichtgegevens_json bytes")
        nonce_at = start + KEY_BYTES
        data_key = randomness[start:nonce_at]
        nonce_recipient = randomness[nonce_at : nonce_at + NONCE_BYTES]
        nonce_gegevens = randomness[nonce_at + NONCE_BYTES : nonce_at + 2 * NONCE_BYTES]
        nonce_wrap = randomness[nonce_at + 2 * NONCE_BYTES : start + step]
        data_cipher = AESGCM(data_key)
        id_bytes = notificatie_id.bytes
        # The AADs of _field_aad and _wrap_aad, built here from the parts prepared above.
        field_aad = _FIELD_AAD_PREFIX + id_bytes + dv_bytes
        wrap_aad = _WRAP_AAD_PREFIX + id_bytes + kek_id_bytes
        columns.recipients.append(
            _encrypt_with(
                data_cipher, nonce_recipient, utf8(recipient), field_aad + _RECIPIENT_BYTES
            )
        )
        columns.berichtgegevens.append(
            _encrypt_with(data_cipher, nonce_gegevens, plain_gegevens, field_aad + _GEGEVENS_BYTES)
        )
        columns.wrapped_keys.append(_encrypt_with(kek_cipher, nonce_wrap, data_key, wrap_aad))
    return columns


def open_sealed(
    notificatie_id: uuid.UUID,
    dv_id: int,
    sealed: Sealed,
    *,
    ring: KekRing | None = None,
) -> Opened:
    """Reverse `seal`. Any KEK in the ring unwraps, so data sealed before a rotation still opens."""
    ring = kek_ring() if ring is None else ring
    _check_ids(notificatie_id, dv_id)
    data_cipher = AESGCM(_unwrap(ring, sealed.kek_id, sealed.wrapped_key, notificatie_id))
    recipient = _decrypt(
        data_cipher, sealed.recipient, _field_aad(notificatie_id, dv_id, FIELD_RECIPIENT)
    )
    gegevens = _decrypt(
        data_cipher,
        sealed.berichtgegevens,
        _field_aad(notificatie_id, dv_id, FIELD_BERICHTGEGEVENS),
    )
    return Opened(recipient=recipient.decode("utf-8"), berichtgegevens=json.loads(gegevens))


def open_recipient(
    notificatie_id: uuid.UUID,
    dv_id: int,
    recipient: bytes,
    wrapped_key: bytes,
    kek_id: str,
    *,
    ring: KekRing | None = None,
) -> str:
    """Decrypt only the recipient (the invalid-report task needs nothing else)."""
    ring = kek_ring() if ring is None else ring
    _check_ids(notificatie_id, dv_id)
    data_key = _unwrap(ring, kek_id, wrapped_key, notificatie_id)
    plain = _decrypt(
        AESGCM(data_key), recipient, _field_aad(notificatie_id, dv_id, FIELD_RECIPIENT)
    )
    return plain.decode("utf-8")


def rewrap(
    wrapped_key: bytes,
    notificatie_id: uuid.UUID,
    from_kek_id: str,
    *,
    ring: KekRing | None = None,
) -> tuple[bytes, str]:
    """Re-wrap a data key from `from_kek_id` to the active KEK: returns (wrapped key, kek id).

    The field ciphertexts are untouched; this is the whole of a KEK rotation per notificatie.
    """
    ring = kek_ring() if ring is None else ring
    if not isinstance(notificatie_id, uuid.UUID):
        raise TypeError("notificatie_id must be a uuid.UUID")
    data_key = _unwrap(ring, from_kek_id, wrapped_key, notificatie_id)
    return _wrap(ring, ring.active_id, data_key, notificatie_id), ring.active_id


def _check_ids(notificatie_id: uuid.UUID, dv_id: int) -> None:
    if not isinstance(notificatie_id, uuid.UUID):
        raise TypeError("notificatie_id must be a uuid.UUID")
    check_dv_id(dv_id)


def _field_aad(notificatie_id: uuid.UUID, dv_id: int, field_name: str) -> bytes:
    return (
        _FIELD_AAD_PREFIX
        + notificatie_id.bytes
        + dv_id.to_bytes(8, "big", signed=True)
        + field_name.encode("ascii")
    )


def _wrap_aad(notificatie_id: uuid.UUID, kek_id: str) -> bytes:
    return _WRAP_AAD_PREFIX + notificatie_id.bytes + kek_id.encode("utf-8")


def _encrypt(cipher: AESGCM, plaintext: bytes, aad: bytes) -> bytes:
    return _encrypt_with(cipher, secrets.token_bytes(NONCE_BYTES), plaintext, aad)


def _encrypt_with(cipher: AESGCM, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """The field layout; `nonce` must be fresh random bytes, never used before with this key."""
    return _FORMAT_V1_BYTE + nonce + cipher.encrypt(nonce, plaintext, aad)


def _decrypt(cipher: AESGCM, blob: bytes, aad: bytes) -> bytes:
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise TypeError("ciphertext must be bytes")
    blob = bytes(blob)
    if len(blob) < 1 + NONCE_BYTES + TAG_BYTES or blob[0] != FORMAT_V1:
        raise DecryptionError("ciphertext has an unknown format or is truncated")
    nonce, body = blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :]
    try:
        return cipher.decrypt(nonce, body, aad)
    except InvalidTag:
        raise DecryptionError("ciphertext does not authenticate for this notificatie") from None


def _wrap(ring: KekRing, kek_id: str, data_key: bytes, notificatie_id: uuid.UUID) -> bytes:
    return _encrypt(ring.cipher(kek_id), data_key, _wrap_aad(notificatie_id, kek_id))


def _unwrap(ring: KekRing, kek_id: str, wrapped: bytes, notificatie_id: uuid.UUID) -> bytes:
    try:
        data_key = _decrypt(ring.cipher(kek_id), wrapped, _wrap_aad(notificatie_id, kek_id))
    except DecryptionError:
        raise DecryptionError("wrapped key does not unwrap for this notificatie and KEK") from None
    if len(data_key) != KEY_BYTES:
        raise DecryptionError("wrapped key has the wrong length")
    return data_key
