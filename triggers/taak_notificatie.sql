-- The reference from a task to its notification, kept per statement rather than by a
-- foreign key (schema/0014): a 1000-item intake inserts 1000 tasks in one statement.

CREATE OR REPLACE FUNCTION nmc.check_taak_notificatie()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Tasks are only written by functions that have just inserted or locked their
    -- notification, so no concurrent delete can slip between this check and the commit
    -- (nmc.delete_expired deletes terminal notifications only, under FOR UPDATE).
    IF EXISTS (
        SELECT 1 FROM nieuw AS t
        WHERE t.notificatie_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM nmc.notificatie AS n WHERE n.id = t.notificatie_id)
    ) THEN
        RAISE EXCEPTION 'a task must name an existing notificatie'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION nmc.check_taak_notificatie() IS
'AFTER INSERT statement trigger on nmc.taak: every new task with a notificatie_id names an '
'existing notificatie (23503 otherwise). One set check per statement.';

CREATE OR REPLACE FUNCTION nmc.delete_taken_van_notificaties()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM nmc.taak AS t USING oud AS o WHERE t.notificatie_id = o.id;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION nmc.delete_taken_van_notificaties() IS
'AFTER DELETE statement trigger on nmc.notificatie: deletes the tasks of the deleted '
'notifications (what ON DELETE CASCADE did).';

CREATE OR REPLACE FUNCTION nmc.refuse_taak_notificatie_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.notificatie_id IS DISTINCT FROM OLD.notificatie_id THEN
        RAISE EXCEPTION 'a task''s notificatie never changes' USING ERRCODE = 'NM015';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION nmc.refuse_taak_notificatie_change() IS
'BEFORE UPDATE OF notificatie_id row trigger on nmc.taak: the notification a task belongs '
'to never changes (NM015). Fires only for updates that name the column.';

DROP TRIGGER IF EXISTS taak_notificatie_bestaat ON nmc.taak;
CREATE TRIGGER taak_notificatie_bestaat
AFTER INSERT ON nmc.taak
REFERENCING NEW TABLE AS nieuw
FOR EACH STATEMENT EXECUTE FUNCTION nmc.check_taak_notificatie();

DROP TRIGGER IF EXISTS taak_notificatie_vast ON nmc.taak;
CREATE TRIGGER taak_notificatie_vast
BEFORE UPDATE OF notificatie_id ON nmc.taak
FOR EACH ROW EXECUTE FUNCTION nmc.refuse_taak_notificatie_change();

DROP TRIGGER IF EXISTS notificatie_taken_weg ON nmc.notificatie;
CREATE TRIGGER notificatie_taken_weg
AFTER DELETE ON nmc.notificatie
REFERENCING OLD TABLE AS oud
FOR EACH STATEMENT EXECUTE FUNCTION nmc.delete_taken_van_notificaties();
