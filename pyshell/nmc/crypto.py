"""Envelope encryption of a notificatie's personal data, the peppered dvRef and payload HMACs.

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

Idempotency compares requests by their payload HMAC, keyed with a pepper of its own purpose
(`payload`) and stored with its version, like the dvRef HMAC: a plain hash of the request,
which holds the recipient, would let anyone with the database test candidate addresses or
identifying numbers offline.

Nothing here logs, and no exception message carries plaintext, key material or ciphertext.
"""

import base64
import binascii
import functools
import hashlib
import json
import os
import re
import secrets
import unicodedata
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hmac import HMAC

from nmc.errors import NmcError

FORMAT_V1 = 0x01
_FORMAT_V1_BYTE = bytes([FORMAT_V1])
NONCE_BYTES = 12
KEY_BYTES = 32
TAG_BYTES = 16
MIN_PEPPER_BYTES = 32

FIELD_RECIPIENT = "recipient"
FIELD_BERICHTGEGEVENS = "berichtgegevens"

PURPOSE_DVREF = "dvref"
PURPOSE_PAYLOAD = "payload"

_FIELD_AAD_PREFIX = b"nmc/field/v1\x00"
_WRAP_AAD_PREFIX = b"nmc/wrap/v1\x00"
_DVREF_PREFIX = b"nmc/dvref/v1\x00"
_PAYLOAD_PREFIX = b"nmc/payload/v1\x00"
_RECIPIENT_BYTES = FIELD_RECIPIENT.encode("ascii")
_GEGEVENS_BYTES = FIELD_BERICHTGEGEVENS.encode("ascii")
_KEK_ID = re.compile(r"\A[A-Za-z0-9._:-]{1,64}\Z")
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


class CryptoConfigError(NmcError):
    """The KEK ring or the peppers are missing or malformed (a start-up failure)."""


class UnknownKekError(NmcError):
    """A wrapped key names a KEK that is not in the ring."""


class DecryptionError(Exception):
    """A ciphertext or wrapped key did not authenticate for this notificatie, field and key."""


# --------------------------------------------------------------------------------------------
# KEK ring


@dataclass(frozen=True)
class KekRing:
    """The key-encryption keys held in memory; `active_id` wraps, every key unwraps."""

    active_id: str
    keys: Mapping[str, bytes] = field(repr=False)
    # One AES-GCM object per KEK, made on first use: building one costs as much as an
    # encryption, and every intake wraps a key.
    _ciphers: dict[str, AESGCM] = field(default_factory=dict, repr=False, compare=False)

    def key(self, kek_id: str) -> bytes:
        try:
            return self.keys[kek_id]
        except KeyError:
            raise UnknownKekError(f"KEK {kek_id!r} is not in the KEK ring") from None

    def cipher(self, kek_id: str) -> AESGCM:
        cipher = self._ciphers.get(kek_id)
        if cipher is None:
            cipher = self._ciphers[kek_id] = AESGCM(self.key(kek_id))
        return cipher


def parse_kek_ring(document: Any) -> KekRing:
    """Build a ring from the decoded JSON `{"active": id, "keys": {id: base64 32 bytes}}`."""
    if not isinstance(document, dict):
        raise CryptoConfigError("KEK file must hold a JSON object with 'active' and 'keys'")
    active = document.get("active")
    keys_in = document.get("keys")
    if not isinstance(keys_in, dict) or not keys_in:
        raise CryptoConfigError("KEK file must have a non-empty object 'keys'")
    keys: dict[str, bytes] = {}
    for kek_id, encoded in keys_in.items():
        if not _KEK_ID.match(kek_id):
            raise CryptoConfigError("KEK ids must be 1-64 characters from A-Z a-z 0-9 . _ : -")
        raw = _b64decode(encoded, f"KEK {kek_id!r}")
        if len(raw) != KEY_BYTES:
            raise CryptoConfigError(
                f"KEK {kek_id!r} must be {KEY_BYTES} bytes (AES-256), got {len(raw)}"
            )
        keys[kek_id] = raw
    if not isinstance(active, str) or active not in keys:
        raise CryptoConfigError(f"active KEK {active!r} is not one of the keys in the KEK file")
    return KekRing(active_id=active, keys=keys)


