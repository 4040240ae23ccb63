"""The worker's spans: one per task, *linked* to its notification's intake span.

A task runs minutes to days after the request that made it, so its span is not a child of
the intake span (that trace would stay open for days); it starts a trace of its own and
links to the intake span, as River and Oban do for jobs. The link's context is what the
intake stored (nmc.intake_sporen: the trace id and the intake's span id); its attribute names
the notificatie. The task's LDV records, written under the intake's trace id (SPEC §8),
are links too (`link_ldv`).

Claimed kinds (verzenden, reconciliëren, ongeldig-melden, terugkoppelen): one CONSUMER span
per task around its handler, the links read per claimed batch in one call. SQL-only kinds
that judge notifications (receipt, vaststellen): one span per round that handled any, with a
link per notification (`record_round`); an idle round leaves none. Root spans of the
psycopg instrumentation (the claim and poll queries outside any task) are not sampled
(nmc.tracing.sampling), so an idle worker exports nothing.

Only used while tracing is on: `traced_kinds` and `outbound` return what they are given
when it is off, `record_round` and `link_*` return at once.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable
from typing import Any

import nmc.tracing as tracing

# The kinds whose tasks are about notifications (the others are upkeep: their polls would
# only add noise).
TRACED_KINDS = frozenset({"verzenden", "reconciliëren", "ongeldig-melden", "terugkoppelen"})
MAX_LINKS = 128  # the SDK's default limit of links per span
LINK_INTAKE = "intake"
LINK_LDV = "ldv"


def clock() -> int:
    """The start of a round in the SDK's unit (ns since the epoch); cheap when off."""
    return time.time_ns()


def traced_kinds(kinds: dict[str, Any]) -> dict[str, Any]:
    """The worker's kinds with spans around the handlers of TRACED_KINDS (the same dict
    when tracing is off)."""
    if not tracing.enabled():
        return kinds
    return {
        soort: _traced(kind) if soort in TRACED_KINDS and kind.handle else kind
        for soort, kind in kinds.items()
    }


def outbound(transport: Any) -> Any:
    """The worker's outbound transport under the httpx instrumentation's (client spans,
    `traceparent` on every call), or `transport` itself when tracing is off (None: httpx's
    default transport, left to the client then)."""
    if not tracing.enabled():
        return transport
    import httpx
    from opentelemetry.instrumentation.httpx import AsyncOpenTelemetryTransport

    if transport is None:
        transport = httpx.AsyncHTTPTransport()

    return AsyncOpenTelemetryTransport(transport, tracer_provider=tracing.provider())


async def intake_links(db: Any, notificatie_ids: Iterable[uuid.UUID | str | None]) -> dict:
    """Per notificatie id (as text) the link to its intake span, read in one call."""
    ids = list(dict.fromkeys(str(i) for i in notificatie_ids if i is not None))[:MAX_LINKS]
    if not ids:
        return {}
    from opentelemetry.trace import Link

    rows = await db.fetch_all("intake_sporen", {"notificatie_ids": ids})
    return {
        str(row.notificatie_id): Link(
            _context(row.trace_id, row.span_id),
            {"nmc.link": LINK_INTAKE, "nmc.notificatie.id": str(row.notificatie_id)},
        )
        for row in rows
    }


async def record_round(
    db: Any, soort: str, started: int, notificatie_ids: list[uuid.UUID | str]
) -> None:
    """The span of one round of a SQL-only kind that handled `notificatie_ids` (none: no
    span), from `started` until now, linked to each one's intake span."""
    if not tracing.enabled() or not notificatie_ids:
        return
    from opentelemetry.trace import SpanKind

    links = await intake_links(db, notificatie_ids)
    span = tracing.tracer().start_span(
        soort,
        kind=SpanKind.CONSUMER,
        start_time=started,
        links=list(links.values()),
        attributes={**_messaging(soort), "nmc.taken.aantal": len(notificatie_ids)},
    )
    span.end()


async def link_notificaties(db: Any, notificatie_ids: Iterable[uuid.UUID | str]) -> None:
    """Link the current span (a task's) to the intake spans of these notifications (a
    webhook batch names several)."""
    if not tracing.enabled():
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording():
        return
    for link in (await intake_links(db, notificatie_ids)).values():
        span.add_link(link.context, link.attributes)


def link_ldv(trace_id: str, span_id: str) -> None:
    """Link the current span to the LDV record of the call it is about to make (the record
    is a span of the intake's trace, SPEC §8; the call itself carries this span's
    `traceparent`)."""
    if not tracing.enabled():
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.add_link(_context(trace_id, span_id), {"nmc.link": LINK_LDV})


def _traced(kind: Any) -> Any:
    """`kind` with its claim reading the intake links of the batch and its handler in a
    span that carries them."""
    from opentelemetry.trace import SpanKind

    pending: dict[int, Any] = {}
    claim, handle, soort = kind.claim, kind.handle, kind.soort

    async def traced_claim(ctx: Any, batch: int) -> list:
        claimed = await claim(ctx, batch)
        ids = [getattr(taak, "notificatie_id", None) for taak in claimed]
        if any(ids):
            links = await intake_links(ctx.db, ids)
            for taak, notificatie_id in zip(claimed, ids, strict=True):
                link = links.get(str(notificatie_id))
                if link is not None:
                    pending[taak.taak_id] = link
        return claimed

    async def traced_handle(ctx: Any, taak: Any) -> str:
        link = pending.pop(taak.taak_id, None)
        attributes = {**_messaging(soort), "nmc.taak.id": taak.taak_id}
        if getattr(taak, "notificatie_id", None) is not None:
            attributes["nmc.notificatie.id"] = str(taak.notificatie_id)
        with tracing.tracer().start_as_current_span(
            soort,
            kind=SpanKind.CONSUMER,
            links=[link] if link is not None else None,
            attributes=attributes,
        ) as span:
            uitkomst = await handle(ctx, taak)
            span.set_attribute("nmc.taak.uitkomst", uitkomst)
            return uitkomst

    return dataclasses.replace(kind, claim=traced_claim, handle=traced_handle)


def _messaging(soort: str) -> dict[str, str]:
    """The messaging attributes of a task's span: the NMC's task table is the queue."""
    return {
        "messaging.system": "nmc",
        "messaging.operation.type": "process",
        "messaging.destination.name": soort,
        "nmc.taak.soort": soort,
    }


def _context(trace_id: str, span_id: str) -> Any:
    from opentelemetry.trace import SpanContext, TraceFlags

    return SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags.SAMPLED
    )
