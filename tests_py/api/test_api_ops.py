"""The webhook resume, the published JWKS, /metrics, /health/*, and the JSON access log."""

import json
import logging
import re
import subprocess
import sys

import jwt
import psycopg
import pytest
from apitest import BASE, OIN_A, OIN_B, auth, token
from feedtest import intake, read_until
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.api.metrics import database_lines
from nmc.observability.logs import JsonFormatter
from nmc.signing.webhook_signing import load_signing_ring, new_signing_ring
from nmc_client import Conflict, CursorExpired, NmcClient, NotFound

HERVATTEN = f"{BASE}/webhook/hervatten"
POSITIE = f"{BASE}/webhook/positie"
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}


# --------------------------------------------------------------------------------------------
# Webhook resume


def test_resume_the_webhook_is_204_and_404_without_one(api_env, apply_dv, conn):
    apply_dv(OIN_A, webhook={"url": "https://dv.example/nmc-webhook", "maxMislukt": 2})
    apply_dv(OIN_B)
    conn.execute("SELECT nmc.ensure_terugkoppelen()")
    conn.execute(
        "UPDATE nmc.webhookpositie SET mislukt = 5, uitgeschakeld = true,"
        " gepauzeerd_tot = nmc.now() + interval '1 day'"
    )
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        response = client.post(HERVATTEN, headers=auth(OIN_A))
        assert response.status_code == 204, response.text
        [row] = conn.execute(
            "SELECT mislukt, uitgeschakeld, gepauzeerd_tot FROM nmc.webhookpositie"
        ).fetchall()
        assert row == (0, False, None)

        missing = client.post(HERVATTEN, headers=auth(OIN_B))
        assert missing.status_code == 404
        assert missing.json()["detail"] == "Deze dienstverlener heeft geen webhook."

        with_body = client.post(HERVATTEN, json={"nu": True}, headers=auth(OIN_A))
        assert with_body.status_code == 400
        assert client.post(HERVATTEN).status_code == 401


def test_a_webhook_paused_for_a_gap_comes_back_only_by_setting_its_position(
    api_env, apply_dv, conn
):
    apply_dv(OIN_A, webhook={"url": "https://dv.example/nmc-webhook"})
    apply_dv(OIN_B)
    conn.execute("SELECT nmc.ensure_terugkoppelen()")
    with TestClient(create_app(), raise_server_exceptions=False) as http:
        nmc = NmcClient(f"http://testserver{BASE}", lambda: token(OIN_A), http=http)
        cursor = nmc.read_changes().cursor
        # The log's range up to just past that cursor was dropped (the register says so),
        # and the webhook's claim found the gap (tests_sql/webhook_gat.sql).
        [einde] = conn.execute(
            "UPDATE nmc.event_partitie SET verwijderd_op = nmc.now(),"
            " xid_tot = (pg_snapshot_xmin(pg_current_snapshot())::text::bigint + 1000)"
            "::text::xid8 RETURNING xid_tot::text"
        ).fetchone()
        conn.execute("UPDATE nmc.webhookpositie SET gat_op = nmc.now()")

        with pytest.raises(Conflict, match="PUT /webhook/positie"):
            nmc.resume_webhook()  # resuming would skip the lost events
        with pytest.raises(CursorExpired):
            nmc.set_webhook_position(cursor)  # the feed's 410 rules
        assert conn.execute("SELECT gat_op IS NOT NULL FROM nmc.webhookpositie").fetchone()[0]
        for body in ({}, {"cursor": cursor, "vanaf": "oudste"}, {"vanaf": "nieuwste"},
                     {"cursor": "niet geldig"}, {"cursor": cursor, "nu": True}):  # fmt: skip
            assert http.put(POSITIE, json=body, headers=auth(OIN_A)).status_code == 400, body
        assert http.put(POSITIE, json={"vanaf": "oudste"}).status_code == 401
        with pytest.raises(NotFound):
            NmcClient(
                f"http://testserver{BASE}", lambda: token(OIN_B), http=http
            ).set_webhook_position()

        nmc.set_webhook_position()  # from the oldest available event
        row = conn.execute("SELECT xid::text, event_id, gat_op FROM nmc.webhookpositie").fetchone()
        assert row == (einde, 0, None)
        assert conn.execute(
            "SELECT count(*) FROM nmc.taak WHERE soort = 'terugkoppelen' AND staat = 'open'"
            " AND due <= nmc.now()"
        ).fetchone() == (1,), "the webhook delivers again at once"

        conn.execute("UPDATE nmc.event_partitie SET verwijderd_op = NULL")
        nmc.set_webhook_position(cursor)  # a cursor it holds, now valid: back to it
        [xid] = conn.execute("SELECT xid::text FROM nmc.webhookpositie").fetchone()
        assert int(xid) < int(einde), "back before the end of the range, at the cursor"


