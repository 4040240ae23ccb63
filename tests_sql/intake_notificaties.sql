-- Intake: one transaction writes notification, first event and first send task;
-- idempotent replays; refusals with the offending item's index.
BEGIN;
SELECT plan(40);
\ir fixtures/setup.sql

SELECT nmc.advance_clock('1 hour');

-- A batch call with every array built from one set of items.
CREATE FUNCTION pg_temp.batch(
    p_dv integer, p_regie nmc.regie, p_berichttypen text[], p_dvrefs text[],
    p_payloads text[], p_geldig_tot timestamptz[] DEFAULT NULL
) RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql AS $$
    SELECT * FROM nmc.intake_notificaties_v3(
        p_dv, p_regie, 1::smallint, 0::smallint, 'kek-1', 'c0c0c0c0-0000-4000-8000-000000000001',
        ARRAY(SELECT gen_random_uuid() FROM unnest(p_dvrefs)), p_berichttypen,
        ARRAY(SELECT pg_temp.b32(r) FROM unnest(p_dvrefs) AS r),
        ARRAY(SELECT pg_temp.b32(p) FROM unnest(p_payloads) AS p),
        ARRAY(SELECT '\x0a'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0b'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0c'::bytea FROM unnest(p_dvrefs)),
        coalesce(p_geldig_tot, ARRAY(SELECT NULL::timestamptz FROM unnest(p_dvrefs))),
        ARRAY(SELECT '0123456789abcdef0123456789abcdef' FROM unnest(p_dvrefs)),
        ARRAY(SELECT 'dienst-' || r FROM unnest(p_dvrefs) AS r), NULL, NULL, NULL,
        ARRAY(SELECT pg_temp.b32(p) FROM unnest(p_payloads) AS p)
    )
$$;

-- One notification.
SELECT
    r.notificatie_id AS id,
    r.nieuw
FROM nmc.intake_notificatie_v3(
    'd0d0d0d0-0000-4000-8000-000000000001', 1001, 'aanslag', 'decentraal', pg_temp.b32('ref-1'),
    1::smallint, pg_temp.b32('payload-1'), 0::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', NULL, NULL, NULL, NULL, pg_temp.b32('payload-1')
) AS r \gset
SELECT
    is(:'id'::text, 'd0d0d0d0-0000-4000-8000-000000000001', 'intake keeps the id the shell chose');
SELECT ok(:'nieuw'::boolean, 'and says it is new');
SELECT results_eq(
    format($$SELECT status::text, versie, regie::text, berichttype, reden::text,
             aangenomen_op = nmc.now(), geldig_tot = nmc.now() + interval '3 days',
             trace_id, kek_id, ontvanger_versleuteld, gegevens_versleuteld, sleutel_gewrapt
             FROM nmc.notificatie WHERE id = %L$$, :'id'),
    $$VALUES ('aangenomen', 1, 'decentraal', 'aanslag', NULL::text, true, true,
              'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'kek-1', '\x0a'::bytea, '\x0b'::bytea,
              '\x0c'::bytea)$$,
    'the notification is stored aangenomen at version 1, geldig_tot from the berichttype'
);
SELECT results_eq(
    format($$SELECT sequence, van::text, naar::text, tijdstip = nmc.now(),
             xid = pg_current_xact_id() FROM nmc.event WHERE notificatie_id = %L$$, :'id'),
    $$VALUES (1, NULL::text, 'aangenomen', true, true)$$,
    'its first event (null -> aangenomen, sequence 1) is written in the same transaction'
);
SELECT results_eq(
    format($$SELECT soort::text, staat::text, due = nmc.now(), dv_id, trace_id
             FROM nmc.taak WHERE notificatie_id = %L$$, :'id'),
    $$VALUES ('verzenden', 'open', true, 1001, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')$$,
    'and its first send task, due now'
);

-- Replays.
SELECT results_eq(
    $$SELECT r.notificatie_id::text, r.nieuw FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('ref-1'), 1::smallint,
        pg_temp.b32('payload-1'), 0::smallint, '\x1a', '\x1b', '\x1c', 'kek-1', NULL, NULL,
        'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', NULL, NULL, NULL, NULL,
        pg_temp.b32('payload-1')) AS r$$,
    $$VALUES ('d0d0d0d0-0000-4000-8000-000000000001', false)$$,
    'the same dvRef and payload again returns the stored id, not new'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie),
    1,
    'a replay stores nothing'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.event), 1, 'a replay writes no event'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('ref-1'), 1::smallint,
        pg_temp.b32('payload-2'), 0::smallint, '\x1a', '\x1b', '\x1c', 'kek-1', NULL, NULL,
        'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', NULL, NULL, NULL, NULL,
        pg_temp.b32('payload-2'))$$),
    'NM007:0',
    'the same dvRef with another payload is refused (NM007)'
);
SELECT is(
    (SELECT count(
        *)::integer FROM pg_temp.batch(
        1002, 'decentraal', '{herinnering}',
        '{ref-1}', '{payload-2}'
    )),
    1,
    'the same dvRef at another DV is another notification'
);

