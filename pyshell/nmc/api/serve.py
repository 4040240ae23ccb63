"""`nmc api`: serve the DV API with uvicorn.

uvicorn's own access log is off: it prints the query string, which may hold a dvRef. The app
logs its own access lines without it, as JSON (nmc.api.middleware, nmc.observability.logs);
uvicorn's other messages are JSON lines too. SSE streams end by themselves
(NMC_API_SSE_MAX_SECONDS); on shutdown uvicorn waits at most GRACEFUL_SHUTDOWN_SECONDS for them
before closing.

The request head is bounded below the app (NMC_API_MAX_HEADER_BYTES, NMC_API_MAX_HEADERS):
with httptools by nmc.api.http_limits (431), with h11 by its incomplete-event limit (400).
"""

import asyncio
import importlib.util
import os
import sys
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from nmc.api.settings import HeadLimits
from nmc.observability.logs import log_config

APP_FACTORY = "nmc.api.app:create_app"
# By name: each worker process imports it (and httptools) itself.
HEAD_LIMITED_PROTOCOL = "nmc.api.http_limits:HeadLimitedHttpToolsProtocol"
GRACEFUL_SHUTDOWN_SECONDS = 20
TICK_SECONDS = 1.0


def serve(host: str, port: int, *, workers: int = 1, access_log: bool = True) -> None:
    # Worker processes build their own app from the factory: they read the setting from the
    # environment they inherit.
    os.environ["NMC_API_ACCESS_LOG"] = "1" if access_log else "0"
    options: dict[str, Any] = dict(
        **http_protocol(),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        lifespan="on",
        access_log=False,
        server_header=False,
        log_config=log_config(),
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    if workers > 1:
        # uvicorn's supervisor starts its own servers (with its 0.1 s tick each).
        uvicorn.run(APP_FACTORY, **options)
        return
    server = QuietServer(uvicorn.Config(APP_FACTORY, **options))
    server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


class QuietServer(uvicorn.Server):
    """uvicorn's server with its housekeeping tick once a second instead of ten times.

    The tick only refreshes the Date header (once a second either way) and notices a stop
    (SIGTERM: now within a second): ten a second were an idle API's whole CPU (0.22% of a
    core against 0.05%, idle, on the 2-core machine)."""

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            await asyncio.sleep(TICK_SECONDS)
            # on_tick does its once-a-second work when the counter is a multiple of ten.
            counter = (counter + 10) % 864000
            should_exit = await self.on_tick(counter)


def http_protocol() -> dict[str, Any]:
    """uvicorn's HTTP settings with the head bounded (the limits are checked here, at start)."""
    limits = HeadLimits.from_env(os.environ)
    if importlib.util.find_spec("httptools") is not None:
        return {"http": HEAD_LIMITED_PROTOCOL}
    return {"http": "h11", "h11_max_incomplete_event_size": limits.max_head_bytes}
