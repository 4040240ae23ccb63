"""Where a feed reader keeps its place: the cursor and the version it holds per notification.

The two are committed together, after the handler has processed a page: on a restart the
reader resumes from the cursor, and the versions make it ignore what it already applied
(the feed promises no order within one notification, and a snapshot restart shows again what
came later). A DV that keeps its notifications in a database implements `CursorStore` there,
committing both in the transaction that stored the statuses; `FileCursorStore` is for small
consumers, `MemoryCursorStore` for tests and for consumers that snapshot on every start.
"""

import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol


class CursorStore(Protocol):
    def cursor(self) -> str | None:
        """The last committed cursor; None before the first page."""
        ...

    def version(self, notificatie_id: str) -> int | None:
        """The highest version applied for this notification, None when never seen."""
        ...

    def commit(self, cursor: str | None, versions: Mapping[str, int]) -> None:
        """Store `cursor` and raise the held versions to `versions`, all or nothing."""
        ...

    def replace_versions(self, versions: Mapping[str, int]) -> None:
        """Set the held versions to `versions`, also where that is lower: a snapshot after a
        point-in-time restore of the NMC, whose state is older than what was seen before."""
        ...


class MemoryCursorStore:
    def __init__(self, cursor: str | None = None, versions: Mapping[str, int] | None = None):
        self._cursor = cursor
        self._versions = dict(versions or {})
        self._lock = threading.Lock()

    def cursor(self) -> str | None:
        return self._cursor

    def version(self, notificatie_id: str) -> int | None:
        return self._versions.get(notificatie_id)

    def versions(self) -> dict[str, int]:
        """A copy of every held version."""
        with self._lock:
            return dict(self._versions)

    def commit(self, cursor: str | None, versions: Mapping[str, int]) -> None:
        with self._lock:
            _raise_versions(self._versions, versions)
            self._cursor = cursor

    def replace_versions(self, versions: Mapping[str, int]) -> None:
        with self._lock:
            self._versions.update(versions)


class FileCursorStore(MemoryCursorStore):
    """A JSON file `{"cursor": …, "versions": {id: version}}`, replaced atomically.

    The whole map is rewritten per commit, so this suits up to some hundred thousand
    notifications; beyond that, implement CursorStore on the DV's own database.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        state: dict = {}
        if self.path.exists():
            state = json.loads(self.path.read_text(encoding="utf-8"))
        super().__init__(state.get("cursor"), state.get("versions"))

    def commit(self, cursor: str | None, versions: Mapping[str, int]) -> None:
        with self._lock:
            merged = dict(self._versions)
            _raise_versions(merged, versions)
            _write_atomically(self.path, {"cursor": cursor, "versions": merged})
            self._versions, self._cursor = merged, cursor

    def replace_versions(self, versions: Mapping[str, int]) -> None:
        with self._lock:
            merged = {**self._versions, **versions}
            _write_atomically(self.path, {"cursor": self._cursor, "versions": merged})
            self._versions = merged


def _raise_versions(held: dict[str, int], versions: Mapping[str, int]) -> None:
    for notificatie_id, versie in versions.items():
        if versie > held.get(notificatie_id, 0):
            held[notificatie_id] = versie


def _write_atomically(path: Path, state: Mapping[str, object]) -> None:
    """Write a temporary file beside `path`, fsync it, rename it over `path`: a crash leaves
    the old state or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash only once the directory is synced
    finally:
        os.close(directory)
