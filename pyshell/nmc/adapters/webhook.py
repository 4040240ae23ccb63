"""The webhook call to a DV (SPEC §7): one batch of CloudEvents, signed, with its cursor.

    POST <the DV's webhook URL>
    Content-Type: application/cloudevents-batch+json
    Authorization: Bearer <JWT: iss = the NMC, aud = the URL, exp <= 5 min, jti>
    Nmc-Cursor: <the feed cursor of the batch's last event>
    traceparent: <the span of the LDV record of this provision>

    [<CloudEvent>, …]        exactly as the feed serves them (nmc.feed.cloudevents)

The cursor is sealed with the API's codec (nmc.feed.feed_cursor), so the DV can PUT it to
/notificaties/wijzigingen/bevestiging or continue the feed from it. Redirects are not
followed: the token's `aud` names this URL only.

The DV's answer becomes an outcome word for nmc.finish_terugkoppelen_v2: 2xx `geleverd`, 410
`weg` (the DV wants no more calls), anything else, a timeout or a connection error
`mislukt`, with a short error class (`webhook-http-503`, `webhook-timeout`) that names no URL
and no content.

Before every call the URL's host is resolved and checked again (`target`,
nmc.adapters.webhook_validatie.pin_target: a webhook validated once, or in use from before
validation existed, `bestaand`, may since point somewhere it must not) and the call connects to the
checked address, with `Host`, SNI and certificate verification for the host. A refused
address is the worker's to record (the webhook is then no longer validated).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from nmc.adapters.webhook_validatie import Adresbeleid, Doel, Resolver, Validatie, pin_target, send
from nmc.adapters.webhook_validatie import system_resolver as default_resolver
from nmc.feed.cloudevents import to_cloudevent
from nmc.feed.feed_cursor import CursorCodec, Position
from nmc.signing.webhook_signing import SigningRing

SERVICE = "webhook"
CONTENT_TYPE = "application/cloudevents-batch+json"
CURSOR_HEADER = "Nmc-Cursor"
TOKEN_LIFETIME_SECONDS = 120
"""Well within the 5 minutes SPEC §7 allows, and longer than any call may take."""


@dataclass(frozen=True)
class Batch:
    body: bytes
    cursor: str
    notificatie_ids: tuple[str, ...]


@dataclass(frozen=True)
class Levering:
    """How a call went: `geleverd`, `weg` or `mislukt`, and the error class of a failure."""

    uitkomst: str
    fout: str | None = None


class WebhookClient:
    """Builds and sends the webhook batches of this NMC (its signing ring, issuer, event
    source and cursor codec)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        signing: SigningRing,
        *,
        issuer: str,
        source: str,
        cursors: CursorCodec,
        beleid: Adresbeleid,
        resolver: Resolver = default_resolver,
    ) -> None:
        self._client = client
        self._signing = signing
        self._issuer = issuer
        self._source = source
        self._cursors = cursors
        self._beleid = beleid
        self._resolver = resolver

    async def target(self, url: str) -> Doel | Validatie:
        """The URL pinned to a checked address of its host, or why it may not be called."""
        return await pin_target(url, self._beleid, self._resolver)

    def batch(self, dv_id: int, page: Mapping[str, Any]) -> Batch:
        """The body and the `Nmc-Cursor` of a non-empty page of nmc.claim_terugkoppelen_v3."""
        events = page["events"]
        if not events:
            raise ValueError("an empty page is not delivered")
        last = Position.from_page(page).after_event(events[-1])
        body = [to_cloudevent(event, self._source) for event in events]
        return Batch(
            body=json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
            cursor=self._cursors.encode(dv_id, last),
            notificatie_ids=tuple(str(event["notificatieId"]) for event in events),
        )

    async def deliver(
        self, target: Doel, batch: Batch, headers: Mapping[str, str] | None = None
    ) -> Levering:
        """POST the batch to `target`, connecting to the address that was checked."""
        token = self._signing.sign(
            target.url, issuer=self._issuer, lifetime_seconds=TOKEN_LIFETIME_SECONDS
        )
        try:
            response = await send(
                self._client,
                "POST",
                target,
                content=batch.body,
                headers={
                    **(headers or {}),
                    "Content-Type": CONTENT_TYPE,
                    "Authorization": f"Bearer {token}",
                    CURSOR_HEADER: batch.cursor,
                },
            )
        except httpx.TimeoutException:
            return Levering("mislukt", f"{SERVICE}-timeout")
        except (httpx.TransportError, httpx.InvalidURL):
            return Levering("mislukt", f"{SERVICE}-verbinding")
        if 200 <= response.status_code < 300:
            return Levering("geleverd")
        if response.status_code == 410:
            return Levering("weg", f"{SERVICE}-http-410")
        return Levering("mislukt", f"{SERVICE}-http-{response.status_code}")
