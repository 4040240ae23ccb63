"""Simulator fidelity: the NotifyNL contract's auth rule, error bodies, validation, bodies,
retention and callback retries; the Profielservice's problem JSON."""

import time
import uuid
import warnings

import httpx
import jwt
import pytest
from jwt.warnings import InsecureKeyLengthWarning
from pipelinetest import API_KEY, configure_notifynl, sim_get, wait_for
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from nmc_dev.sim.notifynl import NotifySim, SimConfig
from nmc_dev.sim.server import start_in_thread

SERVICE_ID, SECRET = API_KEY[-73:-37], API_KEY[-36:]
TEMPLATE = "a0a0a0a0-0000-4000-8000-00000000000a"
WRONG_SECRET = str(uuid.uuid4())
CB_TOKEN = uuid.uuid4().hex
SEND = {"email_address": "bezorgd+s@voorbeeld.nl", "template_id": TEMPLATE, "reference": "r-1"}


def token(iat_offset=0.0, secret=SECRET, iss=SERVICE_ID, algorithm="HS256", **claims):
    payload = {"iss": iss, "iat": int(time.time() + iat_offset), **claims}
    if iss is None:
        payload.pop("iss")
    with warnings.catch_warnings():  # HS512 with a NotifyNL secret is short: that is the case
        warnings.simplefilter("ignore", InsecureKeyLengthWarning)
        return jwt.encode(payload, secret, algorithm=algorithm)


@pytest.fixture
def notifynl(sims) -> str:
    httpx.post(f"{sims.notifynl_url}/_sim/reset").raise_for_status()
    configure_notifynl(sims, callback_url=None, retention_s=7 * 86400.0)
    return sims.notifynl_url


def send(url, body=SEND, bearer=None, headers=None):
    given = {"Authorization": f"Bearer {bearer or token()}"} if headers is None else headers
    return httpx.post(f"{url}/v2/notifications/email", json=body, headers=given)


def auth_error(status, message):
    return {"status_code": status, "errors": [{"error": "AuthError", "message": message}]}


def test_the_30_second_clock_rule(notifynl):
    assert send(notifynl, bearer=token(-25)).status_code == 201
    assert send(notifynl, bearer=token(+25)).status_code == 201
    for offset in (-35, +35):
        response = send(notifynl, bearer=token(offset))
        assert response.status_code == 403
        assert response.json() == auth_error(
            403, "Error: Your system clock must be accurate to within 30 seconds"
        )


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({}, 401, "Unauthorized: authentication token must be provided"),
        (
            {"Authorization": "Basic abc"},
            401,
            "Unauthorized: authentication bearer scheme must be used",
        ),
        ({"Authorization": "Bearer nonsense"}, 403, None),
        (
            {"Authorization": f"Bearer {token(iss=None)}"},
            403,
            "Invalid token: iss field not provided",
        ),
        (
            {"Authorization": f"Bearer {token(iss='abc')}"},
            403,
            "Invalid token: service id is not the right data type",
        ),
        (
            {"Authorization": f"Bearer {token(iss=str(uuid.uuid4()))}"},
            403,
            "Invalid token: service not found",
        ),
        (
            {"Authorization": f"Bearer {token(secret=WRONG_SECRET)}"},
            403,
            "Invalid token: API key not found",
        ),
        (
            {"Authorization": f"Bearer {token(algorithm='HS512')}"},
            403,
            "Invalid token: algorithm used is not HS256",
        ),
    ],
)
def test_auth_errors_have_notifynl_bodies(notifynl, headers, status, message):
    response = send(notifynl, headers=headers)
    assert response.status_code == status
    body = response.json()
    assert body["status_code"] == status
    assert body["errors"][0]["error"] == "AuthError"
    if message:
        assert body == auth_error(status, message)


