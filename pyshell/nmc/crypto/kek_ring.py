"""The KEK ring: the key-encryption keys that wrap each notificatie's data key (nmc.crypto.sealing).

The ring is a JSON document `{"active": id, "keys": {id: base64 of 32 bytes}}` in the file
named by NMC_KEK_FILE. The active KEK wraps new data keys; every KEK in the ring unwraps, so
data wrapped before a rotation still opens. Nothing here logs, and no exception message
carries key material.
"""

import base64
import functools
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from nmc import settings_env
from nmc.crypto.secret_files import CryptoConfigError, decode_base64_secret, read_json_file
from nmc.errors import NmcError

KEY_BYTES = 32

_KEK_ID = re.compile(r"\A[A-Za-z0-9._:-]{1,64}\Z")


class UnknownKekError(NmcError):
    """A wrapped key names a KEK that is not in the ring."""


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
        raw = decode_base64_secret(encoded, f"KEK {kek_id!r}")
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
        path = settings_env.text(env, "NMC_KEK_FILE")
        if not path:
            raise CryptoConfigError("NMC_KEK_FILE is not set: the KEK ring cannot be loaded")
    return parse_kek_ring(read_json_file(Path(path), "KEK file"))


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