def load_kek_ring(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> KekRing:
    """Read the KEK ring from `path`, or from the file named by NMC_KEK_FILE."""
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get("NMC_KEK_FILE")
        if not path:
            raise CryptoConfigError("NMC_KEK_FILE is not set: the KEK ring cannot be loaded")
    return parse_kek_ring(_read_json_file(Path(path), "KEK file"))


@functools.cache
def kek_ring() -> KekRing:
    """The process-wide KEK ring, loaded once from NMC_KEK_FILE (`kek_ring.cache_clear()`)."""
    return load_kek_ring()


def new_kek_ring(kek_id: str = "kek-1") -> dict[str, Any]:
    """A fresh ring document with one random KEK, for development and tests."""
    if not _KEK_ID.match(kek_id):
        raise ValueError("KEK ids must be 1-64 characters from A-Z a-z 0-9 . _ : -")
    key = base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode("ascii")
    return {"active": kek_id, "keys": {kek_id: key}}


# --------------------------------------------------------------------------------------------
# Sealing


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
    _check_dv_id(dv_id)
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
                data_cipher, nonce_recipient, _utf8(recipient), field_aad + _RECIPIENT_BYTES
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
    _check_dv_id(dv_id)


def _check_dv_id(dv_id: int) -> None:
    if isinstance(dv_id, bool) or not isinstance(dv_id, int):
        raise TypeError("dv_id must be an int")
    if not _BIGINT_MIN <= dv_id <= _BIGINT_MAX:
        raise ValueError("dv_id must fit a bigint")


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


def berichtgegevens_json(berichtgegevens: Mapping[str, str]) -> bytes:
    """Canonical JSON of a mapping of str to str: the berichtgegevens plaintext `seal` encrypts."""
    if type(berichtgegevens) is not dict:  # exact dict first: the validators' result
        if not isinstance(berichtgegevens, Mapping):
            raise TypeError("berichtgegevens must be a mapping of str to str")
        berichtgegevens = dict(berichtgegevens)
    for key, value in berichtgegevens.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("berichtgegevens must be a mapping of str to str")
    return canonical_json(berichtgegevens)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text contains an unpaired surrogate") from None


# --------------------------------------------------------------------------------------------
# Peppers, the dvRef HMAC and the payload HMAC


@dataclass(frozen=True)
class PepperSet:
    """The pepper versions of one purpose; `current` is used for new rows."""

    current: int
    versions: Mapping[int, bytes] = field(repr=False)
    # One keyed HMAC per version, made on first use and copied per message: keying costs as
    # much as the MAC of a short message, and every intake computes one. cryptography's HMAC
    # rather than the hmac module's, whose Python wrappers around copy, update and digest cost
    # more than the hashing itself.
    _macs: dict[int, HMAC] = field(default_factory=dict, repr=False, compare=False)

    def earlier(self) -> list[int]:
        """The live versions other than `current`, newest first: lookups try them too."""
        return sorted((v for v in self.versions if v != self.current), reverse=True)

    def keyed_hmac(self, version: int) -> HMAC:
        """HMAC-SHA256 keyed with pepper `version` (one of `versions`), only to be copied."""
        keyed = self._macs.get(version)
        if keyed is None:
            keyed = self._macs[version] = HMAC(self.versions[version], hashes.SHA256())
        return keyed


@dataclass(frozen=True)
class Peppers:
    purposes: Mapping[str, PepperSet] = field(repr=False)

    def for_purpose(self, purpose: str) -> PepperSet:
        try:
            return self.purposes[purpose]
        except KeyError:
            raise CryptoConfigError(f"no pepper configured for purpose {purpose!r}") from None


def parse_peppers(document: Any) -> Peppers:
    """Build peppers from `{purpose: {"current": n, "versions": {"n": base64}}}`."""
    if not isinstance(document, dict) or not document:
        raise CryptoConfigError("peppers must be a non-empty JSON object keyed by purpose")
    purposes: dict[str, PepperSet] = {}
    for purpose, spec in document.items():
        if not isinstance(spec, dict):
            raise CryptoConfigError(f"pepper purpose {purpose!r} must be an object")
        current = spec.get("current")
        versions_in = spec.get("versions")
        if not isinstance(versions_in, dict) or not versions_in:
            raise CryptoConfigError(f"pepper purpose {purpose!r} needs a non-empty 'versions'")
        versions: dict[int, bytes] = {}
        for label, encoded in versions_in.items():
            if not (
                isinstance(label, str) and label.isascii() and label.isdigit() and int(label) > 0
            ):
                raise CryptoConfigError(f"pepper versions of {purpose!r} must be positive integers")
            raw = _b64decode(encoded, f"pepper {purpose!r} version {label}")
            if len(raw) < MIN_PEPPER_BYTES:
                raise CryptoConfigError(
                    f"pepper {purpose!r} version {label} must be at least "
                    f"{MIN_PEPPER_BYTES} bytes, got {len(raw)}"
                )
            versions[int(label)] = raw
        if isinstance(current, bool) or not isinstance(current, int) or current not in versions:
            raise CryptoConfigError(
                f"current pepper version of {purpose!r} must be one of its versions"
            )
        purposes[purpose] = PepperSet(current=current, versions=versions)
    return Peppers(purposes=purposes)


def load_peppers(*, environ: Mapping[str, str] | None = None) -> Peppers:
    """Read peppers from NMC_PEPPERS (JSON) or from the file named by NMC_PEPPERS_FILE.

    Setting both is refused: two sources of one secret drift apart unnoticed.
    """
    env = os.environ if environ is None else environ
    inline, path = env.get("NMC_PEPPERS"), env.get("NMC_PEPPERS_FILE")
    if inline and path:
        raise CryptoConfigError("set NMC_PEPPERS or NMC_PEPPERS_FILE, not both")
    if inline:
        try:
            document = json.loads(inline)
        except ValueError:
            raise CryptoConfigError("NMC_PEPPERS is not valid JSON") from None
        return parse_peppers(document)
    if path:
        return parse_peppers(_read_json_file(Path(path), "pepper file"))
    raise CryptoConfigError("neither NMC_PEPPERS nor NMC_PEPPERS_FILE is set")


@functools.cache
def peppers() -> Peppers:
    """The process-wide peppers, loaded once (`peppers.cache_clear()` resets)."""
    return load_peppers()


def new_peppers(purposes: tuple[str, ...] = (PURPOSE_DVREF, PURPOSE_PAYLOAD)) -> dict[str, Any]:
    """A fresh peppers document with version 1 of each purpose, for development and tests."""
    return {
        purpose: {
            "current": 1,
            "versions": {"1": base64.b64encode(secrets.token_bytes(32)).decode("ascii")},
        }
        for purpose in purposes
    }


def dvref_hmac(
    dv_id: int,
    dvref: str,
    version: int | None = None,
    *,
    pepper_set: Peppers | None = None,
) -> tuple[bytes, int]:
    """HMAC-SHA256 of (dv_id, dvRef) under the "dvref" pepper: returns (mac, pepper version).

    Message = "nmc/dvref/v1" 0x00 | dv_id (8 bytes, big endian) | NFC(dvRef) as UTF-8; the only
    variable-length part is last, so no two (dv_id, dvRef) pairs share a message. `version`
    None means the current version.
    """
    if version is None:
        pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_DVREF)
        version = pepper.current
    return dvref_hmac_many(dv_id, [dvref], version, pepper_set=pepper_set)[0], version


