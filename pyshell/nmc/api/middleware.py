"""Headers on every response, W3C trace context, and an access log without personal data.

Plain ASGI (no BaseHTTPMiddleware: it costs a task per request). The app installs it outside
Starlette's ServerErrorMiddleware, so a 500 carries the headers too.

Trace context: a valid `traceparent` on the request gives the trace id that is stored on the
notification (and handed on to every task); otherwise a new one is made. The response carries
`traceparent` with that trace id and this server's span id.

The access log (one JSON line per request, nmc.observability.logs) names method, route
template, status, duration and trace id; never the query string (it may hold a dvRef) and never a
header value. The same request feeds the latency histogram of GET /metrics (nmc.api.metrics), timed
until the response head is sent.
"""

import re
import secrets
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nmc import tracing
from nmc.api.metrics import NO_ROUTE, HttpMetrics
from nmc.api.openapi import API_VERSION, API_VERSION_HEADER
from nmc.observability.logs import log_access
from nmc.tracing import api as tracing_api

SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
)

_FIXED_HEADERS: tuple[tuple[bytes, bytes], ...] = tuple(
    (name.lower().encode("ascii"), value.encode("ascii"))
    for name, value in ((API_VERSION_HEADER, API_VERSION), *SECURITY_HEADERS)
)
_OURS = frozenset(name for name, _ in _FIXED_HEADERS) | {b"traceparent"}

TRACE_ID_KEY = "nmc.trace_id"
SPAN_ID_KEY = "nmc.span_id"

# version-traceid-parentid-flags; a later version may append fields after a dash.
_TRACEPARENT = re.compile(
    r"\A([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^\s]*)?\Z"
)
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def parse_traceparent(value: str | None) -> tuple[str, str] | None:
    """(trace id, flags) of a valid W3C traceparent header; None when absent or invalid."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest) or trace_id == _ZERO_TRACE:
        return None
    if span_id == _ZERO_SPAN:
        return None
    return trace_id, flags


def trace_id_of(scope: Scope) -> str:
    """The trace id this request runs under (set by ResponseHeadersMiddleware)."""
    return scope[TRACE_ID_KEY]


def span_id_of(scope: Scope) -> str:
    """This server's span id for the request: the intake span a notification's tasks link
    to (the server span's when tracing, nmc.tracing; else one made here)."""
    return scope[SPAN_ID_KEY]


class ResponseHeadersMiddleware:
    def __init__(
        self, app: ASGIApp, *, log_access: bool = True, metrics: HttpMetrics | None = None
    ):
        self.app = app
        self.log_access = log_access
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        current = tracing.current_ids()  # the server span's, when tracing
        if current is None:
            incoming = None
            for name, value in scope["headers"]:
                if name == b"traceparent":
                    incoming = parse_traceparent(value.decode("latin-1"))
                    break
            trace_id, flags = incoming or (secrets.token_hex(16), "00")
            span_id = secrets.token_hex(8)
        else:
            trace_id, span_id, flags = current
        scope[TRACE_ID_KEY] = trace_id
        scope[SPAN_ID_KEY] = span_id
        traceparent = f"00-{trace_id}-{span_id}-{flags}"
        status = 500
        head_seconds: float | None = None

        async def send_with_headers(message: Message) -> None:
            nonlocal status, head_seconds
            if message["type"] == "http.response.start":
                status = message["status"]
                if current is not None:  # the span ends with the response: name it now
                    route = getattr(scope.get("route"), "path", None) or NO_ROUTE
                    tracing_api.name_server_span(scope["method"], route)
                head_seconds = time.perf_counter() - started
                # Ours replace any the app set (it sets none of them today).
                message["headers"] = [
                    *(h for h in message.get("headers", ()) if h[0].lower() not in _OURS),
                    *_FIXED_HEADERS,
                    (b"traceparent", traceparent.encode("ascii")),
                ]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            route = getattr(scope.get("route"), "path", None) or NO_ROUTE
            if self.metrics is not None:
                seconds = time.perf_counter() - started if head_seconds is None else head_seconds
                self.metrics.observe(scope["method"], route, status, seconds)
            if self.log_access:
                duration_ms = (time.perf_counter() - started) * 1000
                log_access(scope["method"], route, status, duration_ms, trace_id)
