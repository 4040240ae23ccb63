"""Unit tests of nmc.api.problems: RFC 9457 bodies, the SQLSTATE table, Starlette handlers."""

import json
import logging
from dataclasses import dataclass

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from nmc.api import problems as p
from nmc.api.validation import AddressRefused, ValidationFailed, violation
from nmc.auth.errors import JwksUnavailable, Unauthenticated
from nmc.status import NOTIFICATIE_STATUSES

BASE = "https://mijnoverheidzakelijk.nl/nmc/problemen/"


@dataclass
class FakeDiag:
    message_detail: str | None = None


class FakeDbError(Exception):
    """Quacks like a psycopg error: `sqlstate` and `diag`."""

    def __init__(self, sqlstate, detail=None, message="primary message"):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.diag = FakeDiag(detail)


def body_of(problem: p.Problem, base=BASE):
    response = problem.to_response(base)
    return response, json.loads(response.body)


# --------------------------------------------------------------------------------------------
# Problem types


def test_exactly_the_agreed_slugs():
    assert {slug: t.status for slug, t in p.PROBLEM_TYPES.items()} == {
        "ongeldige-invoer": 400,
        "niet-geauthenticeerd": 401,
        "geen-toegang": 403,
        "niet-gevonden": 404,
        "conflict": 409,
        "quotum-overschreden": 429,
        "cursor-vervallen": 410,
        "aanroeplimiet-overschreden": 429,
        "niet-ondersteund-mediatype": 415,
        "emailadres-geweigerd": 422,
        "interne-fout": 500,
        "ontbrekende-personalisatie": 422,
        "berichttype-niet-beschikbaar": 422,
    }


def test_a_refused_address_is_a_422_with_violations():
    found = [violation("notificaties[2].emailAdres", "wordt door NotifyNL geweigerd")]
    problem = p.problem_for(AddressRefused(found))
    response, body = body_of(problem)
    assert response.status_code == 422
    assert body["type"] == BASE + "emailadres-geweigerd"
    assert body["violations"] == found
    # Still a ValidationFailed (handled by the same handler), but not the 400.
    assert p.problem_for(ValidationFailed(found)).status == 400


def test_default_base_uri():
    assert p.DEFAULT_BASE_URI == BASE


@pytest.mark.parametrize("slug", sorted(p.PROBLEM_TYPES))
def test_every_type_renders_as_rfc9457(slug):
    response, body = body_of(p.Problem(slug, "uitleg"))
    assert response.status_code == p.PROBLEM_TYPES[slug].status
    assert response.headers["content-type"] == "application/problem+json"
    assert body == {
        "type": BASE + slug,
        "title": p.PROBLEM_TYPES[slug].title,
        "status": p.PROBLEM_TYPES[slug].status,
        "detail": "uitleg",
    }


@pytest.mark.parametrize("base", ["https://voorbeeld.nl/fouten/", "https://voorbeeld.nl/fouten"])
def test_configurable_base_uri(base):
    _, body = body_of(p.not_found(), base)
    assert body["type"] == "https://voorbeeld.nl/fouten/niet-gevonden"


def test_unknown_slug_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown problem type"):
        p.Problem("bestaat-niet", "x")


def test_about_blank_for_statuses_without_own_type():
    _, body = body_of(p.Problem(None, "Niet toegestaan.", status=405))
    assert body["type"] == "about:blank"
    assert body["title"] == "Method Not Allowed"
    assert body["status"] == 405


def test_invalid_input_carries_violations():
    violations = [violation("emailAdres", "is geen geldig e-mailadres")]
    response, body = body_of(p.invalid_input(violations))
    assert response.status_code == 400
    assert body["violations"] == [
        {"field": "emailAdres", "in": "body", "message": "is geen geldig e-mailadres"}
    ]


