"""OpenTelemetry traces of a notification's life, off unless configured.

`NMC_TRACING=otlp` turns them on for `nmc api` and `nmc worker`: spans go out over OTLP
(http/protobuf) to where the exporter's standard variables say (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `…_HEADERS`, `…_TIMEOUT`), sampled as
`OTEL_TRACES_SAMPLER` says, named as `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` say
(default `nmc-api`, `nmc-worker`), batched as `OTEL_BSP_*` says. `OTEL_SDK_DISABLED=true`
keeps them off whatever NMC_TRACING says.

Off (the default) nothing of OpenTelemetry is imported or called: `enabled()` is one global
read, the worker's kinds and the API's middleware stay as they are, and the outbound
transport is not wrapped.

On: the API's requests are server spans (the ASGI instrumentation), whose trace context the
intake stores with the notification (trace id and the intake span's id); every task's span,
hours or days later, *links* to that intake span rather than being its child (nmc.tracing.
worker); the outbound calls are client spans that carry `traceparent` (the httpx
instrumentation's transport, under the worker's own client); the SQL calls are spans of the
psycopg instrumentation (the statement text, never its parameters). Every span passes
nmc.tracing.privacy before it is exported: no query strings, no exception messages.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the types only: importing the SDK is what "off" must not do
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

SETTING = "NMC_TRACING"
SCOPE = "nmc"

_provider: TracerProvider | None = None
_tracer: Tracer | None = None


def enabled() -> bool:
    """Whether this process traces (one global read: what every caller asks first)."""
    return _tracer is not None


def tracer() -> Tracer:
    """The NMC's tracer; only while `enabled()`."""
    assert _tracer is not None  # noqa: S101 - callers ask enabled() first
    return _tracer


def provider() -> TracerProvider:
    assert _provider is not None  # noqa: S101 - callers ask enabled() first
    return _provider


def wanted(environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    """Whether the environment asks for traces: NMC_TRACING=otlp, unless OTEL_SDK_DISABLED."""
    env = os.environ if environ is None else environ
    mode = env.get(SETTING, "").strip().lower()
    if mode in ("", "off", "0", "false", "none"):
        return False
    if mode != "otlp":
        raise ValueError(f"{SETTING} is 'otlp' or 'off', not {mode!r}")
    return env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"


def configure_from_env(service: str) -> bool:
    """Turn tracing on for this process when the environment asks for it (idempotent: a
    process that already traces keeps its provider). Whether tracing is on."""
    if enabled():
        return True
    if not wanted():
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    configure(service, OTLPSpanExporter(), batch=True)
    return True


def configure(service: str, exporter: SpanExporter, *, batch: bool = False) -> None:
    """Trace this process into `exporter` (behind the privacy filter); `batch`: export in
    the background (BatchSpanProcessor, as in production) instead of at each span's end."""
    global _provider, _tracer
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    from nmc.tracing.privacy import PrivateSpanExporter
    from nmc.tracing.sampling import NoOrphanCalls

    attributes: dict[str, Any] = {"service.namespace": "moza"}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = service
    new = TracerProvider(resource=Resource.create(attributes), sampler=NoOrphanCalls())
    private = PrivateSpanExporter(exporter)
    new.add_span_processor(BatchSpanProcessor(private) if batch else SimpleSpanProcessor(private))
    # Statements as text only: never their parameters (capture_parameters stays off), no
    # SQL commenter (it would put the trace context into every statement's text).
    PsycopgInstrumentor().instrument(tracer_provider=new, skip_dep_check=True)
    _provider, _tracer = new, new.get_tracer(SCOPE)


def shutdown() -> None:
    """Export what is pending and turn tracing off again (tests; a process's end)."""
    global _provider, _tracer
    if _provider is None:
        return
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    PsycopgInstrumentor().uninstrument()
    _provider.shutdown()
    _provider, _tracer = None, None


def current_ids() -> tuple[str, str, str] | None:
    """(trace id, span id, flags) of the current span in hex, when tracing and a span is
    current; else None."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return (
        trace.format_trace_id(context.trace_id),
        trace.format_span_id(context.span_id),
        f"{int(context.trace_flags):02x}",
    )
