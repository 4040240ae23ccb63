"""The console as a Starlette app (`create_app()`; `nmc console` serves it with uvicorn).

Server-rendered pages (Jinja2, autoescaped; no script at all), one call of an `nmc.console_*`
function per table, as nmc_console on autocommit connections. Every response carries a
Content-Security-Policy that allows nothing but the console's own stylesheet and forms, is
never cached and never framed. Access lines (JSON, nmc.console.access) name the route
template and the status: never a path's ids, a query string, a form field or a token.
"""

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nmc.auth.errors import JwksUnavailable
from nmc.console import views
from nmc.console.auth import OperatorVerifier
from nmc.console.settings import ConsoleSettings

log = logging.getLogger(__name__)
access_log = logging.getLogger("nmc.console.access")

POOL_OPEN_TIMEOUT_SECONDS = 10.0
POOL_WAIT_SECONDS = 10.0
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make Origin "null"
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class ConsoleApp(Starlette):
    """Starlette with the security headers and the access line outside everything else."""

    def build_middleware_stack(self) -> ASGIApp:
        return HeadersAndAccessLog(super().build_middleware_stack())


class HeadersAndAccessLog:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                names = {name for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            route = getattr(scope.get("route"), "path", None) or "(geen route)"
            access_log.info(
                "http-request",
                extra={
                    "velden": {
                        "method": scope["method"],
                        "route": route,
                        "status": status,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    }
                },
            )


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    settings = ConsoleSettings.from_env()
    verifier = OperatorVerifier(settings)
    try:
        await verifier.prime()
    except JwksUnavailable as error:
        log.warning("JWKS not loaded at start-up: %s", error)
    if settings.public_origin is None:
        log.warning(
            "NMC_CONSOLE_PUBLIC_URL is not set: a form's Origin is checked against the Host "
            "header (set it behind a proxy that rewrites Host)"
        )
    pool = AsyncConnectionPool(
        settings.database_url,
        min_size=1,
        max_size=settings.pool_max,
        open=False,
        timeout=POOL_WAIT_SECONDS,
        name="nmc-console",
        kwargs={"autocommit": True, "application_name": "nmc-console"},
    )
    try:
        await pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT_SECONDS)
        app.state.console = views.Console(
            settings=settings, verifier=verifier, pool=pool, templates=templates()
        )
        yield
    finally:
        await pool.close()


def templates() -> Environment:
    environment = Environment(
        loader=PackageLoader("nmc.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["tijd"] = views.format_time
    environment.filters["duur"] = views.format_duration
    return environment


_STYLESHEET = files("nmc.console").joinpath("static/console.css").read_bytes()


async def stylesheet(request: Request) -> Response:
    return Response(
        _STYLESHEET,
        media_type="text/css",
        headers={"cache-control": "private, max-age=300"},
    )


async def not_found(request: Request, exc: Exception) -> Response:
    return HTMLResponse("<!doctype html><title>Niet gevonden</title><p>Niet gevonden.", 404)


def create_app() -> ConsoleApp:
    routes: list[Any] = [
        Route("/static/console.css", stylesheet, methods=["GET"]),
        *views.routes(),
    ]
    app = ConsoleApp(routes=routes, lifespan=lifespan, exception_handlers={404: not_found})
    app.router.redirect_slashes = False
    return app
