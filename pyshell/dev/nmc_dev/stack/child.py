"""One supervised child process of a local stack: `python -m nmc …` in its own process group.

Its own process group (a new session) keeps the terminal's Ctrl-C away from the children:
the supervisor alone decides the order in which they stop. Signals go to the whole group,
so helpers a child spawned itself (uvicorn's worker processes) stop with it.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_GRACE_S = 10.0


class Child:
    """A named child: started, signalled and stopped; stdout and stderr go to `log_path`."""

    def __init__(
        self, name: str, args: Sequence[str], env: Mapping[str, str], log_path: Path
    ) -> None:
        self.name = name
        self.args = list(args)
        self.env = dict(env)
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def exit_code(self) -> int | None:
        return self.process.poll() if self.process else None

    def start(self) -> None:
        """Start it (again); each start appends to the log after a marker line."""
        if self.running:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            log.write(f"--- nmc {' '.join(self.args)} (started {stamp})\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "nmc", *self.args],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def signal(self, sig: int) -> None:
        """Send `sig` to the child's process group (SIGKILL for a crash, SIGSTOP for a hang)."""
        if self.process is None:
            return
        # The group id is the leader's pid. Linux does not hand out a pid that is still some
        # group's id, so signalling the group after the leader was reaped cannot hit a
        # stranger; ESRCH just means the whole group is gone.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def stop(self, grace_s: float = DEFAULT_GRACE_S) -> int | None:
        """SIGTERM, then SIGKILL after `grace_s`; returns the exit code (None if never run)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.process.wait()
        # Whatever the leader left behind in its group goes too.
        self.signal(signal.SIGKILL)
        return self.process.returncode

    def wait(self, timeout_s: float) -> int:
        """Wait for a one-shot child (migrate) to finish; its exit code."""
        assert self.process is not None  # noqa: S101 - start() comes first
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop(grace_s=1.0)
            raise

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as error:
            return f"(cannot read {self.log_path}: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def log_contains(self, text: str) -> bool:
        """Whether the log, since the last start, holds `text` (a readiness sign)."""
        try:
            content = self.log_path.read_text(errors="replace")
        except OSError:
            return False
        return text in content.rpartition("\n--- nmc ")[2]


def wait_until(condition, timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll `condition()` until it holds or `timeout_s` passes (a bounded wait, not a sleep
    that stands in for a timer)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
