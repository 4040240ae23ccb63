"""The hint to idle workers, end to end on a real PostgreSQL: the API's debounced NOTIFY
(nmc.api.werk_melder, as nmc_api) heard on the worker's own LISTEN connection
(nmc.worker.werk_hints, as nmc_worker), and that connection coming back after a loss."""

import asyncio

import psycopg
from psycopg_pool import AsyncConnectionPool

from nmc.api.werk_melder import WerkMelder
from nmc.database import with_overrides
from nmc.worker import werk_hints
from nmc.worker.werk_hints import WerkHints

WITHIN_S = 5.0  # how long an awaited state may take to come (a bound, not a measurement)


async def until(condition, within: float = WITHIN_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        assert loop.time() < deadline, "the state did not come"
        await asyncio.sleep(0.01)


def api_pool(db_url: str) -> AsyncConnectionPool:
    return AsyncConnectionPool(
        with_overrides(db_url, user="nmc_api"),
        min_size=1,
        max_size=2,
        open=False,
        kwargs={"autocommit": True},
    )


async def listening(db_url: str, heard: list) -> tuple[WerkHints, asyncio.Event, asyncio.Task]:
    stopping = asyncio.Event()
    hints = WerkHints(with_overrides(db_url, user="nmc_worker"), lambda: heard.append(1), stopping)
    task = asyncio.create_task(hints.run())
    await until(lambda: hints.live)
    return hints, stopping, task


def test_the_apis_hint_reaches_a_listening_worker_once_per_interval(db_url):
    async def body():
        heard: list = []
        hints, stopping, task = await listening(db_url, heard)
        async with api_pool(db_url) as pool:
            melder = WerkMelder(pool, min_interval=0.3)
            melder.meld()
            await until(lambda: len(heard) == 1)
            # A burst within the interval: one hint more, at its end (the last work is hinted).
            for _ in range(20):
                melder.meld()
            await asyncio.sleep(0.1)
            assert len(heard) == 1, "hints within the interval wait for its end"
            await until(lambda: len(heard) == 2)
            await asyncio.sleep(0.4)
            assert len(heard) == 2 and melder.sent == 2
            await melder.aclose()
        stopping.set()
        await asyncio.wait_for(task, timeout=WITHIN_S)
        assert not hints.live

    asyncio.run(body())


def test_a_lost_hint_connection_listens_again(db_url, conn, monkeypatch):
    monkeypatch.setattr(werk_hints, "BACKOFF_FIRST_S", 0.05)

    async def body():
        heard: list = []
        hints, stopping, task = await listening(db_url, heard)
        terminated = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'nmc-worker-hints' AND datname = current_database()"
        ).fetchall()
        assert terminated == [(True,)]
        await until(lambda: not hints.live)
        await until(lambda: hints.live)
        async with api_pool(db_url) as pool:
            melder = WerkMelder(pool)
            melder.meld()
            await until(lambda: heard)
            await melder.aclose()
        stopping.set()
        await asyncio.wait_for(task, timeout=WITHIN_S)

    asyncio.run(body())


def test_a_worker_that_cannot_connect_is_not_live_and_keeps_trying(monkeypatch):
    monkeypatch.setattr(werk_hints, "BACKOFF_FIRST_S", 0.01)
    attempts = []

    async def refused(*args, **kwargs):
        attempts.append(1)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", refused)

    async def body():
        stopping = asyncio.Event()
        hints = WerkHints("postgresql://unused", lambda: None, stopping)
        task = asyncio.create_task(hints.run())
        await until(lambda: len(attempts) >= 3)
        assert not hints.live
        stopping.set()
        await asyncio.wait_for(task, timeout=WITHIN_S)

    asyncio.run(body())
