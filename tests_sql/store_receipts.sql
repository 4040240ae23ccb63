-- The callback's batch store: one call and one transaction for the receipts that arrived
-- together, each answered as if stored alone.
BEGIN;
SELECT plan(8);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT
    taak_id AS t,
    claim_epoch AS e,
    poging_id AS p
FROM nmc.claim_verzenden('w', 10) \gset
SELECT nmc.finish_verzenden(:t, :e, 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000001');
SELECT nmc.store_receipt(
    :'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'sending', '2026-11-30 09:00:00+00', NULL
);

SELECT results_eq(
    format(
        $$SELECT item, resultaat FROM nmc.store_receipts_v2(
            ARRAY[%1$L, %1$L, %1$L, 'not-a-uuid', gen_random_uuid()::text, NULL, %1$L],
            ARRAY['e0e0e0e0-0000-4000-8000-000000000001', 'e0e0e0e0-0000-4000-8000-000000000001',
                  'e0e0e0e0-0000-4000-8000-000000000001', gen_random_uuid(), gen_random_uuid(),
                  gen_random_uuid(), 'e0e0e0e0-0000-4000-8000-000000000001']::uuid[],
            ARRAY['delivered', 'delivered', 'sending', 'delivered', 'delivered', 'delivered',
                  'temporary-failure'],
            ARRAY['2026-11-30 10:00:00+00', '2026-11-30 10:00:00+00', '2026-11-30 09:00:00+00',
                  NULL, NULL, NULL, NULL]::timestamptz[],
            ARRAY['2026-11-30 09:59:00+00', '2026-11-30 09:59:00+00', NULL, NULL, NULL, NULL,
                  NULL]::timestamptz[], NULL, NULL
        ) ORDER BY item$$, :'p'
    ),
    $$VALUES (0, 'opgeslagen'), (1, 'dubbel'), (2, 'dubbel'), (3, 'onbekende-reference'),
             (4, 'onbekende-reference'), (5, 'onbekende-reference'), (6, 'opgeslagen')$$,
    'per item: stored, a duplicate within the batch, a duplicate of an earlier call, '
    'three references that are not ours, and another status'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE poging_id = :'p' AND soort = 'receipt'),
    3,
    'one task per distinct (attempt, completed_at, status)'
);
SELECT results_eq(
    format(
        $$SELECT payload FROM nmc.taak
          WHERE poging_id = %L AND soort = 'receipt' AND payload ->> 'status' = 'delivered'$$,
        :'p'
    ),
    $$VALUES ('{"id": "e0e0e0e0-0000-4000-8000-000000000001", "status": "delivered",
               "sent_at": "2026-11-30T09:59:00+00:00",
               "completed_at": "2026-11-30T10:00:00+00:00"}'::jsonb)$$,
    'the stored task holds id, status and timestamps (no address)'
);
SELECT is(
    (SELECT aantal::integer FROM nmc.teller WHERE naam = 'receipt_onbekende_reference'),
    3,
    'the unknown references are counted, each once'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.store_receipts_v2(
        ARRAY[:'p'], ARRAY['e0e0e0e0-0000-4000-8000-000000000001']::uuid[], ARRAY['delivered'],
        ARRAY['2026-11-30 10:00:00+00']::timestamptz[], ARRAY[NULL]::timestamptz[], NULL, NULL
    ) WHERE resultaat = 'dubbel'),
    1,
    'the same callback in a later batch is a no-op'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.store_receipts_v2(ARRAY['a'], ARRAY[]::uuid[], ARRAY['delivered'],
        ARRAY[NULL]::timestamptz[], ARRAY[NULL]::timestamptz[], NULL, NULL)$$,
    'NM016', NULL,
    'arrays of different lengths are refused (NM016)'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.store_receipts_v2(ARRAY[]::text[], ARRAY[]::uuid[], ARRAY[]::text[],
        ARRAY[]::timestamptz[], ARRAY[]::timestamptz[], NULL, NULL)$$,
    'NM016', NULL,
    'an empty batch is refused (NM016)'
);
SELECT is(
    nmc.store_receipt(
        :'p', 'e0e0e0e0-0000-4000-8000-000000000001', 'permanent-failure',
        '2026-11-30 11:00:00+00', NULL
    ),
    'opgeslagen',
    'the single store is the batch of one'
);

SELECT * FROM finish();
ROLLBACK;
