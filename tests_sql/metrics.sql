-- The metrics function: database-held counts, labels without personal data.
BEGIN;
SELECT plan(6);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
DELETE FROM nmc.teller;
SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 3);
SELECT pg_temp.naar_status(pg_temp.nieuwe_notificatie(), 'bezorgstatus-onbekend');
SELECT nmc.count_teller('receipt_onbekende_reference', 2);
SELECT nmc.advance_clock('30 seconds');

SELECT is(
    (
        SELECT
            waarde FROM nmc.metrics() WHERE
            naam = 'nmc_taken'
            AND labels = '{"soort": "verzenden", "staat": "open"}'
    ),
    4::double precision,
    'open tasks per kind and state'
);
SELECT is(
    (
        SELECT
            waarde FROM nmc.metrics() WHERE
            naam = 'nmc_taak_oudste_due_seconden'
            AND labels = '{"soort": "verzenden"}'
    ),
    30::double precision,
    'how long the oldest due task of a kind waits'
);
SELECT is(
    (
        SELECT
            waarde FROM nmc.metrics() WHERE
            naam = 'nmc_notificaties'
            AND labels = '{"status": "bezorgstatus-onbekend"}'
    ),
    1::double precision,
    'notifications per status, bezorgstatus-onbekend included'
);
SELECT is(
    (
        SELECT
            waarde FROM nmc.metrics() WHERE
            naam = 'nmc_teller_totaal'
            AND labels = '{"naam": "receipt_onbekende_reference"}'
    ),
    2::double precision,
    'rejected receipts are counted'
);
SELECT is(
    (
        SELECT
            waarde FROM nmc.metrics() WHERE
            naam = 'nmc_feed_achterstand_seconden'
            AND labels = '{"dv": 1001}'
    ),
    -1::double precision,
    'a DV that never acknowledged shows -1'
);
SELECT is_empty(
    $$SELECT 1 FROM nmc.metrics() AS m, jsonb_object_keys(m.labels) AS k
      WHERE k NOT IN ('soort', 'staat', 'status', 'dv', 'naam', 'service')$$,
    'labels are only kinds, states, statuses, DV ids, counter and service names'
);

SELECT * FROM finish();
ROLLBACK;
