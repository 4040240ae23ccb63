-- The event log is append only, and lands in an xid range partition.
BEGIN;
SELECT plan(15);
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
-- TRUNCATE on a partition does not fire the parent's statement trigger: every partition
-- needs its own, the default one and the ranges maintenance makes later included.
SELECT throws_ok(
    'TRUNCATE nmc.event_x000000000000',
    'NM004', 'the event log is append only (TRUNCATE refused)',
    'TRUNCATE of the first xid range partition is refused (NM004)'
);
SELECT throws_ok(
    'TRUNCATE nmc.event_default',
    'NM004', 'the event log is append only (TRUNCATE refused)',
    'TRUNCATE of the default partition is refused (NM004)'
);
SELECT xid_tot::text::bigint AS eind FROM nmc.event_partitie \gset
SELECT nmc.maintain_event_partities(1000, (:eind * 0.9)::bigint::text::xid8) AS nieuw \gset
SELECT throws_ok(
    format('TRUNCATE nmc.%I', :'nieuw'),
    'NM004', 'the event log is append only (TRUNCATE refused)',
    'TRUNCATE of a partition made later by maintenance is refused (NM004)'
);
SELECT is_empty(
    $$SELECT t.relid::regclass FROM pg_catalog.pg_partition_tree('nmc.event') AS t
      WHERE t.isleaf AND NOT EXISTS (
          SELECT 1 FROM pg_catalog.pg_trigger AS g
          WHERE g.tgrelid = t.relid AND g.tgfoid = 'nmc.refuse_event_change()'::regprocedure
              AND g.tgtype & 32 <> 0 AND g.tgenabled <> 'D'
      )$$,
    'every partition of the event log has an enabled TRUNCATE trigger that refuses'
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
    $$SELECT naam, xid_van::text FROM nmc.event_partitie ORDER BY xid_van LIMIT 1$$,
    $$VALUES ('event_x000000000000', '0')$$,
    'the first range is registered for maintenance'
);

-- nmc.protect_event_partitie: a partition made by hand (its name needs quoting) has the row
-- triggers the parent's clone, but no TRUNCATE trigger until it is given one.
CREATE TABLE nmc."event_Proef" PARTITION OF nmc.event
FOR VALUES FROM ('9000000000000000') TO ('9000000000001000');
SELECT lives_ok(
    'TRUNCATE nmc."event_Proef"',
    'a partition without its own trigger can be truncated: the parent''s does not fire'
);
SELECT nmc.protect_event_partitie('nmc."event_Proef"');
SELECT throws_ok(
    'TRUNCATE nmc."event_Proef"',
    'NM004', 'the event log is append only (TRUNCATE refused)',
    'protect_event_partitie gives it a TRUNCATE trigger that refuses (NM004)'
);
SELECT nmc.protect_event_partitie('nmc."event_Proef"');
SELECT is(
    (
        SELECT
            array_agg(format('%s %s %s', g.tgname, g.tgtype & (1 | 2 | 32), g.tgfoid::regprocedure))
        FROM pg_catalog.pg_trigger AS g
        WHERE g.tgrelid = 'nmc."event_Proef"'::regclass AND g.tgtype & 32 <> 0
    ),
    ARRAY['event_no_truncate 34 nmc.refuse_event_change()'],
    'one BEFORE TRUNCATE statement trigger (type bits 2 | 32), also when given twice'
);

SELECT * FROM finish();
ROLLBACK;