def test_a_revoked_key_is_refused():
    revoked = f"oud-{uuid.uuid4()}-{uuid.uuid4()}"
    sim = NotifySim(SimConfig(revoked_keys=[revoked]))
    server = start_in_thread(sim.app)
    try:
        bearer = token(iss=revoked[-73:-37], secret=revoked[-36:])
        response = send(server.url, bearer=bearer)
        assert response.json() == auth_error(403, "Invalid token: API key revoked")
    finally:
        server.stop()


def test_validation_errors(notifynl):
    response = send(notifynl, {**SEND, "sanitise_content_for": "x"})
    assert response.status_code == 400
    assert response.json() == {
        "status_code": 400,
        "errors": [
            {
                "error": "ValidationError",
                "message": (
                    "Additional properties are not allowed (sanitise_content_for was unexpected)"
                ),
            }
        ],
    }
    bad = send(notifynl, {**SEND, "email_address": "geen adres"}).json()
    assert bad["errors"] == [
        {"error": "ValidationError", "message": "email_address Not a valid email address"}
    ]
    missing = send(notifynl, {"email_address": "a@b.nl"}).json()
    assert {"error": "ValidationError", "message": "template_id is a required property"} in missing[
        "errors"
    ]
    assert sim_get(notifynl, "/_sim/sent")["count"] == 0


def test_201_body_get_by_id_and_list_shapes(notifynl):
    created = send(notifynl, {**SEND, "personalisation": {"naam": "Jan"}})
    assert created.status_code == 201
    body = created.json()
    assert set(body) >= {"id", "reference", "content", "uri", "template"}
    assert set(body["content"]) == {"subject", "body", "from_email"}
    assert set(body["template"]) == {"id", "version", "uri"}
    headers = {"Authorization": f"Bearer {token()}"}
    one = httpx.get(f"{notifynl}/v2/notifications/{body['id']}", headers=headers).json()
    assert one["type"] == "email" and one["reference"] == "r-1"
    assert one["created_at"].endswith("Z") and len(one["created_at"]) == 27
    listed = httpx.get(f"{notifynl}/v2/notifications", params={"reference": "r-1"}, headers=headers)
    assert [n["id"] for n in listed.json()["notifications"]] == [body["id"]]
    assert set(listed.json()["links"]) == {"current"}
    not_uuid = httpx.get(f"{notifynl}/v2/notifications/123", headers=headers)
    assert not_uuid.status_code == 400
    assert not_uuid.json()["errors"][0]["error"] == "ValidationError"


def test_retention_gives_404(notifynl):
    created = send(notifynl).json()
    httpx.post(f"{notifynl}/_sim/clock", json={"advance_s": 7 * 86400 + 1}).raise_for_status()
    headers = {"Authorization": f"Bearer {token()}"}
    response = httpx.get(f"{notifynl}/v2/notifications/{created['id']}", headers=headers)
    assert response.status_code == 404
    assert response.json() == {
        "status_code": 404,
        "errors": [{"error": "NoResultFound", "message": "No result found"}],
    }
    listed = httpx.get(f"{notifynl}/v2/notifications", params={"reference": "r-1"}, headers=headers)
    assert listed.json()["notifications"] == []


class FlakyReceiver:
    """Answers the first `failures` callbacks with `code`, then 200."""

    def __init__(self, failures: int, code: int) -> None:
        self.failures, self.code, self.calls = failures, code, []
        self.app = Starlette(routes=[Route("/cb", self.receive, methods=["POST"])])

    async def receive(self, request: Request) -> Response:
        self.calls.append((request.headers.get("authorization"), await request.json()))
        failing = len(self.calls) <= self.failures
        return Response(status_code=self.code if failing else 200)


