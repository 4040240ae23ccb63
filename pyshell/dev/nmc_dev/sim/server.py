"""Running a simulator: in the foreground (`nmc sim …`) or in a background thread (tests).

Both bind the socket first, so port 0 gives a free loopback port that is known before the
server starts serving.
"""

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

LOOPBACK = "127.0.0.1"


def bind(port: int = 0, host: str = LOOPBACK) -> socket.socket:
    # proto IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on accepted sockets whose proto
    # says TCP, and without it every response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """As uvicorn's, but without re-raising the signal after the graceful shutdown, so
        `nmc sim` exits 0 on SIGTERM like `nmc worker`."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def _server(app: ASGIApp) -> uvicorn.Server:
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=1
    )
    return _Server(config)


def serve_forever(app: ASGIApp, port: int, host: str = LOOPBACK, on_ready: Callable | None = None):
    """Serve until SIGINT/SIGTERM (uvicorn installs the handlers)."""
    sock = bind(port, host)
    if on_ready:
        on_ready(f"http://{host}:{sock.getsockname()[1]}")
    _server(app).run(sockets=[sock])


@dataclass
class RunningServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_in_thread(app: ASGIApp, port: int = 0, host: str = LOOPBACK) -> RunningServer:
    """Start `app` on its own event loop in a daemon thread; returns once it serves.

    uvicorn only installs signal handlers in the main thread, so this one never does."""
    sock = bind(port, host)
    server = _server(app)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True, name="nmc-sim"
    )
    thread.start()
    for _ in range(1000):
        if server.started:
            break
        thread.join(timeout=0.01)
    else:
        raise RuntimeError("the simulator did not start")
    return RunningServer(f"http://{host}:{sock.getsockname()[1]}", server, thread)
