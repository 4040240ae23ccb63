"""Webhook validation at onboarding (nmc.adapters.webhook_validatie, `nmc admin dv apply`): the
CloudEvents webhook handshake against real endpoints, the SSRF refusal of non-public targets
unless explicitly allowed, the recorded outcome, and the DV client library's answer."""

import asyncio
import ipaddress
import json

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nmc.adapters.webhook_validatie import Adresbeleid, Validatie, check_target, validate_now
from nmc.errors import NmcError
from nmc_client import answer_handshake
from nmc_dev.sim.server import start_in_thread

ORIGIN = "nmc.onboarding.test"
LOOPBACK = Adresbeleid.parse("127.0.0.0/8")
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-000000000001"


class Endpoint:
    """A DV's webhook endpoint; `mode` says how it meets the validation request."""

    def __init__(self, mode: str = "client") -> None:
        self.mode = mode
        self.options: list[str | None] = []
        self.app = Starlette(routes=[Route("/hook", self._hook, methods=["OPTIONS", "POST"])])

    async def _hook(self, request: Request) -> Response:
        if request.method != "OPTIONS":
            return Response(status_code=204)
        self.options.append(request.headers.get("webhook-request-origin"))
        if self.mode == "client":  # the DV client library's answer
            status, headers = answer_handshake(request.headers, [ORIGIN])
            return Response(status_code=status, headers=headers)
        if self.mode == "ster":
            return Response(status_code=200, headers={"WebHook-Allowed-Origin": "*"})
        if self.mode == "zwijgt":  # a 200 without the handshake's header
            return Response(status_code=200)
        return Response(status_code=405)


@pytest.fixture
def endpoint():
    hook = Endpoint()
    server = start_in_thread(hook.app)
    hook.url = f"{server.url}/hook"
    yield hook
    server.stop()


# --------------------------------------------------------------------------------------------
# The target (SSRF)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("fe80::1", "link-local"),
        ("10.1.2.3", "privaat"),
        ("172.16.0.9", "privaat"),
        ("192.168.1.1", "privaat"),
        ("fd00::1", "privaat"),
        ("100.64.0.1", "niet-publiek"),
        ("0.0.0.0", "niet-gespecificeerd"),  # noqa: S104 - an address under test
        ("::ffff:127.0.0.1", "loopback"),
        ("224.0.0.1", "multicast"),
    ],
)
def test_non_public_addresses_are_refused(address, reason):
    assert Adresbeleid().weigering(ipaddress.ip_address(address)) == reason


# IPv6 forms that carry an IPv4 address (audit 2, item 9): the embedded address is judged,
# and the reserved and local-use transition prefixes are refused whatever they carry.
@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::127.0.0.1", "loopback"),  # IPv4-compatible (deprecated)
        ("::10.0.0.1", "privaat"),
        ("::145.21.10.1", "gereserveerd"),  # IPv4-compatible: never a public target
        ("::ffff:0:127.0.0.1", "loopback"),  # IPv4-translated (RFC 2765)
        ("64:ff9b::127.0.0.1", "loopback"),  # NAT64, well-known prefix (RFC 6052)
        ("64:ff9b::169.254.169.254", "link-local"),
        ("64:ff9b::10.1.2.3", "privaat"),
        ("64:ff9b:1::a00:1", "niet-publiek"),  # NAT64, local-use prefix (RFC 8215)
        ("64:ff9b:1::9115:a01", "niet-publiek"),
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254
        ("2002:c0a8:101::1", "privaat"),  # 6to4 of 192.168.1.1
        ("fec0::1", "niet-publiek"),  # site-local (deprecated)
        ("100::1", "privaat"),  # discard-only
    ],
)
def test_ipv6_forms_embedding_a_non_public_ipv4_address_are_refused(address, reason):
    assert Adresbeleid().weigering(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::145.21.10.1",  # NAT64 of a public address (DNS64 in an IPv6-only cluster)
        "2002:9115:a01::1",  # 6to4 of a public address
    ],
)
def test_ipv6_forms_embedding_a_public_ipv4_address_pass(address):
    assert Adresbeleid().weigering(ipaddress.ip_address(address)) is None


