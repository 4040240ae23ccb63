"""Every status code the DV API can answer on an operation is in its OpenAPI document.

The codes are not listed by hand per route; they come from the app:

* the app's routes under /api/nmc/v1 are exactly the documented operations;
* every operation gets the same provocations (its valid request, no token, a bad token, an
  unknown OIN, an unknown query parameter, a body of another media type, broken JSON, a body
  where none belongs, a bad and an unknown path id, a repeat with If-None-Match), and every
  status that comes back must be documented;
* the SQL functions an operation calls are recorded while its valid request runs; every NM
  SQLSTATE those functions (and the functions they call) can raise is mapped through the
  problem table (nmc.api.problems.SQLSTATE_PROBLEMS) to its status, which must be documented;
* an operation that calls the database answers a database outage with a 503 problem (the
  pool's connections killed and new ones refused), which must be documented.

A generated client then meets no status outside its contract.
"""

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from apitest import BASE, OIN_A, OIN_UNKNOWN, auth, centraal, decentraal
from feedtest import intake
from starlette.routing import Route
from starlette.testclient import TestClient

import nmc.sql_calls
from nmc.api.app import create_app
from nmc.api.openapi import openapi_document
from nmc.api.problems import PROBLEM_TYPES, SQLSTATE_PROBLEMS, problem_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]
METHODS = ("get", "post", "put", "patch", "delete")
# Under the base path but outside the DV contract: NotifyNL's callback has its own
# (docs/notifynl-callback.md); the JWKS is RFC 7517 at a well-known URI (see openapi.yaml).
NOT_IN_THE_DV_CONTRACT = {
    ("/notifynl-callback", "post"),
    ("/.well-known/jwks.json", "get"),
}

Operation = tuple[str, str]  # (path as documented, method)


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return openapi_document()


