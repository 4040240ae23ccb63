-- KEK rotation in batches of bounded work: nmc.list_rewrap_v2 reads the next p_batch
-- notifications after a cursor, whether or not they still need a rewrap, so no statement of
-- a rotation reads more than one batch of rows (the first version skipped the rows already
-- rewrapped from the start of the table on every call: each batch read more than the last).
BEGIN;
SELECT plan(7);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 6);
CREATE TEMP TABLE volgorde AS
SELECT n.id, row_number() OVER (ORDER BY n.id) AS r FROM nmc.notificatie AS n;
-- The first three (in id order) are under the new KEK already, the fourth is erased.
UPDATE nmc.notificatie AS n SET kek_id = 'kek-2', sleutel_gewrapt = '\xbb'
FROM volgorde AS v WHERE v.id = n.id AND v.r <= 3;
UPDATE nmc.notificatie AS n SET sleutel_gewrapt = NULL
FROM volgorde AS v WHERE v.id = n.id AND v.r = 4;

SELECT results_eq(
    $$SELECT notificatie_id, kek_id, sleutel_gewrapt FROM nmc.list_rewrap_v2('kek-2', NULL, 2)$$,
    $$SELECT v.id, 'kek-2'::text, NULL::bytea FROM volgorde AS v WHERE v.r <= 2 ORDER BY v.r$$,
    'the first batch reads the first rows by id, even when they need nothing (no key handed out)'
);
SELECT results_eq(
    format(
        $$SELECT notificatie_id, kek_id, sleutel_gewrapt FROM nmc.list_rewrap_v2('kek-2', %L, 2)$$,
        (SELECT v.id FROM volgorde AS v WHERE v.r = 2)
    ),
    $$SELECT v.id, CASE WHEN v.r = 3 THEN 'kek-2' ELSE 'kek-1' END, NULL::bytea
      FROM volgorde AS v WHERE v.r IN (3, 4) ORDER BY v.r$$,
    'the next batch starts after the cursor; an erased row has no key to rewrap'
);
SELECT results_eq(
    format(
        $$SELECT notificatie_id, kek_id, sleutel_gewrapt FROM nmc.list_rewrap_v2('kek-2', %L, 5)$$,
        (SELECT v.id FROM volgorde AS v WHERE v.r = 4)
    ),
    $$SELECT v.id, 'kek-1'::text, '\x03'::bytea FROM volgorde AS v WHERE v.r > 4 ORDER BY v.r$$,
    'a key still under another KEK is handed out with the KEK it is under'
);
SELECT is_empty(
    format(
        $$SELECT 1 FROM nmc.list_rewrap_v2('kek-2', %L, 5)$$,
        (SELECT v.id FROM volgorde AS v WHERE v.r = 6)
    ),
    'past the last notification the pass is over'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.list_rewrap_v2('kek-2', NULL, 100000)),
    6,
    'an oversized batch reads what there is'
);

SELECT ok(
    NOT (
        SELECT p.prosecdef FROM pg_catalog.pg_proc AS p
        WHERE p.oid = 'nmc.list_rewrap_v2(text,uuid,integer)'::regprocedure
    ),
    'list_rewrap_v2 runs with the admin''s own rights (no role but the admin needs it)'
);
SELECT ok(
    NOT pg_catalog.has_function_privilege(
        'nmc_worker', 'nmc.list_rewrap_v2(text,uuid,integer)', 'EXECUTE'
    )
    AND NOT pg_catalog.has_function_privilege(
        'nmc_api', 'nmc.list_rewrap_v2(text,uuid,integer)', 'EXECUTE'
    ),
    'neither shell role may call it'
);

SELECT * FROM finish();
ROLLBACK;
