"""What a span may say before it leaves the process: nothing personal (SPEC §8).

The NMC's own spans carry only ids, kinds and outcome words. The instrumentations add what
they know of a request, and two things there can hold personal data: a query string (a
DV's list by `dvRef`, a webhook URL's parameters) and an exception's message (a database
error may quote a value). So every exported span, its events and its links pass this filter:
* URL attributes (`http.url`, `url.full`, `http.target`) lose their query string and any
  credentials, and `url.query` is dropped;
* exception events keep `exception.type` only (no message, no stack trace with values in
  it), and a span's error status keeps its code without the description;
* `db.statement` / `db.query.text` is the statement's text, never its parameters (the
  psycopg instrumentation only ever records the text; nothing here adds values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status
from opentelemetry.util.types import Attributes

URL_KEYS = frozenset({"http.url", "url.full", "http.target"})
DROPPED_KEYS = frozenset(
    {
        "url.query",
        "exception.message",
        "exception.stacktrace",
        # A statement's parameters (the psycopg instrumentation records them only when asked,
        # which the NMC never does; dropped should a later release default otherwise).
        "db.statement.parameters",
    }
)


def clean_url(value: Any) -> Any:
    """The URL or target without its query string, fragment or credentials."""
    if not isinstance(value, str):
        return value
    value = value.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = value.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        authority, slash, path = rest.partition("/")
        value = f"{scheme}://{authority.rsplit('@', 1)[1]}{slash}{path}"
    return value


def clean_attributes(attributes: Attributes) -> dict[str, Any]:
    if not attributes:
        return {}
    return {
        key: clean_url(value) if key in URL_KEYS else value
        for key, value in attributes.items()
        if key not in DROPPED_KEYS
    }


def clean_span(span: ReadableSpan) -> ReadableSpan:
    """A copy of `span` with only what may be exported."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=clean_attributes(span.attributes),
        events=[
            Event(event.name, clean_attributes(event.attributes), event.timestamp)
            for event in span.events
        ],
        links=[Link(link.context, clean_attributes(link.attributes)) for link in span.links],
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class PrivateSpanExporter(SpanExporter):
    """Exports through `inner` what `clean_span` leaves of each span."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([clean_span(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def attribute_texts(span: ReadableSpan) -> Mapping[str, str]:
    """Every attribute of a span, its events and links, as text by where it is (the
    suite's personal-data scan reads these)."""
    texts: dict[str, str] = {"name": span.name}
    for key, value in (span.attributes or {}).items():
        texts[f"attribute {key}"] = str(value)
    for event in span.events:
        texts[f"event {event.name}"] = event.name
        for key, value in (event.attributes or {}).items():
            texts[f"event {event.name} {key}"] = str(value)
    for i, link in enumerate(span.links):
        for key, value in (link.attributes or {}).items():
            texts[f"link {i} {key}"] = str(value)
    if span.status.description:
        texts["status"] = span.status.description
    return texts