def documented(doc: dict[str, Any]) -> dict[Operation, set[int]]:
    return {
        (path, method): {int(code) for code in operation["responses"]}
        for path, item in doc["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def app_operations(app) -> set[Operation]:
    found = set()
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith(BASE + "/"):
            for method in route.methods or ():
                if method != "HEAD":
                    found.add((route.path.removeprefix(BASE), method.lower()))
    return found - NOT_IN_THE_DV_CONTRACT


# --------------------------------------------------------------------------------------------
# What the SQL functions can raise


_FUNCTION = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+nmc\.(\w+)\s*\(", re.IGNORECASE)
_CALL = re.compile(r"\bnmc\.(\w+)\s*\(")
_ERRCODE = re.compile(r"ERRCODE\s*=\s*'(NM\d{3})'")


def sql_functions() -> dict[str, tuple[set[str], set[str]]]:
    """Every nmc function of functions/: name -> (functions it calls, NM codes it raises)."""
    functions: dict[str, tuple[set[str], set[str]]] = {}
    for file in sorted((PROJECT_ROOT / "functions").rglob("*.sql")):
        text = file.read_text(encoding="utf-8")
        starts = list(_FUNCTION.finditer(text))
        for match, following in zip(starts, [*starts[1:], None], strict=True):
            body = text[match.end() : following.start() if following else len(text)]
            calls, codes = functions.setdefault(match.group(1), (set(), set()))
            calls.update(set(_CALL.findall(body)) - {match.group(1)})
            codes.update(_ERRCODE.findall(body))
    return functions


def raisable(names: set[str]) -> set[str]:
    """The NM codes the named functions can raise, through every function they call."""
    functions = sql_functions()
    seen: set[str] = set()
    codes: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        calls, raised = functions[name]
        codes |= raised
        todo.extend(calls)
    return codes


def status_of_sqlstate(sqlstate: str) -> int:
    mapping = SQLSTATE_PROBLEMS.get(sqlstate)
    return PROBLEM_TYPES[mapping.slug].status if mapping else 500


class RecordingQueries(dict):
    """QUERIES that notes which named queries were used.

    The workers' hint (`meld_werk`, nmc.api.werk_melder) is not noted: it goes out in a task
    of its own up to a quarter second after the request that asked for it, so it may fall
    in the next operation's request, and it never shapes an answer (it cannot fail one).
    """

    NOT_AN_ANSWER = frozenset({"meld_werk"})

    def __init__(self, queries) -> None:
        super().__init__(queries)
        self.used: set[str] = set()

    def __getitem__(self, name: str) -> str:
        if name not in self.NOT_AN_ANSWER:
            self.used.add(name)
        return super().__getitem__(name)


def functions_in(query_text: str) -> set[str]:
    return set(_CALL.findall(query_text))


# --------------------------------------------------------------------------------------------
# One valid request per operation, and the provocations


Request = dict[str, Any]  # method, url, and TestClient keyword arguments


@pytest.fixture
def client(api_env, dvs, apply_dv):
    """The app, with DV A onboarded with a webhook (so that resuming it is a valid request)."""
    apply_dv(OIN_A, webhook={"url": "https://dv.example/nmc-webhook"})
    with TestClient(create_app(), raise_server_exceptions=False) as test_client:
        yield test_client


def valid_requests(client: TestClient) -> dict[Operation, Callable[[], Request]]:
    """A valid request per documented operation (a fresh one on every call where needed)."""
    [kept] = intake(client)
    dvref = f"zaak-{uuid.uuid4()}"
    response = client.post(
        f"{BASE}/decentraal/notificaties", json=decentraal(dvRef=dvref), headers=auth()
    )
    assert response.status_code == 202, response.text
    cursor = client.get(f"{BASE}/notificaties/wijzigingen", headers=auth()).json()["cursor"]

    def post(path: str, body: Callable[[], Any]) -> Callable[[], Request]:
        return lambda: {"method": "POST", "url": BASE + path, "json": body()}

    def get(path: str, **params: str) -> Callable[[], Request]:
        return lambda: {"method": "GET", "url": BASE + path, "params": params}

    return {
        ("/decentraal/notificaties", "post"): post("/decentraal/notificaties", decentraal),
        ("/decentraal/notificaties/_batch", "post"): post(
            "/decentraal/notificaties/_batch", lambda: {"notificaties": [decentraal()]}
        ),
        ("/centraal/notificaties", "post"): post("/centraal/notificaties", centraal),
        ("/centraal/notificaties/_batch", "post"): post(
            "/centraal/notificaties/_batch", lambda: {"notificaties": [centraal()]}
        ),
        ("/notificaties", "get"): get("/notificaties", dvRef=dvref),
        ("/notificaties/{notificatieId}", "get"): get(f"/notificaties/{kept}"),
        ("/notificaties/{notificatieId}/afleverbewijs", "get"): get(
            f"/notificaties/{kept}/afleverbewijs"
        ),
        ("/notificaties/{notificatieId}/geschiedenis", "get"): get(
            f"/notificaties/{kept}/geschiedenis"
        ),
        ("/notificaties/{notificatieId}", "delete"): lambda: {
            "method": "DELETE",
            "url": f"{BASE}/notificaties/{intake(client)[0]}",
        },
        ("/notificaties/wijzigingen", "get"): get("/notificaties/wijzigingen"),
        ("/notificaties/wijzigingen/bevestiging", "put"): lambda: {
            "method": "PUT",
            "url": f"{BASE}/notificaties/wijzigingen/bevestiging",
            "json": {"cursor": cursor},
        },
        ("/notificaties/_snapshot", "get"): get("/notificaties/_snapshot"),
        ("/webhook/hervatten", "post"): lambda: {
            "method": "POST",
            "url": f"{BASE}/webhook/hervatten",
        },
        ("/webhook/positie", "put"): lambda: {
            "method": "PUT",
            "url": f"{BASE}/webhook/positie",
            "json": {"vanaf": "oudste"},
        },
        ("/openapi.json", "get"): get("/openapi.json"),
    }


def send(client: TestClient, request: Request, headers: dict[str, str] | None = None):
    request = dict(request)
    headers = {**auth(OIN_A), **(headers or {}), **request.pop("headers", {})}
    headers = {name: value for name, value in headers.items() if value is not None}
    return client.request(request.pop("method"), request.pop("url"), headers=headers, **request)


def provocations(request: Request, path: str) -> list[tuple[Request, dict[str, str | None]]]:
    """Variants of a valid request, each with the headers it is sent with."""
    variants: list[tuple[Request, dict[str, str | None]]] = [
        (request, {"Authorization": None}),
        (request, {"Authorization": "Bearer a.b.c"}),
        (request, {"Authorization": auth(OIN_UNKNOWN)["Authorization"]}),
        ({**request, "params": {**request.get("params", {}), "onbekend": "1"}}, {}),
    ]
    if "json" in request:
        body = json.dumps(request["json"]).encode()
        plain = {k: v for k, v in request.items() if k != "json"}
        variants.append(({**plain, "content": body}, {"Content-Type": "text/plain"}))
        variants.append(({**plain, "content": b"{"}, {"Content-Type": "application/json"}))
    else:
        variants.append(({**request, "json": {"onverwacht": True}}, {}))
    if "{notificatieId}" in path:
        for bad in ("geen-uuid", str(uuid.uuid4())):
            url = re.sub(r"/notificaties/[0-9a-f-]{36}$", f"/notificaties/{bad}", request["url"])
            variants.append(({**request, "url": url}, {}))
    return variants


# --------------------------------------------------------------------------------------------


def test_the_app_serves_exactly_the_documented_operations(client, doc):
    assert app_operations(client.app) == set(documented(doc))


def test_every_status_an_operation_answers_is_documented(client, doc, monkeypatch):
    contract = documented(doc)
    recording = RecordingQueries(nmc.sql_calls.QUERIES)
    monkeypatch.setattr(nmc.sql_calls, "QUERIES", recording)
    undocumented: dict[Operation, set[int]] = {}
    calls_database: set[Operation] = set()
    for operation, make in valid_requests(client).items():
        path, _ = operation
        # Whatever can go wrong in any handler: the problem mapping's answer to the unknown.
        seen: set[int] = {problem_for(RuntimeError("unexpected")).status}
        request = make()  # (may itself call the API, for an id: not this operation's SQL)
        recording.used.clear()
        first = send(client, request)
        assert first.status_code < 300, (operation, first.text)
        seen.add(first.status_code)
        # The SQL the operation's own request ran (the DV lookup is cached by now: add it).
        names = set(recording.used)
        if names:
            calls_database.add(operation)
            names.add("find_dienstverlener")
            # What the problem mapping makes of a database that cannot answer.
            seen.add(problem_for(psycopg.OperationalError("no connection")).status)
        sql = {f for name in names for f in functions_in(recording[name])}
        seen |= {status_of_sqlstate(code) for code in raisable(sql)}
        if "etag" in first.headers:
            again = send(client, make(), {"If-None-Match": first.headers["etag"]})
            seen.add(again.status_code)
        for request, headers in provocations(make(), path):
            seen.add(send(client, request, headers).status_code)
        if missing := seen - contract[operation]:
            undocumented[operation] = missing
    assert undocumented == {}, f"answered but not documented: {undocumented}"
    assert calls_database == set(contract) - {("/openapi.json", "get")}


@pytest.fixture
def outage(client, conn, db_url) -> Callable[[], None]:
    """Cut the API off from its database: new connections refused, open ones killed, and the
    pool waits only briefly for a connection that will not come."""

    def cut() -> None:
        database = psycopg.conninfo.conninfo_to_dict(db_url)["dbname"]
        conn.execute(
            psycopg.sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(
                psycopg.sql.Identifier(database)
            )
        )
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND usename = 'nmc_api'"
        )
        client.app.state.nmc.pool.timeout = 0.3

    return cut


def test_a_database_outage_is_a_documented_503_on_every_operation(client, doc, outage):
    contract = documented(doc)
    requests = valid_requests(client)
    prepared = {operation: make() for operation, make in requests.items()}  # ids while we can
    outage()
    answers = {}
    for operation, request in prepared.items():
        if operation == ("/openapi.json", "get"):
            continue  # served from memory
        response = send(client, request)
        answers[operation] = response.status_code
        assert response.status_code == 503, (operation, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert int(response.headers["retry-after"]) >= 1
        assert response.json()["status"] == 503
    assert {op for op in answers if 503 not in contract[op]} == set()