def dvref_hmac_many(
    dv_id: int, dvrefs: Sequence[str], version: int, *, pepper_set: Peppers | None = None
) -> list[bytes]:
    """`dvref_hmac(dv_id, dvref, version)[0]` of every dvRef, in order (the batch intake)."""
    _check_dv_id(dv_id)
    pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_DVREF)
    if version not in pepper.versions:
        raise CryptoConfigError(f"dvref pepper version {version} is not configured")
    keyed = pepper.keyed_hmac(version)
    prefix = _DVREF_PREFIX + dv_id.to_bytes(8, "big", signed=True)
    macs = []
    for dvref in dvrefs:
        if not isinstance(dvref, str):
            raise TypeError("dvref must be a str")
        mac = keyed.copy()
        mac.update(prefix + _utf8(unicodedata.normalize("NFC", dvref)))
        macs.append(mac.finalize())
    return macs


def dvref_hmacs_all(
    dv_id: int, dvref: str, *, pepper_set: Peppers | None = None
) -> list[tuple[bytes, int]]:
    """The dvRef HMAC under every configured pepper version, current first, for lookups."""
    pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_DVREF)
    order = [pepper.current, *pepper.earlier()]
    return [dvref_hmac(dv_id, dvref, v, pepper_set=pepper_set) for v in order]


