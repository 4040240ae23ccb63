-- The metrics function: database-held counts, labels without personal data.
BEGIN;
SELECT plan(12);
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

-- Unacknowledged terminal statuses: the count reads at most onbevestigd_telgrens terminal
-- events per DV past its acknowledgement (oldest first), whatever the log's size; when all
-- of them are overdue it is "at least" that many (flagged).
UPDATE nmc.instellingen SET onbevestigd_telgrens = 50;
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT
    gen_random_uuid(), 1002, 2, 'aangenomen',
    CASE WHEN g % 4 = 0 THEN 'geannuleerd' ELSE 'in-verzending' END::nmc.notificatie_status,
    nmc.now() - interval '20 days' + g * interval '1 second', (100 + g / 10)::text::xid8
FROM generate_series(1, 4000) AS g;
ANALYZE nmc.event;
SELECT results_eq(
    $$SELECT aantal, afgekapt, oudste = nmc.now() - interval '20 days' + interval '4 seconds'
      FROM nmc.report_onbevestigd_v2() WHERE dv_id = 1002$$,
    $$VALUES (50::bigint, true, true)$$,
    'a DV that never acknowledged 1000 overdue terminal statuses: at least 50 (the limit), '
    'flagged, with the oldest'
);
SELECT results_eq(
    $$SELECT m.waarde FROM nmc.metrics() AS m
      WHERE m.naam IN ('nmc_onbevestigd_terminaal', 'nmc_onbevestigd_terminaal_afgekapt')
          AND m.labels = '{"dv": 1002}'
      ORDER BY m.naam$$,
    $$VALUES (50::double precision), (1::double precision)$$,
    'the metric says 50 and that it is capped'
);
CREATE FUNCTION pg_temp.gelezen() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(
        pg_catalog.pg_stat_get_xact_tuples_returned(r.oid)
        + pg_catalog.pg_stat_get_xact_tuples_fetched(r.oid)
    )::bigint
    FROM pg_catalog.pg_partition_tree('nmc.event') AS t
    INNER JOIN pg_catalog.pg_class AS r
        ON r.oid = t.relid
        OR r.oid IN (SELECT i.indexrelid FROM pg_catalog.pg_index AS i WHERE i.indrelid = t.relid)
$$;
SELECT pg_temp.gelezen() AS voor \gset
SELECT count(*) FROM nmc.metrics();
SELECT cmp_ok(
    pg_temp.gelezen() - :voor, '<=', 300::bigint,
    'one scrape reads a bounded number of event rows (not the 4000 past the acknowledgement)'
);
-- Acknowledged past all but the last 20 terminal events: an exact count, not flagged.
INSERT INTO nmc.bevestiging (dv_id, epoch, xid, event_id, bevestigd_op)
SELECT 1002, 1, e.xid, e.event_id, nmc.now() FROM nmc.event AS e
WHERE e.dv_id = 1002 AND e.naar = 'geannuleerd'
ORDER BY e.xid DESC, e.event_id DESC LIMIT 1 OFFSET 20;
SELECT results_eq(
    'SELECT aantal, afgekapt FROM nmc.report_onbevestigd_v2() WHERE dv_id = 1002',
    $$VALUES (20::bigint, false)$$,
    'past the acknowledgement and below the limit the count is exact'
);
-- Past the acknowledgement, terminal but younger than the ack term (7 days): not reported.
UPDATE nmc.bevestiging SET xid = '999999', event_id = 0;
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT gen_random_uuid(), 1002, 2, 'aangenomen', 'geannuleerd', nmc.now(), '1000000'
FROM generate_series(1, 100);
SELECT is_empty(
    'SELECT * FROM nmc.report_onbevestigd_v2() WHERE dv_id = 1002',
    'terminal statuses younger than the ack term are not reported, however many'
);
SELECT set_eq(
    $$SELECT s::text FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS s
      WHERE nmc.is_terminal(s)$$,
    $$SELECT unnest(regexp_matches(pg_get_expr(i.indpred, i.indrelid), '''([a-z-]+)''', 'g'))
      FROM pg_catalog.pg_index AS i WHERE i.indexrelid = 'nmc.event_terminaal'::regclass$$,
    'the index of terminal events holds exactly the statuses nmc.is_terminal calls terminal'
);

SELECT * FROM finish();
ROLLBACK;
