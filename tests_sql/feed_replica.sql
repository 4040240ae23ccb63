-- The feed from a standby: the call count on the primary (nmc.take_feed_aanroep_api), the
-- page read without writing (nmc.read_feed_pagina, nmc.read_snapshot_pagina), so it runs in
-- a read-only transaction, as on a hot standby. Events with small xids, as committed long
-- ago (the events of this open transaction lie above the watermark; pytest runs the read
-- on a real streaming standby).
BEGIN;
SELECT plan(37);
\ir fixtures/setup.sql

INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT
    gen_random_uuid(), CASE WHEN i % 3 = 0 THEN 1002 ELSE 1001 END, 1, NULL, 'aangenomen',
    nmc.now(), (10 + i / 2)::text::xid8
FROM generate_series(1, 30) AS i;
SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 3);

CREATE FUNCTION pg_temp.aanroepen(p_dv integer) RETURNS integer
LANGUAGE sql AS $$
    SELECT coalesce(sum(f.aantal), 0)::integer FROM nmc.feedaanroep AS f WHERE f.dv_id = p_dv
$$;

-- The primary's half: the call count.
SELECT lives_ok(
    $$SELECT nmc.take_feed_aanroep_api(1001, NULL, NULL, NULL)$$,
    'the call count takes no cursor for a first page or a snapshot page'
);
SELECT is(pg_temp.aanroepen(1001), 1, 'and counted one feed call of the DV');
SELECT nmc.take_feed_aanroep_api(1001, 1, '12'::xid8, nmc.now());
SELECT is(pg_temp.aanroepen(1001), 2, 'a call with a current cursor counts too');
SELECT throws_ok(
    $$SELECT nmc.take_feed_aanroep_api(1001, 2, '12'::xid8, nmc.now())$$, 'NM018', NULL,
    'a cursor of another epoch is refused (410) before the count'
);
SELECT throws_ok(
    $$SELECT nmc.take_feed_aanroep_api(1001, 1, '12'::xid8, nmc.now() - interval '400 days')$$,
    'NM018', NULL,
    'so is a cursor older than the DV''s max cursor age'
);
SELECT is(pg_temp.aanroepen(1001), 2, 'an expired cursor costs no call');
UPDATE nmc.dienstverlener SET feed_aanroepen_per_minuut = 3 WHERE dv_id = 1001;
SELECT nmc.take_feed_aanroep_api(1001, NULL, NULL, NULL);
SELECT ok(
    pg_temp.fout('SELECT nmc.take_feed_aanroep_api(1001, NULL, NULL, NULL)') ~ '^NM019:[0-9]+$',
    'the fourth call in the minute is refused (NM019) with a Retry-After'
);
SELECT ok(
    pg_temp.fout('SELECT nmc.page_events(1001, 1, NULL, NULL, nmc.now(), 10)') ~ '^NM019:',
    'the count is the one nmc.page_events takes: one rate for both paths'
);
UPDATE nmc.dienstverlener SET feed_aanroepen_per_minuut = 1000 WHERE dv_id = 1001;
SELECT throws_ok(
    $$SELECT nmc.take_feed_aanroep_api(999, NULL, NULL, NULL)$$, 'NM010', NULL,
    'an unknown DV is refused'
);

