"""The adapters against the simulators: JWT, outcomes, and every error class."""

import asyncio
import json
import socket
import uuid
from datetime import UTC, datetime

import httpx
import jwt
import pytest
from pipelinetest import API_KEY, DV_NAAM, configure_notifynl, set_faults, sim_get

from nmc.adapters import Deferral, UnexpectedResponse, ldv
from nmc.adapters.aio_backend import AsyncioTransport
from nmc.adapters.notifynl import (
    Accepted,
    ApiKey,
    NotifyNL,
    Refused,
    bearer_token,
    classify_refusal,
)
from nmc.adapters.profielservice import Profielservice, choose_email, split_identificatie
from nmc.crypto.peppers import new_peppers, parse_peppers
from nmc_dev.sim.notifynl import REFUSALS

TEMPLATE = "a0a0a0a0-0000-4000-8000-00000000000a"


@pytest.fixture(params=["asyncio", "httpx"])
async def client(request):
    """Over the worker's own transport (nmc.adapters.aio_backend), and over httpx's default."""
    transport = AsyncioTransport() if request.param == "asyncio" else None
    async with httpx.AsyncClient(timeout=0.3, transport=transport) as http:
        yield http


@pytest.fixture
def fresh(sims):
    """The simulators emptied; no callbacks (these tests have no database)."""
    for url in (sims.notifynl_url, sims.profiel_url):
        httpx.post(f"{url}/_sim/reset").raise_for_status()
    configure_notifynl(sims, callback_url=None, hang_s=3.0, retention_s=7 * 86400.0)
    return sims


@pytest.fixture
def notifynl(fresh, client) -> NotifyNL:
    return NotifyNL(client, fresh.notifynl_url, API_KEY)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------- NotifyNL


def test_api_key_is_split_like_notifynl_does():
    service_id, secret = uuid.uuid4(), uuid.uuid4()
    key = ApiKey.parse(f"mijn-sleutel-{service_id}-{secret}")
    assert (key.service_id, key.secret) == (str(service_id), str(secret))
    assert str(secret) not in repr(key)
    with pytest.raises(ValueError):
        ApiKey.parse("te-kort")


def test_bearer_token_has_the_contract_header_and_claims():
    key = ApiKey.parse(API_KEY)
    token = bearer_token(key, now=1_700_000_000)
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "JWT"}
    claims = jwt.decode(token, key.secret, algorithms=["HS256"], options={"verify_iat": False})
    assert claims == {"iss": key.service_id, "iat": 1_700_000_000}


async def test_send_get_and_search(notifynl, sims):
    reference = str(uuid.uuid4())
    accepted = await notifynl.send_email(
        "bezorgd+a@voorbeeld.nl", TEMPLATE, {"naam": "A"}, reference
    )
    assert isinstance(accepted, Accepted)
    bericht = await notifynl.get_notification(accepted.notifynl_id)
    assert (bericht.notifynl_id, bericht.reference) == (accepted.notifynl_id, reference)
    assert bericht.status in ("created", "sending", "delivered")
    assert not hasattr(bericht, "email_address")
    assert [b.notifynl_id for b in await notifynl.find_by_reference(reference)] == [
        accepted.notifynl_id
    ]
    assert await notifynl.find_by_reference(str(uuid.uuid4())) == []
    assert await notifynl.get_notification(uuid.uuid4()) is None
    # A fresh token per request: three calls above, every one authenticated.
    assert {r["status"] for r in sim_get(sims.notifynl_url, "/_sim/requests")} == {201, 200, 404}


async def test_a_bad_address_is_the_recipients(notifynl):
    result = await notifynl.send_email("geen-adres", TEMPLATE, {}, str(uuid.uuid4()))
    assert result == Refused(soort="ongeldig-adres")


# Every send refusal of notifynl-contract.md (Errors), with NotifyNL's own body (the
# simulator's /_sim/weigering), and whose fault the adapter makes of it.
REFUSAL_KINDS = {
    "ongeldig-adres": "ongeldig-adres",
    "missing-personalisation": "onverwerkbaar",
    "te-lang": "onverwerkbaar",
    "template-niet-gevonden": "template",
    "template-verwijderd": "template",
    "template-ongeschikt": "template",
    "team-only": "sleutel",
    "trial-mode": "sleutel",
    "geen-email-recht": "dienst",
    "ongeldig-verzoek": "verzoek",
    "onbekend": "onbekend",
    "klok": "toegang",
}


