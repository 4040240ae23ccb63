"""`FeedReader`: follow the NMC's feed the way docs/feed.md asks a DV to.

Per page: every event goes through the sequence rule (a notification's event is applied only
when its version is higher than the one held: the feed promises no order between the events
of one notification), the caller's handler gets each applied change, then the cursor and the
new versions are committed to the store, and only then is the cursor acknowledged. A handler
that raises stops the page: nothing is committed or acknowledged, and the next poll reads the
same page again (delivery is at least once; the sequence rule makes a repeat harmless for a
handler that stores "status at version").

On 410 `cursor-vervallen` (an epoch raise after a restore, a cursor older than the DV's
maximum age, a dropped partition) the reader reads the whole snapshot, hands every current
status that differs from what it holds, commits the snapshot's cursor and continues from
there: "snapshot N, then deltas after N", without a gap. The snapshot is the NMC's state:
where it is older than what the reader holds (only after a point-in-time restore: the feed
never hands out what is not committed), the snapshot's version replaces the held one, so the
store ends as exactly the restored state.

A webhook batch (nmc_client.webhook) goes through `handle_batch` the same way.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .api import NmcClient
from .problems import (
    CursorExpired,
    NmcClientError,
    NmcUnavailable,
    ServerError,
    TooManyRequests,
)
from .stores import CursorStore, MemoryCursorStore

log = logging.getLogger(__name__)

TYPE_PREFIX = "nl.overheid.moz.notificatie.status."
SNAPSHOT_ATTEMPTS = 3
IDLE_COMMIT_SECONDS = 300.0


class MalformedEvent(NmcClientError):
    """An event or snapshot item without the members the NMC's contract promises."""


