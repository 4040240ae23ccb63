"""Unit tests of the API's small parts: trace context, list cursor, ETag, token cache, settings."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from nmc.api import lijst_cursor
from nmc.api.intake import idempotency_form
from nmc.api.middleware import parse_traceparent
from nmc.api.routes_callback import token_matches
from nmc.api.routes_notificaties import etag_matches
from nmc.api.services import VerifiedTokens
from nmc.api.settings import ApiSettings
from nmc.auth.bearer import Principal
from nmc.auth.errors import Unauthenticated
from nmc.errors import NmcError

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (f"00-{TRACE}-00f067aa0ba902b7-01", (TRACE, "01")),
        (f" 00-{TRACE}-00f067aa0ba902b7-00 ", (TRACE, "00")),
        (f"01-{TRACE}-00f067aa0ba902b7-01-toekomst", (TRACE, "01")),
        (f"00-{TRACE}-00f067aa0ba902b7-01-extra", None),
        (f"ff-{TRACE}-00f067aa0ba902b7-01", None),
        (f"00-{'0' * 32}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"00-{TRACE.upper()}-00f067aa0ba902b7-01", None),
        ("00-abc-def-01", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_traceparent(header, expected):
    assert parse_traceparent(header) == expected


def test_list_cursor_round_trip():
    moment = datetime(2026, 3, 1, 9, 0, 0, 123456, tzinfo=UTC)
    notificatie_id = uuid.uuid4()
    cursor = lijst_cursor.encode(moment, notificatie_id)
    assert len(cursor) <= 500 and cursor.replace("-", "").replace("_", "").isalnum()
    assert lijst_cursor.decode(cursor) == (moment, notificatie_id)


@pytest.mark.parametrize("cursor", ["", "AAAA", "!!!", "A" * 34, "x" * 500])
def test_list_cursor_refuses_what_it_did_not_make(cursor):
    with pytest.raises(lijst_cursor.InvalidCursor):
        lijst_cursor.decode(cursor)


@pytest.mark.parametrize(
    ("header", "match"),
    [(None, False), ("", False), ('"3"', True), ('W/"3"', True), ('"1", "3"', True),
     ("*", True), ('"4"', False), ("3", False)],
)  # fmt: skip
def test_etag_matches(header, match):
    assert etag_matches(header, '"3"') is match


def test_idempotency_ignores_only_the_batch_id():
    canonical = {"dvRef": "a", "batchId": "b", "geldigTot": None}
    assert idempotency_form(canonical) == {"dvRef": "a", "geldigTot": None}


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer geheim", True),
        ("bearer geheim", True),
        ("Bearer  geheim ", True),
        ("Bearer geheim2", False),
        ("Bearer gehei", False),
        ("Basic geheim", False),
        ("geheim", False),
        ("", False),
        (None, False),
        ("Bearer ééé", False),
    ],
)
def test_callback_token_matches(header, ok):
    assert token_matches(header, "geheim") is ok


class FakeVerifier:
    def __init__(self, expires_at):
        self.calls = 0
        self.expires_at = expires_at

    async def verify_header(self, authorization):
        self.calls += 1
        if authorization != "Bearer goed":
            raise Unauthenticated("nee")
        return Principal(oin="1" * 20, subject=None, token_id=None, expires_at=self.expires_at)


async def test_verified_tokens_are_reused_until_expiry_or_max_age():
    now = [1000.0]
    verifier = FakeVerifier(expires_at=1100)
    tokens = VerifiedTokens(verifier, max_age=60, clock=lambda: now[0])
    assert (await tokens.principal("Bearer goed")).oin == "1" * 20
    await tokens.principal("Bearer goed")
    assert verifier.calls == 1
    now[0] = 1061  # older than max_age: verified again
    await tokens.principal("Bearer goed")
    assert verifier.calls == 2
    now[0] = 1100 + 31  # past exp plus the leeway: verified again, which now fails
    verifier.expires_at = 1100
    await tokens.principal("Bearer goed")
    assert verifier.calls == 3
    for _ in range(2):
        with pytest.raises(Unauthenticated):
            await tokens.principal("Bearer fout")
    assert verifier.calls == 5, "failures are never cached"


def test_settings_defaults_and_refusals():
    settings = ApiSettings.from_env({"NMC_DB_PORT": "5432"})
    assert settings.database_url == "postgresql://nmc_api@127.0.0.1:5432/nmc"
    assert (settings.pool_min, settings.pool_max, settings.prepare_threshold) == (2, 16, 5)
    assert settings.callback_token is None
    assert ApiSettings.from_env({"NMC_API_PREPARE_THRESHOLD": "off"}).prepare_threshold is None
    assert "geheim" not in repr(ApiSettings.from_env({"NMC_NOTIFYNL_CALLBACK_TOKEN": "geheim"}))
    for env in ({"NMC_API_POOL_MAX": "x"}, {"NMC_API_POOL_MIN": "5", "NMC_API_POOL_MAX": "2"}):
        with pytest.raises(NmcError):
            ApiSettings.from_env(env)


class FakePool:
    """Answers `SELECT nmc.now()` with the wall clock plus `ahead`."""

    def __init__(self, ahead):
        self.ahead = ahead
        self.queries = 0

    def connection(self):
        pool = self

        class Connection:
            async def __aenter__(self):
                return self

            async def __aexit__(self, *exc):
                return False

            async def execute(self, query, params):
                pool.queries += 1

                class Cursor:
                    description = ("now",)

                    async def fetchone(self):
                        return (datetime.now(UTC) + pool.ahead,)

                return Cursor()

        return Connection()


async def test_db_clock_follows_the_database_and_errs_towards_the_past():
    from nmc.api.db import DbClock

    monotonic = [0.0]
    pool = FakePool(ahead=timedelta(days=2))
    clock = DbClock(pool, clock=lambda: monotonic[0])
    estimate = await clock.now()
    real = datetime.now(UTC) + timedelta(days=2)
    assert real - timedelta(seconds=2) < estimate < real - DbClock.MARGIN + timedelta(seconds=1)
    await clock.now()
    assert pool.queries == 1, "no round trip per request"
    pool.ahead = timedelta(days=3)
    monotonic[0] = DbClock.REFRESH_SECONDS
    assert await clock.now() > real + timedelta(hours=23)
    assert pool.queries == 2


def test_no_database_connection_is_503_with_retry_after():
    import psycopg
    import psycopg_pool

    from nmc.api.problems import problem_for

    for error in (psycopg_pool.PoolTimeout("no connection"), psycopg.OperationalError("gone")):
        problem = problem_for(error)
        assert (problem.status, problem.type_uri()) == (503, "about:blank")
        assert problem.headers["Retry-After"] == "60"


def test_a_database_shutting_down_is_503_not_500():
    # Found by the chaos soak: a fast shutdown ends the API's sessions with 57P01, and a
    # request then got a 500, as if it were at fault.
    import psycopg
    from psycopg import errors

    from nmc.api.problems import problem_for
    from nmc.api.routes_notificaties import intake_problem

    for error in (
        errors.AdminShutdown("terminating connection due to administrator command"),
        errors.CannotConnectNow("the database system is starting up"),
        errors.lookup("08006")("connection failure"),
    ):
        assert problem_for(error).status == 503, type(error).__name__
        assert intake_problem(error, batch=True).status == 503, type(error).__name__
    # Another operator-intervention error is not the server going away: still a 500.
    assert isinstance(errors.QueryCanceled("statement timeout"), psycopg.OperationalError)
    assert problem_for(errors.QueryCanceled("statement timeout")).status == 500


def test_an_intake_without_database_answer_is_503():
    import psycopg_pool

    from nmc.api.routes_notificaties import intake_problem

    problem = intake_problem(psycopg_pool.PoolTimeout("no connection"), batch=True)
    assert problem.status == 503
