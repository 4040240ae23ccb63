"""`NmcClient`: the DV API of the NMC (SPEC §7) as Python calls, one method per operation.

`base_url` is the API's base, the `servers` URL of its OpenAPI document, e.g.
`https://nmc.example/api/nmc/v1`; paths below it are the document's. `token_provider` returns
a bearer token from the DV's IAM (called before every attempt, so it may refresh). Pass `http`
to reuse an httpx.Client (its timeouts, proxies, mTLS for FSC); otherwise one is made and
closed with the client.

Logging: the client logs nothing. httpx logs request URLs at INFO on its own logger `httpx`;
a dvRef search puts the dvRef in the query, so keep that logger at WARNING where dvRefs are
sensitive.
"""

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from .bewijs import Afleverbewijs, KeySource, verify_afleverbewijs
from .problems import Conflict
from .transport import RetryPolicy, Transport
from .webhook import JwksCache

Regie = Literal["decentraal", "centraal"]
BATCH_MAX = 1000
JWKS_PATH = "/.well-known/jwks.json"
ACK_RESULT_HEADER = "Nmc-Bevestiging"
CANCELLED = "geannuleerd"


@dataclass(frozen=True)
class Accepted:
    """202 of an intake: the notification's id (the same again for a repeated request)."""

    notificatie_id: str
    location: str | None


@dataclass(frozen=True)
class BatchAccepted:
    batch_id: str | None
    notificatie_ids: list[str]


@dataclass(frozen=True)
class Status:
    """A notification's status with version and attempts (`data` is the whole answer)."""

    etag: str | None
    data: Mapping[str, Any]

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def versie(self) -> int:
        return int(self.data["versie"])


@dataclass(frozen=True)
class FeedPage:
    """One page of the feed: CloudEvents and the cursor after them (also when empty)."""

    events: list[dict[str, Any]]
    cursor: str


@dataclass(frozen=True)
class SnapshotPage:
    """One snapshot page; `volgende` is None on the last, `cursor` is the same on every page."""

    notificaties: list[dict[str, Any]]
    volgende: str | None
    cursor: str