@dataclass(frozen=True)
class StatusChange:
    """What the handler gets: a notification reached `status` at version `versie`.

    From the feed or a webhook: `van` is the previous status and `event` the CloudEvent. From
    a snapshot: `from_snapshot` is True, `van` and `event` are None (the steps in between are
    not known) and `tijdstip` is the snapshot's `bijgewerktOp`.
    """

    notificatie_id: str
    status: str
    versie: int
    reden: str | None
    tijdstip: str
    van: str | None = None
    from_snapshot: bool = False
    event: Mapping[str, Any] | None = None

    @classmethod
    def of_event(cls, event: Mapping[str, Any]) -> "StatusChange":
        try:
            data = event["data"]
            versie = int(event["sequence"])
            subject, status = str(event["subject"]), str(data["naar"])
            return cls(
                notificatie_id=subject,
                status=status,
                versie=versie,
                reden=data.get("reden"),
                tijdstip=str(event["time"]),
                van=data.get("van"),
                event=event,
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MalformedEvent("a CloudEvent lacks subject, sequence, time or data") from None

    @classmethod
    def of_snapshot_item(cls, item: Mapping[str, Any]) -> "StatusChange":
        try:
            return cls(
                notificatie_id=str(item["notificatieId"]),
                status=str(item["status"]),
                versie=int(item["versie"]),
                reden=item.get("reden"),
                tijdstip=str(item["bijgewerktOp"]),
                from_snapshot=True,
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MalformedEvent("a snapshot item lacks notificatieId, status or versie") from None


@dataclass(frozen=True)
class PollResult:
    events: int
    """Events on the page (handled + skipped); 0 means caught up."""
    handled: int
    skipped: int
    restarted: bool = False
    """True when the cursor had expired and the reader went through a snapshot."""


Handler = Callable[[StatusChange], None]


class FeedReader:
    def __init__(
        self,
        client: NmcClient,
        handler: Handler,
        store: CursorStore | None = None,
        *,
        limiet: int | None = None,
        snapshot_limiet: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.client = client
        self.handler = handler
        self.store: CursorStore = store if store is not None else MemoryCursorStore()
        self.limiet = limiet
        self.snapshot_limiet = snapshot_limiet
        self.clock = clock
        self._lock = threading.Lock()
        self._last_commit = clock()

    def poll(self) -> PollResult:
        """Read one page from the stored cursor and process it (or restart on 410)."""
        with self._lock:
            try:
                page = self.client.read_changes(self.store.cursor(), self.limiet)
                if not page.events:
                    self._keep_fresh(page.cursor)
                    return PollResult(0, 0, 0)
                handled, skipped = self._apply_and_acknowledge(page.events, page.cursor)
            except CursorExpired:
                log.info("feed cursor expired (410): restarting from the snapshot")
                return PollResult(0, self._snapshot(), 0, restarted=True)
            return PollResult(len(page.events), handled, skipped)

    def handle_batch(self, events: Sequence[Mapping[str, Any]], cursor: str) -> PollResult:
        """Process a batch that came some other way (a webhook call with its `Nmc-Cursor`).
        Use it instead of polling, not beside it: the batch's cursor becomes the stored one."""
        with self._lock:
            try:
                handled, skipped = self._apply_and_acknowledge(events, cursor)
            except CursorExpired:
                return PollResult(len(events), self._snapshot(), 0, restarted=True)
            return PollResult(len(events), handled, skipped)

    def start_from_snapshot(self) -> int:
        """Begin (or begin again) with the current status of every notification; returns how
        many changes the handler got."""
        with self._lock:
            return self._snapshot()

    def run(self, stop: threading.Event, idle_seconds: float = 1.0) -> None:
        """Poll until `stop` is set: at once while pages come with events, after
        `idle_seconds` when caught up or when the NMC is unavailable. A handler error ends
        the loop (it is raised): what to do then is the caller's decision."""
        while not stop.is_set():
            try:
                result = self.poll()
            except (NmcUnavailable, ServerError, TooManyRequests) as error:
                log.warning("feed poll failed (%s); trying again", type(error).__name__)
                stop.wait(idle_seconds)
                continue
            if result.events == 0 and not result.restarted:
                stop.wait(idle_seconds)

    # ----------------------------------------------------------------------------------------

    def _apply_and_acknowledge(
        self, events: Sequence[Mapping[str, Any]], cursor: str
    ) -> tuple[int, int]:
        applied: dict[str, int] = {}
        handled = sum(self._apply(StatusChange.of_event(event), applied) for event in events)
        self._commit(cursor, applied)
        self.client.acknowledge(cursor)
        return handled, len(events) - handled

    def _apply(self, change: StatusChange, applied: dict[str, int]) -> bool:
        """The sequence rule: hand the change over only when it is newer than what is held
        (in this page so far, else in the store); True when the handler got it."""
        held = applied.get(change.notificatie_id)
        if held is None:
            held = self.store.version(change.notificatie_id)
        if held is not None and change.versie <= held:
            return False
        self.handler(change)
        applied[change.notificatie_id] = change.versie
        return True

    def _apply_snapshot(
        self, change: StatusChange, applied: dict[str, int], restored: dict[str, int]
    ) -> bool:
        """A snapshot item is the current state: handed over when it is newer than what is
        held (into `applied`) or older (into `restored`: the NMC went back in a restore)."""
        held = self.store.version(change.notificatie_id)
        if held is not None and change.versie < held:
            self.handler(change)
            restored[change.notificatie_id] = change.versie
            return True
        return self._apply(change, applied)

    def _snapshot(self) -> int:
        attempt = 1
        while True:
            try:
                return self._read_snapshot()
            except CursorExpired:
                # The epoch moved while the pages were read: their tokens expired. Start over.
                if attempt >= SNAPSHOT_ATTEMPTS:
                    raise
                attempt += 1

    def _read_snapshot(self) -> int:
        handled = 0
        na: str | None = None
        while True:
            page = self.client.snapshot_page(na, self.snapshot_limiet)
            applied: dict[str, int] = {}
            restored: dict[str, int] = {}
            for item in page.notificaties:
                handled += self._apply_snapshot(
                    StatusChange.of_snapshot_item(item), applied, restored
                )
            # Versions per page, the old cursor kept: a crash halfway snapshots again and
            # skips what was handed already.
            if restored:
                log.warning(
                    "snapshot older than the held state for %d notification(s): "
                    "the NMC was restored; taking the snapshot's versions",
                    len(restored),
                )
                self.store.replace_versions(restored)
            self._commit(self.store.cursor(), applied)
            if page.volgende is None:
                break
            na = page.volgende
        self._commit(page.cursor, {})
        self.client.acknowledge(page.cursor)
        return handled

    def _commit(self, cursor: str | None, applied: Mapping[str, int]) -> None:
        self.store.commit(cursor, applied)
        self._last_commit = self.clock()

    def _keep_fresh(self, cursor: str) -> None:
        """An empty page moves the cursor up to the watermark; storing it now and then keeps
        a quiet consumer's cursor younger than the DV's maximum cursor age."""
        if self.store.cursor() is None or self.clock() - self._last_commit >= IDLE_COMMIT_SECONDS:
            self._commit(cursor, {})
