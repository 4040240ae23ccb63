-- The re-wrap target follows every live worker, not one: each worker's last
-- report is kept (nmc.kek_melding); the target moves to a newer KEK only once every worker that
-- reported in the last three minutes reports it, never back to an older one. And the KEKs that
-- still wrap live keys, for the worker's start-up check (nmc.kek_ids_levend).
BEGIN;
SELECT plan(13);
\ir fixtures/setup.sql

DELETE FROM nmc.kek;
SELECT is(nmc.herwrap_doel(), NULL, 'no target before any report');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w1');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w2');
SELECT is(nmc.herwrap_doel(), 'kek-1', 'the KEK every worker reports is the target');

SELECT nmc.advance_clock('1 minute');
SELECT nmc.ensure_onderhoud_v2('kek-2', 'w3');
SELECT is(nmc.herwrap_doel(), 'kek-1', 'one worker of a new ring does not move it');
SELECT nmc.ensure_onderhoud_v2('kek-2', 'w1');
SELECT is(nmc.herwrap_doel(), 'kek-1', 'nor two, while a third still reports the old KEK');
SELECT nmc.ensure_onderhoud_v2('kek-2', 'w2');
SELECT is(nmc.herwrap_doel(), 'kek-2', 'once every live worker reports it, it moves');
SELECT is(
    (SELECT doel_sinds FROM nmc.kek WHERE kek_id = 'kek-2'), nmc.now(), 'and says since when'
);

SELECT nmc.advance_clock('1 minute');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w1');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w2');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w3');
SELECT is(
    nmc.herwrap_doel(), 'kek-2', 'workers of the older ring, even all of them, never turn it back'
);

SELECT nmc.advance_clock('1 minute');
SELECT nmc.ensure_onderhoud_v2('kek-3', 'w4');
SELECT is(nmc.herwrap_doel(), 'kek-2', 'w1..w3 reported within three minutes: they count');
SELECT nmc.advance_clock('2 minutes 30 seconds');
SELECT is(
    nmc.herwrap_doel_bijwerken(nmc.now()), 'kek-3',
    'a worker silent for three minutes is gone: the one live worker decides'
);

-- A rolling deploy at one instant: the stopping workers withdraw their reports, so the target
-- moves as soon as the last worker of the old ring is gone, not three minutes later.
SELECT nmc.ensure_onderhoud_v2('kek-4', 'w5');
SELECT is(nmc.herwrap_doel(), 'kek-3', 'a new worker beside a live old one: no move');
SELECT is(
    nmc.kek_melding_afmelden('w4'), 'kek-4',
    'the old worker stops and withdraws its report: the target moves at once'
);
SELECT nmc.advance_clock('2 days');
SELECT nmc.ensure_onderhoud_v2('kek-3', 'w6');
SELECT results_eq(
    'SELECT eigenaar FROM nmc.kek_melding ORDER BY 1',
    $$VALUES ('w6'::text)$$,
    'reports older than a day go'
);

-- The start-up check's list: the KEKs with live keys, erased ones left out.
SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 3);
UPDATE nmc.notificatie SET kek_id = 'kek-oud'
WHERE id = (SELECT min(id::text)::uuid FROM nmc.notificatie);
UPDATE nmc.notificatie SET kek_id = 'kek-gewist', sleutel_gewrapt = NULL
WHERE id = (SELECT max(id::text)::uuid FROM nmc.notificatie);
SELECT results_eq(
    'SELECT k FROM nmc.kek_ids_levend() AS k ORDER BY 1',
    $$VALUES ('kek-1'::text), ('kek-oud')$$,
    'every KEK that wraps a live data key, once'
);

SELECT * FROM finish();
ROLLBACK;
