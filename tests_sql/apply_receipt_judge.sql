-- The two steps under nmc.apply_receipt_v2 (functions/receipt/apply_receipt.sql), called
-- directly: nmc.record_receipt keeps a receipt beside an attempt's outcome, nmc.judge_receipt
-- judges one receipt without writing the receipt history. The receipt matrix through the
-- callers is in apply_receipt.sql.
BEGIN;
SELECT plan(14);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

-- nmc.record_receipt: beside the outcome, the newest by completed_at kept.
SELECT (pg_temp.laatste_poging(pg_temp.verzonden())).id AS rec \gset
SELECT nmc.now() - interval '10 minutes' AS rec_op \gset
SELECT nmc.record_receipt(:'rec', 'bounced-maybe', :'rec_op');
SELECT results_eq(
    format(
        $$SELECT vastgelegde_receipt_status, vastgelegde_receipt_op = %L::timestamptz
          FROM nmc.poging WHERE id = %L$$,
        :'rec_op', :'rec'
    ),
    $$VALUES ('bounced-maybe', true)$$,
    'record_receipt records the status and its time beside the outcome'
);
SELECT results_eq(
    format(
        $$SELECT status::text, afgerond_op, laatste_receipt_status, laatste_receipt_op
          FROM nmc.poging WHERE id = %L$$,
        :'rec'
    ),
    $$VALUES ('verzonden', NULL::timestamptz, NULL::text, NULL::timestamptz)$$,
    'and leaves the status, afgerond_op and the last applied receipt as they were'
);
SELECT nmc.record_receipt(:'rec', 'ouder', :'rec_op'::timestamptz - interval '1 second');
SELECT is(
    (SELECT vastgelegde_receipt_status FROM nmc.poging WHERE id = :'rec'), 'bounced-maybe',
    'an older receipt does not replace the recorded one'
);
SELECT nmc.record_receipt(:'rec', 'even-oud', :'rec_op');
SELECT is(
    (SELECT vastgelegde_receipt_status FROM nmc.poging WHERE id = :'rec'), 'even-oud',
    'one of the same completed_at does (not older)'
);
SELECT nmc.record_receipt(:'rec', repeat('x', 60), :'rec_op'::timestamptz + interval '1 second');
SELECT is(
    (SELECT vastgelegde_receipt_status FROM nmc.poging WHERE id = :'rec'), repeat('x', 50),
    'a newer one does, its status cut to 50 characters'
);
SELECT lives_ok(
    format('SELECT nmc.record_receipt(%L, %L, now())', gen_random_uuid(), 'delivered'),
    'a receipt for no attempt records nothing and raises nothing'
);

-- nmc.judge_receipt: the judgement alone; the receipt history is its caller's.
SELECT (pg_temp.laatste_poging(pg_temp.verzonden())).id AS jr \gset
SELECT count(*) AS historie_voor FROM nmc.receiptgeschiedenis \gset
SELECT is(
    nmc.judge_receipt(
        :'jr', (SELECT notifynl_id FROM nmc.poging WHERE id = :'jr'), 'delivered',
        nmc.now() - interval '1 minute', nmc.now() - interval '5 minutes'
    ),
    'bezorgd', 'judge_receipt applies a delivered receipt'
);
SELECT is(
    (
        SELECT n.status::text || ' ' || p.status::text || ' ' || p.laatste_receipt_status
        FROM nmc.poging AS p INNER JOIN nmc.notificatie AS n ON p.notificatie_id = n.id
        WHERE p.id = :'jr'
    ),
    'bezorgd bezorgd delivered',
    'on the attempt and the notification'
);
SELECT is(
    (SELECT count(*) FROM nmc.receiptgeschiedenis), :'historie_voor'::bigint,
    'and writes no receipt history (nmc.apply_receipt_v2 does)'
);
SELECT (pg_temp.laatste_poging(pg_temp.verzonden())).id AS jd \gset
SELECT gen_random_uuid() AS ander_id \gset
SELECT is(
    ARRAY[
        nmc.judge_receipt(:'jd', :'ander_id', 'sending', nmc.now(), NULL),
        nmc.judge_receipt(:'jd', :'ander_id', 'pending', nmc.now(), NULL)
    ],
    ARRAY['niet-definitief', 'niet-definitief'],
    'a status that is not final yet is no judgement'
);
SELECT is(
    (SELECT duplicaat_ids FROM nmc.poging WHERE id = :'jd'), ARRAY[:'ander_id'::uuid],
    'another NotifyNL id is kept once as a duplicate, however often it comes'
);
SELECT is(
    nmc.judge_receipt(:'jd', NULL, 'bounced-maybe', NULL, NULL), 'onbekende-status',
    'an unknown status is recorded only'
);
SELECT is(
    (SELECT vastgelegde_receipt_op FROM nmc.poging WHERE id = :'jd'), nmc.now(),
    'without completed_at, at the NMC clock'
);
SELECT throws_ok(
    format(
        'SELECT nmc.judge_receipt(%L, NULL, %L, now(), NULL)', gen_random_uuid(), 'delivered'
    ),
    'NM005', 'poging not found', 'judge_receipt refuses a receipt for no attempt (NM005)'
);

SELECT * FROM finish();
ROLLBACK;
