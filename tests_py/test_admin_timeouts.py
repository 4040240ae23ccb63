"""The admin connection (`nmc admin …`, `nmc admin kek rotate`, `nmc migrate`) is bounded like
the shell's roles: a statement that runs too long is cancelled, and a session left idle in a
transaction is ended, so no operator command holds the feed watermark back for long (SPEC §2).

The server's timers are PostgreSQL's own (not nmc.now()), so the two behavioural tests set
them to a fraction of a second through the module's defaults and wait that long for real.
"""

import time

import psycopg
import pytest

from nmc import database
from nmc.database import connect


def setting_ms(conn: psycopg.Connection, name: str) -> int:
    [(value,)] = conn.execute(
        "SELECT setting::integer FROM pg_catalog.pg_settings WHERE name = %s", [name]
    ).fetchall()
    return value


def test_the_admin_connection_carries_statement_and_idle_timeouts(db_url):
    with connect(db_url) as conn:
        statement = setting_ms(conn, "statement_timeout")
        idle = setting_ms(conn, "idle_in_transaction_session_timeout")
    assert 0 < statement <= 10 * 60 * 1000, "an admin statement must not run unbounded"
    assert 0 < idle <= 10 * 60 * 1000, "an idle admin transaction must not stay open"


def test_a_long_admin_statement_is_cancelled(db_url, monkeypatch):
    monkeypatch.setattr(database, "ADMIN_STATEMENT_TIMEOUT", "300ms")
    with connect(db_url) as conn:
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_catalog.pg_sleep(3)")
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session itself goes on


def test_an_admin_session_idle_in_a_transaction_is_ended(db_url, monkeypatch):
    monkeypatch.setattr(database, "ADMIN_IDLE_IN_TRANSACTION_TIMEOUT", "300ms")
    ended = pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout)
    with connect(db_url) as conn, ended, conn.transaction():
        conn.execute("SELECT 1")
        time.sleep(1.5)  # PostgreSQL's timer, not the NMC clock: it cannot be moved
        conn.execute("SELECT 2")


def test_an_explicit_setting_of_the_operator_wins(db_url, monkeypatch):
    """PGOPTIONS (or options in the URL) comes after the defaults: a report that needs
    longer can be given it for one command."""
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=7min")
    with connect(db_url) as conn:
        assert setting_ms(conn, "statement_timeout") == 7 * 60 * 1000
        assert setting_ms(conn, "idle_in_transaction_session_timeout") > 0


def test_the_migration_gets_a_longer_statement_timeout_than_the_admin_commands(db_url):
    with connect(db_url) as admin, connect(db_url, purpose="migrate") as migrating:
        assert setting_ms(migrating, "statement_timeout") > setting_ms(admin, "statement_timeout")
        assert setting_ms(migrating, "idle_in_transaction_session_timeout") > 0
