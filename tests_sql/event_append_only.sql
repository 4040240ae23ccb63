-- The event log is append only, and lands in an xid range partition.
BEGIN;
SELECT plan(8);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset

SELECT throws_ok(
    format('UPDATE nmc.event SET reden = %L WHERE notificatie_id = %L', 'technisch', :'id'),
    'NM004', 'the event log is append only (UPDATE refused)',
    'UPDATE on the event log is refused (NM004)'
);
SELECT throws_ok(
    format('DELETE FROM nmc.event WHERE notificatie_id = %L', :'id'),
    'NM004', 'the event log is append only (DELETE refused)',
    'DELETE on the event log is refused (NM004)'
);
SELECT throws_ok(
    'TRUNCATE nmc.event',
    'NM004', 'the event log is append only (TRUNCATE refused)',
    'TRUNCATE of the event log is refused (NM004)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.event WHERE notificatie_id = :'id'),
    1,
    'the event is still there'
);
SELECT is(
    (SELECT tableoid::regclass::text FROM nmc.event WHERE notificatie_id = :'id'),
    'nmc.event_x000000000000',
    'a new event lands in the first xid range, not in the default partition'
);
SELECT is_partitioned('nmc', 'event', 'the event log is partitioned');
SELECT isnt_empty(
    $$SELECT 1 FROM pg_catalog.pg_partitioned_table AS p
      INNER JOIN pg_catalog.pg_class AS c ON c.oid = p.partrelid
      WHERE c.oid = 'nmc.event'::regclass AND p.partstrat = 'r'
          AND p.partdefid = 'nmc.event_default'::regclass$$,
    'it is range-partitioned, with event_default as its default partition'
);
SELECT results_eq(
    $$SELECT naam, xid_van::text FROM nmc.event_partitie$$,
    $$VALUES ('event_x000000000000', '0')$$,
    'the first range is registered for maintenance'
);

SELECT * FROM finish();
ROLLBACK;
