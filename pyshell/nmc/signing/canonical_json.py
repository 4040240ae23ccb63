"""Canonical JSON: one byte string for one value, so the same request gives the same bytes.

UTF-8 JSON with sorted keys, no whitespace and NFC-normalised strings; floats are refused,
since they have more than one spelling. Three uses: the berichtgegevens plaintext that
nmc.crypto.sealing encrypts (`berichtgegevens_json`), the request the payload HMAC of
nmc.crypto.peppers is computed over (`canonical_payload`), and the unkeyed payload hash of
rows from before the payload pepper (`payload_hash`). The intake runs this for every
notificatie, hence the fast paths beside the general one.
"""

import functools
import hashlib
import json
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from nmc.crypto.message_bytes import utf8

_BERICHTGEGEVENS = "berichtgegevens"  # the request member that holds the berichtgegevens


def canonical_json(value: Any) -> bytes:
    """UTF-8 JSON with sorted keys, no whitespace and NFC-normalised strings.

    Only dict (str keys), list, str, int, bool and None are accepted: floats have more than one
    spelling, so they would break "same request, same bytes".
    """
    if type(value) is not dict or not _is_normal(value):
        value = _normalise(value)
    return utf8(_encode_json(value))


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
        text = _flat_object_json(canonical, _BERICHTGEGEVENS, gegevens_json.decode("utf-8"))
        if text is not None:
            return utf8(text)
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
