"""The worker's operations listener: GET /metrics, /health/live and /health/ready.

`nmc worker --metrics-port N` (or NMC_WORKER_METRICS_PORT) opens it on
NMC_WORKER_METRICS_HOST (127.0.0.1 unless set; a pod sets 0.0.0.0 so the scraper and the
kubelet reach it). Off by default. It is for the platform, never for a DV, and has no
authentication: it serves counts and nothing else.

A small HTTP/1.1 server on the worker's own event loop (asyncio streams): one request per
connection, answered with Content-Length and `Connection: close`. A web framework on the same
loop would bring its own signal handling and logging, and the worker's SIGTERM handling and
JSON logs must stay the only ones. A request head above 8 KiB, or one that does not arrive
within 5 s, closes the connection; so does a client that does not read the answer in 5 s.

/metrics: one call of nmc.metrics() as nmc_worker, rendered by the same code as the API's
(nmc.observability.prometheus), then the worker's own series (nmc.worker.metrics). When the
database does not answer the scrape still succeeds, with `nmc_database_bereikbaar 0`.
/health/live: 200 while the event loop serves (no database call).
/health/ready: 200 when nmc.now() answers as nmc_worker and every function the worker's queries
call exists and is its to execute (queries.sql `worker_ready`, the names derived from the
worker's sections by nmc.queries.worker_functions), else 503 with `reden` `database` or
`migratie`.
"""

import asyncio
import json
import logging
from dataclasses import dataclass

import psycopg
from psycopg_pool import PoolTimeout

from nmc.observability.prometheus import PROMETHEUS_MEDIA_TYPE, database_lines, render
from nmc.queries import worker_functions
from nmc.worker.db import Database
from nmc.worker.logs import event
from nmc.worker.metrics import WorkerMetrics

WORKER_FUNCTIONS = worker_functions()

MAX_HEAD_BYTES = 8192
READ_TIMEOUT_S = 5.0
DATABASE_TIMEOUT_S = 3.0
JSON = "application/json"
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Answer:
    status: int
    media_type: str
    body: bytes


class OpsListener:
    """Serves the three paths until `close`; `address` is the bound (host, port)."""

    def __init__(self, db: Database, metrics: WorkerMetrics, drempel: float) -> None:
        self._db = db
        self._metrics = metrics
        self._drempel = drempel
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> "OpsListener":
        self._server = await asyncio.start_server(
            self._connection, host, port, limit=MAX_HEAD_BYTES
        )
        bound_host, bound_port = self.address
        event(logging.INFO, "metrics-luistert", host=bound_host, port=bound_port)
        return self

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None  # noqa: S101 - start() came first
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            answer, method = await self._answer(head)
            writer.write(_response(answer, with_body=method != "HEAD"))
            async with asyncio.timeout(READ_TIMEOUT_S):  # a client that does not read
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            pass  # a client that sends no proper head, too much, or goes away: just close
        finally:
            writer.close()

    async def _answer(self, head: bytes) -> tuple[Answer, str]:
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return _json(400, {"status": "fout"}), "GET"
        method, path = parts[0], parts[1].split("?", 1)[0]
        handler = {
            "/metrics": self._scrape,
            "/health/live": self._live,
            "/health/ready": self._ready,
        }.get(path)
        if handler is None:
            return _json(404, {"status": "onbekend"}), method
        if method not in ("GET", "HEAD"):
            return _json(405, {"status": "alleen GET"}), method
        return await handler(), method

    async def _scrape(self) -> Answer:
        rows = None
        try:
            async with asyncio.timeout(DATABASE_TIMEOUT_S * 2):
                rows = await self._db.fetch_all("worker_metrics")
        except (psycopg.Error, PoolTimeout, TimeoutError) as error:
            event(logging.WARNING, "metrics-database-fout", fout=type(error).__name__)
        body = render(database_lines(rows, self._drempel), self._metrics.lines())
        return Answer(200, PROMETHEUS_MEDIA_TYPE, body)

    async def _live(self) -> Answer:
        return _json(200, {"status": "up"})

    async def _ready(self) -> Answer:
        try:
            async with asyncio.timeout(DATABASE_TIMEOUT_S):
                gereed = await self._db.fetch_value("worker_ready", readiness_params())
        except (psycopg.Error, PoolTimeout, TimeoutError) as error:
            event(logging.WARNING, "gereedheid-database-fout", fout=type(error).__name__)
            return _json(503, {"status": "niet-gereed", "reden": "database"})
        if gereed is not True:
            return _json(503, {"status": "niet-gereed", "reden": "migratie"})
        return _json(200, {"status": "gereed"})


def readiness_params() -> dict[str, list[str]]:
    """worker_ready's parameters: every function the worker's queries call."""
    return {"functies": list(WORKER_FUNCTIONS)}


def _json(status: int, document: dict) -> Answer:
    return Answer(status, JSON, json.dumps(document).encode("utf-8"))


def _response(answer: Answer, *, with_body: bool) -> bytes:
    head = (
        f"HTTP/1.1 {answer.status} {REASONS[answer.status]}\r\n"
        f"Content-Type: {answer.media_type}\r\n"
        f"Content-Length: {len(answer.body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n"
    )
    if answer.status == 405:
        head += "Allow: GET, HEAD\r\n"
    return (head + "\r\n").encode("latin-1") + (answer.body if with_body else b"")