def payload_hmac(
    dv_id: int,
    canonical: Mapping[str, Any],
    version: int | None = None,
    *,
    pepper_set: Peppers | None = None,
) -> tuple[bytes, int]:
    """HMAC-SHA256 of a canonical request under the "payload" pepper: (mac, pepper version).

    Message = "nmc/payload/v1" 0x00 | dv_id (8 bytes, big endian) | canonical_json(request):
    what `payload_hmac_many` takes. Keyed, so that the stored value (the idempotency check of
    the intake) cannot be used to test candidate recipients offline, as a plain hash of the
    request, recipient included, could. `version` None means the current version.
    """
    if version is None:
        pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_PAYLOAD)
        version = pepper.current
    return payload_hmac_many(dv_id, [canonical_payload(canonical)], version, pepper_set=pepper_set)[
        0
    ], version


def payload_hmac_many(
    dv_id: int, payloads: Sequence[bytes], version: int, *, pepper_set: Peppers | None = None
) -> list[bytes]:
    """The payload HMAC under pepper `version` of each `canonical_payload(...)`, in order."""
    _check_dv_id(dv_id)
    pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_PAYLOAD)
    if version not in pepper.versions:
        raise CryptoConfigError(f"payload pepper version {version} is not configured")
    keyed = pepper.keyed_hmac(version)
    prefix = _PAYLOAD_PREFIX + dv_id.to_bytes(8, "big", signed=True)
    macs = []
    for payload in payloads:
        if not isinstance(payload, bytes):
            raise TypeError("payloads must come as canonical_payload bytes")
        mac = keyed.copy()
        mac.update(prefix + payload)
        macs.append(mac.finalize())
    return macs


# --------------------------------------------------------------------------------------------
# Canonical JSON and the payload hash


def canonical_json(value: Any) -> bytes:
    """UTF-8 JSON with sorted keys, no whitespace and NFC-normalised strings.

    Only dict (str keys), list, str, int, bool and None are accepted: floats have more than one
    spelling, so they would break "same request, same bytes".
    """
    if type(value) is not dict or not _is_normal(value):
        value = _normalise(value)
    return _utf8(_encode_json(value))


