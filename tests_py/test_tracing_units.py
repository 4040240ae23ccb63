"""nmc.tracing's parts: the setting, the privacy filter, the OTLP export, and that tracing
off imports nothing of OpenTelemetry."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from nmc import tracing
from nmc.tracing.privacy import clean_url


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"NMC_TRACING": "off"}, False),
        ({"NMC_TRACING": "otlp"}, True),
        ({"NMC_TRACING": " OTLP "}, True),
        ({"NMC_TRACING": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_the_setting(env, expected):
    assert tracing.wanted(env) is expected


def test_an_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="NMC_TRACING"):
        tracing.wanted({"NMC_TRACING": "jaeger"})


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://api.test/v1/notificaties?dvRef=zaak-1", "https://api.test/v1/notificaties"),
        ("https://user:geheim@dv.test/hook?token=x#y", "https://dv.test/hook"),
        ("/api/nmc/v1/notificaties?dvRef=zaak-1", "/api/nmc/v1/notificaties"),
        (
            "http://127.0.0.1:8080/v2/notifications/email",
            "http://127.0.0.1:8080/v2/notifications/email",
        ),
    ],
)
def test_urls_lose_query_fragment_and_credentials(url, clean):
    assert clean_url(url) == clean


def test_a_span_loses_what_may_be_personal_before_export():
    exporter = InMemorySpanExporter()
    tracing.configure("nmc-unit", exporter)
    try:
        with tracing.tracer().start_as_current_span(
            "GET", kind=SpanKind.SERVER,
            attributes={
                "http.url": "http://api.test/x?dvRef=zaak-9", "http.target": "/x?dvRef=zaak-9",
                "url.query": "dvRef=zaak-9", "http.method": "GET",
            },
        ) as span:  # fmt: skip
            span.record_exception(ValueError("invalid input: info@voorbeeld.nl"))
            span.set_status(Status(StatusCode.ERROR, "info@voorbeeld.nl"))
        [exported] = exporter.get_finished_spans()
    finally:
        tracing.shutdown()
    assert isinstance(exported, ReadableSpan)
    assert dict(exported.attributes) == {
        "http.url": "http://api.test/x", "http.target": "/x", "http.method": "GET",
    }  # fmt: skip
    [event] = exported.events
    assert dict(event.attributes) == {"exception.type": "ValueError", "exception.escaped": "False"}
    assert exported.status.status_code == StatusCode.ERROR
    assert not exported.status.description


def test_calls_outside_any_span_are_not_sampled():
    exporter = InMemorySpanExporter()
    tracing.configure("nmc-unit", exporter)
    try:
        tracing.tracer().start_span("SELECT", kind=SpanKind.CLIENT).end()  # a poll's query
        with tracing.tracer().start_as_current_span("verzenden", kind=SpanKind.CONSUMER):
            tracing.tracer().start_span("POST", kind=SpanKind.CLIENT).end()
        names = sorted(s.name for s in exporter.get_finished_spans())
    finally:
        tracing.shutdown()
    assert names == ["POST", "verzenden"]


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_on_it_exports_over_otlp_http_protobuf_where_the_otel_variables_say(monkeypatch):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    server = HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("NMC_TRACING", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "nmc-otlp-test")
    try:
        assert tracing.configure_from_env("nmc-worker")
        with tracing.tracer().start_as_current_span("verzenden", kind=SpanKind.CONSUMER):
            pass
    finally:
        tracing.shutdown()  # flushes the batch
        server.shutdown()
    [(path, content_type, body)] = _Collector.received
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    request = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = request.resource_spans
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "nmc-otlp-test"
    assert [s.name for s in resource_spans.scope_spans[0].spans] == ["verzenden"]


def test_off_the_api_and_the_worker_import_nothing_of_opentelemetry(tmp_path):
    code = (
        "import sys, json\n"
        "from nmc.api.app import create_app\n"
        "import nmc.worker.loop\n"
        "create_app().build_middleware_stack()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('opentelemetry'))))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "NMC_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert json.loads(out) == []
