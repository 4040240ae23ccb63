"""Input of the feed endpoints: query parameters, the acknowledgement body, the Accept header.

Like the other validators: an unknown or repeated parameter is refused, every violation is
listed, and no message repeats the value that was sent. Whether a cursor is ours (and the
caller's) is the codec's judgement (`nmc.feed.feed_cursor`), made in the handler.
"""

import re
from collections.abc import Iterable
from typing import Any

from nmc.api.validation import (
    ValidationFailed,
    Violation,
    query_parameters,
    unknown_member,
    violation,
)
from nmc.feed.cursor_codec import MAX_TOKEN_CHARS

FEED_LIMIET_MAX = 10_000
"""The query's upper bound; the database caps a page at the DV's feedMaxPagina."""
SNAPSHOT_LIMIET_DEFAULT = 1000
SNAPSHOT_LIMIET_MAX = 5000
TOKEN_PATTERN = rf"^[A-Za-z0-9_-]{{1,{MAX_TOKEN_CHARS}}}$"
EVENT_STREAM = "text/event-stream"
INVALID_CURSOR = "is geen geldige cursor"

_TOKEN = re.compile(rf"\A[A-Za-z0-9_-]{{1,{MAX_TOKEN_CHARS}}}\Z")
_DIGITS = re.compile(r"\A[0-9]{1,6}\Z")


def parse_feed_query(params: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """GET /notificaties/wijzigingen: `cursor` (optional), `limiet` (1-10000, optional)."""
    seen, errors = query_parameters(params, ("cursor", "limiet"))
    cursor = _token(seen, "cursor", errors)
    limiet = _limiet(seen, errors, maximum=FEED_LIMIET_MAX, default=None)
    _raise_if_any(errors)
    return {"cursor": cursor, "limiet": limiet}


def parse_snapshot_query(params: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """GET /notificaties/_snapshot: `na` (the previous page's `volgende`), `limiet`."""
    seen, errors = query_parameters(params, ("na", "limiet"))
    na = _token(seen, "na", errors)
    limiet = _limiet(seen, errors, maximum=SNAPSHOT_LIMIET_MAX, default=SNAPSHOT_LIMIET_DEFAULT)
    _raise_if_any(errors)
    return {"na": na, "limiet": limiet}


def parse_bevestiging(body: Any) -> str:
    """The body of PUT /notificaties/wijzigingen/bevestiging: `{"cursor": "..."}`."""
    if not isinstance(body, dict):
        raise ValidationFailed([violation("", "moet een JSON-object zijn")])
    errors = [
        unknown_member("", position) for position, name in enumerate(body, 1) if name != "cursor"
    ]
    cursor = body.get("cursor")
    if cursor is None:
        errors.append(violation("cursor", "is verplicht"))
    elif not isinstance(cursor, str) or not _TOKEN.match(cursor):
        errors.append(violation("cursor", INVALID_CURSOR))
    _raise_if_any(errors)
    return cursor


OLDEST = "oudste"


def parse_webhook_positie(body: Any) -> str | None:
    """The body of PUT /webhook/positie: `{"cursor": "..."}` (a feed cursor the DV holds) or
    `{"vanaf": "oudste"}` (the oldest available event, returned as None)."""
    if not isinstance(body, dict):
        raise ValidationFailed([violation("", "moet een JSON-object zijn")])
    errors = [
        unknown_member("", position)
        for position, name in enumerate(body, start=1)
        if name not in ("cursor", "vanaf")
    ]
    cursor, vanaf = body.get("cursor"), body.get("vanaf")
    if ("cursor" in body) == ("vanaf" in body):
        errors.append(violation("", "geef cursor of vanaf, niet beide en niet geen van beide"))
    elif "cursor" in body and (not isinstance(cursor, str) or not _TOKEN.match(cursor)):
        errors.append(violation("cursor", INVALID_CURSOR))
    elif "vanaf" in body and vanaf != OLDEST:
        errors.append(violation("vanaf", f"moet {OLDEST!r} zijn"))
    _raise_if_any(errors)
    return cursor if isinstance(cursor, str) else None


def wants_event_stream(accept: str | None) -> bool:
    """True when the Accept header lists text/event-stream (with a q above 0)."""
    if not accept:
        return False
    for item in accept.split(","):
        media_type, *parameters = (part.strip() for part in item.split(";"))
        if media_type.lower() != EVENT_STREAM:
            continue
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q" and _is_zero(value.strip()):
                return False
        return True
    return False


def last_event_id(header: str | None) -> str | None:
    """The SSE `Last-Event-ID` header as a cursor; an invalid one is a 400 like `cursor`."""
    if header is None or header == "":
        return None
    if not _TOKEN.match(header):
        raise ValidationFailed([violation("Last-Event-ID", INVALID_CURSOR, "header")])
    return header


def _token(seen: dict[str, str], name: str, errors: list[Violation]) -> str | None:
    value = seen.get(name)
    if value is not None and not _TOKEN.match(value):
        errors.append(violation(name, INVALID_CURSOR, "query"))
        return None
    return value


def _limiet(
    seen: dict[str, str], errors: list[Violation], *, maximum: int, default: int | None
) -> int | None:
    text = seen.get("limiet")
    if text is None:
        return default
    if _DIGITS.match(text) and 1 <= int(text) <= maximum:
        return int(text)
    errors.append(violation("limiet", f"moet een geheel getal van 1 tot {maximum} zijn", "query"))
    return default


def _is_zero(value: str) -> bool:
    try:
        return float(value) == 0
    except ValueError:
        return False


def _raise_if_any(errors: list[Violation]) -> None:
    if errors:
        raise ValidationFailed(errors)