-- Batches.
SELECT results_eq(
    $$SELECT item, nieuw FROM pg_temp.batch(1001, 'decentraal',
        '{aanslag,aanslag,aanslag,aanslag}', '{b-1,b-2,ref-1,b-1}',
        '{p,p,payload-1,p}')$$,
    $$VALUES (0, true), (1, true), (2, false), (3, false)$$,
    'a batch answers per item in order: new, new, a replay, a duplicate within the batch'
);
SELECT is(
    (SELECT count(
        DISTINCT notificatie_id)::integer FROM pg_temp.batch(
        1001, 'decentraal',
        '{aanslag,aanslag}', '{b-9,b-9}', '{p,p}'
    )),
    1,
    'a dvRef twice in one batch with the same payload is one notification'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE soort = 'verzenden'),
    (SELECT count(*)::integer FROM nmc.notificatie),
    'every stored notification has exactly one send task'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.event),
    (SELECT count(*)::integer FROM nmc.notificatie),
    'and exactly one event'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.notificatie
        WHERE batch_id = 'c0c0c0c0-0000-4000-8000-000000000001'
    ),
    4,
    'the batch id groups what the batches stored (ref-1 at DV 2, b-1, b-2, b-9)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{aanslag,aanslag,aanslag}',
        '{b-20,b-21,b-20}', '{p,p,q}')$$),
    'NM007:2',
    'a dvRef twice in one batch with different payloads is refused at the second item'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{aanslag,aanslag}',
        '{b-30,b-1}', '{p,other}')$$),
    'NM007:1',
    'a batch item that conflicts with a stored dvRef is refused with its index'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie WHERE dvref_hmac = pg_temp.b32('b-30')),
    0,
    'a refused batch stores none of its items'
);

SELECT is(
    (SELECT dienst FROM nmc.notificatie WHERE dvref_hmac = pg_temp.b32('b-2')),
    'dienst-b-2',
    'the service name for the Profielservice is kept with the notification'
);

