"""`nmc admin clock`: moving the clock is refused unless NMC_TEST_CLOCK=1."""

import re
from datetime import datetime, timedelta

import pytest


@pytest.fixture
def clock_db(db_url, monkeypatch):
    """Point the CLI at a fresh migrated database."""
    monkeypatch.setenv("NMC_DATABASE_URL", db_url)
    monkeypatch.delenv("NMC_TEST_CLOCK", raising=False)


def clock_now(nmc) -> datetime:
    result = nmc("admin", "clock", "show")
    assert result.exit_code == 0, result.err
    return datetime.fromisoformat(result.out.strip())


def test_advance_is_refused_without_test_clock(nmc, clock_db):
    before = clock_now(nmc)
    result = nmc("admin", "clock", "advance", "7d")
    assert result.exit_code == 1
    assert "NMC_TEST_CLOCK=1" in result.err
    assert clock_now(nmc) - before < timedelta(days=1)


def test_advance_moves_the_clock_forward(nmc, clock_db, monkeypatch):
    monkeypatch.setenv("NMC_TEST_CLOCK", "1")
    before = clock_now(nmc)
    assert nmc("admin", "clock", "advance", "7d").exit_code == 0
    assert nmc("admin", "clock", "advance", "90m").exit_code == 0
    assert nmc("admin", "clock", "advance", "2 days 3 hours").exit_code == 0
    assert clock_now(nmc) - before >= timedelta(days=9, hours=4, minutes=30)


def test_the_clock_never_moves_back(nmc, clock_db, monkeypatch):
    monkeypatch.setenv("NMC_TEST_CLOCK", "1")
    result = nmc("admin", "clock", "advance", "--", "-1h")
    assert result.exit_code == 1
    assert re.match(r"nmc: ERROR [0-9A-Z]{5}: ", result.err)  # the SQLSTATE, then the message
