"""The daily beheer report to an `https:` beheer channel: one signed POST, like the webhook.

    POST <the DV's beheerkanaal URL>
    Content-Type: application/cloudevents+json
    Authorization: Bearer <JWT: iss = the NMC, aud = the URL, exp <= 5 min, jti>
    traceparent: <the span of the LDV record, when the report lists notifications>

    {"specversion": "1.0", "id": <report id>, "source": <the NMC>, "type":
     "nl.overheid.moz.nmc.beheerrapport", "subject": <the DV's OIN>, "time": …,
     "datacontenttype": "application/json", "data": <the report>}

The token is the webhook's (nmc.signing.webhook_signing: the same ring, issuer and JWKS), so a DV
verifies it as it verifies its webhook calls. The id stays the same for every try of one
day's report, so a DV that saw it already can ignore a repeat. The target is checked like a
webhook's (nmc.adapters.webhook_validatie: no loopback, link-local or private address unless
allowed) before every call, and the call connects to the address that was checked (`Host`, SNI and
certificate verification for the host); redirects are not followed. An `http:` channel is
refused (`beheerkanaal-geen-https`) unless every address it resolves to lies in an
explicitly allowed network (NMC_WEBHOOK_TOEGESTANE_NETWERKEN: tests and demos on loopback):
a report in plain text over the internet is not sent.

Answers: a 2xx is delivered; 408, 429, 5xx, a timeout or a connection error concern the call
(`Deferral`, backoff, not counted); any other answer (the DV refuses the report) is a failure
of the task (`UnexpectedResponse`: counted, and after the attempts the task waits for an
operator). Error classes name no URL and no content.
"""

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from nmc.adapters.http import Deferral, UnexpectedResponse
from nmc.adapters.webhook_validatie import (
    ADRES_GEWEIGERD,
    Adresbeleid,
    Resolver,
    Validatie,
    pin_target,
    send,
)
from nmc.adapters.webhook_validatie import system_resolver as default_resolver
from nmc.signing.webhook_signing import SigningRing

SERVICE = "beheerkanaal"
CONTENT_TYPE = "application/cloudevents+json"
EVENT_TYPE = "nl.overheid.moz.nmc.beheerrapport"
TOKEN_LIFETIME_SECONDS = 120
DEFERRED_STATUSES = frozenset({408, 429})


class BeheerkanaalClient:
    """Sends beheer reports to https: channels, signed with the NMC's webhook ring."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        signing: SigningRing,
        *,
        issuer: str,
        source: str,
        beleid: Adresbeleid,
        resolver: Resolver = default_resolver,
    ) -> None:
        self._client = client
        self._signing = signing
        self._issuer = issuer
        self._source = source
        self._beleid = beleid
        self._resolver = resolver

    def event(self, rapport_id: str, oin: str, data: Mapping[str, Any]) -> bytes:
        body = {
            "specversion": "1.0",
            "id": rapport_id,
            "source": self._source,
            "type": EVENT_TYPE,
            "subject": oin,
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "datacontenttype": "application/json",
            "data": dict(data),
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def post(
        self,
        url: str,
        rapport_id: str,
        oin: str,
        data: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Deliver the report; returns on a 2xx, raises `Deferral` or `UnexpectedResponse`."""
        target = await pin_target(url, self._beleid, self._resolver)
        if isinstance(target, Validatie):
            # A refused address is the channel's configuration, not an outage: it fails.
            word = "adres-geweigerd" if target.uitkomst == ADRES_GEWEIGERD else target.uitkomst
            raise UnexpectedResponse(f"{SERVICE}-{word}")
        if urlsplit(url).scheme.lower() != "https" and not self._beleid.allows(target.adres):
            raise UnexpectedResponse(f"{SERVICE}-geen-https")
        token = self._signing.sign(
            url, issuer=self._issuer, lifetime_seconds=TOKEN_LIFETIME_SECONDS
        )
        try:
            response = await send(
                self._client,
                "POST",
                target,
                content=self.event(rapport_id, oin, data),
                headers={
                    **(headers or {}),
                    "Content-Type": CONTENT_TYPE,
                    "Authorization": f"Bearer {token}",
                },
            )
        except httpx.TimeoutException:
            raise Deferral(f"{SERVICE}-timeout") from None
        except (httpx.TransportError, httpx.InvalidURL):
            raise Deferral(f"{SERVICE}-verbinding") from None
        status = response.status_code
        if 200 <= status < 300:
            return
        if status >= 500 or status in DEFERRED_STATUSES:
            raise Deferral(f"{SERVICE}-http-{status}")
        raise UnexpectedResponse(f"{SERVICE}-http-{status}")