def test_an_allowed_network_admits_its_addresses_in_embedded_form():
    allowed = Adresbeleid.parse("127.0.0.0/8")
    assert allowed.weigering(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert allowed.weigering(ipaddress.ip_address("64:ff9b::127.0.0.1")) is None
    assert allowed.weigering(ipaddress.ip_address("::127.0.0.2")) == "gereserveerd"


def test_public_addresses_pass_and_an_allowed_network_lets_its_addresses_through():
    assert Adresbeleid().weigering(ipaddress.ip_address("145.21.10.1")) is None
    assert Adresbeleid().weigering(ipaddress.ip_address("2a00:1450::1")) is None
    allowed = Adresbeleid.parse("127.0.0.0/8, 10.20.0.0/16")
    assert allowed.weigering(ipaddress.ip_address("127.0.0.1")) is None
    assert allowed.weigering(ipaddress.ip_address("10.20.3.4")) is None
    assert allowed.weigering(ipaddress.ip_address("10.21.3.4")) == "privaat"
    with pytest.raises(NmcError, match="not a network"):
        Adresbeleid.parse("localhost")


def test_a_name_is_judged_by_every_address_it_resolves_to():
    async def resolver(host: str, port: int) -> list[str]:
        return {"mix.example": ["145.21.10.1", "10.0.0.5"], "pub.example": ["145.21.10.1"]}[host]

    async def check(url: str) -> Validatie | None:
        return await check_target(url, Adresbeleid(), resolver)

    assert asyncio.run(check("https://mix.example/hook")) == Validatie("adres-geweigerd", "privaat")
    assert asyncio.run(check("https://pub.example/hook")) is None
    assert asyncio.run(check("ftp://pub.example/hook")) == Validatie(
        "ongeldige-url", "schema-of-host"
    )


def test_a_name_that_does_not_resolve_is_unreachable():
    refusal = asyncio.run(check_target("https://geen-dv.invalid/hook", Adresbeleid()))
    assert refusal == Validatie("onbereikbaar", "naam-onbekend")


# --------------------------------------------------------------------------------------------
# The handshake against real endpoints


def test_an_endpoint_that_answers_the_handshake_is_valid(endpoint):
    assert validate_now(endpoint.url, origin=ORIGIN, beleid=LOOPBACK) == Validatie("geldig")
    assert endpoint.options == [ORIGIN], "one OPTIONS with the NMC's origin"
    endpoint.mode = "ster"
    assert validate_now(endpoint.url, origin=ORIGIN, beleid=LOOPBACK).geldig


@pytest.mark.parametrize(
    ("mode", "detail"), [("weigert", "http-405"), ("zwijgt", "geen-allowed-origin")]
)
def test_an_endpoint_that_does_not_answer_the_handshake_is_refused(endpoint, mode, detail):
    endpoint.mode = mode
    assert validate_now(endpoint.url, origin=ORIGIN, beleid=LOOPBACK) == Validatie(
        "geen-handshake", detail
    )


def test_another_origin_than_the_endpoint_expects_is_refused(endpoint):
    validatie = validate_now(endpoint.url, origin="nmc.elders.test", beleid=LOOPBACK)
    assert validatie == Validatie("geen-handshake", "http-403")


def test_a_loopback_target_is_refused_without_a_call_unless_allowed(endpoint):
    assert validate_now(endpoint.url, origin=ORIGIN, beleid=Adresbeleid()) == Validatie(
        "adres-geweigerd", "loopback"
    )
    assert endpoint.options == [], "a refused target is never called"


def test_no_answer_is_unreachable():
    # A port nothing listens on (the server is stopped at once).
    server = start_in_thread(Starlette())
    url = f"{server.url}/hook"
    server.stop()
    assert validate_now(url, origin=ORIGIN, beleid=LOOPBACK) == Validatie(
        "onbereikbaar", "verbinding"
    )


# --------------------------------------------------------------------------------------------
# The DV client library answers the handshake


def test_the_client_library_answers_the_handshake_for_the_origins_it_expects():
    status, headers = answer_handshake({"WebHook-Request-Origin": ORIGIN}, [ORIGIN])
    assert (status, headers["WebHook-Allowed-Origin"]) == (200, ORIGIN)
    assert answer_handshake({"webhook-request-origin": "elders.test"}, [ORIGIN]) == (403, {})
    assert answer_handshake({}, [ORIGIN]) == (400, {})


# --------------------------------------------------------------------------------------------
# `nmc admin dv apply` validates and reports; the outcome is recorded


def _document(tmp_path, url: str):
    path = tmp_path / "dv.json"
    path.write_text(_document_text(url))
    return path


def _recorded(conn) -> tuple:
    return conn.execute(
        "SELECT v.url, v.uitkomst, v.detail, (nmc.get_webhookvalidatie(v.dv_id) ->> 'gevalideerd')"
        " FROM nmc.webhookvalidatie AS v"
    ).fetchone()


def test_apply_reports_a_refused_ssrf_target_and_records_it(
    nmc, db_url, conn, endpoint, tmp_path, monkeypatch, notify_env
):
    monkeypatch.setenv("NMC_DATABASE_URL", db_url)
    monkeypatch.setenv("NMC_WEBHOOK_ORIGIN", ORIGIN)
    monkeypatch.delenv("NMC_WEBHOOK_TOEGESTANE_NETWERKEN", raising=False)
    result = nmc("admin", "dv", "apply", str(_document(tmp_path, endpoint.url)))
    assert result.exit_code == 0, result.err
    assert "webhook: NIET gevalideerd: adres-geweigerd (loopback)" in result.out
    assert endpoint.url not in result.out, "the report names no URL"
    assert _recorded(conn) == (endpoint.url, "adres-geweigerd", "loopback", "false")
    assert endpoint.options == []


def test_apply_validates_an_allowed_endpoint_once_and_again_when_the_url_changes(
    nmc, db_url, conn, endpoint, tmp_path, monkeypatch, notify_env
):
    monkeypatch.setenv("NMC_DATABASE_URL", db_url)
    monkeypatch.setenv("NMC_WEBHOOK_ORIGIN", ORIGIN)
    monkeypatch.setenv("NMC_WEBHOOK_TOEGESTANE_NETWERKEN", "127.0.0.0/8")
    document = _document(tmp_path, endpoint.url)
    assert "webhook: gevalideerd\n" in nmc("admin", "dv", "apply", str(document)).out
    assert _recorded(conn) == (endpoint.url, "geldig", None, "true")
    assert "webhook: gevalideerd (eerder)" in nmc("admin", "dv", "apply", str(document)).out
    assert len(endpoint.options) == 1, "an unchanged URL is not validated again"

    moved = endpoint.url.replace("/hook", "/hook?v=2")
    endpoint.mode = "weigert"
    result = nmc("admin", "dv", "apply", str(_document(tmp_path, moved)))
    assert "webhook: NIET gevalideerd: geen-handshake (http-405)" in result.out
    assert _recorded(conn) == (moved, "geen-handshake", "http-405", "false")
    assert len(endpoint.options) == 2


def test_validation_holds_no_transaction_open(db_url, conn, endpoint, monkeypatch):
    """The apply commits before the call: an open transaction would hold every DV's feed."""
    from nmc.admin.onboarding import check_webhook
    from nmc.database import connect

    held: list[object] = []

    class Watching(Endpoint):
        async def _hook(self, request: Request) -> Response:
            held.append(
                conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND backend_xid IS NOT NULL"
                ).fetchone()[0]
            )
            return await super()._hook(request)

    hook = Watching()
    server = start_in_thread(hook.app)
    try:
        url = f"{server.url}/hook"
        conn.execute(
            "SELECT nmc.apply_dienstverlener(%s::jsonb)",
            [_document_text(url)],
        )
        [dv_id] = conn.execute("SELECT dv_id FROM nmc.dienstverlener").fetchone()
        with connect(db_url) as admin:
            status = check_webhook(admin, dv_id, origin=ORIGIN, beleid=LOOPBACK)
    finally:
        server.stop()
    assert status is not None and status.gevalideerd
    assert held == [0]


def _document_text(url: str) -> str:
    return json.dumps(
        {
            "oin": "00000001007007007000",
            "naam": "Gemeente Haakdorp",
            "webhook": {"url": url},
            "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
        }
    )


def test_httpx_is_what_makes_the_call():
    """The validation uses httpx (redirects not followed): a 3xx is no handshake."""
    transport = httpx.MockTransport(lambda request: httpx.Response(307, headers={"location": "/"}))

    async def run() -> Validatie:
        from nmc.adapters.webhook_validatie import handshake

        async with httpx.AsyncClient(transport=transport) as client:
            return await handshake(client, "https://dv.example/hook", ORIGIN)

    assert asyncio.run(run()) == Validatie("geen-handshake", "http-307")
