-- A berichttype outlives the notifications that name it: retired (actief = false), never
-- deleted or renamed. This stands in for the foreign key from notificatie, which the
-- batch intake cannot afford per row (schema/0012).

CREATE OR REPLACE FUNCTION nmc.refuse_berichttype_removal()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.dv_id = OLD.dv_id AND NEW.code = OLD.code THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a berichttype is retired (actief = false), never deleted or renamed (% refused)',
        TG_OP
        USING ERRCODE = 'NM015';
END
$$;
COMMENT ON FUNCTION nmc.refuse_berichttype_removal() IS
'Refuses DELETE, TRUNCATE and a change of (dv_id, code) on nmc.berichttype (NM015): '
'notifications refer to their berichttype by code without a foreign key.';

DROP TRIGGER IF EXISTS berichttype_blijvend ON nmc.berichttype;
CREATE TRIGGER berichttype_blijvend
BEFORE UPDATE OR DELETE ON nmc.berichttype
FOR EACH ROW EXECUTE FUNCTION nmc.refuse_berichttype_removal();

DROP TRIGGER IF EXISTS berichttype_geen_truncate ON nmc.berichttype;
CREATE TRIGGER berichttype_geen_truncate
BEFORE TRUNCATE ON nmc.berichttype
FOR EACH STATEMENT EXECUTE FUNCTION nmc.refuse_berichttype_removal();