# --------------------------------------------------------------------------------------------
# JWKS


@pytest.mark.parametrize("path", ["/.well-known/jwks.json", f"{BASE}/.well-known/jwks.json"])
def test_the_jwks_publishes_the_public_signing_keys(client, api_env, path):
    response = client.get(path)  # no token needed
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    # The webhook ring's key, then the delivery-proof ring's (nmc.signing.afleverbewijs_signing).
    key, proof_key = document["keys"]
    assert key["kid"] == "nmc-test-1" and key["alg"] == "ES256" and key["use"] == "sig"
    assert proof_key["kid"] == "nmc-bewijs-test-1" and proof_key["use"] == "sig"
    assert not PRIVATE_MEMBERS & (set(key) | set(proof_key)), "no private material"
    assert "PRIVATE" not in response.text

    # A token the worker signs with the ring verifies against what the API publishes.
    ring = load_signing_ring(api_env.secrets / "webhook-signing.json")
    token = ring.sign("https://dv.example/nmc-webhook", issuer="urn:test:nmc")
    keys = jwt.PyJWKSet.from_dict(document)
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(
        token,
        keys[header["kid"]].key,
        algorithms=["ES256"],
        audience="https://dv.example/nmc-webhook",
        issuer="urn:test:nmc",
    )
    assert claims["exp"] - claims["iat"] <= 300 and claims["jti"]


def test_the_jwks_lists_every_key_of_a_rotating_ring(api_env, dvs, monkeypatch):
    old = new_signing_ring("oud", "RS256")
    new = new_signing_ring("nieuw", "ES256")
    ring = {"active": "nieuw", "keys": {**old["keys"], **new["keys"]}}
    path = api_env.secrets / "ring.json"
    path.write_text(json.dumps(ring))
    monkeypatch.setenv("NMC_WEBHOOK_SIGNING_KEYS_FILE", str(path))
    with TestClient(create_app()) as client:
        keys = client.get("/.well-known/jwks.json").json()["keys"]
    assert [(k["kid"], k["alg"], k["kty"]) for k in keys] == [
        ("nieuw", "ES256", "EC"),
        ("oud", "RS256", "RSA"),
        ("nmc-bewijs-test-1", "ES256", "EC"),  # the delivery-proof ring's, after them
    ]
    assert all(not PRIVATE_MEMBERS & set(k) for k in keys)


def test_without_a_signing_ring_the_jwks_is_empty(api_env, dvs, monkeypatch):
    monkeypatch.delenv("NMC_WEBHOOK_SIGNING_KEYS_FILE")
    monkeypatch.delenv("NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    with TestClient(create_app()) as client:
        assert client.get("/.well-known/jwks.json").json() == {"keys": []}


# --------------------------------------------------------------------------------------------
# Metrics


def test_metrics_hold_the_database_counts_and_the_latency_histogram(client, conn):
    [notificatie_id] = intake(client)
    read_until(client, 1)
    client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth(OIN_B))  # a 404
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert "# TYPE nmc_taken gauge" in text
    assert 'nmc_taken{soort="verzenden",staat="open"} 1' in text
    assert 'nmc_notificaties{status="aangenomen"} 1' in text
    assert "nmc_database_bereikbaar 1" in text
    assert "# TYPE nmc_http_request_duration_seconds histogram" in text
    route = "/api/nmc/v1/notificaties/{notificatieId}"
    assert f'route="{route}",status="200"}} 1' in text
    count = "nmc_http_request_duration_seconds_count"
    assert f'{count}{{method="GET",route="{route}",status="404"}}' in text
    assert re.search(r'_bucket\{le="\+Inf",method="POST",route="[^"]+",status="202"\} 1', text)
    assert "nmc_sse_streams_open 0" in text
    # Never a raw path, an id or anything personal in a label.
    assert notificatie_id not in text
    assert "info@voorbeeld.nl" not in text and "zaak-" not in text
    sample = re.compile(r'[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? [-+0-9.eInfNa]+')
    for line in text.splitlines():
        assert line.startswith("#") or sample.fullmatch(line), line


