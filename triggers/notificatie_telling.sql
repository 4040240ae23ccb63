-- Counting notifications per (DV, regie, status, reason) as they change (schema 0043): one
-- insert of delta rows per statement that changes a key, from the statement's transition
-- tables, which the guard's triggers capture anyway (PostgreSQL keeps one set per statement
-- and event for all of a table's triggers).

CREATE OR REPLACE FUNCTION nmc.tel_notificaties()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO nmc.notificatietelling (dv_id, regie, status, reden, aantal)
        SELECT n.dv_id, n.regie, n.status, n.reden, pg_catalog.count(*)
        FROM nieuw AS n
        GROUP BY n.dv_id, n.regie, n.status, n.reden;
    ELSIF TG_OP = 'UPDATE' THEN
        -- Rows pair up by id (the guard refuses a changed id); only a changed key counts.
        INSERT INTO nmc.notificatietelling (dv_id, regie, status, reden, aantal)
        SELECT d.dv_id, d.regie, d.status, d.reden, pg_catalog.sum(d.aantal)
        FROM nieuw AS n
        INNER JOIN oud AS o ON n.id = o.id
        CROSS JOIN LATERAL (
            VALUES
            (o.dv_id, o.regie, o.status, o.reden, -1),
            (n.dv_id, n.regie, n.status, n.reden, 1)
        ) AS d (dv_id, regie, status, reden, aantal)
        WHERE (n.dv_id, n.regie, n.status, n.reden) IS DISTINCT FROM
            (o.dv_id, o.regie, o.status, o.reden)
        GROUP BY d.dv_id, d.regie, d.status, d.reden
        HAVING pg_catalog.sum(d.aantal) <> 0;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO nmc.notificatietelling (dv_id, regie, status, reden, aantal)
        SELECT o.dv_id, o.regie, o.status, o.reden, -pg_catalog.count(*)
        FROM oud AS o
        GROUP BY o.dv_id, o.regie, o.status, o.reden;
    ELSE
        -- TRUNCATE: nothing is left to count.
        DELETE FROM nmc.notificatietelling;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION nmc.tel_notificaties() IS
'AFTER statement trigger on nmc.notificatie: adds the statement''s change to '
'nmc.notificatietelling as delta rows per (dv_id, regie, status, reden): +n for inserted '
'rows, -n for deleted ones, -1/+1 for an update that changed a key (grouped, zero sums '
'left out); a TRUNCATE empties the count.';

DROP TRIGGER IF EXISTS notificatie_telling_insert ON nmc.notificatie;
CREATE TRIGGER notificatie_telling_insert
AFTER INSERT ON nmc.notificatie
REFERENCING NEW TABLE AS nieuw
FOR EACH STATEMENT EXECUTE FUNCTION nmc.tel_notificaties();

DROP TRIGGER IF EXISTS notificatie_telling_update ON nmc.notificatie;
CREATE TRIGGER notificatie_telling_update
AFTER UPDATE ON nmc.notificatie
REFERENCING OLD TABLE AS oud NEW TABLE AS nieuw
FOR EACH STATEMENT EXECUTE FUNCTION nmc.tel_notificaties();

DROP TRIGGER IF EXISTS notificatie_telling_delete ON nmc.notificatie;
CREATE TRIGGER notificatie_telling_delete
AFTER DELETE ON nmc.notificatie
REFERENCING OLD TABLE AS oud
FOR EACH STATEMENT EXECUTE FUNCTION nmc.tel_notificaties();

DROP TRIGGER IF EXISTS notificatie_telling_truncate ON nmc.notificatie;
CREATE TRIGGER notificatie_telling_truncate
AFTER TRUNCATE ON nmc.notificatie
FOR EACH STATEMENT EXECUTE FUNCTION nmc.tel_notificaties();
