"""`nmc admin beheerrapport configure|list`: the report's own template, configured like a
berichttype, and the latest reports."""

import json

import pytest

TEMPLATE = "a0a0a0a0-0000-4000-8000-0000000000cc"


@pytest.fixture
def admin_env(db_url, monkeypatch):
    monkeypatch.setenv("NMC_DATABASE_URL", db_url)


def settings(conn) -> tuple:
    return conn.execute(
        "SELECT beheerrapport_template_id::text, beheerrapport_notify_service,"
        " beheerrapport_tijd::text, beheerrapport_max_ids FROM nmc.instellingen"
    ).fetchone()


def test_configure_sets_only_what_is_given(nmc, admin_env, conn):
    result = nmc(
        "admin", "beheerrapport", "configure", "--template-id", TEMPLATE,
        "--notify-service", "beheer",
    )  # fmt: skip
    assert result.exit_code == 0, result.err
    assert settings(conn) == (TEMPLATE, "beheer", "07:00:00", 100)
    assert nmc("admin", "beheerrapport", "configure", "--tijd", "06:30").exit_code == 0
    assert settings(conn) == (TEMPLATE, "beheer", "06:30:00", 100)
    assert nmc("admin", "beheerrapport", "configure", "--geen-template").exit_code == 0
    assert settings(conn)[0] is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [((), "nothing to configure"), (("--template-id", "sjabloon"), "must be a UUID")],
)
def test_configure_refuses_what_it_cannot_use(nmc, admin_env, arguments, message):
    result = nmc("admin", "beheerrapport", "configure", *arguments)
    assert result.exit_code == 1 and message in result.err


def test_list_shows_the_latest_reports(nmc, admin_env, conn):
    assert nmc("admin", "beheerrapport", "list").out.strip() == "(geen)"
    dv_id = conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)",
        [json.dumps({"oin": "00000001005005005000", "naam": "Rapportdorp", "berichttypen": []})],
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO nmc.beheerrapport (id, dv_id, dag, kanaal, onbevestigd,"
        " onbevestigd_afgekapt, geen_contactgegevens_drempel, boven_drempel, uitkomst,"
        " aangemaakt_op, afgerond_op) VALUES (gen_random_uuid(), %s, '2025-03-01', 'mailto', 4,"
        " false, 0.3, false, 'verzonden', nmc.now(), nmc.now())",
        [dv_id],
    )
    [row] = json.loads(nmc("admin", "beheerrapport", "list", "--json").out)
    assert (row["dv_id"], row["dag"], row["onbevestigd"], row["uitkomst"]) == (
        dv_id, "2025-03-01", 4, "verzonden",
    )  # fmt: skip
    assert "mailto" in nmc("admin", "beheerrapport", "list").out