-- Berichttype, regie and geldig_tot.
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{aanslag,onbekend}',
        '{g-1,g-2}', '{p,p}')$$),
    'NM008:1',
    'an unknown berichttype is refused (NM008) with its index'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{alleen-centraal}',
        '{g-3}', '{p}')$$),
    'NM008:0',
    'a berichttype not allowed for the regie is refused (NM008)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1002, 'decentraal', '{aanslag}', '{g-4}', '{p}')$$),
    'NM008:0',
    'another DV''s berichttype is not allowed (NM008)'
);
UPDATE nmc.berichttype SET actief = FALSE WHERE dv_id = 1001 AND code = 'alleen-centraal';
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'centraal', '{alleen-centraal}',
        '{g-5}', '{p}')$$),
    'NM008:0',
    'an inactive berichttype is refused (NM008)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{aanslag,aanslag}',
        '{g-6,g-7}', '{p,p}', ARRAY[nmc.now() + interval '1 day', nmc.now()])$$),
    'NM014:1',
    'geldig_tot not after now is refused (NM014)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(1001, 'decentraal', '{aanslag}',
        '{g-8}', '{p}', ARRAY[nmc.now() + interval '31 days'])$$),
    'NM014:0',
    'geldig_tot beyond the berichttype maximum is refused (NM014)'
);
SELECT notificatie_id
    AS maxid FROM pg_temp.batch(
    1001, 'decentraal', '{aanslag}',
    '{g-9}', '{p}', ARRAY[nmc.now() + interval '30 days']
) \gset
SELECT is(
    (SELECT geldig_tot - nmc.now() FROM nmc.notificatie WHERE id = :'maxid'),
    interval '30 days',
    'geldig_tot at the maximum is kept as given'
);

-- Trace ids (a character check, not a regular expression: schema/0013).
CREATE FUNCTION pg_temp.met_trace(p_trace text) RETURNS text
LANGUAGE sql AS $$
    SELECT split_part(pg_temp.fout(format($f$SELECT nmc.intake_notificatie_v3(gen_random_uuid(),
        1001, 'aanslag', 'decentraal', pg_temp.b32(%L), 1::smallint, pg_temp.b32('p'), 0::smallint,
        '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL, %L, NULL, NULL, NULL, NULL,
        pg_temp.b32('p'))$f$, 'trace-' || p_trace, p_trace)), ':', 1)
$$;
SELECT is(
    pg_temp.met_trace('0123456789abcdef0123456789abcdef'), NULL,
    'a trace id of 32 lower-case hex digits is stored'
);
SELECT is(
    pg_temp.met_trace('0123456789ABCDEF0123456789abcdef'), '23514',
    'upper-case hex in a trace id is refused'
);
SELECT is(
    pg_temp.met_trace('0123456789abcdef0123456789abcde'), '23514',
    'a trace id of 31 digits is refused'
);
SELECT is(
    pg_temp.met_trace('0123456789abcdef0123456789abcdeg'), '23514',
    'a non-hex character in a trace id is refused'
);
SELECT throws_ok(
    $$UPDATE nmc.taak SET trace_id = 'é123456789abcdef0123456789abcde' WHERE soort = 'verzenden'$$,
    '23514', NULL, 'a task''s trace id obeys the same rule'
);

-- Insert first, judge after: a refusal after the insert leaves nothing of the batch.
UPDATE nmc.dienstverlener SET quotum_per_minuut = 1 WHERE dv_id = 1002;
SELECT is(
    split_part(pg_temp.fout($$SELECT pg_temp.batch(1002, 'decentraal', '{herinnering,herinnering}',
        '{q-1,q-2}', '{p,p}')$$), ':', 1) || ' ' || (
        SELECT count(*)
        FROM nmc.notificatie
        WHERE dvref_hmac IN (pg_temp.b32('q-1'), pg_temp.b32('q-2'))
    ),
    'NM009 0',
    'a batch over quota is refused (NM009) and stores none of its items'
);

