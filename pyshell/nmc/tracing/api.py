"""The API's server spans: the ASGI instrumentation outside the NMC's own middleware.

The span is current while nmc.api.middleware runs, so the trace context the intake stores
and the response's `traceparent` are this span's: the DV's trace id (from its valid
`traceparent`, else a new one) and the intake span's id. The span is named by the route
template (`POST /v1/decentraal/notificaties`), never by a path with ids in it; the query
string never reaches an exported span (nmc.tracing.privacy). Probes and /metrics make no
spans unless OTEL_PYTHON_ASGI_EXCLUDED_URLS says otherwise.
"""

from __future__ import annotations

import os
from typing import Any

import nmc.tracing as tracing

EXCLUDED_URLS = "/health/live,/health/ready,/metrics"


def instrumented(app: Any) -> Any:
    """`app` under the ASGI instrumentation when tracing is on; else `app` itself."""
    if not tracing.enabled():
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(
        app,
        tracer_provider=tracing.provider(),
        excluded_urls=os.environ.get("OTEL_PYTHON_ASGI_EXCLUDED_URLS", EXCLUDED_URLS),
        default_span_details=_method_only,
        exclude_spans=["receive", "send"],  # one span per request, not one per message
    )


def _method_only(scope: dict) -> tuple[str, dict]:
    """The name at the start (the route is known once routed: name_server_span)."""
    return str(scope.get("method") or "HTTP"), {}


def name_server_span(method: str, route: str) -> None:
    """Name the current server span `METHOD route-template` once the router has matched
    (nmc.api.middleware calls it; nothing when tracing is off)."""
    if not tracing.enabled():
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
