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
'Refuses UPDATE, DELETE and TRUNCATE on nmc.event and on each of its partitions (NM004). '
'Partitions are dropped by maintenance, never emptied row by row.';

DROP TRIGGER IF EXISTS event_append_only ON nmc.event;
CREATE TRIGGER event_append_only
BEFORE UPDATE OR DELETE ON nmc.event
FOR EACH ROW EXECUTE FUNCTION nmc.refuse_event_change();

DROP TRIGGER IF EXISTS event_no_truncate ON nmc.event;
CREATE TRIGGER event_no_truncate
BEFORE TRUNCATE ON nmc.event
FOR EACH STATEMENT EXECUTE FUNCTION nmc.refuse_event_change();

-- The row triggers above are cloned onto every partition, but a TRUNCATE trigger is not:
-- TRUNCATE of one partition names only that table and fires only that table's triggers.
CREATE OR REPLACE FUNCTION nmc.protect_event_partitie(p_partitie regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'CREATE OR REPLACE TRIGGER event_no_truncate BEFORE TRUNCATE ON %s '
        'FOR EACH STATEMENT EXECUTE FUNCTION nmc.refuse_event_change()',
        p_partitie
    );
END
$$;
COMMENT ON FUNCTION nmc.protect_event_partitie(regclass) IS
'Gives one partition of nmc.event its own TRUNCATE trigger (NM004): the parent''s does not '
'fire for a TRUNCATE that names the partition. Called for every partition when this module '
'is applied and by nmc.create_event_partitie for each new range. Internal.';

-- Every partition there is now: the first range and the default one of a fresh install,
-- and every range an existing database made before partitions had their own trigger.
DO $$
DECLARE
    v_partitie regclass;
BEGIN
    FOR v_partitie IN
        SELECT t.relid FROM pg_catalog.pg_partition_tree('nmc.event'::regclass) AS t
        WHERE t.isleaf
    LOOP
        PERFORM nmc.protect_event_partitie(v_partitie);
    END LOOP;
END
$$;