-- Pepper rotation: a dvRef stored under an earlier pepper version is a replay too.
-- ('old-x' stands for the HMAC under the previous version, 'new-x' under the current.)
CREATE FUNCTION pg_temp.roterend(p_dvrefs text[], p_payloads text[], p_ids uuid[] DEFAULT NULL)
RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql AS $$
    SELECT * FROM nmc.intake_notificaties_v3(
        1001, 'decentraal', 2::smallint, 0::smallint, 'kek-1', NULL,
        coalesce(p_ids, ARRAY(SELECT gen_random_uuid() FROM unnest(p_dvrefs))),
        ARRAY(SELECT 'aanslag' FROM unnest(p_dvrefs)),
        ARRAY(SELECT pg_temp.b32('new-' || r) FROM unnest(p_dvrefs) AS r),
        ARRAY(SELECT pg_temp.b32(p) FROM unnest(p_payloads) AS p),
        ARRAY(SELECT '\x0a'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0b'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0c'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT NULL::timestamptz FROM unnest(p_dvrefs)),
        ARRAY(SELECT '0123456789abcdef0123456789abcdef' FROM unnest(p_dvrefs)),
        ARRAY(SELECT NULL::text FROM unnest(p_dvrefs)), NULL,
        ARRAY(SELECT pg_temp.b32('old-' || r) FROM unnest(p_dvrefs) AS r), NULL,
        ARRAY(SELECT pg_temp.b32(p) FROM unnest(p_payloads) AS p)
    )
$$;
SELECT r.notificatie_id AS oud_id FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('old-r1'), 1::smallint,
    pg_temp.b32('p'), 0::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
    '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')
) AS r \gset
SELECT results_eq(
    $$SELECT item, notificatie_id, nieuw FROM pg_temp.roterend('{r1,r2,r1}', '{p,p,p}')
      WHERE item <> 1$$,
    format($$VALUES (0, %L::uuid, false), (2, %L::uuid, false)$$, :'oud_id', :'oud_id'),
    'a dvRef stored under the previous pepper is answered with its stored id, not stored anew'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.notificatie
        WHERE dvref_hmac IN (pg_temp.b32('new-r1'), pg_temp.b32('new-r2'))
    ),
    1,
    'only the really new dvRef is stored (under the current pepper)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.roterend('{r3,r1}', '{p,anders}')$$),
    'NM007:1',
    'another payload for a dvRef stored under the previous pepper is refused (NM007)'
);
SELECT is(
    (SELECT nieuw FROM pg_temp.roterend('{r2}', '{p}')),
    FALSE,
    'a dvRef stored under the current pepper is still a replay while old HMACs are passed'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.intake_notificaties_v3(1001, 'decentraal', 1::smallint, 0::smallint,
        'k', NULL, ARRAY[gen_random_uuid(), gen_random_uuid()], '{aanslag,aanslag}',
        ARRAY[pg_temp.b32('a'),
        pg_temp.b32('b')],
        ARRAY[pg_temp.b32('p'), pg_temp.b32('p')], '{\\x0a,\\x0a}', '{\\x0b,\\x0b}',
        '{\\x0c,\\x0c}', '{NULL,NULL}',
        ARRAY['0123456789abcdef0123456789abcdef',
        '0123456789abcdef0123456789abcdef'],
        '{NULL,NULL}', NULL, ARRAY[pg_temp.b32('x')], NULL,
        ARRAY[pg_temp.b32('p'), pg_temp.b32('p')])$$),
    'NM016:',
    'earlier-pepper HMACs that do not divide over the items are refused (NM016)'
);
SELECT is(
    (SELECT r.nieuw FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('new-r1'), 2::smallint,
        pg_temp.b32('p'), 0::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef', NULL, NULL, ARRAY[pg_temp.b32('old-r1')], NULL,
        pg_temp.b32('p')
    ) AS r),
    FALSE,
    'the single intake takes the earlier-pepper HMACs too'
);

-- DV and arrays.
SELECT is(
    pg_temp.fout($$SELECT pg_temp.batch(999, 'decentraal', '{aanslag}', '{x}', '{p}')$$),
    'NM010:',
    'an unknown DV is refused (NM010)'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.intake_notificaties_v3(1001, 'decentraal', 1::smallint, 0::smallint,
        'k', NULL, ARRAY[gen_random_uuid()], '{aanslag,aanslag}', '{}', '{}', '{}', '{}', '{}',
        '{}', '{}', '{}', NULL, NULL, NULL, '{}')$$),
    'NM016:',
    'arrays of different lengths are refused (NM016)'
);

SELECT * FROM finish();
ROLLBACK;
