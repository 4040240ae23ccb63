"""The connection pool of the API and the workers: psycopg_pool's, but the connection used
last is the one handed out next (LIFO), as PgBouncer does by default (`server_round_robin =
0`: "few connections get the most load").

psycopg_pool hands out the connection that waited longest (FIFO), so a steady trickle of
requests goes round every connection of the pool. Each connection is a backend with its own
plans and catalogue caches: round-robin keeps all of them half cold, and each change that
makes PostgreSQL drop a plan (autovacuum's VACUUM or ANALYZE of the event partition being
written, which a plan of the partitioned log holds with all its partitions) is paid again in
every backend, the next time each takes the statement. Last-in first-out keeps the work on
the fewest connections that carry it; the rest stay idle, and the pool closes those
(max_idle) beyond its min_size as before, least recently used first.
"""

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool


class LifoPool(AsyncConnectionPool):
    """AsyncConnectionPool handing out its most recently returned connection first."""

    async def _get_ready_connection(self, timeout: float | None) -> AsyncConnection | None:
        # The base class takes the oldest idle connection (popleft). Everything else it does
        # (the timeout check, the waiting limit, the idle-count bookkeeping of _shrink_pool,
        # which closes from the other end: the least recently used) is kept as it is.
        conn = await super()._get_ready_connection(timeout)
        if conn is not None and self._pool:
            self._pool.appendleft(conn)
            conn = self._pool.pop()
        return conn
