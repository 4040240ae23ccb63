-- The partities job behind a busy event log: its DDL waits at most a short lock_timeout and a
-- timeout defers the job (no failure counted); the partitioned parent is analyzed by the job
-- (autovacuum never analyzes a partitioned table) by autovacuum's rule for a table: once the
-- events written and dropped since reach its analyze threshold for the log's size.
BEGIN;
SELECT plan(24);
\ir fixtures/setup.sql

SELECT set_eq(
    $$SELECT p.proname::text, c FROM pg_catalog.pg_proc AS p, unnest(p.proconfig) AS c
      WHERE p.pronamespace = 'nmc'::regnamespace AND c LIKE 'lock_timeout=%'$$,
    $$VALUES ('maintain_event_partities', 'lock_timeout=100ms'),
             ('drop_event_partities', 'lock_timeout=100ms'),
             ('analyseer_eventlog', 'lock_timeout=100ms')$$,
    'the functions that lock the event log for DDL or ANALYZE wait at most 100 ms for it'
);

DELETE FROM nmc.taak WHERE soort = 'onderhoud';
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1');
CREATE FUNCTION pg_temp.partities() RETURNS jsonb LANGUAGE sql AS $$
    UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'onderhoud';
    SELECT nmc.run_onderhoud(c.taak_id, c.claim_epoch)
    FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c WHERE c.payload ->> 'werk' = 'partities'
$$;
SELECT t.id AS taak FROM nmc.taak AS t WHERE t.payload ->> 'werk' = 'partities' \gset

-- ANALYZE: a first run analyzes the parent (an event is there to be sampled).
CREATE FUNCTION pg_temp.statistieken() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM pg_catalog.pg_statistic AS s
    WHERE s.starelid = 'nmc.event'::regclass AND s.stainherit
$$;
SELECT pg_temp.nieuwe_notificatie();
SELECT is(
    pg_temp.statistieken(), 0::bigint, 'before: the partitioned parent has no statistics'
);
SELECT is(pg_temp.partities() ->> 'geanalyseerd', 'true', 'the first run analyzes the log');
SELECT ok(
    pg_temp.statistieken() > 0,
    'the partitioned parent has statistics over all its partitions'
);
SELECT is(
    (SELECT (payload ->> 'geanalyseerd_op')::timestamptz FROM nmc.taak WHERE id = :taak),
    nmc.now(), 'the task remembers when (NMC clock)'
);
SELECT is(
    (SELECT payload -> 'geanalyseerd_stand' FROM nmc.taak WHERE id = :taak),
    nmc.eventlog_stand(), 'and the log''s counters it saw'
);
-- What autovacuum would wait for: its threshold plus its share of the rows ANALYZE counted.
CREATE FUNCTION pg_temp.drempel() RETURNS bigint LANGUAGE sql AS $$
    SELECT ceil(
        current_setting('autovacuum_analyze_threshold')::bigint
        + current_setting('autovacuum_analyze_scale_factor')::float8 * c.reltuples
    )::bigint
    FROM pg_catalog.pg_class AS c WHERE c.oid = 'nmc.event'::regclass
$$;
-- Events written: each takes a number of the log's identity.
CREATE FUNCTION pg_temp.geschreven(p_aantal bigint) RETURNS void LANGUAGE sql AS $$
    SELECT setval(
        pg_get_serial_sequence('nmc.event', 'event_id'),
        pg_sequence_last_value(pg_get_serial_sequence('nmc.event', 'event_id')) + p_aantal
    )
$$;
SELECT nmc.advance_clock('1 day 1 second');
SELECT is(
    pg_temp.partities() ->> 'geanalyseerd', 'false',
    'a day on, with the log as it was, it is not analyzed again (its cost is the log''s size)'
);
SELECT pg_temp.geschreven(pg_temp.drempel() - 1);
SELECT is(
    pg_temp.partities() ->> 'geanalyseerd', 'false', 'nor one event short of the threshold'
);
SELECT pg_temp.geschreven(1);
SELECT is(
    pg_temp.partities() ->> 'geanalyseerd', 'true',
    'at autovacuum''s threshold for the log''s size it is'
);
SELECT is(
    nmc.eventlog_analyse_nodig(
        nmc.eventlog_stand(),
        jsonb_build_object(
            'geschreven', (nmc.eventlog_stand() ->> 'geschreven')::bigint,
            'weg', (nmc.eventlog_stand() ->> 'weg')::bigint - pg_temp.drempel()
        )
    ), true, 'the events of dropped ranges count as changed'
);
SELECT is(
    nmc.eventlog_analyse_nodig(nmc.eventlog_stand(), '{"werk": "partities"}'::jsonb), true,
    'a task that never saw the counters (an older payload) analyzes'
);

