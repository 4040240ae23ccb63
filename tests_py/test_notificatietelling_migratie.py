"""Schema 0043 counts the notifications a database already holds: the metrics read the count
(nmc.notificatietelling), so a database migrated with notifications in it must start from
their real numbers, and go on counting from there."""

from pathlib import Path

import psycopg

from nmc.admin.migrate import migrate

FIXTURES = Path(__file__).resolve().parent.parent / "tests_sql" / "fixtures" / "setup.sql"
COUNT_MODULES = ("triggers/notificatie_telling.sql", "functions/metriek/tellingen.sql")

GETELD = """
    SELECT t.dv_id, t.regie::text, t.status::text, t.reden::text, sum(t.aantal)::bigint
    FROM nmc.notificatietelling AS t GROUP BY 1, 2, 3, 4 HAVING sum(t.aantal) <> 0
    ORDER BY 1, 2, 3, 4
"""
ECHT = """
    SELECT n.dv_id, n.regie::text, n.status::text, n.reden::text, count(*)
    FROM nmc.notificatie AS n GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
"""


def tree_before_the_count(project_copy: Path) -> Path:
    """This tree as it was before schema 0043: without it and without the count's modules."""
    (project_copy / "schema" / "0043_notificatietelling.sql").unlink()
    modules = project_copy / "sql" / "modules.txt"
    lines = modules.read_text(encoding="utf-8").splitlines()
    modules.write_text(
        "\n".join(line for line in lines if line not in COUNT_MODULES) + "\n", encoding="utf-8"
    )
    return project_copy


def test_the_migration_counts_the_notifications_already_there(
    create_database, project_copy, project_root
):
    url = create_database()
    migrate(url, tree_before_the_count(project_copy))
    with psycopg.connect(url) as conn:
        conn.execute(FIXTURES.read_text(encoding="utf-8"))
        conn.execute("""
            SELECT pg_temp.naar_status(pg_temp.nieuwe_notificatie(), s.doel::nmc.notificatie_status)
            FROM unnest(ARRAY[
                'aangenomen', 'verzonden', 'bezorgd', 'niet-bezorgbaar', 'geannuleerd',
                'verzonden', 'aangenomen'
            ]) AS s (doel)
        """)
        conn.execute("SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering')")
    migrate(url, project_root)
    with psycopg.connect(url, autocommit=True) as conn:
        echt = conn.execute(ECHT).fetchall()
        assert sum(row[4] for row in echt) == 8
        assert conn.execute(GETELD).fetchall() == echt
        # ... and it goes on counting from there.
        conn.execute("""
            SELECT nmc.transition_notificatie(n.id, 'geannuleerd', 'geannuleerd')
            FROM nmc.notificatie AS n WHERE n.status = 'aangenomen'
        """)
        assert conn.execute(GETELD).fetchall() == conn.execute(ECHT).fetchall()
