"""Watching the run: the DV's feed in the background, and bounded waits for the pipeline.

"Quiet" is read the way an operator would: GET /metrics (no notification in `aangenomen` or
`in-verzending`, no task of a lifecycle kind claimed or due) and the NotifyNL simulator
(no delivery or callback still under way). Only then may the demo move the clock, or a
send would be timed after the jump it was meant to precede.
"""

import asyncio
import re
import time
from collections.abc import Callable

import httpx

from nmc.errors import NmcError
from nmc_dev.demo.display import TERMINAL, Display
from nmc_dev.demo.dv import FeedReader
from nmc_dev.stack import LocalStack

POLL_S = 0.25
FEED_POLL_S = 0.5
LIFECYCLE_KINDS = frozenset(
    {"verzenden", "receipt", "reconciliëren", "vaststellen", "ongeldig-melden"}
)
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class DemoTimeout(NmcError):
    pass


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text format samples as (name, labels, value); comments skipped."""
    samples = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and not line.startswith("#"):
            labels = dict(_LABEL.findall(match.group(2) or ""))
            samples.append((match.group(1), labels, float(match.group(3))))
    return samples


def pipeline_quiet(samples: list[tuple[str, dict[str, str], float]]) -> bool:
    for name, labels, value in samples:
        lifecycle = labels.get("soort") in LIFECYCLE_KINDS
        if name == "nmc_taak_oudste_due_seconden" and lifecycle:
            return False  # a task is due (it waits 0 s at first: presence is what counts)
        if value <= 0:
            continue
        if name == "nmc_taken" and lifecycle and labels.get("staat") == "claimed":
            return False
        if name == "nmc_notificaties" and labels.get("status") in ("aangenomen", "in-verzending"):
            return False
    return True


class Watcher:
    """Reads the feed every FEED_POLL_S and redraws the counts; waits with a bound."""

    def __init__(
        self, stack: LocalStack, feed: FeedReader, display: Display, timeout_s: float
    ) -> None:
        self.stack = stack
        self.feed = feed
        self.display = display
        self.timeout_s = timeout_s
        self.sims = httpx.AsyncClient(timeout=10.0)
        self._task: asyncio.Task | None = None

    async def __aenter__(self) -> "Watcher":
        self._task = asyncio.create_task(self._follow_feed())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.sims.aclose()

    def feed_text(self) -> str:
        f = self.feed
        return f"feed: {f.events} events in {f.pages} pages, {f.acks} acknowledged"

    async def until_quiet(self, what: str) -> None:
        """Until two checks in a row find the pipeline quiet (see the module docstring)."""
        streak = 0

        async def quiet() -> bool:
            nonlocal streak
            streak = streak + 1 if await self._quiet_once() else 0
            return streak >= 2

        await self.until(quiet, what)

    async def until_final(self, ids: set[str]) -> None:
        """Until the DV's feed shows a terminal status for every id."""

        async def final() -> bool:
            known = self.feed.known
            return all(i in known and known[i].status in TERMINAL for i in ids)

        await self.until(final, "every notification to reach a final status")

    async def until(self, condition: Callable, what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not await condition():
            self._check_health()
            if time.monotonic() > deadline:
                raise DemoTimeout(f"gave up after {self.timeout_s:.0f} s waiting for {what}")
            await asyncio.sleep(POLL_S)
        await self.catch_up()

    async def catch_up(self) -> None:
        """Read the feed to its end now (the background loop may be between polls)."""
        await self.feed.read()
        self._redraw()

    async def sim_json(self, url: str):
        response = await self.sims.get(url)
        response.raise_for_status()
        return response.json()

    async def _quiet_once(self) -> bool:
        metrics = await self.sims.get(f"{self.stack.api_url}/metrics")
        metrics.raise_for_status()
        if not pipeline_quiet(parse_metrics(metrics.text)):
            return False
        callbacks = await self.sim_json(f"{self.stack.notifynl_url}/_sim/callbacks")
        return callbacks["pending_tasks"] == 0

    def _check_health(self) -> None:
        if self._task and self._task.done() and self._task.exception():
            raise self._task.exception()  # type: ignore[misc]
        for name, child in self.stack.children.items():
            if child.process is not None and not child.running:
                raise NmcError(
                    f"{name} stopped unexpectedly (exit code {child.exit_code}); "
                    f"last lines of {child.log_path}:\n{child.log_tail()}"
                )

    async def _follow_feed(self) -> None:
        while True:
            await self.feed.read()
            self._redraw()
            await asyncio.sleep(FEED_POLL_S)

    def _redraw(self) -> None:
        self.display.counts(self.feed.counts(), self.feed_text())
