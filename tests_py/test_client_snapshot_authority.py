"""FeedReader after a restore: the snapshot is the NMC's state, also where it is *older* than
what the reader holds.

After a point-in-time restore and an epoch raise, the NMC has lost the last minutes: a
notification the DV saw reach version 4 may be back at version 2. The cursor gets 410 and the
reader reads the snapshot. Under the feed's sequence rule alone it would keep its version 4
(and the status that no longer exists); the snapshot must win, so that the DV's store is
exactly the restored state. Without a restore the snapshot is never older than what a reader
holds (the feed only hands out committed events), so this only changes the restore case.
"""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nmc_client import FeedReader, FileCursorStore, MemoryCursorStore
from nmc_client.api import FeedPage, SnapshotPage
from nmc_client.problems import CursorExpired, Problem

A, B, C = (f"0190f000-0000-7000-8000-00000000000{n}" for n in (1, 2, 3))


def item(notificatie_id: str, status: str, versie: int) -> dict:
    return {
        "notificatieId": notificatie_id,
        "status": status,
        "versie": versie,
        "reden": None,
        "bijgewerktOp": "2026-12-01T12:00:00Z",
    }


@dataclass
class RestoredNmc:
    """Answers like an NMC just restored to an earlier point: 410 on the old cursor, then a
    one-page snapshot of the restored state."""

    snapshot: list[dict]
    acknowledged: list[str] = field(default_factory=list)

    def read_changes(self, cursor, limiet=None) -> FeedPage:
        if cursor == "old-epoch":
            raise CursorExpired(Problem(410, title="cursor vervallen"))
        return FeedPage([], cursor or "new-epoch")

    def snapshot_page(self, na=None, limiet=None) -> SnapshotPage:
        return SnapshotPage(list(self.snapshot), None, "new-epoch")

    def acknowledge(self, cursor: str) -> None:
        self.acknowledged.append(cursor)


@pytest.fixture(params=["memory", "file"])
def store_of(request, tmp_path: Path):
    def make(versions: dict[str, int]):
        if request.param == "memory":
            return MemoryCursorStore("old-epoch", versions)
        store = FileCursorStore(tmp_path / "feed.json")
        store.commit("old-epoch", versions)
        return store

    return make


def test_a_snapshot_older_than_the_store_is_taken_as_the_state(store_of):
    store = store_of({A: 4, B: 2, C: 3})
    nmc = RestoredNmc([item(A, "verzonden", 2), item(B, "bezorgd", 3), item(C, "verzonden", 3)])
    changes = []

    result = FeedReader(nmc, changes.append, store).poll()

    assert result.restarted
    handed = {(c.notificatie_id, c.status, c.versie) for c in changes}
    # A went back (restore), B went forward; C is unchanged and not handed again.
    assert handed == {(A, "verzonden", 2), (B, "bezorgd", 3)}
    assert all(c.from_snapshot for c in changes)
    assert (store.version(A), store.version(B), store.version(C)) == (2, 3, 3)
    assert store.cursor() == "new-epoch"
    assert nmc.acknowledged == ["new-epoch"]


def test_after_the_snapshot_the_feed_rule_holds_again_from_the_restored_versions(store_of):
    store = store_of({A: 4})
    nmc = RestoredNmc([item(A, "verzonden", 2)])
    changes = []
    reader = FeedReader(nmc, changes.append, store)
    reader.poll()

    event = {
        "subject": A,
        "sequence": 3,
        "time": "2026-12-01T12:01:00Z",
        "data": {"van": "verzonden", "naar": "bezorgd", "reden": None, "versie": 3},
    }
    result = reader.handle_batch([event], "new-epoch-2")

    assert result.handled == 1  # version 3 is new again after the restore to version 2
    assert store.version(A) == 3
    assert [c.versie for c in changes] == [2, 3]
