-- The snapshot (nmc.snapshot_notificaties) is a feed call: it counts against the DV's feed
-- call rate, shared with the feed pages, and is refused (NM019, 429) beyond it.
BEGIN;
SELECT plan(8);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 3);

CREATE FUNCTION pg_temp.aanroepen(p_dv integer) RETURNS integer
LANGUAGE sql AS $$
    SELECT coalesce(sum(f.aantal), 0)::integer FROM nmc.feedaanroep AS f WHERE f.dv_id = p_dv
$$;

SELECT is(
    jsonb_array_length(nmc.snapshot_notificaties(1001) -> 'notificaties'), 3,
    'a snapshot page lists the DV''s notifications'
);
SELECT is(pg_temp.aanroepen(1001), 1, 'the snapshot counted as one feed call of the DV');

UPDATE nmc.dienstverlener SET feed_aanroepen_per_minuut = 3 WHERE dv_id = 1001;
SELECT nmc.snapshot_notificaties(1001, NULL, 1);
SELECT is(
    pg_temp.fout('SELECT nmc.snapshot_notificaties(1001)'), NULL,
    'the third call in the minute passes (fout rolls it back)'
);
SELECT nmc.snapshot_notificaties(1001);
SELECT ok(
    pg_temp.fout('SELECT nmc.snapshot_notificaties(1001)') ~ '^NM019:[0-9]+$',
    'the fourth is refused (NM019) with the seconds until the window ends'
);
SELECT ok(
    pg_temp.fout('SELECT nmc.page_events(1001, 2, NULL, NULL, nmc.now(), 10)') ~ '^NM019:',
    'snapshots and feed pages share one call rate'
);
SELECT is(pg_temp.aanroepen(1002), 0, 'another DV''s rate is untouched');
SELECT is(
    jsonb_array_length(nmc.snapshot_notificaties(1002) -> 'notificaties'), 0,
    'and it still gets its snapshot'
);

UPDATE nmc.dienstverlener SET actief = FALSE WHERE dv_id = 1002;
SELECT throws_ok(
    'SELECT nmc.snapshot_notificaties(1002)', 'NM010', NULL,
    'an inactive DV is refused, as on the feed'
);

SELECT * FROM finish();
ROLLBACK;
