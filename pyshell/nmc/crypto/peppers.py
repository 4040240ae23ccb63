"""Peppers, and the HMACs keyed with them: the dvRef HMAC and the payload HMAC.

A pepper is a secret HMAC key of one purpose (`dvref`, `payload`, and the LDV pseudonyms'
`ldv`), kept in versions so it can be rotated: new rows use the current version, lookups try
the earlier ones too. The peppers come from NMC_PEPPERS (JSON) or the file named by
NMC_PEPPERS_FILE: `{purpose: {"current": n, "versions": {"n": base64 of >= 32 bytes}}}`.

The dvRef is replaced at the door by its HMAC over (dv_id, dvRef), so no DV reference is stored
in plain text (SPEC §8); a lookup computes it under every live version.

Idempotency compares requests by their payload HMAC, keyed with a pepper of its own purpose
(`payload`) and stored with its version, like the dvRef HMAC: a plain hash of the request,
which holds the recipient, would let anyone with the database test candidate addresses or
identifying numbers offline.

Nothing here logs, and no exception message carries a pepper, a dvRef or a request.
"""

import base64
import functools
import json
import os
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.hmac import HMAC

from nmc import settings_env
from nmc.crypto.message_bytes import check_dv_id, utf8
from nmc.crypto.secret_files import CryptoConfigError, decode_base64_secret, read_json_file
from nmc.signing.canonical_json import canonical_payload

MIN_PEPPER_BYTES = 32

PURPOSE_DVREF = "dvref"
PURPOSE_PAYLOAD = "payload"

_DVREF_PREFIX = b"nmc/dvref/v1\x00"
_PAYLOAD_PREFIX = b"nmc/payload/v1\x00"


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
            raw = decode_base64_secret(encoded, f"pepper {purpose!r} version {label}")
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
    inline = settings_env.text(env, "NMC_PEPPERS")
    path = settings_env.text(env, "NMC_PEPPERS_FILE")
    if inline and path:
        raise CryptoConfigError("set NMC_PEPPERS or NMC_PEPPERS_FILE, not both")
    if inline:
        try:
            document = json.loads(inline)
        except ValueError:
            raise CryptoConfigError("NMC_PEPPERS is not valid JSON") from None
        return parse_peppers(document)
    if path:
        return parse_peppers(read_json_file(Path(path), "pepper file"))
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
    check_dv_id(dv_id)
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
        mac.update(prefix + utf8(unicodedata.normalize("NFC", dvref)))
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
    check_dv_id(dv_id)
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