def test_unauthenticated_challenge():
    response, body = body_of(p.unauthenticated("token is verlopen"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        'Bearer realm="nmc", error="invalid_token", error_description="token is verlopen"'
    )
    assert body["detail"] == "token is verlopen"
    bare, _ = body_of(p.unauthenticated("bearer-token ontbreekt", token_present=False))
    assert bare.headers["www-authenticate"] == 'Bearer realm="nmc"'


def test_challenge_description_is_header_safe():
    response, _ = body_of(p.unauthenticated('a"b\\c\u00e9\nd'))
    assert response.headers["www-authenticate"].endswith('error_description="abcd"')


@pytest.mark.parametrize(
    ("factory", "slug"),
    [(p.quota_exceeded, "quotum-overschreden"), (p.rate_limited, "aanroeplimiet-overschreden")],
)
def test_429s_have_retry_after(factory, slug):
    response, body = body_of(factory(17))
    assert response.status_code == 429
    assert response.headers["retry-after"] == "17"
    assert body["type"] == BASE + slug
    assert body_of(factory(0))[0].headers["retry-after"] == "1"
    assert body_of(factory(10**9))[0].headers["retry-after"] == "86400"


def test_cursor_expired_is_410():
    response, body = body_of(p.cursor_expired())
    assert response.status_code == 410 and body["type"] == BASE + "cursor-vervallen"


def test_unsupported_media_type_is_415():
    assert body_of(p.unsupported_media_type())[0].status_code == 415


def test_conflict_with_members():
    _, body = body_of(p.conflict("Bezet.", notificatieStatus="verzonden"))
    assert body["status"] == 409 and body["notificatieStatus"] == "verzonden"


# --------------------------------------------------------------------------------------------
# SQLSTATE table


@pytest.mark.parametrize(
    ("sqlstate", "status", "slug"),
    [
        ("NM001", 409, "conflict"),
        ("NM002", 500, "interne-fout"),
        ("NM003", 500, "interne-fout"),
        ("NM004", 500, "interne-fout"),
        ("NM005", 404, "niet-gevonden"),
        ("NM006", 409, "conflict"),
        ("NM007", 409, "conflict"),
        ("NM008", 400, "ongeldige-invoer"),
        ("NM009", 429, "quotum-overschreden"),
        ("NM010", 403, "geen-toegang"),
        ("NM011", 409, "conflict"),
        ("NM012", 400, "ongeldige-invoer"),
        ("NM013", 400, "ongeldige-invoer"),
        ("NM014", 400, "ongeldige-invoer"),
        ("NM018", 410, "cursor-vervallen"),
        ("NM019", 429, "aanroeplimiet-overschreden"),
    ],
)
def test_sqlstate_table(sqlstate, status, slug):
    problem = p.problem_from_db_error(FakeDbError(sqlstate))
    assert (problem.status, problem.slug) == (status, slug)


def test_the_table_covers_the_api_sqlstates():
    # NM015-NM017 and NM020 come only from internal or admin calls (docs/errors.md).
    expected = [f"NM{n:03d}" for n in (*range(1, 15), 18, 19)]
    assert sorted(p.SQLSTATE_PROBLEMS) == expected


def test_nm019_is_the_feed_call_rate_with_retry_after():
    problem = p.problem_from_db_error(FakeDbError("NM019", detail="17"))
    assert (problem.slug, problem.headers["Retry-After"]) == ("aanroeplimiet-overschreden", "17")


def test_message_text_is_never_used():
    problem = p.problem_from_db_error(FakeDbError("NM005", message="NM007 Retry-After: 5"))
    assert problem.slug == "niet-gevonden"
    assert "NM007" not in json.dumps(problem.to_dict())


def test_nm008_is_a_violation_on_berichttype():
    problem = p.problem_from_db_error(FakeDbError("NM008"))
    assert [v["field"] for v in problem.members["violations"]] == ["berichtType"]
    in_batch = p.problem_from_db_error(FakeDbError("NM008"), field_prefix="notificaties[3].")
    assert in_batch.members["violations"][0]["field"] == "notificaties[3].berichtType"


def test_nm014_is_a_violation_on_geldig_tot():
    problem = p.problem_from_db_error(FakeDbError("NM014", detail="2031-01-01"))
    assert problem.members["violations"] == [
        {"field": "geldigTot", "in": "body", "message": p.SQLSTATE_PROBLEMS["NM014"].detail}
    ]
    assert "2031" not in json.dumps(problem.to_dict())


@pytest.mark.parametrize(
    ("detail", "retry_after"),
    [
        ("17", "17"),
        (" 3600 ", "3600"),
        ("0", "1"),
        ("999999", "86400"),
        ("soon", "60"),
        (None, "60"),
        ("-5", "60"),
        ("\u0661\u0662", "60"),
    ],
)
def test_nm009_retry_after_from_diag_detail(detail, retry_after):
    problem = p.problem_from_db_error(FakeDbError("NM009", detail=detail))
    assert problem.status == 429
    assert problem.headers["Retry-After"] == retry_after


@pytest.mark.parametrize("status", NOTIFICATIE_STATUSES)
def test_nm006_reports_the_current_status(status):
    problem = p.problem_from_db_error(FakeDbError("NM006", detail=status))
    body = problem.to_dict()
    assert body["status"] == 409  # RFC 9457's own member stays the HTTP status
    assert body["notificatieStatus"] == status


@pytest.mark.parametrize("detail", [None, "", "jan@voorbeeld.nl", "AANGENOMEN"])
def test_nm006_never_echoes_an_unknown_detail(detail):
    body = p.problem_from_db_error(FakeDbError("NM006", detail=detail)).to_dict()
    assert "notificatieStatus" not in body
    if detail:
        assert detail not in json.dumps(body)


def test_unknown_sqlstate_is_an_internal_error_and_logs_no_detail(caplog):
    caplog.set_level(logging.DEBUG, logger="nmc.api.problems")
    error = FakeDbError(
        "23505", detail="Key (dvref)=(geheim-QQ) already exists.", message="duplicate key geheim-QQ"
    )
    problem = p.problem_from_db_error(error)
    assert problem.status == 500 and problem.slug == "interne-fout"
    assert "QQ" not in json.dumps(problem.to_dict())
    assert "23505" in caplog.text
    assert "QQ" not in caplog.text


def test_error_without_sqlstate():
    assert p.problem_from_db_error(RuntimeError("geheim")).status == 500


# --------------------------------------------------------------------------------------------
# Starlette integration


def make_app(exc: BaseException | None = None, base: str | None = None) -> Starlette:
    async def boom(request):
        raise exc

    app = Starlette(
        routes=[Route("/boom", boom, methods=["GET"])],
        exception_handlers=p.exception_handlers(),
    )
    if base:
        app.state.problem_base_uri = base
    return app


def call(exc, path="/boom", method="GET", base=None):
    with TestClient(make_app(exc, base), raise_server_exceptions=False) as client:
        return client.request(method, path)


@pytest.mark.parametrize(
    ("exc", "status", "slug"),
    [
        (p.conflict("x"), 409, "conflict"),
        (ValidationFailed([violation("dvRef", "is verplicht")]), 400, "ongeldige-invoer"),
        (Unauthenticated("token is verlopen"), 401, "niet-geauthenticeerd"),
        (JwksUnavailable("IAM down"), 500, "interne-fout"),
        (FakeDbError("NM007"), 409, "conflict"),
        (FakeDbError("NM009", detail="30"), 429, "quotum-overschreden"),
        (RuntimeError("geheim-QQ"), 500, "interne-fout"),
    ],
)
def test_handlers_turn_exceptions_into_problems(exc, status, slug):
    response = call(exc)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == BASE + slug
    assert body["status"] == status
    assert "QQ" not in response.text
    assert "IAM down" not in response.text


def test_handler_headers_pass_through():
    assert call(FakeDbError("NM009", detail="30")).headers["retry-after"] == "30"
    assert call(Unauthenticated("x")).headers["www-authenticate"].startswith("Bearer")


def test_validation_violations_reach_the_client():
    response = call(ValidationFailed([violation("notificaties[1].dvRef", "is verplicht")]))
    assert response.json()["violations"] == [
        {"field": "notificaties[1].dvRef", "in": "body", "message": "is verplicht"}
    ]


def test_unknown_route_and_wrong_method():
    not_found = call(RuntimeError(), path="/elders")
    assert not_found.status_code == 404
    assert not_found.json()["type"] == BASE + "niet-gevonden"
    wrong_method = call(RuntimeError(), method="DELETE")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["type"] == "about:blank"
    assert set(wrong_method.headers["allow"].split(", ")) == {"GET", "HEAD"}


def test_app_state_base_uri():
    response = call(p.not_found(), base="https://voorbeeld.nl/p/")
    assert response.json()["type"] == "https://voorbeeld.nl/p/niet-gevonden"