def test_every_refusal_of_the_simulator_is_classified():
    assert set(REFUSAL_KINDS) == set(REFUSALS)


@pytest.mark.parametrize("weigering", sorted(REFUSAL_KINDS))
async def test_send_refusals_are_classified_by_whose_fault(notifynl, sims, weigering):
    httpx.post(f"{sims.notifynl_url}/_sim/weigering", json={"soort": weigering}).raise_for_status()
    result = await notifynl.send_email("bezorgd+w@voorbeeld.nl", TEMPLATE, {}, str(uuid.uuid4()))
    assert result == Refused(soort=REFUSAL_KINDS[weigering])
    # Only the send is refused: the GETs answer as ever.
    assert await notifynl.find_by_reference("r") == []


@pytest.mark.parametrize(
    ("status_code", "errors", "kind"),
    [
        # The type decides where it can; the message only where the type cannot tell.
        (400, [("ValidationError", "email_address Not a valid email address")], "ongeldig-adres"),
        (400, [("ValidationError", "reference must be a string")], "verzoek"),
        (400, [("BadRequestError", "email_address Not a valid email address")], "onbekend"),
        (
            400,
            [("BadRequestError", "Cannot send to this recipient using a team-only API key.")],
            "sleutel",
        ),
        (400, [("BadRequestError", "Missing personalisation: Naam, datum")], "onverwerkbaar"),
        (400, [("RateLimitError", "Template not found")], "onbekend"),
        (400, [], "onbekend"),
        # Several errors: ours wins over the recipient's, never final by mistake.
        (
            400,
            [
                ("ValidationError", "email_address Not a valid email address"),
                ("ValidationError", "template_id is not a valid UUID"),
            ],
            "verzoek",
        ),
        (
            400,
            [
                ("ValidationError", "email_address Not a valid email address"),
                ("BadRequestError", "Missing personalisation: naam"),
            ],
            "onverwerkbaar",
        ),
        (401, [("AuthError", "Unauthorized: authentication token must be provided")], "toegang"),
    ],
)
def test_classify_refusal(status_code, errors, kind):
    body = {"status_code": status_code, "errors": [{"error": e, "message": m} for e, m in errors]}
    assert classify_refusal(status_code, body) == kind


async def test_a_400_without_notifynls_body_is_ours(notifynl, sims):
    set_faults(sims, error_rate={"400": 1.0})  # the simulator's generic "Bad request"
    result = await notifynl.send_email("bezorgd+x@voorbeeld.nl", TEMPLATE, {}, "r")
    assert result == Refused(soort="onbekend")


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
async def test_outage_codes_are_deferrals(notifynl, sims, code):
    set_faults(sims, error_rate={str(code): 1.0})
    with pytest.raises(Deferral) as raised:
        await notifynl.send_email("bezorgd+b@voorbeeld.nl", TEMPLATE, {}, "r")
    # A 429 names the limit NotifyNL said (the simulator's is its RateLimitError).
    expected = "notifynl-tempo-limiet" if code == 429 else f"notifynl-http-{code}"
    assert raised.value.fout == expected
    with pytest.raises(Deferral):
        await notifynl.get_notification(uuid.uuid4())


@pytest.mark.parametrize("code", [401, 403])
async def test_auth_errors_refuse_the_send_and_defer_the_gets(notifynl, sims, code):
    """A send's 401/403 is NotifyNL's verdict on our credentials: a refusal of our
    configuration (the SQL defers and records it); on a GET it is an outage as ever."""
    set_faults(sims, error_rate={str(code): 1.0})
    assert await notifynl.send_email("bezorgd+b@voorbeeld.nl", TEMPLATE, {}, "r") == Refused(
        soort="toegang"
    )
    with pytest.raises(Deferral, match=f"notifynl-http-{code}"):
        await notifynl.get_notification(uuid.uuid4())


