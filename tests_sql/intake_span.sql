-- The intake span beside the trace id: stored by the intake (v4), none through the forms of
-- the previous release, read back by nmc.intake_sporen; receipt processing and settlement
-- name the notifications they handled (their spans link to those intake spans).
BEGIN;
SELECT plan(13);
\ir fixtures/setup.sql

SELECT r.notificatie_id AS id
FROM nmc.intake_notificatie_v4(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('span-1'), 1::smallint,
    pg_temp.b32('payload'), 1::smallint, '\x01', '\x02', '\x03', 'kek-1', NULL, NULL,
    '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', NULL, NULL
) AS r \gset
SELECT results_eq(
    format($$SELECT trace_id, intake_span_id FROM nmc.notificatie WHERE id = %L$$, :'id'),
    $$VALUES ('0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331')$$,
    'the single intake stores the trace id and the intake span id'
);
SELECT results_eq(
    format($$SELECT notificatie_id::text, trace_id, span_id
             FROM nmc.intake_sporen(ARRAY[%L::uuid, gen_random_uuid()])$$, :'id'),
    format($$VALUES (%L, '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331')$$, :'id'),
    'intake_sporen gives its trace context, nothing for an unknown id'
);

CREATE TEMP TABLE batch_v4 AS
SELECT * FROM nmc.intake_notificaties_v4(
    1001, 'decentraal', 1::smallint, 1::smallint, 'kek-1', NULL,
    ARRAY[gen_random_uuid(), gen_random_uuid()], ARRAY['aanslag', 'aanslag'],
    ARRAY[pg_temp.b32('span-2'), pg_temp.b32('span-3')],
    ARRAY[pg_temp.b32('p'), pg_temp.b32('p')], ARRAY['\x01'::bytea, '\x01'],
    ARRAY['\x02'::bytea, '\x02'], ARRAY['\x03'::bytea, '\x03'],
    ARRAY[NULL::timestamptz, NULL],
    ARRAY['0af7651916cd43dd8448eb211c80319c', '0af7651916cd43dd8448eb211c80319c'],
    ARRAY['00f067aa0ba902b7', '00f067aa0ba902b8'], ARRAY[NULL::text, NULL], NULL
);
SELECT results_eq(
    $$SELECT r.item, n.intake_span_id FROM batch_v4 AS r
      INNER JOIN nmc.notificatie AS n ON n.id = r.notificatie_id
      ORDER BY r.item$$,
    $$VALUES (0, '00f067aa0ba902b7'), (1, '00f067aa0ba902b8')$$,
    'the batch intake stores each item''s span id'
);
SELECT is(
    split_part(pg_temp.fout($$SELECT nmc.intake_notificaties_v4(
        1001, 'decentraal', 1::smallint, 1::smallint, 'kek-1', NULL,
        ARRAY[gen_random_uuid()], ARRAY['aanslag'], ARRAY[pg_temp.b32('span-4')],
        ARRAY[pg_temp.b32('p')], ARRAY['\x01'::bytea], ARRAY['\x02'::bytea],
        ARRAY['\x03'::bytea], ARRAY[NULL::timestamptz],
        ARRAY['0af7651916cd43dd8448eb211c80319c'], ARRAY['00f067aa0ba902b7', 'x'],
        ARRAY[NULL::text], NULL)$$), ':', 1),
    'NM016',
    'span ids of another length than the items are refused'
);
SELECT is(
    split_part(pg_temp.fout($$SELECT nmc.intake_notificatie_v4(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('span-5'), 1::smallint,
        pg_temp.b32('payload'), 1::smallint, '\x01', '\x02', '\x03', 'kek-1', NULL, NULL,
        '0af7651916cd43dd8448eb211c80319c', '0000000000000000', NULL, NULL)$$), ':', 1),
    '23514',
    'an all-zero span id (invalid in W3C trace context) is refused'
);
SELECT is(
    split_part(pg_temp.fout($$SELECT nmc.intake_notificatie_v4(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('span-6'), 1::smallint,
        pg_temp.b32('payload'), 1::smallint, '\x01', '\x02', '\x03', 'kek-1', NULL, NULL,
        '0af7651916cd43dd8448eb211c80319c', 'B7AD6B7169203331', NULL, NULL)$$), ':', 1),
    '23514',
    'so is one that is not 16 lower-case hex digits'
);

-- The previous release's forms: the same intake, no span id.
SELECT r.notificatie_id AS oud
FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('span-7'), 1::smallint,
    pg_temp.b32('payload'), 1::smallint, '\x01', '\x02', '\x03', 'kek-1', NULL, NULL,
    '0af7651916cd43dd8448eb211c80319c', NULL, NULL
) AS r \gset
SELECT results_eq(
    format($$SELECT status::text, trace_id, intake_span_id FROM nmc.notificatie
             WHERE id = %L$$, :'oud'),
    $$VALUES ('aangenomen', '0af7651916cd43dd8448eb211c80319c', NULL::text)$$,
    'intake_notificatie_v3 accepts as v4 does, without a span id'
);
CREATE TEMP TABLE batch_v3 AS
SELECT * FROM nmc.intake_notificaties_v3(
    1001, 'decentraal', 1::smallint, 1::smallint, 'kek-1', NULL,
    ARRAY[gen_random_uuid()], ARRAY['aanslag'], ARRAY[pg_temp.b32('span-8')],
    ARRAY[pg_temp.b32('p')], ARRAY['\x01'::bytea], ARRAY['\x02'::bytea],
    ARRAY['\x03'::bytea], ARRAY[NULL::timestamptz],
    ARRAY['0af7651916cd43dd8448eb211c80319c'], ARRAY[NULL::text], NULL
);
SELECT results_eq(
    $$SELECT r.item, r.nieuw, n.intake_span_id FROM batch_v3 AS r
      INNER JOIN nmc.notificatie AS n ON n.id = r.notificatie_id$$,
    $$VALUES (0, true, NULL::text)$$,
    'intake_notificaties_v3 too'
);
SELECT is_empty(
    format($$SELECT * FROM nmc.intake_sporen(ARRAY[%L::uuid])$$, :'oud'),
    'a notification without a span id has no intake span to link to'
);

-- Receipt processing and settlement name what they handled.
SELECT taak_id AS t, claim_epoch AS e, poging_id AS p
FROM nmc.claim_verzenden('w', 1) \gset
SELECT nmc.finish_verzenden(:t, :e, 'verzonden', gen_random_uuid());
SELECT nmc.store_receipt(:'p', NULL, 'delivered', nmc.now(), NULL);
SELECT results_eq(
    $$SELECT r.notificatie_id FROM nmc.process_receipts_v2(10) AS r$$,
    format($$VALUES (%L::uuid)$$, :'id'),
    'process_receipts_v2 returns the notificatie of each receipt task it handled'
);
SELECT is(nmc.process_receipts(10), 0, 'process_receipts (kept) counts them: none left');
SELECT nmc.advance_clock('7 days 30 minutes');
SELECT results_eq(
    $$SELECT v.notificatie_id FROM nmc.process_vaststellingen_v2(10) AS v$$,
    format($$VALUES (%L::uuid)$$, :'id'),
    'process_vaststellingen_v2 returns each notificatie it settled'
);
SELECT is(nmc.process_vaststellingen(10), 0, 'process_vaststellingen (kept) counts them');

SELECT * FROM finish();
ROLLBACK;
