-- The event log is append only: dropping a whole partition is the only removal (SPEC §4).

CREATE OR REPLACE FUNCTION nmc.refuse_event_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append only (% refused)', TG_OP
        USING ERRCODE = 'NM004';
END
$$;
COMMENT ON FUNCTION nmc.refuse_event_change() IS
'Refuses UPDATE, DELETE and TRUNCATE on nmc.event (NM004). Partitions are dropped by '
'maintenance, never emptied row by row.';

DROP TRIGGER IF EXISTS event_append_only ON nmc.event;
CREATE TRIGGER event_append_only
BEFORE UPDATE OR DELETE ON nmc.event
FOR EACH ROW EXECUTE FUNCTION nmc.refuse_event_change();

DROP TRIGGER IF EXISTS event_no_truncate ON nmc.event;
CREATE TRIGGER event_no_truncate
BEFORE TRUNCATE ON nmc.event
FOR EACH STATEMENT EXECUTE FUNCTION nmc.refuse_event_change();