@pytest.mark.parametrize(
    ("failures", "code", "attempts", "result"),
    [
        (2, 503, 3, "delivered"),
        (3, 429, 4, "delivered"),
        (9, 500, 6, "gave-up"),  # the first try and 5 retries
        (9, 400, 1, "refused"),  # any other 4xx is not retried
    ],
)
def test_callback_retries_like_notifynl(notifynl, sims, failures, code, attempts, result):
    receiver = FlakyReceiver(failures, code)
    server = start_in_thread(receiver.app)
    try:
        configure_notifynl(
            sims, callback_url=f"{server.url}/cb", callback_token=CB_TOKEN, retry_gap_s=0.01
        )
        created = send(notifynl).json()
        entries = wait_for(
            lambda: [
                c
                for c in sim_get(notifynl, "/_sim/callbacks")["callbacks"]
                if c["result"] != "pending"
            ]
        )
        assert [(e["attempts"], e["result"]) for e in entries] == [(attempts, result)]
        authorization, payload = receiver.calls[0]
        assert authorization == f"Bearer {CB_TOKEN}"
        assert payload["id"] == created["id"] and payload["status"] == "delivered"
        assert set(payload) == {
            "id",
            "reference",
            "to",
            "status",
            "created_at",
            "completed_at",
            "sent_at",
            "notification_type",
            "template_id",
            "template_version",
        }
    finally:
        server.stop()


def test_callbacks_to_a_dead_receiver_give_up_after_five_retries(notifynl, sims):
    configure_notifynl(
        sims, callback_url="http://127.0.0.1:9/cb", callback_token=CB_TOKEN, retry_gap_s=0.01
    )
    send(notifynl)
    [entry] = wait_for(
        lambda: [
            c for c in sim_get(notifynl, "/_sim/callbacks")["callbacks"] if c["result"] != "pending"
        ]
    )
    assert (entry["attempts"], entry["result"]) == (6, "gave-up")


def test_outcomes_by_address(notifynl, sims):
    receiver = FlakyReceiver(0, 200)
    server = start_in_thread(receiver.app)
    try:
        configure_notifynl(sims, callback_url=f"{server.url}/cb", callback_token=CB_TOKEN)
        for address in (
            "permanent+a@x.nl",
            "tijdelijk+a@x.nl",
            "technisch+a@x.nl",
            "stil+a@x.nl",
            "gewoon@x.nl",
            "tijdelijk-dan-bezorgd+a@x.nl",
            "tijdelijk-dan-bezorgd+a@x.nl",
        ):
            assert send(notifynl, {**SEND, "email_address": address}).status_code == 201
        wait_for(lambda: len(receiver.calls) == 6)
        statuses = sorted(payload["status"] for _, payload in receiver.calls)
        assert statuses == sorted(
            [
                "permanent-failure",
                "temporary-failure",
                "technical-failure",
                "delivered",
                "temporary-failure",
                "delivered",
            ]
        )
        silent = [
            n
            for n in sim_get(notifynl, "/_sim/sent")["notifications"]
            if n["email_address"].startswith("stil")
        ]
        assert [n["status"] for n in silent] == ["sending"]
    finally:
        server.stop()


def test_verloren_address_is_delivered_but_its_callback_is_lost(notifynl, sims):
    receiver = FlakyReceiver(0, 200)
    server = start_in_thread(receiver.app)
    try:
        configure_notifynl(sims, callback_url=f"{server.url}/cb", callback_token=CB_TOKEN)
        lost = send(notifynl, {**SEND, "email_address": "verloren+a@x.nl", "reference": "kwijt"})
        send(notifynl, {**SEND, "email_address": "bezorgd+a@x.nl", "reference": "gewoon"})

        def settled():
            callbacks = sim_get(notifynl, "/_sim/callbacks")["callbacks"]
            done = {c["reference"]: c["result"] for c in callbacks if c["result"] != "pending"}
            return done if len(done) == 2 and receiver.calls else None

        assert wait_for(settled) == {"kwijt": "lost", "gewoon": "delivered"}
        assert [payload["reference"] for _, payload in receiver.calls] == ["gewoon"]
        # Only a reconciliation (GET by id) learns the outcome.
        headers = {"Authorization": f"Bearer {token()}"}
        found = httpx.get(f"{notifynl}/v2/notifications/{lost.json()['id']}", headers=headers)
        assert found.json()["status"] == "delivered"
    finally:
        server.stop()


