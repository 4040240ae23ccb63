"""Traces across the lifecycle (nmc.tracing): one notification's intake, send, receipt and
settlement spans, the task spans linked to the intake span, `traceparent` on the calls.

Tracing is on in these tests only (the `traced` fixture: the SDK's in-memory exporter behind
the NMC's privacy filter); the suite's personal-data scan reads every exported span
(tests_py/privacy_scan.py).
"""

import uuid

import httpx
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pipelinetest import DV_OIN, advance, callbacks_settled, set_faults, sim_get, wait_for
from test_pipeline_worker import seed_party

from nmc import tracing
from nmc.admin.dev_iam import issue_dev_token
from nmc.api.openapi import BASE_PATH

DV_TRACE = "0af7651916cd43dd8448eb211c80319c"
DV_SPAN = "b7ad6b7169203331"


def hex_trace(context) -> str:
    return trace.format_trace_id(context.trace_id)


def hex_span(context) -> str:
    return trace.format_span_id(context.span_id)


def story(spans) -> str:
    """The spans as the closing note shows them: name, kind, ids, links, attributes."""
    lines = []
    for span in sorted(spans, key=lambda s: s.start_time):
        parent = hex_span(span.parent) if span.parent else "-"
        lines.append(
            f"{span.name} [{span.kind.name}] trace={hex_trace(span.context)} "
            f"span={hex_span(span.context)} parent={parent}"
        )
        for link in span.links:
            lines.append(
                f"    link -> trace={hex_trace(link.context)} span={hex_span(link.context)} "
                f"{dict(link.attributes or {})}"
            )
        for key, value in sorted((span.attributes or {}).items()):
            lines.append(f"    {key} = {value}")
    return "\n".join(lines)


def intake(
    api_url: str, tmp_path, monkeypatch, headers: dict[str, str], **recipient: str
) -> httpx.Response:
    """A decentraal intake over HTTP (centraal when `recipient` names a party)."""
    monkeypatch.setenv("NMC_DEV_IAM_KEY_FILE", str(tmp_path / "iam.pem"))
    token = issue_dev_token(DV_OIN, issuer="https://iam.test", audience="nmc")
    regie = "centraal" if recipient else "decentraal"
    return httpx.post(
        f"{api_url}{BASE_PATH}/{regie}/notificaties",
        json={
            "dvRef": f"trace-zaak-{uuid.uuid4()}",
            "berichtType": "aanslag",
            **(recipient or {"emailAdres": "bezorgd+spoor@voorbeeld.nl"}),
            "berichtgegevens": {"naam": "Spoorzoeker B.V."},
        },
        headers={"Authorization": f"Bearer {token}", **headers},
    )


def intake_links(span) -> list[tuple[str, str]]:
    return [
        (hex_trace(link.context), hex_span(link.context))
        for link in span.links
        if (link.attributes or {}).get("nmc.link") == "intake"
    ]


async def test_one_notification_is_one_story_of_linked_spans(
    traced, sim, callbacks, worker, dv_id, conn, tmp_path, monkeypatch
):
    response = intake(
        callbacks, tmp_path, monkeypatch, {"traceparent": f"00-{DV_TRACE}-{DV_SPAN}-01"}
    )
    assert response.status_code == 202, response.text
    notificatie_id = response.json()["notificatieId"]
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 1)
    assert await worker.drain(["receipt"]) == 1
    advance(conn, "7 days 1 hour")
    assert await worker.drain(["vaststellen"]) == 1
    spans = traced.get_finished_spans()
    print(story(spans))  # the closing note's trace (pytest -s)

    # The intake: the server span, a child of the DV's span, in the DV's trace.
    (intake_span,) = [s for s in spans if s.name == f"POST {BASE_PATH}/decentraal/notificaties"]
    assert intake_span.kind == SpanKind.SERVER
    assert hex_trace(intake_span.context) == DV_TRACE
    assert hex_span(intake_span.parent) == DV_SPAN
    intake_id = hex_span(intake_span.context)
    assert response.headers["traceparent"].startswith(f"00-{DV_TRACE}-{intake_id}-")
    stored = conn.execute(
        "SELECT trace_id, intake_span_id FROM nmc.notificatie WHERE id = %s", [notificatie_id]
    ).fetchone()
    assert stored == (DV_TRACE, intake_id)
    queries = [
        s for s in spans if s.parent is not None and s.parent.span_id == intake_span.context.span_id
    ]
    assert any(s.attributes.get("db.system") == "postgresql" for s in queries)

    # Each task's span starts a trace of its own and links to the intake span.
    by_name = {}
    for name in ("verzenden", "receipt", "vaststellen"):
        (span,) = [s for s in spans if s.name == name]
        assert span.kind == SpanKind.CONSUMER
        assert span.parent is None
        assert hex_trace(span.context) != DV_TRACE
        intake_links = [
            link for link in span.links if (link.attributes or {}).get("nmc.link") == "intake"
        ]
        assert [(hex_trace(link.context), hex_span(link.context)) for link in intake_links] == [
            (DV_TRACE, intake_id)
        ]
        assert intake_links[0].attributes["nmc.notificatie.id"] == notificatie_id
        by_name[name] = span
    send = by_name["verzenden"]
    assert send.attributes["nmc.taak.uitkomst"] == "verzonden"
    # The send's LDV record (under the intake's trace id, SPEC §8) is linked too.
    ldv_links = [link for link in send.links if (link.attributes or {}).get("nmc.link") == "ldv"]
    assert [hex_trace(link.context) for link in ldv_links] == [DV_TRACE]

    # The call to NotifyNL is a client span under the send, and NotifyNL saw its traceparent.
    clients = [
        s for s in spans
        if s.kind == SpanKind.CLIENT and s.parent is not None
        and s.parent.span_id == send.context.span_id and "http.method" in s.attributes
    ]  # fmt: skip
    seen = {call["traceparent"][:52] for call in sim_get(sim.notifynl_url, "/_sim/requests")}
    expected = {f"00-{hex_trace(s.context)}-{hex_span(s.context)}" for s in clients}
    assert seen & expected, (seen, expected)
    for span in spans:
        url = span.attributes.get("http.url") or span.attributes.get("url.full") or ""
        assert "?" not in url


