"""The operator console over HTTP (the app with its lifespan, as nmc_console): who gets in,
what each role sees, the actions with their confirmation, CSRF and origin checks, the
audit trail, and what a page never shows."""

import re
import socket
import subprocess
import sys
import time

import httpx
import psycopg
import pytest
from consoletest import DV_AUDIENCE, OPERATOR, READER, Populated, token
from starlette.testclient import TestClient

from nmc.console.app import create_app
from privacy_scan import EMAIL, SCAN

VIEWS = (
    "/statussen", "/achterstand", "/mislukt", "/webhooks", "/onbevestigd", "/budget",
    "/onderhoud", "/beheeracties",
)  # fmt: skip
ACTION_LINKS = re.compile(r"/heropenen|/forceren|/hervatten")


def login(client: TestClient, rol: str | None = OPERATOR, **claims) -> None:
    response = client.post("/login", data={"token": token(rol, **claims)}, follow_redirects=False)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/statussen"


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def staat(conn: psycopg.Connection, taak_id: int) -> str:
    return conn.execute("SELECT staat::text FROM nmc.taak WHERE id = %s", [taak_id]).fetchone()[0]


def test_every_page_needs_a_login(client):
    for path in (*VIEWS, "/", "/taken/1", "/taken/1/heropenen"):
        response = client.get(path, follow_redirects=False)
        assert (response.status_code, response.headers["location"]) == (303, "/login"), path
    assert client.get("/login").status_code == 200


def test_a_dv_token_or_a_token_without_a_console_role_does_not_open_it(client):
    dv_token = token(OPERATOR, aud=DV_AUDIENCE)
    refused = client.post("/login", data={"token": dv_token}, follow_redirects=False)
    assert refused.status_code == 401 and "onjuiste audience" in refused.text
    no_role = client.post("/login", data={"token": token(None)}, follow_redirects=False)
    assert no_role.status_code == 403 and "geen rol" in no_role.text
    other_role = client.post("/login", data={"token": token("nmc-dv")}, follow_redirects=False)
    assert other_role.status_code == 403
    forged = token(OPERATOR)[:-4] + "AAAA"
    assert client.post("/login", data={"token": forged}).status_code == 401
    assert "set-cookie" not in refused.headers and "set-cookie" not in no_role.headers
    assert client.get("/statussen", follow_redirects=False).status_code == 303


def test_the_session_cookie_is_http_only_and_same_site_strict(client):
    response = client.post("/login", data={"token": token()}, follow_redirects=False)
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie


def test_an_expired_session_goes_back_to_the_login(client):
    client.cookies.set("nmc_console", token(exp=1))
    response = client.get("/mislukt", follow_redirects=False)
    assert response.headers["location"] == "/login?reden=verlopen"
    assert "verlopen" in client.get("/login?reden=verlopen").text


def test_a_reader_sees_every_view_and_no_action(client, conn, data: Populated):
    login(client, READER, sub="lezer-7")
    for path in VIEWS:
        page = client.get(path)
        assert page.status_code == 200, path
        assert not ACTION_LINKS.search(page.text), f"{path} offers a reader an action"
        assert "lezer-7" in page.text and ">lezer<" in page.text
    assert f'href="/taken/{data.mislukt_wissen}"' in client.get("/mislukt").text
    for path in (f"/taken/{data.mislukt_wissen}", f"/notificaties/{data.aangenomen}"):
        assert not ACTION_LINKS.search(client.get(path).text), path
    # The actions themselves are refused, not only hidden.
    csrf = csrf_of(client.get("/mislukt").text)
    assert client.get(f"/taken/{data.mislukt_wissen}/heropenen").status_code == 403
    refused = client.post(
        f"/taken/{data.mislukt_wissen}/heropenen", data={"csrf": csrf, "toelichting": "x"}
    )
    assert refused.status_code == 403 and "beheerdersrol" in refused.text
    forced = client.post(
        f"/notificaties/{data.aangenomen}/forceren",
        data={"csrf": csrf, "naar": "verlopen", "reden": "verlopen", "toelichting": "x"},
    )
    resumed = client.post(
        f"/webhooks/{data.dv_twee}/hervatten", data={"csrf": csrf, "toelichting": "x"}
    )
    assert (forced.status_code, resumed.status_code) == (403, 403)
    assert staat(conn, data.mislukt_wissen) == "mislukt"
    assert conn.execute("SELECT count(*) FROM nmc.beheeractie").fetchone()[0] == 0


