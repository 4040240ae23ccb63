"""A DV's feed consumer that runs from before the first intake to the end of the soak.

It is nmc_client's FeedReader as a DV would run it: per page the sequence rule, the cursor
and versions committed, then the acknowledgement; on 410 `cursor-vervallen` the whole
snapshot and on from its cursor. What it holds at the end (status and version per
notification) must be exactly the database's final state.

Its own loop instead of FeedReader.run: the same polling, plus counts for the summary and
no end on an error the soak did not expect (it is counted and the DV's process carries on,
as a supervised consumer would).
"""

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nmc_client import (
    FeedReader,
    MemoryCursorStore,
    NmcClient,
    NmcUnavailable,
    RetryPolicy,
    ServerError,
    StatusChange,
    TooManyRequests,
)
from nmc_dev.soak.httpcount import HttpCounts, counting_client
from nmc_dev.soak.intake import API_BASE, CLIENT_TIMEOUT_S

PAGE = 1000
IDLE_S = 0.5
RETRY = RetryPolicy(attempts=3, base_delay=0.25, max_delay=2.0, max_wait=10.0)


@dataclass(frozen=True)
class Held:
    status: str
    versie: int
    reden: str | None


class FeedConsumer:
    def __init__(
        self, oin: str, api_url: str, token_for: Callable[[str], str], counts: HttpCounts
    ) -> None:
        self.oin = oin
        self.http = counting_client(counts, "feed", CLIENT_TIMEOUT_S)
        client = NmcClient(api_url + API_BASE, lambda: token_for(oin), http=self.http, retry=RETRY)
        self.store = MemoryCursorStore()
        self.reader = FeedReader(client, self._apply, self.store, limiet=PAGE)
        self._lock = threading.Lock()
        self._held: dict[str, Held] = {}
        self.pages = 0  # pages with events: each one acknowledged
        self.events = 0
        self.skipped = 0  # events at or below the version already held
        self.restarts = 0  # 410 -> snapshot
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        self._pause = threading.Event()  # set: the loop stops polling (a DV that went quiet)
        self._resting = threading.Event()  # set by the loop once it no longer polls
        self._thread = threading.Thread(target=self._run, name=f"soak-feed-{oin}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.http.close()

    def pause(self, timeout: float = 60.0) -> None:
        """Stop polling (the poll under way ends first); resume() goes on from the cursor."""
        self._pause.set()
        self._resting.wait(timeout)

    def resume(self) -> None:
        self._resting.clear()
        self._pause.clear()

    def held(self) -> dict[str, Held]:
        with self._lock:
            return dict(self._held)

    def caught_up(self, versions: Mapping[str, int]) -> bool:
        """Whether it holds exactly `versions` (this DV's notifications in the database)."""
        with self._lock:
            return len(self._held) == len(versions) and all(
                self._held.get(i) is not None and self._held[i].versie == v
                for i, v in versions.items()
            )

    def _apply(self, change: StatusChange) -> None:
        with self._lock:
            self._held[change.notificatie_id] = Held(change.status, change.versie, change.reden)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._pause.is_set():
                self._resting.set()
                self._stop.wait(IDLE_S)
                continue
            try:
                result = self.reader.poll()
            except (NmcUnavailable, ServerError, TooManyRequests) as error:
                self.errors[type(error).__name__] += 1
                self._stop.wait(IDLE_S)
                continue
            except Exception as error:  # unexpected (a 400, a bug): counted and shown
                self.errors[f"unexpected {type(error).__name__}"] += 1
                self._stop.wait(IDLE_S)
                continue
            self.restarts += result.restarted
            if result.events:
                self.pages += 1
                self.events += result.events
                self.skipped += result.skipped
            elif not result.restarted:
                self._stop.wait(IDLE_S)