async def test_a_wrong_key_is_a_deferral(fresh, client):
    other = NotifyNL(client, fresh.notifynl_url, f"x-{uuid.uuid4()}-{uuid.uuid4()}")
    with pytest.raises(Deferral, match="notifynl-http-403"):
        await other.find_by_reference("r")


async def test_timeouts_and_refused_connections_are_deferrals(notifynl, sims, client):
    set_faults(sims, timeout_rate=1.0)
    with pytest.raises(Deferral, match="notifynl-timeout"):
        await notifynl.find_by_reference("r")
    closed = NotifyNL(client, f"http://127.0.0.1:{free_port()}", API_KEY)
    with pytest.raises(Deferral, match="notifynl-verbinding"):
        await closed.send_email("bezorgd+c@voorbeeld.nl", TEMPLATE, {}, "r")


async def test_answers_outside_the_contract_are_unexpected(notifynl):
    with pytest.raises(UnexpectedResponse, match="notifynl-http-400"):
        await notifynl.get_notification("geen-uuid")


# ---------------------------------------------------------------------------- Profielservice

EMAIL = "Email"


def contact(waarde, scopes=None, default=False, soort=EMAIL):
    return {
        "id": str(uuid.uuid4()),
        "type": soort,
        "waarde": waarde,
        "isDefault": default,
        "scopes": scopes or [],
    }


def test_choose_email_follows_the_four_steps():
    exact = contact("exact@x.nl", [{"dienstverlenerNaam": "DV", "dienstNaam": "BTW"}])
    dv_only = contact("dv@x.nl", [{"dienstverlenerNaam": "DV"}])
    other_dv = contact("ander@x.nl", [{"dienstverlenerNaam": "Ander", "dienstNaam": "BTW"}])
    default = contact("default@x.nl", [{"dienstverlenerNaam": "Ander"}], default=True)
    general = contact("algemeen@x.nl")
    phone = contact("0612345678", soort="Telefoonnummer")
    everything = [phone, general, default, other_dv, dv_only, exact]
    assert choose_email(everything, "DV", "BTW") is exact
    assert choose_email(everything, "DV", "Parkeren") is dv_only
    assert choose_email([general, default, other_dv], "DV", "BTW") is default
    assert choose_email([general, other_dv], "DV", "BTW") is general
    assert choose_email([other_dv, phone], "DV", "BTW") is None
    assert choose_email([dv_only, exact], "DV", None) is dv_only


def test_split_identificatie():
    assert split_identificatie("KVK:12345678") == ("KVK", "12345678")
    for bad in ("12345678", "XYZ:1", "BSN:"):
        with pytest.raises(ValueError):
            split_identificatie(bad)


async def test_profielservice_lookup_and_report(sims, client, fresh):
    httpx.post(
        f"{sims.profiel_url}/_sim/parties",
        json=[
            {
                "identificatieType": "BSN",
                "identificatieNummer": "999990019",
                "contactgegevens": [contact("burger@x.nl", default=True)],
            },
            {
                "identificatieType": "KVK",
                "identificatieNummer": "1",
                "contactgegevens": [contact("06", soort="Telefoonnummer")],
            },
        ],
    ).raise_for_status()
    profiel = Profielservice(client, sims.profiel_url)
    found = await profiel.find_email("BSN", "999990019", DV_NAAM, None)
    assert found.email == "burger@x.nl" and "burger" not in repr(found)
    assert await profiel.find_email("KVK", "1", DV_NAAM, None) is None  # no e-mail
    assert await profiel.find_email("KVK", "2", DV_NAAM, None) is None  # unknown: 404
    moment = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    for _ in range(2):  # idempotent
        assert await profiel.report_invalid("BSN", "999990019", found.id, moment) is True
    assert await profiel.report_invalid("BSN", "999990019", uuid.uuid4(), moment) is False
    [report] = sim_get(sims.profiel_url, "/_sim/ongeldig")
    assert report["count"] == 2
    assert report["report"]["gemeldOp"] == "2026-11-30T10:00:00Z"


