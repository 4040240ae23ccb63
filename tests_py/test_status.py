"""The shell's copy of the status vocabulary agrees with the database's."""

from nmc.status import ALLOWED_TRANSITIONS, NOTIFICATIE_STATUSES, REDENEN, TERMINAL_STATUSES


def test_allowed_transitions_match_the_trigger_table(conn):
    rows = conn.execute("SELECT van::text, naar::text FROM nmc.allowed_transitions()").fetchall()
    assert set(rows) == ALLOWED_TRANSITIONS
    assert len(rows) == len(ALLOWED_TRANSITIONS)


def test_status_and_reason_values_match_the_enums(conn):
    statuses = conn.execute("SELECT unnest(enum_range(NULL::nmc.notificatie_status))::text")
    assert tuple(row[0] for row in statuses) == NOTIFICATIE_STATUSES
    redenen = conn.execute("SELECT unnest(enum_range(NULL::nmc.reden))::text")
    assert tuple(row[0] for row in redenen) == REDENEN


def test_terminal_statuses_match_is_terminal(conn):
    rows = conn.execute(
        "SELECT s::text FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS s"
        " WHERE nmc.is_terminal(s)"
    ).fetchall()
    assert {row[0] for row in rows} == TERMINAL_STATUSES
