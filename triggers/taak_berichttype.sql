-- A send task carries its notification's berichttype (schema/0039): the intake writes it,
-- every other writer of send tasks (resends, the previous release) gets it from here.

CREATE OR REPLACE FUNCTION nmc.vul_taak_berichttype()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT n.berichttype INTO NEW.berichttype FROM nmc.notificatie AS n
    WHERE n.id = NEW.notificatie_id;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION nmc.vul_taak_berichttype() IS
'BEFORE INSERT row trigger on nmc.taak for a send task written without its berichttype: '
'takes it from the notification. The intake writes it itself, so the trigger does not fire '
'for its bulk inserts.';

DROP TRIGGER IF EXISTS taak_berichttype ON nmc.taak;
CREATE TRIGGER taak_berichttype
BEFORE INSERT ON nmc.taak
FOR EACH ROW
WHEN (new.soort = 'verzenden' AND new.berichttype IS NULL AND new.notificatie_id IS NOT NULL)
EXECUTE FUNCTION nmc.vul_taak_berichttype();
