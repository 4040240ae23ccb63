"""The DVs of the year run: who they are and how each takes its status changes.

* Feed DVs read the cursor feed with the soak's FeedConsumer (nmc_client.FeedReader: the
  sequence rule, the cursor committed, then acknowledged; a 410 restarts from the snapshot).
  One keeps up all year; one stops for longer than its max cursor age and then resumes (410,
  snapshot, on); one stops early and stays stopped: its stale acknowledgement must not keep
  old partitions, and its last poll at the end must get a 410.
* Webhook DVs take their changes from the NMC's webhook: a receiver on this machine answers
  500 while the DV's `failing` is set (weeks of the simulated year) and otherwise hands each
  batch to FeedReader.handle_batch, which applies it like a feed page and acknowledges its
  cursor. One of them stays down longer than its max cursor age.

Every event a DV was handed (a page or a batch, before the sequence rule) is recorded per
notification, so the checks can tell whether a DV that kept up ever missed one.
"""

import json
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nmc_client import FeedReader, MemoryCursorStore, NmcClient, StatusChange
from nmc_dev.soak.consumer import RETRY, FeedConsumer, Held
from nmc_dev.soak.httpcount import HttpCounts, counting_client
from nmc_dev.soak.intake import API_BASE, CLIENT_TIMEOUT_S
from nmc_dev.soak.workload import Dv

HOOK_PATH = "/hook/{oin}"
BATCH_CONTENT_TYPE = "application/cloudevents-batch+json"


@dataclass(frozen=True)
class YearDv:
    """A DV of the year run: the document it is onboarded with and how it behaves."""

    dv: Dv
    way: str  # "feed" or "webhook"
    role: str  # keeps-up, pauses, stops, fails-weeks, fails-long (see the module doc)
    max_cursorleeftijd_days: int

    @property
    def oin(self) -> str:
        return self.dv.oin

    def document(self, hook_base: str | None) -> dict[str, Any]:
        document = {
            **self.dv.document(),
            "maxCursorleeftijd": f"{self.max_cursorleeftijd_days} days",
        }
        if self.way == "webhook":
            assert hook_base  # noqa: S101 - the receiver runs before onboarding
            document["webhook"] = {
                "url": hook_base + HOOK_PATH.format(oin=self.oin),
                "maxMislukt": 3,
                "maxBatch": 500,
            }
        return document


YEAR_DVS = (
    YearDv(Dv("00000001000000000401", "Gemeente Jaarstad"), "feed", "keeps-up", 30),
    YearDv(Dv("00000001000000000402", "Waterschap Jaarland"), "webhook", "fails-weeks", 30),
    YearDv(Dv("00000001000000000403", "Provincie Jaarveen"), "webhook", "fails-long", 14),
    YearDv(Dv("00000001000000000404", "Omgevingsdienst Jaarmond"), "feed", "pauses", 7),
    YearDv(Dv("00000001000000000405", "Veiligheidsregio Jaarhaven"), "feed", "stops", 7),
)


class Sequences:
    """Every (notification, sequence) a DV was handed, before the sequence rule."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seen: dict[str, set[int]] = defaultdict(set)

    def record(self, events: list[dict[str, Any]]) -> None:
        with self._lock:
            for event in events:
                self.seen[str(event.get("subject"))].add(int(event.get("sequence", 0)))

    def copy(self) -> dict[str, set[int]]:
        with self._lock:
            return {k: set(v) for k, v in self.seen.items()}


class RecordingClient:
    """An NmcClient for a FeedReader that records each page's events before handing it on."""

    def __init__(self, client: NmcClient, sequences: Sequences) -> None:
        self._client = client
        self._sequences = sequences

    def read_changes(self, cursor=None, limiet=None):
        page = self._client.read_changes(cursor, limiet)
        self._sequences.record(page.events)
        return page

    def __getattr__(self, name: str):
        return getattr(self._client, name)


class FeedDv(FeedConsumer):
    """A feed DV: the soak's consumer, recording what it is handed."""

    def __init__(self, year_dv: YearDv, api_url: str, token_for, counts: HttpCounts) -> None:
        super().__init__(year_dv.oin, api_url, token_for, counts)
        self.year_dv = year_dv
        self.sequences = Sequences()
        self.reader.client = RecordingClient(self.reader.client, self.sequences)

    def cursor(self) -> str | None:
        return self.store.cursor()


class WebhookDv:
    """A webhook DV: its batches applied like feed pages, or a 500 while `failing`."""

    def __init__(
        self, year_dv: YearDv, api_url: str, token_for: Callable[[str], str], counts: HttpCounts
    ) -> None:
        self.year_dv = year_dv
        self.oin = year_dv.oin
        self.http = counting_client(counts, "webhook-dv", CLIENT_TIMEOUT_S)
        self.client = NmcClient(
            api_url + API_BASE, lambda: token_for(self.oin), http=self.http, retry=RETRY
        )
        self.sequences = Sequences()
        self.store = MemoryCursorStore()
        self.reader = FeedReader(self.client, self._apply, self.store)
        self._lock = threading.Lock()
        self._held: dict[str, Held] = {}
        self.failing = False
        self.calls = 0
        self.refused = 0  # answered 500 (failing)
        self.events = 0
        self.restarts = 0

    def _apply(self, change: StatusChange) -> None:
        with self._lock:
            self._held[change.notificatie_id] = Held(change.status, change.versie, change.reden)

    def held(self) -> dict[str, Held]:
        with self._lock:
            return dict(self._held)

    def receive(self, events: list[dict[str, Any]], cursor: str) -> int:
        """One webhook call: the status code to answer."""
        self.calls += 1
        if self.failing:
            self.refused += 1
            return 500
        self.sequences.record(events)
        result = self.reader.handle_batch(events, cursor)
        self.events += len(events)
        self.restarts += result.restarted
        return 204

    def resume(self) -> None:
        """The DV is back: it asks the NMC to end the webhook's pause now."""
        self.failing = False
        self.client.resume_webhook()

    def close(self) -> None:
        self.http.close()


def receiver_app(hooks: dict[str, WebhookDv]) -> Starlette:
    """One receiver for every webhook DV, at /hook/<oin>. It answers the NL GOV CloudEvents
    webhook handshake (OPTIONS with WebHook-Request-Origin) and takes batches; a batch is
    handled in a thread (it acknowledges over HTTP), not on the receiver's event loop."""

    async def hook(request: Request) -> Response:
        target = hooks.get(request.path_params["oin"])
        if target is None:
            return Response(status_code=404)
        if request.method == "OPTIONS":
            origin = request.headers.get("webhook-request-origin", "*")
            return Response(
                status_code=200,
                headers={"WebHook-Allowed-Origin": origin, "WebHook-Allowed-Rate": "*"},
            )
        body = await request.body()
        cursor = request.headers.get("nmc-cursor")
        if not cursor or request.headers.get("content-type") != BATCH_CONTENT_TYPE:
            return Response(status_code=400)
        events = json.loads(body)
        if not isinstance(events, list):
            return Response(status_code=400)
        return Response(status_code=await run_in_threadpool(target.receive, events, cursor))

    return Starlette(routes=[Route(HOOK_PATH, hook, methods=["POST", "OPTIONS"])])
