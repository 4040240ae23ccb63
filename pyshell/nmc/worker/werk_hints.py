"""The worker's ear for the API's hint that work waits (nmc.meld_werk, NOTIFY nmc_werk).

One connection of its own (NMC_WORKER_HINTS_URL, a direct one: a LISTEN does not pass
PgBouncer's transaction mode), outside the pool, in autocommit, listening with
nmc.luister_naar_werk. Each notification calls `on_hint` (the lookout's `hint`). While the
connection listens `live` is true, and only then does an idle lookout slow down: a worker
that cannot hear the hint looks at its full pace. A lost connection is opened again after
a backoff (1 s doubling to 30 s); a notification sent while it was down is lost, which
costs at most one slow look.

TCP keepalives bound how long a silently dead connection (a partition, a failover behind a
virtual IP) passes for a live one.
"""

import asyncio
import logging
from collections.abc import Callable

import psycopg

from nmc.queries import QUERIES
from nmc.runtime import aio
from nmc.worker.logs import event

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


class WerkHints:
    def __init__(self, url: str, on_hint: Callable[[], None], stopping: asyncio.Event) -> None:
        self._url = url
        self._on_hint = on_hint
        self._stopping = stopping
        self.live = False  # listening now
        self.heard = 0  # notifications received (tests)

    async def run(self) -> None:
        """Listen until the worker stops, connecting again after each loss."""
        backoff = BACKOFF_FIRST_S
        while not self._stopping.is_set():
            listening = asyncio.create_task(self._listen())
            stop = asyncio.create_task(self._stopping.wait())
            await asyncio.wait((listening, stop), return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            listening.cancel()  # a no-op when it ended by itself
            error = await _ending_of(listening)
            # A connection that listened starts the backoff anew; one that never did doubles it.
            backoff = BACKOFF_FIRST_S if self.live else min(2 * backoff, BACKOFF_MAX_S)
            self.live = False
            if self._stopping.is_set():
                return
            event(logging.WARNING, "werk-hints-verbroken", fout=error, opnieuw_na_s=backoff)
            await aio.pause(self._stopping, backoff)

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(
            self._url, autocommit=True, application_name="nmc-worker-hints", **KEEPALIVES
        ) as conn:
            await conn.execute(QUERIES["luister_naar_werk"])
            self.live = True
            event(logging.INFO, "werk-hints-luisteren")
            await self._read_until_lost(conn.pgconn)

    async def _read_until_lost(self, pgconn) -> None:
        """Read the notifications as the socket has them, until the connection is lost.

        Straight from libpq, not psycopg's notifies(): that one wakes every 0.1 s to check
        for an interrupt, ten wake-ups a second on an idle worker."""
        loop = asyncio.get_running_loop()
        lost: asyncio.Future = loop.create_future()

        def readable() -> None:
            try:
                pgconn.consume_input()
            except psycopg.OperationalError as error:  # the server closed it, or the network
                if not lost.done():
                    lost.set_exception(error)
                return
            heard = 0
            while pgconn.notifies() is not None:
                heard += 1
            if heard:
                self.heard += heard
                self._on_hint()

        loop.add_reader(pgconn.socket, readable)
        try:
            await lost
        finally:
            loop.remove_reader(pgconn.socket)


async def _ending_of(task: asyncio.Task) -> str:
    """What ended `task` (waited for; never raises): its error's class name, or how it ended
    without one."""
    await asyncio.wait((task,))
    if task.cancelled():
        return "gestopt"
    error = task.exception()
    if error is None:
        return "verbinding-gesloten"
    if not isinstance(error, psycopg.Error | OSError):
        raise error
    return type(error).__name__
