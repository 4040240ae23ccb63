-- The callback stores first: one receipt task per (attempt, completed_at, status).
BEGIN;
SELECT plan(12);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT
    taak_id AS t,
    claim_epoch AS e,
    poging_id AS p
FROM nmc.claim_verzenden('w', 10) \gset
SELECT nmc.finish_verzenden(:t, :e, 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000001');

SELECT is(
    nmc.store_receipt(
        :'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'delivered',
        '2026-11-30 10:00:00+00', '2026-11-30 09:59:00+00'
    ),
    'opgeslagen',
    'a receipt for a known attempt is stored'
);
SELECT results_eq(
    format($$SELECT soort::text, staat::text, notificatie_id, dv_id, payload
             FROM nmc.taak WHERE poging_id = %L AND soort = 'receipt'$$, :'p'),
    format(
        $$VALUES ('receipt', 'open', %L::uuid, 1001, '{"id": "e0e0e0e0-0000-4000-8000-000000000001",
        "status": "delivered", "sent_at": "2026-11-30T09:59:00+00:00",
        "completed_at": "2026-11-30T10:00:00+00:00"}'::jsonb)$$, :'id'
    ),
    'as an open receipt task holding id, status and timestamps (no address)'
);
SELECT is(
    nmc.store_receipt(
        :'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'delivered',
        '2026-11-30 10:00:00+00', '2026-11-30 09:59:00+00'
    ),
    'dubbel',
    'the same callback again is a no-op'
);
SELECT is(
    nmc.store_receipt(
        :'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'permanent-failure',
        '2026-11-30 10:00:00+00', NULL
    ),
    'opgeslagen',
    'another status with the same completed_at is another receipt'
);
SELECT is(
    nmc.store_receipt(:'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'sending', NULL, NULL),
    'opgeslagen',
    'a receipt without completed_at is stored'
);
SELECT is(
    nmc.store_receipt(:'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'sending', NULL, NULL),
    'dubbel',
    'and deduplicated too'
);
SELECT is(
    nmc.store_receipt(gen_random_uuid()::text, gen_random_uuid(), 'delivered', now(), NULL),
    'onbekende-reference',
    'a reference that matches no attempt is not stored'
);
SELECT is(
    nmc.store_receipt('not-a-uuid', gen_random_uuid(), 'delivered', now(), NULL),
    'onbekende-reference',
    'nor is a reference that is not ours at all'
);
SELECT is(
    (SELECT aantal::integer FROM nmc.teller WHERE naam = 'receipt_onbekende_reference'),
    2,
    'both are counted'
);

-- Processing: oldest completed_at first within a batch, all through apply_receipt.
SELECT is(nmc.process_receipts(100), 3, 'process_receipts handles the stored receipts');
SELECT results_eq(
    format('SELECT status::text, reden::text FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES ('niet-bezorgbaar', 'onbereikbaar')$$,
    'delivered and a failure with the same completed_at: both applied, the failure last'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE soort = 'receipt' AND staat = 'done'),
    3,
    'processed receipt tasks are done'
);

SELECT * FROM finish();
ROLLBACK;
