"""The demo's DV: intake, cancel and the feed over the real HTTP API, as a DV's system would.

The feed is applied per subject on `sequence` (a lower sequence after a higher one is
ignored: the feed promises no order within a notification) and acknowledged page by page
after the page was applied (docs/feed.md).
"""

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx

from nmc.errors import NmcError

BASE = "/api/nmc/v1"


class DvError(NmcError):
    """The API refused a call the demo expected to succeed."""


def _refused(response: httpx.Response, what: str) -> DvError:
    # A problem's title and violations name fields, never the values sent.
    try:
        problem = response.json()
        detail = problem.get("title") or problem.get("detail") or ""
        fields = [v.get("field") for v in problem.get("violations") or []]
    except ValueError:
        detail, fields = response.text[:200], []
    extra = f" ({', '.join(map(str, fields))})" if fields else ""
    return DvError(f"{what}: HTTP {response.status_code} {detail}{extra}")


@dataclass
class Dv:
    client: httpx.AsyncClient  # base_url = the API, Authorization: the DV's token

    async def submit(self, regie: str, body: dict[str, Any]) -> str:
        response = await self.client.post(f"{BASE}/{regie}/notificaties", json=body)
        if response.status_code != 202:
            raise _refused(response, f"{regie} intake")
        return response.json()["notificatieId"]

    async def submit_refused(self, regie: str, body: dict[str, Any]) -> tuple[str, list[str]]:
        """A submission the NMC must refuse with a 422: its problem slug and the names its
        invalidParams list."""
        response = await self.client.post(f"{BASE}/{regie}/notificaties", json=body)
        if response.status_code != 422:
            raise _refused(response, f"{regie} intake (a 422 expected)")
        problem = response.json()
        names = [p.get("name", "") for p in problem.get("invalidParams", [])]
        return str(problem.get("type", "")).rsplit("/", 1)[-1], names

    async def submit_batch(self, regie: str, batch_id: str, bodies: list[dict]) -> list[str]:
        response = await self.client.post(
            f"{BASE}/{regie}/notificaties/_batch",
            json={"batchId": batch_id, "notificaties": bodies},
        )
        if response.status_code != 202:
            raise _refused(response, f"{regie} batch intake")
        return [item["notificatieId"] for item in response.json()["notificaties"]]

    async def cancel(self, notificatie_id: str) -> None:
        response = await self.client.delete(f"{BASE}/notificaties/{notificatie_id}")
        if response.status_code != 204:
            raise _refused(response, "cancel")


@dataclass
class Known:
    """What the DV knows of one notification: its latest status by sequence."""

    sequence: int
    status: str
    reden: str | None


@dataclass
class FeedReader:
    client: httpx.AsyncClient
    page_size: int = 1000
    cursor: str | None = None
    known: dict[str, Known] = field(default_factory=dict)
    events: int = 0
    pages: int = 0
    acks: int = 0
    out_of_order: int = 0  # events ignored because a higher sequence was already applied
    _reading: asyncio.Lock = field(default_factory=asyncio.Lock)  # one reader at a time

    async def read(self) -> None:
        """Read and acknowledge pages until a page comes back short (the feed is caught up)."""
        async with self._reading:
            await self._read_to_end()

    async def _read_to_end(self) -> None:
        while True:
            params: dict[str, Any] = {"limiet": self.page_size}
            if self.cursor:
                params["cursor"] = self.cursor
            response = await self.client.get(f"{BASE}/notificaties/wijzigingen", params=params)
            if response.status_code == 429:
                await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                continue
            if response.status_code != 200:
                raise _refused(response, "feed")
            page = response.json()
            for event in page["events"]:
                self._apply(event)
            self.pages += 1
            if page["events"]:
                await self._acknowledge(page["cursor"])
            self.cursor = page["cursor"]
            if len(page["events"]) < self.page_size:
                return

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for known in self.known.values():
            counts[known.status] = counts.get(known.status, 0) + 1
        return counts

    def _apply(self, event: dict[str, Any]) -> None:
        self.events += 1
        sequence = int(event["sequence"])
        current = self.known.get(event["subject"])
        if current is not None and current.sequence >= sequence:
            self.out_of_order += 1
            return
        data = event["data"]
        self.known[event["subject"]] = Known(sequence, data["naar"], data.get("reden"))

    async def _acknowledge(self, cursor: str) -> None:
        response = await self.client.put(
            f"{BASE}/notificaties/wijzigingen/bevestiging", json={"cursor": cursor}
        )
        if response.status_code != 204:
            raise _refused(response, "acknowledgement")
        self.acks += 1
