"""The API's and the workers' pool hands out the connection used last (nmc.runtime.pool): a
trickle of requests stays on one backend instead of going round all of them, against a real
PostgreSQL."""

import asyncio

from psycopg_pool import AsyncConnectionPool

from nmc.runtime.pool import LifoPool

SIZE = 3


async def backend_pids(pool: AsyncConnectionPool, count: int) -> list[int]:
    """The backend of each of `count` requests made one after the other."""
    pids = []
    for _ in range(count):
        async with pool.connection() as conn:
            [(pid,)] = await (await conn.execute("SELECT pg_backend_pid()")).fetchall()
            pids.append(pid)
    return pids


async def opened(pool_class: type[AsyncConnectionPool], url: str) -> AsyncConnectionPool:
    pool = pool_class(url, min_size=SIZE, max_size=SIZE, open=False, kwargs={"autocommit": True})
    await pool.open(wait=True, timeout=30)
    return pool


async def test_one_request_after_another_stays_on_the_connection_used_last(db_url):
    pool = await opened(LifoPool, db_url)
    try:
        assert len(set(await backend_pids(pool, 10))) == 1
        # Two at once take two connections; the one given back last serves the next request.
        async with pool.connection() as first, pool.connection() as second:
            first_pid, second_pid = first.info.backend_pid, second.info.backend_pid
        assert first_pid != second_pid
        assert await backend_pids(pool, 1) == [first_pid], "first was returned last"
        assert pool.get_stats()["pool_size"] == SIZE, "the idle ones are kept (min_size)"
    finally:
        await pool.close()


async def test_psycopgs_own_pool_goes_round_every_connection(db_url):
    # What LifoPool changes: the plain pool spreads a trickle over all its connections.
    pool = await opened(AsyncConnectionPool, db_url)
    try:
        assert len(set(await backend_pids(pool, 10))) == SIZE
    finally:
        await pool.close()


async def test_a_waiting_request_still_gets_the_connection_given_back(db_url):
    pool = await opened(LifoPool, db_url)
    try:
        held = [await pool.getconn() for _ in range(SIZE)]
        waiting = asyncio.create_task(pool.getconn(timeout=5))
        while pool.get_stats().get("requests_waiting", 0) < 1:
            await asyncio.sleep(0)  # until the request queues
        await pool.putconn(held[0])
        conn = await waiting
        assert conn is held[0]
        for c in [conn, *held[1:]]:
            await pool.putconn(c)
    finally:
        await pool.close()