-- The log's one range made nearly used up (two xids above the current one).
SELECT pg_current_xact_id()::text::bigint + 2 AS eind \gset
DROP TABLE nmc.event_x000000000000;
CREATE TABLE nmc.event_x000000000000 PARTITION OF nmc.event FOR VALUES FROM ('0') TO (:'eind');
ALTER TABLE nmc.event_x000000000000 OWNER TO nmc_owner;
UPDATE nmc.event_partitie SET xid_tot = :'eind'::xid8 WHERE naam = 'event_x000000000000';

-- A lock that did not come within the lock_timeout (55P03, here raised where the new range
-- is registered, after its CREATE TABLE): the job is deferred, not failed.
CREATE FUNCTION pg_temp.bezet() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'canceling statement due to lock timeout' USING ERRCODE = '55P03';
END $$;
CREATE TRIGGER bezet BEFORE INSERT ON nmc.event_partitie
FOR EACH ROW EXECUTE FUNCTION pg_temp.bezet();
SELECT is(
    pg_temp.fout('SELECT nmc.maintain_event_partities(1000)'), '55P03:',
    'a direct call gets the lock timeout'
);
SELECT results_eq(
    $$SELECT v ->> 'uitgesteld', v ->> 'aangemaakt' FROM pg_temp.partities() AS v$$,
    $$VALUES ('true', NULL::text)$$,
    'in the job the timeout is a deferral: nothing made'
);
SELECT is(
    (SELECT count(*) FROM pg_catalog.pg_partition_tree('nmc.event') WHERE isleaf),
    2::bigint, 'the half-made range is rolled back (the first range and the default remain)'
);
SELECT results_eq(
    format(
        $$SELECT staat::text, pogingen, uitstellen, due - nmc.now(), lease_eigenaar
          FROM nmc.taak WHERE id = %s$$, :taak
    ),
    $$VALUES ('open', 0, 1, interval '5 seconds', NULL::text)$$,
    'the task is open again, no try counted, due after the first deferral''s backoff'
);
SELECT pg_temp.partities();
SELECT results_eq(
    format('SELECT pogingen, uitstellen, due - nmc.now() FROM nmc.taak WHERE id = %s', :taak),
    $$VALUES (0, 2, interval '10 seconds')$$,
    'each deferral waits longer'
);
UPDATE nmc.onderhoudswerk SET herhaal_na = '0.5 seconds' WHERE werk = 'partities';
SELECT pg_temp.partities();
SELECT is(
    (SELECT due - nmc.now() FROM nmc.taak WHERE id = :taak), interval '0.5 seconds',
    'but never longer than the job''s own pause'
);
DROP TRIGGER bezet ON nmc.event_partitie;

-- A run that changes the partitions does not analyze under the DDL's lock (intake would
-- wait behind it), but leaves it to the next run.
UPDATE nmc.onderhoudswerk SET herhaal_na = '5 minutes' WHERE werk = 'partities';
SELECT results_eq(
    $$SELECT v ->> 'aangemaakt' IS NOT NULL, v ->> 'geanalyseerd' FROM pg_temp.partities() AS v$$,
    $$VALUES (true, 'false')$$,
    'once the log is free the job makes the range, and does not analyze in its transaction'
);
SELECT is(
    pg_temp.partities() ->> 'geanalyseerd', 'false',
    'nor does the next run: a change of partitions alone does not make it due'
);
SELECT pg_temp.geschreven(pg_temp.drempel());
SELECT is(pg_temp.partities() ->> 'geanalyseerd', 'true', 'events written do');

-- The parts on their own.
SELECT lives_ok('SELECT nmc.analyseer_eventlog()', 'the log can be analyzed on its own');
SELECT results_eq(
    format(
        $$SELECT v ->> 'geanalyseerd', v -> 'payload' FROM nmc.onderhoud_partities(%L) AS v$$,
        jsonb_build_object(
            'werk', 'partities', 'geanalyseerd_op', nmc.now(),
            'geanalyseerd_stand', nmc.eventlog_stand()
        )
    ),
    format(
        'VALUES (%L, %L::jsonb)', 'false',
        jsonb_build_object(
            'werk', 'partities', 'geanalyseerd_op', nmc.now(),
            'geanalyseerd_stand', nmc.eventlog_stand()
        )
    ),
    'a run with nothing changed since its last analysis: not again, and its counters handed on'
);
SELECT payload AS payload_voor FROM nmc.taak WHERE id = :taak \gset
SELECT is(
    nmc.stel_onderhoud_uit(:taak, null) - nmc.now(), interval '5 seconds',
    'a deferral on its own: after the backoff'
);
SELECT is(
    (SELECT payload FROM nmc.taak WHERE id = :taak), :'payload_voor'::jsonb,
    'without a payload it keeps the task''s'
);

SELECT * FROM finish();
ROLLBACK;
