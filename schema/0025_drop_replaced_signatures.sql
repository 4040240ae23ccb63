-- The forms of API functions that later releases replaced, dropped once here instead of by
-- the modules that replaced them (docs/migrations.md: a module never drops a function). No
-- release since calls them; a database installed or migrated after they were replaced holds
-- none of them, and this file changes nothing there.

-- The intake before p_vorige_hmacs (the dvRef HMACs under earlier pepper versions).
DROP FUNCTION IF EXISTS nmc.intake_notificatie(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, bytea, bytea, bytea, text,
    timestamptz, uuid, text, text
);
DROP FUNCTION IF EXISTS nmc.intake_notificaties(
    integer, nmc.regie, smallint, text, uuid, uuid[], text[], bytea[], bytea[], bytea[],
    bytea[], bytea[], timestamptz[], text[], text[]
);
-- The feed page before it became json, and the read it was built from.
DROP FUNCTION IF EXISTS nmc.read_events(integer, xid8, bigint, integer);

-- Forms whose result changed under the same signature, which the modules now create with
-- CREATE OR REPLACE (refused when a result type differs): only those still here go, by
-- their old result. The feed page as jsonb, the webhook claim with that page, and the
-- console's task list without the maintenance job (werk).
DO $$
DECLARE
    v_oud regprocedure;
BEGIN
    FOR v_oud IN
        SELECT p.oid::regprocedure
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = 'nmc'::regnamespace AND (
            (p.proname = 'page_events' AND p.prorettype = 'jsonb'::regtype)
            OR (
                p.proname = 'claim_terugkoppelen'
                AND 'jsonb'::regtype = ANY(p.proallargtypes)
            )
            OR (p.proname = 'console_onderhoud_taken' AND NOT 'werk' = ANY(p.proargnames))
        )
    LOOP
        EXECUTE pg_catalog.format('DROP FUNCTION %s', v_oud);
    END LOOP;
END
$$;
