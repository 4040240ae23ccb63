-- Cursor bounds (410 cases), acknowledgements, the snapshot, and the unacknowledged report.
BEGIN;
SELECT plan(16);
\ir fixtures/setup.sql

INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip, xid)
VALUES
(gen_random_uuid(), 1001, 1, NULL, 'aangenomen', NULL, nmc.now() - interval '9 days', '20'),
(
    gen_random_uuid(), 1001, 2, 'aangenomen', 'geannuleerd', 'geannuleerd',
    nmc.now() - interval '8 days', '21'
),
(
    gen_random_uuid(), 1001, 5, 'bezorgd', 'definitief-bezorgd', NULL,
    nmc.now() - interval '1 day', '22'
);

-- Cursor checks.
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 2, '20', 1, nmc.now(), 10)$$),
    'NM018:', 'a cursor of another epoch is expired (NM018)'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 1, '20', 1, nmc.now() - interval '31 days', 10)$$),
    'NM018:', 'a cursor older than the DV''s max cursor age (30 days) is expired'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 1, '20', 1, nmc.now() - interval '29 days', 10)$$),
    NULL, 'a cursor within the max age is fine'
);
SELECT nmc.raise_epoch();
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 1, '20', 1, nmc.now(), 10)$$),
    'NM018:', 'after an epoch raise every older cursor is expired'
);
SELECT is(
    (nmc.page_events(1001, NULL, NULL, NULL, NULL, 10) ->> 'epoch')::integer, 2,
    'a DV without cursor starts over in the new epoch'
);
UPDATE nmc.event_partitie SET verwijderd_op = nmc.now(), xid_tot = '15';
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 2, '14', 1, nmc.now(), 10)$$),
    'NM018:', 'a cursor into a dropped partition is expired'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 2, '15', 0, nmc.now(), 10)$$),
    NULL, 'a cursor at the end of a dropped range is fine'
);
UPDATE nmc.event_partitie SET verwijderd_op = NULL, xid_tot = '999999999';

-- Acknowledgements only move forward.
SELECT
    is(nmc.acknowledge_cursor(1001, 2, '21', 5, nmc.now()), 'bevestigd', 'a first ack is stored');
SELECT
    is(
        nmc.acknowledge_cursor(1001, 2, '21', 4, nmc.now()),
        'ongewijzigd',
        'an older ack is a no-op'
    );
SELECT
    is(
        nmc.acknowledge_cursor(1001, 2, '21', 5, nmc.now()),
        'ongewijzigd',
        'the same ack is a no-op'
    );
SELECT is(nmc.acknowledge_cursor(1001, 2, '22', 0, nmc.now()), 'bevestigd', 'a newer ack moves it');
SELECT results_eq(
    'SELECT epoch, xid::text, event_id FROM nmc.bevestiging WHERE dv_id = 1001',
    $$VALUES (2, '22', 0::bigint)$$,
    'the stored position is the newest'
);

-- Unacknowledged terminal statuses older than the ack term (7 days).
SELECT is_empty(
    'SELECT * FROM nmc.report_onbevestigd_v2()',
    'nothing beyond the acknowledged position is overdue'
);
DELETE FROM nmc.bevestiging;
SELECT results_eq(
    'SELECT dv_id, aantal FROM nmc.report_onbevestigd_v2()',
    $$VALUES (1001, 1::bigint)$$,
    'without an ack, the 8-day-old terminal event is reported; the 1-day-old one is not yet'
);
SELECT nmc.acknowledge_cursor(1001, 2, '22', 0, nmc.now());
SELECT is_empty('SELECT * FROM nmc.report_onbevestigd_v2()', 'an ack past it clears the report');

-- The snapshot names the position it is consistent with.
SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 3);
SELECT results_eq(
    $$SELECT jsonb_array_length(s -> 'notificaties'), (s ->> 'xid')::xid8, (s ->> 'epoch')::integer
      FROM nmc.snapshot_notificaties(1001) AS s$$,
    $$VALUES (3, pg_snapshot_xmin(pg_current_snapshot()), 2)$$,
    'the snapshot lists the DV''s notifications with the watermark and epoch'
);

SELECT * FROM finish();
ROLLBACK;
