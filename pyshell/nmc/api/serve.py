"""`nmc api`: serve the DV API with uvicorn.

uvicorn's own access log is off: it prints the query string, which may hold a dvRef. The app
logs its own access lines without it, as JSON (nmc.api.middleware, nmc.api.logs); uvicorn's
other messages are JSON lines too. SSE streams end by themselves (NMC_API_SSE_MAX_SECONDS);
on shutdown uvicorn waits at most GRACEFUL_SHUTDOWN_SECONDS for them before closing.
"""

import os

import uvicorn

from nmc.api.logs import log_config

APP_FACTORY = "nmc.api.app:create_app"
GRACEFUL_SHUTDOWN_SECONDS = 20


def serve(host: str, port: int, *, workers: int = 1, access_log: bool = True) -> None:
    # Worker processes build their own app from the factory: they read the setting from the
    # environment they inherit.
    os.environ["NMC_API_ACCESS_LOG"] = "1" if access_log else "0"
    uvicorn.run(
        APP_FACTORY,
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