def test_profielservice_unknown_party_is_problem_json(sims):
    httpx.post(f"{sims.profiel_url}/_sim/reset").raise_for_status()
    response = httpx.post(
        f"{sims.profiel_url}/api/profielservice/v1/partij",
        json={"identificatieType": "BSN", "identificatieNummer": "1", "dienstverlener": "DV"},
    )
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["status"] == 404


def test_an_accepted_send_whose_answer_times_out_is_found_by_reference(notifynl):
    # accept_timeout_rate (the chaos soak's): NotifyNL processed the send, the answer is a
    # 504 after hang_s; only a lookup by reference (a re-claim's) finds the e-mail.
    httpx.post(f"{notifynl}/_sim/config", json={"hang_s": 0.05}).raise_for_status()
    httpx.post(f"{notifynl}/_sim/faults", json={"accept_timeout_rate": 1.0}).raise_for_status()
    response = send(notifynl, {**SEND, "reference": "r-hang"})
    assert response.status_code == 504
    send(notifynl, {**SEND, "reference": "r-other"})

    def by_reference(reference):
        answer = httpx.get(
            f"{notifynl}/v2/notifications",
            params={"reference": reference},
            headers={"Authorization": f"Bearer {token()}"},
        )
        assert answer.status_code == 200
        return [n["reference"] for n in answer.json()["notifications"]]

    assert by_reference("r-hang") == ["r-hang"]
    assert by_reference("r-none") == []
    assert sim_get(notifynl, "/_sim/sent")["per_reference"] == {"r-hang": 1, "r-other": 1}


def test_keys_set_through_the_config_are_honoured(notifynl):
    # The token check's key table is made once and again only when the key lists change.
    other = f"ander-{uuid.uuid4()}-{uuid.uuid4()}"
    bearer = token(iss=other[-73:-37], secret=other[-36:])
    assert send(notifynl, bearer=bearer).json() == auth_error(
        403, "Invalid token: service not found"
    )
    httpx.post(f"{notifynl}/_sim/config", json={"api_keys": [API_KEY, other]}).raise_for_status()
    try:
        assert send(notifynl, bearer=bearer).status_code == 201
    finally:
        httpx.post(f"{notifynl}/_sim/config", json={"api_keys": [API_KEY]}).raise_for_status()
    assert send(notifynl, bearer=bearer).status_code == 403
    assert send(notifynl).status_code == 201


def test_a_delivery_under_way_is_pending_until_done_or_reset(notifynl):
    # Delivery runs on timers, one per step: they count as pending, and a reset cancels them.
    before = sim_get(notifynl, "/_sim/config")["delivery_delay_s"]
    httpx.post(f"{notifynl}/_sim/config", json={"delivery_delay_s": 1.0}).raise_for_status()
    try:
        created = send(notifynl).json()
        assert sim_get(notifynl, "/_sim/callbacks")["pending_tasks"] == 1
        headers = {"Authorization": f"Bearer {token()}"}

        def status():
            url = f"{notifynl}/v2/notifications/{created['id']}"
            return httpx.get(url, headers=headers).json()["status"]

        assert status() == "created"
        wait_for(lambda: status() == "delivered")
        assert sim_get(notifynl, "/_sim/callbacks")["pending_tasks"] == 0
        send(notifynl)
        httpx.post(f"{notifynl}/_sim/reset").raise_for_status()
        assert sim_get(notifynl, "/_sim/callbacks")["pending_tasks"] == 0
    finally:
        httpx.post(f"{notifynl}/_sim/config", json={"delivery_delay_s": before}).raise_for_status()