def test_the_geen_contactgegevens_flag_follows_the_threshold(dvs):
    rows = [
        ("nmc_geen_contactgegevens_aandeel", {"dv": dvs["A"]}, 0.5),
        ("nmc_geen_contactgegevens_aandeel", {"dv": dvs["B"]}, 0.1),
    ]
    text = "\n".join(database_lines(rows, 0.3))
    assert f'nmc_geen_contactgegevens_boven_drempel{{dv="{dvs["A"]}"}} 1' in text
    assert f'nmc_geen_contactgegevens_boven_drempel{{dv="{dvs["B"]}"}} 0' in text
    assert "nmc_geen_contactgegevens_drempel 0.3" in text
    assert "nmc_database_bereikbaar 0" in "\n".join(database_lines(None, 0.3))


# --------------------------------------------------------------------------------------------
# Health


def test_health_live_and_ready(client):
    live = client.get("/health/live")
    assert (live.status_code, live.json()) == (200, {"status": "up"})
    ready = client.get("/health/ready")
    assert (ready.status_code, ready.json()) == (200, {"status": "gereed"})


def test_not_ready_when_the_database_is_gone(client, api_env, admin_url):
    database = api_env.db_url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        )
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
    try:
        response = client.get("/health/ready")
        assert response.status_code == 503
        assert response.json()["status"] == "niet-gereed"
        assert client.get("/health/live").status_code == 200
        metrics = client.get("/metrics")
        assert metrics.status_code == 200 and "nmc_database_bereikbaar 0" in metrics.text
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')


def test_not_ready_before_this_versions_functions_exist(client, conn):
    conn.execute("DROP FUNCTION nmc.resume_webhook(integer)")
    response = client.get("/health/ready")
    assert (response.status_code, response.json()["reden"]) == (503, "migratie")


# --------------------------------------------------------------------------------------------
# The access log


def test_one_json_access_line_per_request_without_query_or_token(client, caplog):
    caplog.set_level(logging.INFO, logger="nmc.api.access")
    client.get(f"{BASE}/notificaties", params={"dvRef": "geheim-dvref-1"}, headers=auth())
    [record] = [r for r in caplog.records if r.name == "nmc.api.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "http-request"
    assert line["method"] == "GET" and line["route"] == f"{BASE}/notificaties"
    assert line["status"] == 200 and line["duration_ms"] >= 0
    assert re.fullmatch(r"[0-9a-f]{32}", line["trace_id"])
    rendered = JsonFormatter().format(record)
    assert "geheim-dvref-1" not in rendered and "Bearer" not in rendered


def test_nmc_api_logs_json_lines_for_its_own_and_uvicorns_loggers():
    script = (
        "import logging, logging.config\n"
        "from nmc.observability.logs import log_config, log_access\n"
        "logging.config.dictConfig(log_config())\n"
        "log_access('GET', '/health/live', 200, 1.25, 'ab' * 16)\n"
        "logging.getLogger('uvicorn.error').info('Started server process')\n"
        "try:\n"
        "    raise ValueError('geheim@voorbeeld.nl')\n"
        "except ValueError:\n"
        "    logging.getLogger('nmc.api').exception('fout')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [line["event"] for line in lines] == ["http-request", "Started server process", "fout"]
    assert lines[0]["route"] == "/health/live" and lines[0]["duration_ms"] == 1.2
    assert lines[2]["exception"] == "ValueError"
    assert "geheim@voorbeeld.nl" not in result.stderr