@pytest.mark.parametrize(
    ("outage", "fout"),
    [
        ({"status": 503}, "profielservice-http-503"),
        ({"status": 429}, "profielservice-http-429"),
        ({"timeout": True}, "profielservice-timeout"),
    ],
)
async def test_profielservice_outages_are_deferrals(sims, client, fresh, outage, fout):
    httpx.post(f"{sims.profiel_url}/_sim/outage", json=outage).raise_for_status()
    profiel = Profielservice(client, sims.profiel_url)
    try:
        with pytest.raises(Deferral) as raised:
            await profiel.find_email("KVK", "1", DV_NAAM, None)
        assert raised.value.fout == fout
        with pytest.raises(Deferral):
            await profiel.report_invalid("KVK", "1", uuid.uuid4(), datetime.now(UTC))
    finally:
        httpx.post(f"{sims.profiel_url}/_sim/outage", json={}).raise_for_status()


# ---------------------------------------------------------------------------- LDV

SUBJECT = ldv.Betrokkene("email", "Iemand@Voorbeeld.nl")


def test_pseudonym_is_stable_keyed_and_not_the_value():
    key = b"k" * 32
    first = ldv.pseudonymise(key, SUBJECT)
    assert first == ldv.pseudonymise(key, ldv.Betrokkene("email", " iemand@voorbeeld.nl"))
    assert first != ldv.pseudonymise(b"j" * 32, SUBJECT)
    assert first != ldv.pseudonymise(key, ldv.Betrokkene("BSN", "iemand@voorbeeld.nl"))
    assert "iemand" not in first and len(first) == 64


def test_pseudonym_key_prefers_an_ldv_pepper_and_else_derives_one():
    only_dvref = parse_peppers(new_peppers(("dvref",)))
    both = parse_peppers(new_peppers(("dvref", "ldv")))
    derived = ldv.pseudonym_key(only_dvref)
    assert len(derived) == 32
    assert derived not in only_dvref.for_purpose("dvref").versions.values()
    assert ldv.pseudonym_key(both) == both.for_purpose("ldv").versions[1]


async def test_http_sink_writes_and_defers_on_an_outage(sims, client):
    base = sims.ldv_url.rsplit("/ldv/", 1)[0]
    httpx.post(f"{base}/_sim/reset").raise_for_status()
    writer = ldv.Ldv(ldv.HttpSink(client, sims.ldv_url), b"k" * 32)
    trace = "ab" * 16
    headers = await writer.register(trace, "notifynl.verzenden", ldv.ACTIVITEIT_VERZENDEN, SUBJECT)
    [record] = sim_get(sims.ldv_url, "")
    assert headers == {"traceparent": f"00-{trace}-{record['span_id']}-01"}
    assert record["trace_id"] == trace and record["name"] == "notifynl.verzenden"
    assert record["attributes"] == {
        "dpl.core.processing_activity_id": ldv.ACTIVITEIT_VERZENDEN,
        "dpl.core.data_subject_id": ldv.pseudonymise(b"k" * 32, SUBJECT),
        "dpl.core.data_subject_id_type": "email",
    }
    httpx.post(f"{base}/_sim/outage", json={"status": 503}).raise_for_status()
    try:
        with pytest.raises(Deferral, match="ldv-http-503"):
            await writer.register(trace, "x", ldv.ACTIVITEIT_VERZENDEN, SUBJECT)
    finally:
        httpx.post(f"{base}/_sim/outage", json={}).raise_for_status()


async def test_file_sink_appends_fsynced_lines(tmp_path):
    path = tmp_path / "sub" / "ldv.jsonl"
    sink = ldv.FileSink(path)
    writer = ldv.Ldv(sink, b"k" * 32)
    await asyncio.gather(
        *(
            writer.register("cd" * 16, f"call-{n}", ldv.ACTIVITEIT_VOORKEUR, SUBJECT)
            for n in range(50)
        )
    )
    await sink.aclose()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(r["name"] for r in lines) == sorted(f"call-{n}" for n in range(50))
    assert "Voorbeeld" not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


async def test_file_sink_failure_is_a_deferral(tmp_path):
    blocker = tmp_path / "bestand"
    blocker.write_text("")
    writer = ldv.Ldv(ldv.FileSink(blocker / "ldv.jsonl"), b"k" * 32)
    with pytest.raises(Deferral, match="ldv-bestand"):
        await writer.register("ef" * 16, "x", ldv.ACTIVITEIT_VOORKEUR, SUBJECT)
