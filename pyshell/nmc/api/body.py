"""Reading a JSON request body: media type, size limit, syntax. Errors never echo the body.

The media type is `application/json`, declaring no charset but UTF-8 (`is_json_media_type`).
The body is JSON as RFC 8259 has it for an exchange between systems: UTF-8 only (no UTF-16
or UTF-32, no byte order mark; json.loads would guess them from the bytes), no NaN or
Infinity, and no member name twice in one object (json.loads would keep the last one
silently, so two readers of one request could disagree on what it says).
"""

import json
from typing import Any

from starlette.requests import Request

from nmc.api.problems import Problem, invalid_input, unsupported_media_type
from nmc.api.validation import violation


def is_json_media_type(content_type: str | None) -> bool:
    """`application/json`, in UTF-8: at most one parameter, `charset=utf-8` (any case, quoted
    or not). Not a +json type (`merge-patch+json` and `problem+json` say something else than
    a plain request), and no other charset: the body is decoded as UTF-8 whatever is declared,
    so a declared UTF-16 or Latin-1 body would be read as what it is not."""
    if not content_type:
        return False
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != "application/json":
        return False
    if not parameters:
        return True
    if len(parameters) > 1:
        return False
    name, _, value = parameters[0].partition("=")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return name.strip().lower() == "charset" and value.lower() == "utf-8"


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused as soon as it passes `limit` bytes (Content-Length or counted)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, limit: int) -> Any:
    """The decoded JSON body; 415 for another media type, 400 for a large or invalid body."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise unsupported_media_type()
    return parse_json(await read_body(request, limit))


def parse_json(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")  # strict: no lone surrogates either
    except UnicodeDecodeError:
        raise invalid_input(
            [violation("", "is geen geldige UTF-8")], detail="Het verzoek is geen geldige JSON."
        ) from None
    try:
        return _DECODER.decode(text)
    except DuplicateMember:
        raise invalid_input(
            [violation("", DUPLICATE_MEMBER_MESSAGE)], detail="Het verzoek is geen geldige JSON."
        ) from None
    except (ValueError, RecursionError):
        # json's message quotes the input around the error: never pass it on. A byte order
        # mark ends up here too (it is no JSON whitespace).
        raise invalid_input(
            [violation("", "is geen geldige JSON")], detail="Het verzoek is geen geldige JSON."
        ) from None


DUPLICATE_MEMBER_MESSAGE = "bevat een veld twee keer in hetzelfde object"


class DuplicateMember(ValueError):
    """A member name occurs twice in one JSON object."""


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise DuplicateMember
    return result


def too_large(limit: int) -> Problem:
    # A 400 with a violation, as for every other input rule (the DV API's documented answer
    # for bad input), rather than a bare 413.
    return invalid_input(
        [violation("", f"is groter dan {limit} bytes")], detail="Het verzoek is te groot."
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


# One decoder, built once: json.loads with a hook would build a new one on every call. The
# hook keeps the C scanner; it costs about a tenth of the parse of a 1000-item batch.
_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, object_pairs_hook=_object_without_duplicates
)
