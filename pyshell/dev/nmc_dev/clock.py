"""`nmc admin clock`: read and (in tests and demos only) move the database clock.

Every rule that involves time reads nmc.now(); nmc.advance_clock(interval) moves it
forward. PostgreSQL parses the durations itself: `7d`, `1h`, `90m` (minutes), `30s` and
any interval text such as `2 days 3 hours`.
"""

from datetime import datetime

import psycopg

from nmc.config import Settings
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc_dev.queries import QUERIES


def advance(settings: Settings, duration: str) -> datetime:
    """Move the clock forward by `duration`; return the new nmc.now()."""
    if not settings.test_clock:
        raise NmcError(
            "refusing to move the clock: set NMC_TEST_CLOCK=1 to allow it "
            "(tests and demos only, never in production)"
        )
    with connect(connection_url(settings)) as conn:
        conn.execute(QUERIES["advance_clock"], {"duration": duration})
        return _now(conn)


def show(settings: Settings) -> datetime:
    with connect(connection_url(settings)) as conn:
        return _now(conn)


def _now(conn: psycopg.Connection) -> datetime:
    return conn.execute(QUERIES["clock_now"]).fetchone()[0]
