"""The suite-wide personal-data scan (privacy_scan.py) finds leaks, so a clean run means
something: in a logger nobody listens to, in an API error body, in a database before it is
dropped, a value registered by an earlier test, and a whole pytest run that fails on it,
naming the kind and the place but never the value. Findings provoked here are discarded."""

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jwt
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from nmc.api.app import NmcApi
from privacy_scan import DVREF, EMAIL, NUMMER, PERSONALISATIE, SCAN, scan_database

HERE = Path(__file__).resolve().parent


def provoked() -> list:
    found = SCAN.end()
    SCAN.discard(found)
    return found


def test_a_value_in_a_silent_logger_is_found_and_reported_without_the_value():
    SCAN.register(EMAIL, "Lek.Test@Prive-Voorbeeld.nl")
    SCAN.register(PERSONALISATIE, "Test")  # too short to prove anything: not a needle
    silent = logging.getLogger("nmc.scan-test.stil")
    silent.propagate = False  # no handler anywhere: the record still passes the scan
    silent.info("verzonden", extra={"velden": {"aan": "lek.test@prive-voorbeeld.NL"}})
    logging.getLogger("nmc.scan-test.gewoon").warning("een test met Test erin")
    logging.getLogger("httpx").warning("GET /x?adres=lek.test@prive-voorbeeld.nl")  # client
    [finding] = provoked()
    assert (finding.kind, finding.where) == (EMAIL, "a log record of nmc.scan-test.stil (INFO)")
    assert "lek.test" not in str(finding).lower()


def test_a_value_registered_earlier_is_found_inside_other_text():
    SCAN.register(NUMMER, "999990019")
    assert provoked() == []  # the value's own test ends clean
    SCAN.output("a worker's stderr", '{"event": "x", "nummer": "kvk:999990019."}')
    SCAN.output("a worker's /metrics", 'nmc_taken{soort="verzenden"} 999990018')
    [finding] = provoked()
    assert (finding.kind, finding.where) == (NUMMER, "a worker's stderr")


def test_an_api_error_body_is_scanned_and_the_request_registers_the_values():
    async def intake(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"detail": f"fout in {body['dvRef']}"}, status_code=400)

    async def accepted(request: Request) -> JSONResponse:
        return JSONResponse({"dvRef": request.query_params["dvRef"]})  # a success body

    app = NmcApi(
        routes=[
            Route("/api/nmc/v1/decentraal/notificaties", intake, methods=["POST"]),
            Route("/api/nmc/v1/notificaties", accepted, methods=["GET"]),
        ]
    )
    app.log_access = False
    with TestClient(app) as client:
        body = {
            "dvRef": "dvref-scan-test-4711",
            "emailAdres": "api.lek@prive-voorbeeld.nl",
            "berichtgegevens": {"naam": "Geheimzinnig-Scanvoorbeeld"},
        }
        assert client.post("/api/nmc/v1/decentraal/notificaties", json=body).status_code == 400
        assert client.get("/api/nmc/v1/notificaties", params={"dvRef": "dvref-q-8812"}).is_success
    [finding] = provoked()
    assert finding.kind == DVREF
    assert finding.where == ("the response body of POST /api/nmc/v1/decentraal/notificaties (400)")
    for value in ("api.lek@prive-voorbeeld.nl", "geheimzinnig-scanvoorbeeld", "dvref-q-8812"):
        assert value in SCAN.needles


def test_a_test_database_is_scanned_before_it_is_dropped(conn, db_url):
    SCAN.register(NUMMER, "999990032")
    conn.execute("SELECT nmc.ensure_controle()")
    conn.execute("UPDATE nmc.taak SET laatste_fout = 'intern-999990032'")
    scan_database(db_url)
    [finding] = provoked()
    assert (finding.kind, finding.where) == (NUMMER, "the tasks' last errors")


