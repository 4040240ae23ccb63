-- The delivery proof reads a notification's events from the event partitions from its
-- intake's xid on (nmc.notificatie.aanname_xid, nmc.bewijs_events_json_v2): with a year's
-- term the log holds some forty partitions, and a read that probes each one's index costs
-- the proof more every month. The proof itself stays whole.
BEGIN;
SELECT plan(9);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

-- Index scans of one relation in this transaction (pg_stat_xact: not flushed yet).
CREATE FUNCTION pg_temp.scans(p_tabel regclass) RETURNS bigint
LANGUAGE sql AS $$
    SELECT coalesce(s.idx_scan, 0) + coalesce(s.seq_scan, 0)
    FROM pg_catalog.pg_stat_xact_all_tables AS s WHERE s.relid = p_tabel
$$;

SELECT pg_temp.verzonden() AS id \gset
SELECT pg_temp.callback(:'id', 'delivered', nmc.now() - interval '2 minutes');

SELECT is(
    (SELECT n.aanname_xid FROM nmc.notificatie AS n WHERE n.id = :'id'),
    (SELECT e.xid FROM nmc.event AS e WHERE e.notificatie_id = :'id' AND e.sequence = 1),
    'a notification''s aanname_xid is the xid of its first event: its intake''s'
);

-- Two ranges above the first one, as maintenance adds them over a year.
SELECT p.xid_tot AS t FROM nmc.event_partitie AS p WHERE p.naam = 'event_x000000000000' \gset
SELECT nmc.create_event_partitie(:'t'::xid8, (:'t'::text::bigint + 4096)::text::xid8);
SELECT nmc.create_event_partitie(
    (:'t'::text::bigint + 4096)::text::xid8, (:'t'::text::bigint + 8192)::text::xid8
);
SELECT p.naam AS hoog FROM nmc.event_partitie AS p WHERE p.xid_van = :'t'::xid8 \gset

SELECT
    pg_temp.scans('nmc.event_x000000000000') AS voor_laag,
    pg_temp.scans(('nmc.' || :'hoog')::regclass) AS voor_hoog
\gset
SELECT nmc.get_afleverbewijs(1001, :'id') AS bewijs \gset
SELECT ok(
    pg_temp.keten_klopt(:'bewijs'::jsonb) AND jsonb_array_length(:'bewijs'::jsonb -> 'events') = 4,
    'the proof holds its whole chain, read from its intake''s partition on'
);
SELECT cmp_ok(
    pg_temp.scans('nmc.event_x000000000000'), '>', :'voor_laag'::bigint,
    'its events were read from the partition holding its intake'
);

-- The proof of a notification whose intake lies above the first range (moved there: in one
-- test transaction every xid is the same) does not read that partition.
SELECT pg_temp.verzonden() AS hoger \gset
UPDATE nmc.notificatie SET aanname_xid = :'t'::xid8 WHERE id = :'hoger';
SELECT pg_temp.scans('nmc.event_x000000000000') AS voor_laag \gset
SELECT nmc.get_afleverbewijs(1001, :'hoger') IS NOT NULL AS gelezen \gset
SELECT is(
    pg_temp.scans('nmc.event_x000000000000'), :'voor_laag'::bigint,
    'get_afleverbewijs reads no partition below the notification''s aanname_xid'
);

-- A bound above the first range: that partition is not read at all, the ranges above are.
SELECT
    pg_temp.scans('nmc.event_x000000000000') AS voor_laag,
    pg_temp.scans(('nmc.' || :'hoog')::regclass) AS voor_hoog
\gset
SELECT is(
    nmc.bewijs_events_json_v2(:'id', 0, NULL, :'t'::xid8),
    '[]'::jsonb,
    'no event of the notification lies above the bound'
);
SELECT is(
    pg_temp.scans('nmc.event_x000000000000'), :'voor_laag'::bigint,
    'a partition below the bound is not read (pruned when the statement starts)'
);
SELECT cmp_ok(
    pg_temp.scans(('nmc.' || :'hoog')::regclass), '>', :'voor_hoog'::bigint,
    'a partition from the bound on is read'
);

-- Without a bound (a notification taken in before aanname_xid existed): every partition.
SELECT is(
    nmc.bewijs_events_json_v2(:'id', 0, NULL, NULL),
    nmc.bewijs_events_json_v2(:'id', 0, NULL, (
        SELECT n.aanname_xid FROM nmc.notificatie AS n
        WHERE n.id = :'id'
    )),
    'without a bound the same events: the bound only skips partitions it cannot hold'
);

-- The feed's and the proof's reads of the log keep one generic plan per session: a plan made
-- at every call (a SQL function with a SET clause; a custom plan the plan cache keeps
-- choosing) costs more with every partition the term holds.
SELECT is(
    (
        SELECT
            string_agg(
                format(
                    '%s %s %s', p.proname, l.lanname,
                    'plan_cache_mode=force_generic_plan' COLLATE "C"  -- noqa: RF02
                    = any(p.proconfig)
                ),
                ', ' ORDER BY p.proname
            )
        FROM pg_catalog.pg_proc AS p
        INNER JOIN pg_catalog.pg_language AS l ON p.prolang = l.oid
        WHERE
            p.pronamespace = 'nmc'::regnamespace
            AND p.proname IN ('read_events', 'bewijs_events_json_v2')
    ),
    'bewijs_events_json_v2 plpgsql t, read_events plpgsql t',
    'read_events and bewijs_events_json_v2 are PL/pgSQL with a generic plan'
);

SELECT * FROM finish();
ROLLBACK;