async def test_without_a_valid_traceparent_the_intake_starts_a_trace(
    traced, sim, callbacks, dv_id, conn, tmp_path, monkeypatch
):
    response = intake(callbacks, tmp_path, monkeypatch, {"traceparent": "00-zz-bad-01"})
    assert response.status_code == 202, response.text
    # The server span ends just after the response went out.
    (intake_span,) = wait_for(
        lambda: [s for s in traced.get_finished_spans() if s.kind == SpanKind.SERVER],
        what="the server span",
    )
    assert intake_span.parent is None
    stored = conn.execute(
        "SELECT trace_id, intake_span_id FROM nmc.notificatie WHERE id = %s",
        [response.json()["notificatieId"]],
    ).fetchone()
    assert stored == (hex_trace(intake_span.context), hex_span(intake_span.context))


async def test_tracing_off_stores_the_span_id_of_the_response(
    sim, callbacks, dv_id, conn, tmp_path, monkeypatch
):
    assert not tracing.enabled()
    response = intake(callbacks, tmp_path, monkeypatch, {})
    _, trace_id, span_id, _ = response.headers["traceparent"].split("-")
    stored = conn.execute(
        "SELECT trace_id, intake_span_id FROM nmc.notificatie WHERE id = %s",
        [response.json()["notificatieId"]],
    ).fetchone()
    assert stored == (trace_id, span_id)


async def test_reconciliation_and_every_outbound_call_are_traced(
    traced, sim, callbacks, worker, dv_id, conn, tmp_path, monkeypatch
):
    seed_party(sim, "44445555", [{"waarde": "bezorgd+spoor@bedrijf.nl"}], soort="KVK")
    set_faults(sim, lose_rate=1.0)  # the callback is lost: reconciliation finds the outcome
    response = intake(
        callbacks, tmp_path, monkeypatch, {},
        identificatieType="KVK", identificatieNummer="44445555",
    )  # fmt: skip
    assert response.status_code == 202, response.text
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 1)
    advance(conn, "1 hour 1 minute")
    assert await worker.drain(["reconciliëren"]) == 1
    spans = traced.get_finished_spans()
    (intake_span,) = [s for s in spans if s.kind == SpanKind.SERVER and "centraal" in s.name]
    intake_ctx = (hex_trace(intake_span.context), hex_span(intake_span.context))
    tasks = {s.name: s for s in spans if s.kind == SpanKind.CONSUMER}
    assert set(tasks) == {"verzenden", "reconciliëren"}
    for span in tasks.values():
        assert intake_links(span) == [intake_ctx]
    assert tasks["reconciliëren"].attributes["nmc.taak.uitkomst"] == "bezorgd"

    # Profielservice, LDV and NotifyNL each saw the traceparent of a client span that is a
    # child of a task's span: the calls join the task's trace.
    task_ids = {s.context.span_id for s in tasks.values()}
    clients = {
        f"00-{hex_trace(s.context)}-{hex_span(s.context)}"
        for s in spans
        if s.kind == SpanKind.CLIENT and s.parent is not None and s.parent.span_id in task_ids
    }
    seen = {
        "profielservice": [c["traceparent"] for c in sim_get(sim.profiel_url, "/_sim/requests")],
        "ldv": [r["_traceparent"] for r in sim_get(sim.ldv_url, "")],
        "notifynl": [c["traceparent"] for c in sim_get(sim.notifynl_url, "/_sim/requests")],
    }
    for where, traceparents in seen.items():
        assert traceparents, where
        assert {t[:52] for t in traceparents} <= clients, where