-- The standby's half: the same page as nmc.page_events, without a write.
SELECT nmc.page_events(1001, 1, '11'::xid8, 0, nmc.now(), 5)::jsonb AS primair \gset
SELECT pg_temp.aanroepen(1001) AS voor \gset
SELECT nmc.read_feed_pagina(1001, 1, '11'::xid8, 0, nmc.now(), 5)::jsonb AS replica \gset
SELECT is(:'replica'::jsonb, :'primair'::jsonb, 'a full page is exactly nmc.page_events''s');
SELECT is(pg_temp.aanroepen(1001), :'voor'::integer, 'reading the page counted no call');
SELECT is(
    nmc.read_feed_pagina(1001, NULL, NULL, NULL, NULL, 100)::jsonb - 'xid',
    nmc.page_events(1001, NULL, NULL, NULL, NULL, 100)::jsonb - 'xid',
    'a short page from the oldest event too (the watermark may move between statements)'
);
SELECT is(
    (nmc.read_feed_pagina(1001, NULL, NULL, NULL, NULL, 100)::jsonb ->> 'xid')::xid8,
    pg_snapshot_xmin(pg_current_snapshot()),
    'a short page moves the cursor up to this snapshot''s watermark'
);
UPDATE nmc.dienstverlener SET feed_max_pagina = 3 WHERE dv_id = 1001;
SELECT is(
    jsonb_array_length(nmc.read_feed_pagina(1001, NULL, NULL, NULL, NULL, 100)::jsonb -> 'events'),
    3, 'the page size is capped at the DV''s maximum'
);
SELECT throws_ok(
    $$SELECT nmc.read_feed_pagina(1001, 2, '12'::xid8, 0, nmc.now(), 10)$$, 'NM018', NULL,
    'the standby checks the cursor against the epoch it has replayed'
);
SELECT is(
    nmc.read_snapshot_pagina(1001, NULL, 2) - 'xid',
    nmc.snapshot_notificaties(1001, NULL, 2) - 'xid',
    'a snapshot page is exactly nmc.snapshot_notificaties''s'
);
SELECT is(
    nmc.read_snapshot_pagina(1001, (nmc.read_snapshot_pagina(1001, NULL, 2) ->> 'laatste')::uuid)
    -> 'notificaties',
    nmc.snapshot_notificaties(1001, (nmc.snapshot_notificaties(1001, NULL, 2) ->> 'laatste')::uuid)
    -> 'notificaties',
    'and so is the page after it'
);

-- The _v2 forms: a standby reads only while it is fresh enough (NMR01 otherwise, DETAIL =
-- its replay lag in seconds; the API then reads on the primary). On a primary the lag is 0.
SELECT is(nmc.replica_achterstand(), 0::double precision, 'a primary has no replay lag');
SELECT is(
    nmc.check_replica(0, pg_snapshot_xmin(pg_current_snapshot())), 0::double precision,
    'nmc.check_replica passes a server at the watermark within the bound, with its lag'
);
SELECT throws_ok(
    $$SELECT nmc.check_replica(NULL, pg_snapshot_xmax(pg_current_snapshot()))$$, 'NMR01', NULL,
    'and refuses one whose watermark is below the one asked for'
);
SELECT is(
    nmc.read_feed_pagina_v2(1001, 1, '11'::xid8, 0, nmc.now(), 5, 0)::jsonb,
    nmc.read_feed_pagina(1001, 1, '11'::xid8, 0, nmc.now(), 5)::jsonb,
    'read_feed_pagina_v2 within its lag bound: the page of the old form'
);
SELECT is(
    nmc.read_snapshot_pagina_v2(1001, NULL, 2, NULL, 0) - 'xid',
    nmc.read_snapshot_pagina(1001, NULL, 2) - 'xid',
    'a first snapshot page (no watermark yet): the page of the old form'
);
SELECT is(
    nmc.read_snapshot_pagina_v2(
        1001, (nmc.read_snapshot_pagina(1001, NULL, 2) ->> 'laatste')::uuid, 1000,
        (nmc.read_snapshot_pagina(1001, NULL, 2) ->> 'xid')::xid8, 0
    ) - 'xid',
    nmc.read_snapshot_pagina(1001, (nmc.read_snapshot_pagina(1001, NULL, 2) ->> 'laatste')::uuid)
    - 'xid',
    'a later page on a server at least as new as the first page: read there'
);
SELECT is(
    pg_temp.fout(
        $$SELECT nmc.read_snapshot_pagina_v2(1001, NULL, 2,
            (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 5)::text::xid8, 0)$$
    ),
    'NMR01:0',
    'a later page on a server behind the first page''s watermark: refused (NMR01, its lag)'
);
SELECT is(
    pg_temp.fout(
        $$SELECT nmc.read_snapshot_pagina_v2(1001, NULL, 2,
            (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 5)::text::xid8, NULL)$$
    ),
    'NMR01:0',
    'also without a lag bound'
);
SELECT throws_ok(
    $$SELECT nmc.read_snapshot_pagina_v2(999, NULL, 2, NULL, 0)$$, 'NM010', NULL,
    'an unknown DV is refused'
);
SELECT set_eq(
    $$SELECT m.naam, m.labels, m.waarde FROM nmc.metrics_replica(0) AS m$$,
    $$SELECT m.naam, m.labels, m.waarde FROM nmc.metrics() AS m
      UNION ALL SELECT 'nmc_replica_achterstand_seconden', '{}'::jsonb, 0$$,
    'metrics_replica: nmc.metrics() and the replay lag of the server it reads'
);