class NmcClient:
    def __init__(
        self,
        base_url: str,
        token_provider: Callable[[], str],
        *,
        http: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self._owns_http = http is None
        self.http = http if http is not None else httpx.Client(timeout=timeout)
        self.transport = Transport(
            base_url, token_provider, self.http, retry or RetryPolicy(), sleep
        )
        self._jwks: JwksCache | None = None

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    @property
    def jwks_url(self) -> str:
        """Where the NMC publishes the public keys of its webhook tokens."""
        return self.base_url + JWKS_PATH

    @property
    def jwks(self) -> JwksCache:
        """The NMC's published keys (webhook tokens and delivery proofs), cached."""
        if self._jwks is None:
            self._jwks = JwksCache(self.jwks_url, self.http)
        return self._jwks

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def __enter__(self) -> "NmcClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Intake

    def submit(self, regie: Regie, notificatie: Mapping[str, Any]) -> Accepted:
        """POST /{regie}/notificaties. Safe to repeat with the same body (idempotent on dvRef
        and payload); the same dvRef with another payload raises Conflict."""
        response = self.transport.call(
            "POST", f"/{_regie(regie)}/notificaties", json=dict(notificatie), ok=(202,)
        )
        return Accepted(response.json()["notificatieId"], response.headers.get("location"))

    def submit_batch(
        self, regie: Regie, notificaties: Sequence[Mapping[str, Any]], batch_id: str | None = None
    ) -> BatchAccepted:
        """POST /{regie}/notificaties/_batch with 1 to 1,000 notifications, all or nothing.

        Without `batch_id` the client makes one, so a retried batch carries the same id (the
        NMC ignores the batch id for idempotency: a batch sent again returns the same ids)."""
        if not 1 <= len(notificaties) <= BATCH_MAX:
            raise ValueError(f"a batch holds 1 to {BATCH_MAX} notifications")
        body = {"batchId": batch_id or str(uuid.uuid4()), "notificaties": list(notificaties)}
        response = self.transport.call(
            "POST", f"/{_regie(regie)}/notificaties/_batch", json=body, ok=(202,)
        )
        answer = response.json()
        return BatchAccepted(
            answer.get("batchId"), [item["notificatieId"] for item in answer["notificaties"]]
        )

    # ----------------------------------------------------------------------------------------
    # Status, search, cancel

    def status(self, notificatie_id: str, etag: str | None = None) -> Status | None:
        """GET /notificaties/{id}; with the `etag` of an earlier answer, None when unchanged."""
        headers = {"If-None-Match": etag} if etag else None
        response = self.transport.call(
            "GET", f"/notificaties/{_uuid(notificatie_id)}", headers=headers, ok=(200, 304)
        )
        if response.status_code == 304:
            return None
        return Status(response.headers.get("etag"), response.json())

    def find(self, dv_ref: str, *, limiet: int | None = None) -> Iterator[dict[str, Any]]:
        """GET /notificaties?dvRef=: this DV's notifications with that reference, newest
        first, following the pages."""
        cursor: str | None = None
        while True:
            response = self.transport.call(
                "GET",
                "/notificaties",
                params={"dvRef": dv_ref, "limiet": limiet, "cursor": cursor},
                ok=(200,),
            )
            answer = response.json()
            yield from answer["notificaties"]
            cursor = answer.get("cursor")
            if not cursor:
                return

    def cancel(self, notificatie_id: str) -> None:
        """DELETE /notificaties/{id}: only while `aangenomen`, else Conflict (409).

        An already cancelled notification counts as done: a cancel repeated after a lost
        answer meets its own earlier success."""
        try:
            self.transport.call("DELETE", f"/notificaties/{_uuid(notificatie_id)}", ok=(204,))
        except Conflict as conflict:
            if conflict.problem.members.get("notificatieStatus") != CANCELLED:
                raise

    # ----------------------------------------------------------------------------------------
    # The delivery proof and the history (docs/afleverbewijs.md)

    def afleverbewijs(
        self, notificatie_id: str, *, issuer: str, jwks: KeySource | None = None
    ) -> Afleverbewijs:
        """GET /notificaties/{id}/afleverbewijs, verified (nmc_client.bewijs): the signature
        against the NMC's JWKS, `issuer` (the NMC's iss, its event source), the notification
        id and the event chain. Raises BewijsOngeldig when it does not verify; keep `.jws`,
        the evidence a third party can check offline."""
        wanted = _uuid(notificatie_id)
        response = self.transport.call(
            "GET",
            f"/notificaties/{wanted}/afleverbewijs",
            headers={"Accept": "application/jose, application/problem+json"},
            ok=(200,),
        )
        return verify_afleverbewijs(
            response.text, jwks or self.jwks, issuer=issuer, notificatie_id=wanted
        )

    def geschiedenis(self, notificatie_id: str, *, limiet: int | None = None) -> dict[str, Any]:
        """GET /notificaties/{id}/geschiedenis, every page: the notification, its attempts
        and settlement, and all its events and receipts (each with its attempt number)."""
        cursor: str | None = None
        merged: dict[str, Any] | None = None
        while True:
            response = self.transport.call(
                "GET",
                f"/notificaties/{_uuid(notificatie_id)}/geschiedenis",
                params={"limiet": limiet, "cursor": cursor},
                ok=(200,),
            )
            page = response.json()
            if merged is None:
                merged = {**page, "events": [], "receipts": []}
            merged["events"] += page["events"]
            merged["receipts"] += page["receipts"]
            cursor = page.get("volgende")
            if not cursor:
                merged["volgende"] = None
                return merged

    # ----------------------------------------------------------------------------------------
    # The feed (docs/feed.md)

    def read_changes(self, cursor: str | None = None, limiet: int | None = None) -> FeedPage:
        """GET /notificaties/wijzigingen; raises CursorExpired (410) for an expired cursor."""
        response = self.transport.call(
            "GET",
            "/notificaties/wijzigingen",
            params={"cursor": cursor, "limiet": limiet},
            ok=(200,),
        )
        answer = response.json()
        return FeedPage(list(answer["events"]), answer["cursor"])

    def acknowledge(self, cursor: str) -> bool:
        """PUT /notificaties/wijzigingen/bevestiging; True when the position moved forward,
        False when the cursor was not past the stored one."""
        response = self.transport.call(
            "PUT", "/notificaties/wijzigingen/bevestiging", json={"cursor": cursor}, ok=(204,)
        )
        return response.headers.get(ACK_RESULT_HEADER) == "bevestigd"

    def snapshot_page(self, na: str | None = None, limiet: int | None = None) -> SnapshotPage:
        """GET /notificaties/_snapshot; pass the previous page's `volgende` as `na`."""
        response = self.transport.call(
            "GET", "/notificaties/_snapshot", params={"na": na, "limiet": limiet}, ok=(200,)
        )
        answer = response.json()
        return SnapshotPage(list(answer["notificaties"]), answer.get("volgende"), answer["cursor"])

    def resume_webhook(self) -> None:
        """POST /webhook/hervatten: end a pause of this DV's webhook now. Raises Conflict
        (409) when it is paused for a gap: then set its position (`set_webhook_position`)."""
        self.transport.call("POST", "/webhook/hervatten", ok=(204,))

    def set_webhook_position(self, cursor: str | None = None) -> None:
        """PUT /webhook/positie: the webhook delivers from `cursor` (a feed cursor this DV
        holds: from the feed, a snapshot or a webhook call's Nmc-Cursor), or from the oldest
        available event when `cursor` is None; any pause ends, also one for a gap (events
        after the old position were no longer available). Raises CursorExpired (410) for a
        cursor the feed would refuse, NotFound (404) when this DV has no webhook."""
        body: dict[str, str] = {"cursor": cursor} if cursor is not None else {"vanaf": "oudste"}
        self.transport.call("PUT", "/webhook/positie", json=body, ok=(204,))


def _regie(regie: str) -> str:
    if regie not in ("decentraal", "centraal"):
        raise ValueError("regie is 'decentraal' or 'centraal'")
    return regie


def _uuid(value: str) -> str:
    """The id in canonical form: nothing else may be spliced into the path."""
    return str(uuid.UUID(str(value)))
