-- The count of notifications per status (schema 0043) as delta rows, folded together.

CREATE OR REPLACE FUNCTION nmc.voeg_tellingen_samen()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_gevouwen integer;
BEGIN
    -- The rows this statement sees become one row per key (none for a key that sums to
    -- 0). Deltas that writers commit meanwhile are not seen and stay as they are; a second
    -- fold at the same time waits for this one's row locks and then skips what it deleted.
    WITH weg AS (
        DELETE FROM nmc.notificatietelling AS t
        RETURNING t.dv_id, t.regie, t.status, t.reden, t.aantal
    ),

    samen AS (
        INSERT INTO nmc.notificatietelling (dv_id, regie, status, reden, aantal)
        SELECT w.dv_id, w.regie, w.status, w.reden, pg_catalog.sum(w.aantal)
        FROM weg AS w
        GROUP BY w.dv_id, w.regie, w.status, w.reden
        HAVING pg_catalog.sum(w.aantal) <> 0
        RETURNING 1
    )

    SELECT (SELECT pg_catalog.count(*) FROM weg) - (SELECT pg_catalog.count(*) FROM samen)
    INTO v_gevouwen;
    RETURN v_gevouwen;
END
$$;
COMMENT ON FUNCTION nmc.voeg_tellingen_samen() IS
'Folds the delta rows of nmc.notificatietelling into one row per (dv_id, regie, status, '
'reden), leaving out keys that sum to 0; the sums stay what they were. Returns how many '
'rows fewer there are. Run by the retention job (nmc.delete_expired), so a scrape reads '
'about a minute of deltas.';
