"""A changed signature gets a new name beside the old one; the old one is dropped once, by a
schema file, never by the module that replaced it (docs/migrations.md)."""

import re
from pathlib import Path

import psycopg

from nmc.admin.migrate import _listed_modules

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DROP_FILE = PROJECT_ROOT / "schema" / "0025_drop_replaced_signatures.sql"
# The old forms kept for 0.1.0 and earlier that 0.1.0 itself no longer called.
DROP_FILE_0_1 = PROJECT_ROOT / "schema" / "0040_drop_forms_before_0_1_0.sql"

# Stand-ins with the signatures and results of the replaced forms (what they compute does
# not matter): what a database of an older release still holds.
OLD_FORMS = {
    "nmc.intake_notificatie(uuid, integer, text, nmc.regie, bytea, smallint, bytea, bytea, "
    "bytea, bytea, text, timestamptz, uuid, text, text)": "integer AS 'SELECT 1'",
    "nmc.intake_notificaties(integer, nmc.regie, smallint, text, uuid, uuid[], text[], "
    "bytea[], bytea[], bytea[], bytea[], bytea[], timestamptz[], text[], text[])": (
        "integer AS 'SELECT 1'"
    ),
    "nmc.read_events(integer, xid8, bigint, integer)": "jsonb AS 'SELECT NULL::jsonb'",
    "nmc.page_events(integer, integer, xid8, bigint, timestamptz, integer)": (
        "jsonb AS 'SELECT NULL::jsonb'"
    ),
    "nmc.claim_terugkoppelen(text, integer)": (
        "TABLE (taak_id bigint, pagina jsonb) AS 'SELECT 1::bigint, NULL::jsonb'"
    ),
    "nmc.console_onderhoud_taken()": (
        "TABLE (id bigint, soort nmc.taak_soort) AS 'SELECT 1::bigint, NULL::nmc.taak_soort'"
    ),
}
# Where the current form has the same signature, the stand-in replaces it.
SAME_SIGNATURE = [
    "nmc.page_events(integer, integer, xid8, bigint, timestamptz, integer)",
    "nmc.console_onderhoud_taken()",
]
# The forms kept beside their replacements that neither 0.1.0 nor this release calls, with
# their results (stand-ins as above): what a database migrated to 0.1.0 or later still holds.
OLD_FORMS_0_1 = {
    "nmc.intake_notificatie(uuid, integer, text, nmc.regie, bytea, smallint, bytea, bytea, "
    "bytea, bytea, text, timestamptz, uuid, text, text, bytea[])": (
        "TABLE (notificatie_id uuid, nieuw boolean) AS 'SELECT NULL::uuid, true'"
    ),
    "nmc.intake_notificaties(integer, nmc.regie, smallint, text, uuid, uuid[], text[], "
    "bytea[], bytea[], bytea[], bytea[], bytea[], timestamptz[], text[], text[], bytea[])": (
        "TABLE (item integer, notificatie_id uuid, nieuw boolean) AS 'SELECT 1, NULL::uuid, true'"
    ),
    "nmc.store_receipts(text[], uuid[], text[], timestamptz[], timestamptz[])": (
        "TABLE (item integer, resultaat text) AS 'SELECT 1, NULL::text'"
    ),
    "nmc.apply_receipt(uuid, uuid, text, timestamptz, timestamptz)": "text AS 'SELECT NULL'",
    "nmc.claim_navraag(text, integer)": "TABLE (taak_id bigint) AS 'SELECT 1::bigint'",
    "nmc.claim_terugkoppelen(text, integer)": (
        "TABLE (taak_id bigint, pagina json) AS 'SELECT 1::bigint, NULL::json'"
    ),
    "nmc.finish_terugkoppelen(bigint, integer, text, xid8, bigint)": "text AS 'SELECT NULL'",
    "nmc.ensure_onderhoud(text)": "integer AS 'SELECT 1'",
    "nmc.list_rewrap(text, integer)": "TABLE (notificatie_id uuid) AS 'SELECT NULL::uuid'",
    "nmc.report_onbevestigd()": "TABLE (dv_id integer) AS 'SELECT 1'",
}


def nmc_functions(conn: psycopg.Connection) -> dict[str, str]:
    """Every function of schema nmc: its signature and its result."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, pg_catalog.pg_get_function_result(p.oid)"
        " FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = 'nmc'::regnamespace"
    ).fetchall()
    return dict(rows)


def run_drop_file(conn: psycopg.Connection, drop_file: Path = DROP_FILE) -> None:
    with conn.transaction():
        conn.execute("SET LOCAL ROLE nmc_owner")
        conn.execute(drop_file.read_text(encoding="utf-8"))


def test_no_module_drops_a_function():
    dropping = [
        path
        for path in _listed_modules(PROJECT_ROOT)
        if re.search(
            r"\bDROP\s+(FUNCTION|PROCEDURE|ROUTINE)\b",
            (PROJECT_ROOT / path).read_text(encoding="utf-8"),
            flags=re.IGNORECASE,
        )
    ]
    assert dropping == []


def test_the_replaced_forms_go_where_they_are_left(conn: psycopg.Connection):
    with conn.transaction():
        conn.execute("SET LOCAL ROLE nmc_owner")
        for signature in SAME_SIGNATURE:
            conn.execute(f"DROP FUNCTION {signature}")
        for signature, result_and_body in OLD_FORMS.items():
            conn.execute(f"CREATE FUNCTION {signature} RETURNS {result_and_body} LANGUAGE sql")
    before = nmc_functions(conn)
    run_drop_file(conn)
    after = nmc_functions(conn)
    gone = {signature for signature in before if signature not in after}
    assert len(gone) == len(OLD_FORMS)
    assert set(after) == set(before) - gone
    for signature in OLD_FORMS:
        resolved = conn.execute(
            "SELECT pg_catalog.to_regprocedure(%s)::text", (signature,)
        ).fetchone()[0]
        assert resolved is None, signature


def test_a_migrated_database_keeps_every_function(conn: psycopg.Connection):
    before = nmc_functions(conn)
    assert "nmc.page_events(integer,integer,xid8,bigint,timestamp with time zone,integer)" in (
        before
    )
    run_drop_file(conn)
    assert nmc_functions(conn) == before


def test_the_forms_kept_until_0_1_0_go_where_they_are_left(conn: psycopg.Connection):
    with conn.transaction():
        conn.execute("SET LOCAL ROLE nmc_owner")
        for signature, result_and_body in OLD_FORMS_0_1.items():
            conn.execute(f"CREATE FUNCTION {signature} RETURNS {result_and_body} LANGUAGE sql")
    before = nmc_functions(conn)
    run_drop_file(conn, DROP_FILE_0_1)
    after = nmc_functions(conn)
    assert set(after) <= set(before)
    assert len(before) - len(after) == len(OLD_FORMS_0_1)
    for signature in OLD_FORMS_0_1:
        resolved = conn.execute(
            "SELECT pg_catalog.to_regprocedure(%s)::text", (signature,)
        ).fetchone()[0]
        assert resolved is None, signature


def test_a_fresh_database_holds_none_of_the_forms_kept_until_0_1_0(conn: psycopg.Connection):
    held = [
        signature
        for signature in OLD_FORMS_0_1
        if conn.execute("SELECT pg_catalog.to_regprocedure(%s)", (signature,)).fetchone()[0]
    ]
    assert held == []
    before = nmc_functions(conn)
    run_drop_file(conn, DROP_FILE_0_1)
    assert nmc_functions(conn) == before
