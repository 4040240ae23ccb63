"""The hint to idle workers that work may wait (nmc.meld_werk: NOTIFY nmc_werk).

After an intake, a cancellation, a batch of receipts or a webhook's resumption the API calls
`meld()`. It never waits and never fails a request: the NOTIFY goes out in a transaction of
its own, after the request's commit, at most once per `min_interval` (the first at once,
the ones during an interval together at its end, so the last work is always hinted). A NOTIFY
serialises the commits of the transactions that send one; a few a second, apart from the
intakes, cost nothing they would notice.

Only a hint: a worker without it (its listening connection down, or NMC_WORKER_HINTS_URL
off) looks at its full pace, and a lost hint costs at most the worker's slower idle look.
"""

import asyncio
import logging
import time
from collections.abc import Callable

import psycopg
from psycopg_pool import PoolTimeout

from nmc import sql_calls
from nmc.api.db import Pool

# Half the worker's default poll interval: under load a hint every quarter second is
# nothing, and an idle worker is woken within it of the first new work.
MIN_INTERVAL_S = 0.25

log = logging.getLogger("nmc.api.werk_melder")


class WerkMelder:
    def __init__(
        self,
        pool: Pool,
        min_interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._min_interval = min_interval
        self._clock = clock
        self._last = float("-inf")  # when the last hint was sent (by `clock`)
        self._pending: asyncio.Task | None = None  # the hint scheduled and not yet sent
        self._sending: set[asyncio.Task] = set()  # strong references until they end
        self.sent = 0  # hints sent (tests)

    def meld(self) -> None:
        """Hint that work may wait: now, or at the end of the current interval."""
        if self._pending is not None:
            return  # the one scheduled covers this work too
        delay = max(0.0, self._last + self._min_interval - self._clock())
        task = asyncio.get_running_loop().create_task(self._send(delay))
        self._pending = task
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        # Work that arrives while this hint is sent schedules the next one.
        self._pending = None
        self._last = self._clock()
        try:
            await sql_calls.fetch_one(self._pool, "meld_werk")
        except (psycopg.Error, PoolTimeout, OSError) as error:
            log.warning("werk-hint niet verstuurd: %s", type(error).__name__)
        else:
            self.sent += 1

    async def aclose(self) -> None:
        """Send nothing more: cancel what is scheduled and wait for what is being sent."""
        for task in list(self._sending):
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)