-- A hot standby runs read-only transactions only: p_sql in a read-only subtransaction,
-- 'SQLSTATE:' of its error or 'ok' (the subtransaction is rolled back either way).
CREATE FUNCTION pg_temp.alleen_lezen(p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
BEGIN
    BEGIN
        PERFORM pg_catalog.set_config('transaction_read_only', 'on', true);
        EXECUTE p_sql;
        RAISE EXCEPTION USING ERRCODE = 'NMOK0';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE;
    END;
    RETURN CASE WHEN v_state = 'NMOK0' THEN 'ok' ELSE v_state || ':' END;
END
$$;
SELECT is(
    pg_temp.alleen_lezen('SELECT nmc.page_events(1001, NULL, NULL, NULL, NULL, 10)'), '25006:',
    'nmc.page_events cannot run read-only (it counts the call)'
);
SELECT is(
    pg_temp.alleen_lezen('SELECT nmc.read_feed_pagina(1001, NULL, NULL, NULL, NULL, 10)'), 'ok',
    'nmc.read_feed_pagina runs read-only'
);
SELECT is(
    pg_temp.alleen_lezen('SELECT nmc.read_snapshot_pagina(1001, NULL, 10)'), 'ok',
    'nmc.read_snapshot_pagina runs read-only'
);

SELECT is(
    pg_temp.alleen_lezen('SELECT nmc.read_feed_pagina_v2(1001, NULL, NULL, NULL, NULL, 10, 1)'),
    'ok', 'nmc.read_feed_pagina_v2 runs read-only'
);
SELECT is(
    pg_temp.alleen_lezen('SELECT nmc.read_snapshot_pagina_v2(1001, NULL, 10, NULL, 1)'), 'ok',
    'nmc.read_snapshot_pagina_v2 runs read-only'
);
SELECT is(
    pg_temp.alleen_lezen('SELECT count(*) FROM nmc.metrics_replica(1)'), 'ok',
    'nmc.metrics_replica runs read-only'
);

-- The shared parts: the DV every feed call starts from, the feed page and the snapshot page
-- the primary's and the standby's functions both return.
SELECT is((nmc.feed_dienstverlener(1001)).dv_id, 1001, 'an active DV''s row');
SELECT throws_ok(
    'SELECT nmc.feed_dienstverlener(-1)', 'NM010', 'unknown or inactive dienstverlener',
    'an unknown DV is NM010'
);
SELECT is(
    nmc.feed_pagina(
        (SELECT d FROM nmc.dienstverlener AS d WHERE d.dv_id = 1001), NULL, NULL, 2
    )::jsonb,
    nmc.read_feed_pagina_v2(1001, NULL, NULL, NULL, NULL, 2, NULL)::jsonb,
    'the standby''s feed page is nmc.feed_pagina'
);
SELECT is(
    nmc.snapshot_pagina(1001, NULL, 2),
    nmc.read_snapshot_pagina_v2(1001, NULL, 2, NULL, NULL),
    'the standby''s snapshot page is nmc.snapshot_pagina'
);

SELECT * FROM finish();
ROLLBACK;
