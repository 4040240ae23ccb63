"""Envelope encryption of a notificatie's personal data, the peppered dvRef HMAC, the payload hash.

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

import base64
import binascii
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import unicodedata
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

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

_FIELD_AAD_PREFIX = b"nmc/field/v1\x00"
_WRAP_AAD_PREFIX = b"nmc/wrap/v1\x00"
_DVREF_PREFIX = b"nmc/dvref/v1\x00"
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
    ring = kek_ring() if ring is None else ring
    _check_ids(notificatie_id, dv_id)
    if not isinstance(recipient, str):
        raise TypeError("recipient must be a str")
    plain_gegevens = _berichtgegevens_bytes(berichtgegevens)
    data_key = AESGCM.generate_key(bit_length=256)
    data_cipher = AESGCM(data_key)
    return Sealed(
        recipient=_encrypt(
            data_cipher, _utf8(recipient), _field_aad(notificatie_id, dv_id, FIELD_RECIPIENT)
        ),
        berichtgegevens=_encrypt(
            data_cipher, plain_gegevens, _field_aad(notificatie_id, dv_id, FIELD_BERICHTGEGEVENS)
        ),
        wrapped_key=_wrap(ring, ring.active_id, data_key, notificatie_id),
        kek_id=ring.active_id,
    )


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
    nonce = secrets.token_bytes(NONCE_BYTES)
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


def _berichtgegevens_bytes(berichtgegevens: Mapping[str, str]) -> bytes:
    if not isinstance(berichtgegevens, Mapping):
        raise TypeError("berichtgegevens must be a mapping of str to str")
    for key, value in berichtgegevens.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("berichtgegevens must be a mapping of str to str")
    return canonical_json(dict(berichtgegevens))


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text contains an unpaired surrogate") from None


# --------------------------------------------------------------------------------------------
# Peppers and the dvRef HMAC


@dataclass(frozen=True)
class PepperSet:
    """The pepper versions of one purpose; `current` is used for new rows."""

    current: int
    versions: Mapping[int, bytes] = field(repr=False)


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


def new_peppers(purposes: tuple[str, ...] = (PURPOSE_DVREF,)) -> dict[str, Any]:
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
    _check_dv_id(dv_id)
    if not isinstance(dvref, str):
        raise TypeError("dvref must be a str")
    pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_DVREF)
    if version is None:
        version = pepper.current
    try:
        key = pepper.versions[version]
    except KeyError:
        raise CryptoConfigError(f"dvref pepper version {version} is not configured") from None
    message = (
        _DVREF_PREFIX
        + dv_id.to_bytes(8, "big", signed=True)
        + _utf8(unicodedata.normalize("NFC", dvref))
    )
    return hmac.new(key, message, hashlib.sha256).digest(), version


def dvref_hmacs_all(
    dv_id: int, dvref: str, *, pepper_set: Peppers | None = None
) -> list[tuple[bytes, int]]:
    """The dvRef HMAC under every configured pepper version, current first, for lookups."""
    pepper = (peppers() if pepper_set is None else pepper_set).for_purpose(PURPOSE_DVREF)
    older = sorted((v for v in pepper.versions if v != pepper.current), reverse=True)
    order = [pepper.current, *older]
    return [dvref_hmac(dv_id, dvref, v, pepper_set=pepper_set) for v in order]


# --------------------------------------------------------------------------------------------
# Canonical JSON and the payload hash


def canonical_json(value: Any) -> bytes:
    """UTF-8 JSON with sorted keys, no whitespace and NFC-normalised strings.

    Only dict (str keys), list, str, int, bool and None are accepted: floats have more than one
    spelling, so they would break "same request, same bytes".
    """
    text = json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _utf8(text)


def payload_hash(canonical: Mapping[str, Any]) -> bytes:
    """SHA-256 of the canonical JSON of the validated request: same request, same hash."""
    if not isinstance(canonical, Mapping):
        raise TypeError("payload_hash takes the canonical request dict")
    return hashlib.sha256(canonical_json(dict(canonical))).digest()


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