def test_a_delivery_proof_is_scanned_decoded_and_a_history_page_too():
    SCAN.register(EMAIL, "bewijs.lek@prive-voorbeeld.nl")
    SCAN.register(DVREF, "dvref-geschiedenis-5150")
    proof = jwt.encode(
        {"notificatie": {"naar": "bewijs.lek@prive-voorbeeld.nl"}},
        "een-sleutel-van-de-test-0123456789abcdef",
        algorithm="HS256",
    )
    assert "bewijs.lek" not in proof  # base64url: only the decoded payload shows it

    async def afleverbewijs(request: Request) -> Response:
        return Response(proof, media_type="application/jose")

    async def geschiedenis(request: Request) -> JSONResponse:
        return JSONResponse({"events": [], "opmerking": "dvref-geschiedenis-5150"})

    base = "/api/nmc/v1/notificaties/{notificatieId}"
    app = NmcApi(
        routes=[
            Route(f"{base}/afleverbewijs", afleverbewijs, methods=["GET"]),
            Route(f"{base}/geschiedenis", geschiedenis, methods=["GET"]),
        ]
    )
    app.log_access = False
    with TestClient(app) as client:
        assert client.get("/api/nmc/v1/notificaties/x/afleverbewijs").status_code == 200
        assert client.get("/api/nmc/v1/notificaties/x/geschiedenis").status_code == 200
    found = {(f.kind, f.where) for f in provoked()}
    assert found == {
        (EMAIL, f"the response body of GET {base}/afleverbewijs (200)"),
        (DVREF, f"the response body of GET {base}/geschiedenis (200)"),
    }


def test_the_receipt_history_is_scanned_before_the_database_is_dropped(conn, db_url):
    SCAN.register(NUMMER, "999990045")
    conn.execute("SET session_replication_role = replica")  # no notification needed
    conn.execute(
        "INSERT INTO nmc.receiptgeschiedenis (notificatie_id, poging_id, bron, status,"
        " ontvangen_op, verwerkt_op, resultaat, toegepast, na_eindstatus, notificatie_versie)"
        " VALUES (gen_random_uuid(), gen_random_uuid(), 'callback', 'x-999990045', now(),"
        " now(), 'onbekende-status', false, false, 1)"
    )
    conn.execute("RESET session_replication_role")
    scan_database(db_url)
    [finding] = provoked()
    assert (finding.kind, finding.where) == (NUMMER, "the receipt history")


def test_a_run_with_a_leak_fails_and_names_where(tmp_path):
    for name in ("conftest.py", "privacy_scan.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_binnen.py").write_text(
        "import logging\n"
        "from privacy_scan import EMAIL, SCAN\n\n"
        "def test_lekt():\n"
        "    SCAN.register(EMAIL, 'binnen.lek@prive-voorbeeld.nl')\n"
        "    logging.getLogger('nmc.binnen').info('aan binnen.lek@prive-voorbeeld.nl')\n\n"
        "def test_schoon():\n"
        "    SCAN.register(EMAIL, 'schoon@prive-voorbeeld.nl')\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert "personal data in the NMC's outputs" in run.stdout
    assert "test_binnen.py::test_lekt: e-mail in a log record of nmc.binnen (INFO)" in run.stdout
    assert "test_schoon" not in run.stdout
    assert "binnen.lek" not in run.stdout + run.stderr


def test_a_value_in_an_exported_span_is_found_when_tracing_is_on():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from nmc import tracing

    SCAN.register(DVREF, "zaak-span-lek-4711")
    assert provoked() == []
    exporter = InMemorySpanExporter()
    tracing.configure("nmc-scan-test", exporter)
    try:
        with tracing.tracer().start_as_current_span("verzenden") as span:
            span.set_attribute("nmc.test", "over zaak-span-lek-4711")
    finally:
        tracing.shutdown()
    [finding] = provoked()
    assert (finding.kind, finding.where) == (DVREF, "the span 'verzenden': attribute nmc.test")
