"""Logboek Dataverwerkingen (SPEC §8): one record BEFORE each external call that processes
personal data, under the trace id of the intake.

A record is a span in the LDV's OpenTelemetry shape: trace id, span id, name, start and end,
status, and the `dpl.core.*` attributes: the processing activity and a pseudonymised data
subject (an HMAC of the e-mail address or identifying number, never the value itself). The
span id travels on the call as a W3C `traceparent` header, so the record and the call can be
matched. With tracing on (nmc.tracing) the call carries its own client span's `traceparent`
instead, and the task's span links to the record.

Sinks: `NMC_LDV_URL` (HTTP POST, confirmed by a 2xx) or else an append-only JSON-lines file
(`NMC_LDV_FILE`, default `$NMC_HOME/ldv.jsonl`), fsync'd before the call goes out; writes that
arrive together share one fsync. A failing write raises `Deferral` (SPEC §8: an LDV outage
defers the task like any outage).
"""

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import httpx

from nmc.adapters.http import Deferral, request, traceparent
from nmc.crypto.peppers import PURPOSE_DVREF, Peppers, peppers
from nmc.tracing import worker as tracing

SERVICE = "ldv"
RESOURCE = {"service.name": "nmc", "service.namespace": "moza"}

# The NMC's processing activities (register of processing, AVG art. 30).
ACTIVITEIT_VERZENDEN = "nmc-notificatie-verzenden"
ACTIVITEIT_VOORKEUR = "nmc-voorkeur-ophalen"
ACTIVITEIT_ONGELDIG = "nmc-contactgegeven-ongeldig-melden"
ACTIVITEIT_STATUS_VERSTREKKEN = "nmc-status-verstrekken"
"""Statuses provided to a DV: a feed page, an SSE batch, a snapshot page, a webhook batch."""

PURPOSE_LDV = "ldv"
_PSEUDONYM_PREFIX = b"nmc/ldv/v1\x00"
_DERIVE_LABEL = b"nmc/ldv-key/v1"


@dataclass(frozen=True)
class Betrokkene:
    """The data subject of a processing: kind (`email`, `BSN`, `KVK`, `RSIN`) and value."""

    soort: str
    waarde: str = field(repr=False)


def pseudonym_key(pepper_set: Peppers | None = None) -> bytes:
    """The key of the data-subject HMAC: the `ldv` pepper, else one derived from `dvref`.

    Deriving keeps a separate key per purpose without a second secret to configure.
    """
    if pepper_set is None:
        pepper_set = peppers()
    if PURPOSE_LDV in pepper_set.purposes:
        ldv = pepper_set.for_purpose(PURPOSE_LDV)
        return ldv.versions[ldv.current]
    dvref = pepper_set.for_purpose(PURPOSE_DVREF)
    return hmac.new(dvref.versions[dvref.current], _DERIVE_LABEL, hashlib.sha256).digest()


def pseudonymise(key: bytes, betrokkene: Betrokkene) -> str:
    """HMAC-SHA256 over (kind, normalised value), hex: stable per subject, not reversible."""
    value = betrokkene.waarde.strip()
    if betrokkene.soort == "email":
        value = value.lower()
    message = _PSEUDONYM_PREFIX + betrokkene.soort.encode() + b"\x00" + value.encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class Sink(Protocol):
    async def write(self, record: Mapping[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


class HttpSink:
    """POSTs each record to the LDV collector; only a 2xx counts as written."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self._client = client
        self._url = url

    async def write(self, record: Mapping[str, Any]) -> None:
        response = await request(self._client, SERVICE, "POST", self._url, json=record)
        if not 200 <= response.status_code < 300:
            raise Deferral(f"{SERVICE}-http-{response.status_code}")

    async def aclose(self) -> None:
        return None


class FileSink:
    """Appends JSON lines to a file and fsyncs; concurrent writers share one fsync."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pending: list[tuple[bytes, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._fd: int | None = None

    async def write(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((line, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._append, b"".join(line for line, _ in batch))
            except OSError:
                self._close_fd()
                for _, done in batch:
                    if not done.done():
                        done.set_exception(Deferral(f"{SERVICE}-bestand"))
                continue
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    async def aclose(self) -> None:
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        self._close_fd()


class Ldv:
    """Writes the LDV record of one processing and returns the headers for the call."""

    def __init__(self, sink: Sink, key: bytes) -> None:
        self._sink = sink
        self._key = key

    async def register(
        self, trace_id: str, name: str, activiteit: str, betrokkene: Betrokkene
    ) -> dict[str, str]:
        """Write the record (raises `Deferral` when it cannot be written); return the
        `traceparent` header the following call carries."""
        record = span_record(
            trace_id,
            name,
            {
                "dpl.core.processing_activity_id": activiteit,
                "dpl.core.data_subject_id": pseudonymise(self._key, betrokkene),
                "dpl.core.data_subject_id_type": betrokkene.soort,
            },
        )
        await self._sink.write(record)
        tracing.link_ldv(trace_id, record["span_id"])
        return traceparent(trace_id, record["span_id"])

    async def register_verstrekking(
        self, trace_id: str, name: str, dv_id: int, notificatie_ids: Iterable[str]
    ) -> dict[str, str]:
        """The record of statuses provided to a DV (a webhook batch), as the API writes one per
        feed page (nmc.api.verstrekking_ldv): no data subject the worker could name, the
        notification ids are the pseudonymous link. Raises `Deferral` when it cannot be
        written; returns the `traceparent` of the call."""
        record = span_record(trace_id, name, verstrekking_attributes(dv_id, notificatie_ids))
        await self._sink.write(record)
        tracing.link_ldv(trace_id, record["span_id"])
        return traceparent(trace_id, record["span_id"])

    async def aclose(self) -> None:
        await self._sink.aclose()


def span_record(trace_id: str, name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """An LDV record: one finished span (fresh span id, start = end = now, status OK) of the
    NMC resource with the processing's attributes."""
    moment = _utc_now()
    return {
        "trace_id": trace_id,
        "span_id": secrets.token_hex(8),
        "parent_span_id": None,
        "name": name,
        "start_time": moment,
        "end_time": moment,
        "status_code": "OK",
        "resource": RESOURCE,
        "attributes": attributes,
    }


def verstrekking_attributes(dv_id: int, notificatie_ids: Iterable[str]) -> dict[str, Any]:
    """Attributes of a provision of statuses to a DV: no data subject the NMC could name
    there; the notification ids are the pseudonymous link."""
    return {
        "dpl.core.processing_activity_id": ACTIVITEIT_STATUS_VERSTREKKEN,
        "nmc.dienstverlener": dv_id,
        "nmc.notificatie_ids": sorted(set(notificatie_ids)),
    }


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