def _json_encoder() -> Callable[[Any], str]:
    """json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False), made once.

    json.dumps builds a JSONEncoder and its C encoder on every call, which costs as much as
    encoding a small object like the berichtgegevens. The C encoder made here once, with the same
    settings, writes the same text for every value canonical JSON admits (no floats, no
    cycles: `_normalise` refuses those first). Without C json this is JSONEncoder.encode.
    """
    encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_c_encoder is None:
        return encoder.encode
    c_encoder = make_c_encoder(
        None,  # markers: no cycle check
        encoder.default,
        json.encoder.encode_basestring,  # what ensure_ascii=False selects
        encoder.indent,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return lambda value: "".join(c_encoder(value, 0))


_encode_json = _json_encoder()


def canonical_payload(canonical: Mapping[str, Any], *, gegevens_json: bytes | None = None) -> bytes:
    """The canonical JSON of the validated request: same request, same bytes.

    `gegevens_json`, when given, must be `berichtgegevens_json(canonical["berichtgegevens"])`,
    which the intake has made for `seal_many` already: it goes into the JSON as it is.
    The result holds the recipient: it only goes into `payload_hmac_many` (or
    `payload_hash`), never anywhere else.
    """
    if type(canonical) is not dict:  # exact dict first: the validators' result
        if not isinstance(canonical, Mapping):
            raise TypeError("payload_hash takes the canonical request dict")
    elif gegevens_json is not None:
        text = _flat_object_json(canonical, FIELD_BERICHTGEGEVENS, gegevens_json.decode("utf-8"))
        if text is not None:
            return _utf8(text)
    return canonical_json(canonical)


def payload_hash(canonical: Mapping[str, Any], *, gegevens_json: bytes | None = None) -> bytes:
    """The unkeyed SHA-256 of the canonical request, as releases before the payload pepper
    stored it (payload_pepper_versie 0). Never stored for a new row: the intake sends it
    only when the database asks for it to judge a replay of such an old row (NMP01)."""
    return hashlib.sha256(canonical_payload(canonical, gegevens_json=gegevens_json)).digest()


def _flat_object_json(value: dict[Any, Any], nested_key: str, nested_json: str) -> str | None:
    """`canonical_json(value)` as text, or None when `value` is not flat enough for this path.

    Flat enough: every member is None or an NFC `str`, but for `nested_key`, whose canonical JSON
    the caller passes as `nested_json`. Built from the same pieces as the json encoder's output
    (keys in sorted order, each string through the encoder's own escaping); the general path
    costs twice as much, mostly for encoding the berichtgegevens a second time.
    """
    layout = _member_layout(tuple(value))
    if layout is None:
        return None
    parts = []
    for key, prefix in layout:
        item = value[key]
        if key == nested_key:
            parts.append(prefix + nested_json)
        elif item is None:
            parts.append(prefix + "null")
        elif type(item) is str and (item.isascii() or unicodedata.is_normalized("NFC", item)):
            parts.append(prefix + _encode_json_string(item))
        else:
            return None
    return "{" + ",".join(parts) + "}"


@functools.lru_cache(maxsize=64)
def _member_layout(keys: tuple[Any, ...]) -> tuple[tuple[str, str], ...] | None:
    """The keys in the order canonical JSON puts them, each with its `"key":`; None unless every
    key is an NFC `str`. The intake's requests have a few key sets, so this is cached."""
    if not all(type(key) is str and unicodedata.is_normalized("NFC", key) for key in keys):
        return None
    return tuple((key, _encode_json_string(key) + ":") for key in sorted(keys))


_encode_json_string = json.encoder.encode_basestring  # the escaping of ensure_ascii=False


def _is_normal(value: dict[Any, Any]) -> bool:
    """Whether `_normalise(value)` would equal `value`, so it can be encoded as it is.

    True when every key and string is an NFC `str` (ASCII always is) and every other value is
    None, an int, a bool or a dict that is normal itself, all of exactly these types: what the
    validators produce, so the intake's berichtgegevens are not rebuilt before encoding.
    Anything else takes `_normalise`, which refuses what it must.
    """
    for key, item in value.items():
        if type(key) is not str or not (key.isascii() or unicodedata.is_normalized("NFC", key)):
            return False
        kind = type(item)
        if kind is str:
            if not (item.isascii() or unicodedata.is_normalized("NFC", item)):
                return False
        elif kind is dict:
            if not _is_normal(item):
                return False
        elif item is not None and kind is not int and kind is not bool:
            return False
    return True


def _normalise(value: Any) -> Any:
    kind = type(value)  # exact types first: this runs for every field of every intake
    if kind is str:
        return unicodedata.normalize("NFC", value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is dict:
        return _normalise_mapping(value)
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        raise TypeError("floats are not allowed in canonical JSON")
    if isinstance(value, list | tuple):
        return [_normalise(item) for item in value]
    if isinstance(value, Mapping):
        return _normalise_mapping(value)
    raise TypeError(f"{type(value).__name__} is not allowed in canonical JSON")


def _normalise_mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError("canonical JSON object keys must be str")
        nkey = unicodedata.normalize("NFC", key)
        if nkey in out:
            raise ValueError("two object keys are equal after NFC normalisation")
        out[nkey] = _normalise(item)
    return out


# --------------------------------------------------------------------------------------------
# Helpers


def _b64decode(encoded: Any, what: str) -> bytes:
    if not isinstance(encoded, str):
        raise CryptoConfigError(f"{what} must be a base64 string")
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise CryptoConfigError(f"{what} is not valid base64") from None


def _read_json_file(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CryptoConfigError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise CryptoConfigError(f"{what} {path} cannot be read ({exc.strerror})") from None
    try:
        return json.loads(text)
    except ValueError:
        raise CryptoConfigError(f"{what} {path} is not valid JSON") from None
