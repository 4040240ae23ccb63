"""`nmc console`: serve the operator console with uvicorn, on a port of its own.

The console is off by default: nothing starts it but this command, and it never shares the
DV API's port or app. It binds 127.0.0.1 unless told otherwise; in a cluster, put it behind
the platform's authenticating proxy (docs/console.md). Log lines are JSON, as the API's.
"""

import uvicorn

from nmc.observability.logs import log_config

APP_FACTORY = "nmc.console.app:create_app"
DEFAULT_PORT = 8090


def serve(host: str, port: int) -> None:
    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        lifespan="on",
        access_log=False,
        server_header=False,
        log_config=log_config(),
        timeout_graceful_shutdown=5,
    )