def test_an_operator_sees_the_action_links(client, data: Populated):
    login(client)
    mislukt = client.get("/mislukt").text
    assert f"/taken/{data.mislukt_wissen}/heropenen" in mislukt
    assert "SerializationFailure" in mislukt and "DecryptionError" in mislukt
    assert f"/webhooks/{data.dv_twee}/hervatten" in client.get("/webhooks").text
    notificatie = client.get(f"/notificaties/{data.aangenomen}").text
    assert "forceren?naar=verlopen" in notificatie
    assert "forceren?naar=in-verzending" in notificatie
    assert "forceren?naar=bezorgd" not in notificatie  # not an allowed pair from aangenomen


def test_reopen_needs_the_csrf_token_the_origin_and_a_toelichting(client, conn, data: Populated):
    login(client, sub="op-42")
    path = f"/taken/{data.mislukt_wissen}/heropenen"
    confirm = client.get(path)
    assert confirm.status_code == 200 and "Heropenen" in confirm.text
    csrf = csrf_of(confirm.text)
    without = client.post(path, data={"toelichting": "database hersteld"})
    wrong = client.post(path, data={"csrf": csrf[:-2] + "xx", "toelichting": "hersteld"})
    other_site = client.post(
        path, data={"csrf": csrf, "toelichting": "hersteld"},
        headers={"origin": "https://aanvaller.example"},
    )  # fmt: skip
    cross = client.post(
        path,
        data={"csrf": csrf, "toelichting": "hersteld"},
        headers={"sec-fetch-site": "cross-site"},
    )
    assert [r.status_code for r in (without, wrong, other_site, cross)] == [403] * 4
    assert client.post(path, data={"csrf": csrf, "toelichting": "  "}).status_code == 400
    assert staat(conn, data.mislukt_wissen) == "mislukt"

    done = client.post(
        path, data={"csrf": csrf, "toelichting": "database hersteld"},
        headers={"origin": "http://console.test", "sec-fetch-site": "same-origin"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.status_code == 303
    assert done.headers["location"] == f"/taken/{data.mislukt_wissen}?gedaan=heropend"
    assert staat(conn, data.mislukt_wissen) == "open"
    assert conn.execute(
        "SELECT soort, taak_id, toelichting, door FROM nmc.beheeractie"
    ).fetchall() == [("heropen-taak", data.mislukt_wissen, "database hersteld", "console:op-42")]
    again = client.post(path, data={"csrf": csrf, "toelichting": "nog eens"})
    assert again.status_code == 409 and "NM020" in again.text
    trail = client.get("/beheeracties").text
    assert "heropen-taak" in trail and "console:op-42" in trail and "database hersteld" in trail


def test_a_forced_transition_keeps_to_the_allowed_pairs(client, conn, data: Populated):
    login(client)
    base = f"/notificaties/{data.aangenomen}/forceren"
    assert client.get(base + "?naar=bezorgd").status_code == 400
    confirm = client.get(base + "?naar=verlopen")
    assert confirm.status_code == 200 and '<option value="verlopen">' in confirm.text
    csrf = csrf_of(confirm.text)
    not_allowed = client.post(
        base, data={"csrf": csrf, "naar": "definitief-bezorgd", "toelichting": "x"}
    )
    wrong_reason = client.post(
        base, data={"csrf": csrf, "naar": "verlopen", "reden": "technisch", "toelichting": "x"}
    )
    assert (not_allowed.status_code, wrong_reason.status_code) == (400, 400)
    done = client.post(
        base,
        data={"csrf": csrf, "naar": "verlopen", "reden": "verlopen", "toelichting": "ticket 12"},
        follow_redirects=False,
    )
    assert done.status_code == 303
    assert conn.execute(
        "SELECT status::text, reden::text, versie FROM nmc.notificatie WHERE id = %s",
        [data.aangenomen],
    ).fetchone() == ("verlopen", "verlopen", 2)
    page = client.get(done.headers["location"]).text
    assert "geforceerd" in page and 'id="status" class="status s-verlopen"' in page
    assert conn.execute(
        "SELECT soort, van::text, naar::text, door FROM nmc.beheeractie"
    ).fetchall() == [("forceer-overgang", "aangenomen", "verlopen", "console:op-1")]


def test_an_operator_resumes_a_paused_webhook(client, conn, data: Populated):
    login(client)
    webhooks = client.get("/webhooks").text
    assert "hooks.voorbeeldstad.example" in webhooks and "gepauzeerd" in webhooks
    assert "/nmc/hook" not in webhooks and "geheim-123" not in webhooks  # the host only
    path = f"/webhooks/{data.dv_twee}/hervatten"
    csrf = csrf_of(client.get(path).text)
    done = client.post(path, data={"csrf": csrf, "toelichting": "DV meldt storing voorbij"})
    assert done.status_code == 200 and "hervat vanaf zijn leverpositie" in done.text
    assert conn.execute(
        "SELECT mislukt, gepauzeerd_tot FROM nmc.webhookpositie WHERE dv_id = %s", [data.dv_twee]
    ).fetchone() == (0, None)
    assert conn.execute("SELECT soort, dv_id FROM nmc.beheeractie").fetchall() == [
        ("hervat-webhook", data.dv_twee)
    ]
    assert client.get(f"/webhooks/{data.dv_een}/hervatten").status_code == 404


def test_a_webhook_paused_for_a_gap_is_not_shown_as_healthy(client, conn, data: Populated):
    # No failures and no timed pause: only the gap holds it (events past its position gone).
    conn.execute(
        "UPDATE nmc.webhookpositie SET mislukt = 0, gepauzeerd_tot = NULL, gat_op = nmc.now() "
        "WHERE dv_id = %s",
        [data.dv_twee],
    )
    login(client)
    page = client.get("/webhooks").text
    row = page[page.index(f'id="webhook-{data.dv_twee}"') :].split("</tr>", 1)[0]
    assert "gepauzeerd voor een gat" in row and "slecht" in row and "levert" not in row
    assert "gat sinds" in row
    # Resuming would not end it, so it is not offered; the DV sets its position.
    assert f"/webhooks/{data.dv_twee}/hervatten" not in row
    assert "/webhook/positie" in page


def test_behind_the_proxy_the_bearer_token_is_verified_too(client, data: Populated):
    headers = {"authorization": "Bearer " + token(READER, sub="via-proxy")}
    page = client.get("/achterstand", headers=headers)
    assert page.status_code == 200 and "via-proxy" in page.text
    assert "Afmelden" not in page.text  # the proxy holds the session
    bad = client.get("/achterstand", headers={"authorization": "Bearer " + token(aud="x")})
    assert bad.status_code == 401
    assert client.get("/achterstand", headers={"authorization": "Basic eDp5"}).status_code == 401


def test_every_response_is_locked_down(client):
    for response in (client.get("/login"), client.get("/static/console.css")):
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
    login(client)
    assert client.get("/statussen").headers["cache-control"] == "no-store"
    assert "<script" not in client.get("/statussen").text


def test_the_views_show_what_the_database_holds(client, data: Populated):
    login(client)
    statussen = client.get("/statussen").text
    assert "DV Belastingen (test)" in statussen and "definitief-bezorgd" in statussen
    achterstand = client.get("/achterstand").text
    assert "ongeldig-melden" in achterstand and "wissen" in achterstand
    assert "Onbevestigd" in client.get("/onbevestigd").text
    budget = client.get("/budget").text
    assert "service standaard" in budget and "2700" in budget and 'value="97"' in budget
    assert "De dag per service (UTC)" in budget and "250000" in budget
    onderhoud = client.get("/onderhoud").text
    assert "event_x000000000000" in onderhoud and "leeg" in onderhoud


def test_no_page_shows_personal_data(client, data: Populated):
    login(client)
    pages = [client.get(path).text for path in VIEWS]
    pages += [client.get(f"/notificaties/{data.aangenomen}").text]
    pages += [client.get(f"/taken/{data.mislukt_wissen}").text]
    for recipient in data.recipients:
        assert not any(recipient in page for page in pages)
    assert not any("beheer@voorbeeldstad" in page for page in pages)  # the beheer channel


def test_the_personal_data_scan_sees_the_console_pages(client, conn, data: Populated):
    """A DV named like a registered recipient would show on every page: the scan finds it."""
    SCAN.register(EMAIL, "lek.console@prive-voorbeeld.nl")
    conn.execute(
        "UPDATE nmc.dienstverlener SET naam = 'lek.console@prive-voorbeeld.nl' WHERE dv_id = %s",
        [data.dv_een],
    )
    login(client)
    client.get("/statussen")
    found = SCAN.end()
    SCAN.discard(found)
    assert {f.where for f in found} >= {"the response console page of GET /statussen (200)"}


@pytest.mark.parametrize("path", ["/taken/999999", "/notificaties/geen-uuid", "/bestaat-niet"])
def test_unknown_things_are_404(client, path):
    login(client)
    assert client.get(path).status_code == 404


def test_the_dev_console_token_from_the_cli_opens_the_console(nmc, client):
    issued = nmc("admin", "console-token", "--rol", READER, "--sub", "cli-lezer", "--ttl", "60")
    assert issued.exit_code == 0, issued.err
    response = client.post("/login", data={"token": issued.out.strip()})
    assert response.status_code == 200 and "cli-lezer" in response.text
    assert ">lezer<" in response.text


def test_nmc_console_serves_on_its_own_port(console_env, data: Populated, tmp_path):
    """`nmc console` is a process and a port of its own: the console's pages, none of the
    DV API's paths."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (tmp_path / "console.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "nmc", "console", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/login", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "did not start"
                time.sleep(0.2)
        assert response.status_code == 200 and "Aanmelden" in response.text
        api_path = httpx.get(f"http://127.0.0.1:{port}/api/nmc/v1/openapi.json", timeout=2)
        assert api_path.status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
    SCAN.output("the output of `nmc console`", (tmp_path / "console.log").read_text())


# ---------------------------------------------------------------------------------------------
# Replicas, a proxy, logout, who acts, what can be forced


def test_a_failed_task_links_a_forced_transition_only_when_there_is_one(client, data: Populated):
    """The notifications of the two mislukt tasks are terminal (geannuleerd,
    niet-bezorgbaar): SQL offers no transition from there, so /mislukt links none."""
    login(client)
    page = client.get("/mislukt").text
    assert f"/taken/{data.mislukt_wissen}" in page and f"/taken/{data.mislukt_ongeldig}" in page
    assert "#forceren" not in page


def test_two_replicas_without_a_shared_key_take_each_others_forms(
    console_env, data: Populated, conn, monkeypatch
):
    """The session (and its CSRF token) lives in the database, not in one process."""
    monkeypatch.delenv("NMC_CONSOLE_CSRF_KEY", raising=False)
    with (
        TestClient(create_app(), base_url="http://console.test") as een,
        TestClient(create_app(), base_url="http://console.test") as twee,
    ):
        login(een)
        path = f"/taken/{data.mislukt_wissen}/heropenen"
        csrf = csrf_of(een.get(path).text)
        twee.cookies.update(een.cookies)
        done = twee.post(
            path, data={"csrf": csrf, "toelichting": "andere replica"}, follow_redirects=False
        )
        assert done.status_code == 303, done.text
    assert staat(conn, data.mislukt_wissen) == "open"


def test_behind_a_proxy_that_rewrites_host_the_origin_is_the_public_one(
    console_env, data: Populated, monkeypatch
):
    monkeypatch.setenv("NMC_CONSOLE_PUBLIC_URL", "https://beheer.nmc.example")
    with TestClient(create_app(), base_url="http://nmc-console.nmc.svc:8080") as proxied:
        public = {"origin": "https://beheer.nmc.example", "sec-fetch-site": "same-origin"}
        response = proxied.post(
            "/login", data={"token": token()}, headers=public, follow_redirects=False
        )
        assert response.status_code == 303, "the public origin behind a Host-rewriting proxy"
        own_host = {"origin": "http://nmc-console.nmc.svc:8080"}
        refused = proxied.post("/logout", data={}, headers=own_host, follow_redirects=False)
        assert refused.status_code == 403, "with a public origin set, the Host is not it"


def test_logout_ends_the_session_for_good(client, conn, data: Populated):
    login(client)
    cookie = client.cookies.get("nmc_console")
    csrf = csrf_of(client.get("/statussen").text)
    assert client.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    client.cookies.set("nmc_console", cookie)
    response = client.get("/statussen", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/login")


def test_the_cookie_holds_a_session_id_not_the_token(client):
    issued = token()
    response = client.post("/login", data={"token": issued}, follow_redirects=False)
    cookie = client.cookies.get("nmc_console")
    assert cookie and issued not in response.headers["set-cookie"] and len(cookie) < 100


def test_the_audit_says_who_from_the_session(client, conn, data: Populated):
    """The action's SQL call names the session; SQL writes the operator it holds."""
    login(client, sub="op-77")
    path = f"/taken/{data.mislukt_wissen}/heropenen"
    csrf = csrf_of(client.get(path).text)
    client.post(path, data={"csrf": csrf, "toelichting": "hersteld"}, follow_redirects=False)
    assert conn.execute("SELECT door FROM nmc.beheeractie").fetchall() == [("console:op-77",)]


def test_the_console_answers_the_kubelets_probes_without_a_login(client):
    assert client.get("/health/live").json() == {"status": "up"}
    ready = client.get("/health/ready")
    assert ready.status_code == 200 and ready.json() == {"status": "gereed"}
def test_the_backlog_shows_the_berichttypen_notifynl_refuses(client, conn, data: Populated):
    """A refusal of our configuration (a team-only key): the operator sees the berichttype,
    the kind, since when, and how many sends wait for the fix."""
    conn.execute(
        "SELECT nmc.defer_verzenden(c.taak_id, c.claim_epoch, 'sleutel')"
        " FROM nmc.claim_verzenden('console-test', 100) AS c WHERE c.dv_id = %s",
        [data.dv_een],
    )
    login(client)
    page = client.get("/achterstand").text
    assert "Verzending geweigerd door NotifyNL" in page
    assert "aanslag" in page and "sleutel" in page and "team-only" in page
