"""Reading the secret documents of the KEK ring and the peppers: JSON holding base64 keys.

Failures are `CryptoConfigError`s (a start-up failure) whose messages name the file or the
key, never the key material.
"""

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from nmc.errors import NmcError


class CryptoConfigError(NmcError):
    """The KEK ring or the peppers are missing or malformed (a start-up failure)."""


def decode_base64_secret(encoded: Any, what: str) -> bytes:
    """The bytes of a base64 string; `what` names the secret in the error."""
    if not isinstance(encoded, str):
        raise CryptoConfigError(f"{what} must be a base64 string")
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise CryptoConfigError(f"{what} is not valid base64") from None


def read_json_file(path: Path, what: str) -> Any:
    """The decoded JSON of the file at `path`; `what` names the file in the error."""
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
