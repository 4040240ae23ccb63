-- Claims, leases and epoch fencing; finish, defer and fail with their counters.
BEGIN;
SELECT plan(27);
\ir fixtures/setup.sql

INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
SELECT
    'ongeldig-melden',
    1001,
    nmc.now() - interval '1 minute',
    nmc.now()
FROM generate_series(1, 3);

CREATE TEMP TABLE c1 AS SELECT * FROM nmc.claim_taken('ongeldig-melden', 'worker-a', 2);
SELECT is((SELECT count(*)::integer FROM c1), 2, 'a claim takes up to its batch');
SELECT ok(
    (SELECT bool_and(claim_epoch = 1 AND NOT herclaim) FROM c1),
    'a first claim gives epoch 1, not a re-claim'
);
SELECT results_eq(
    $$SELECT staat::text, lease_eigenaar, lease_tot = nmc.now() + interval '2 minutes'
      FROM nmc.taak WHERE id IN (SELECT taak_id FROM c1)$$,
    $$VALUES ('claimed', 'worker-a', true), ('claimed', 'worker-a', true)$$,
    'claimed tasks carry the lease owner and a lease of two minutes'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.claim_taken('ongeldig-melden', 'worker-b', 5)),
    1,
    'a second claimer gets only what is left'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.claim_taken('verzenden', 'w')$$,
    'NM017', NULL,
    'send tasks are not claimed through the generic claim (NM017)'
);

SELECT taak_id AS t1 FROM c1 ORDER BY taak_id LIMIT 1 \gset
SELECT taak_id AS t2 FROM c1 ORDER BY taak_id DESC LIMIT 1 \gset

-- Lease extension, and the lease running out.
SELECT nmc.advance_clock('90 seconds');
SELECT is(
    nmc.extend_lease(:t1, 1), nmc.now() + interval '2 minutes',
    'extending the lease moves it to now + 2 minutes'
);
SELECT throws_ok(
    format('SELECT nmc.extend_lease(%s, 2)', :t1), 'NM011', NULL,
    'extending with another epoch is refused (NM011)'
);
SELECT nmc.advance_clock('1 minute');
CREATE TEMP TABLE c2 AS SELECT * FROM nmc.claim_taken('ongeldig-melden', 'worker-c', 5);
SELECT results_eq(
    format('SELECT count(*)::integer, bool_and(herclaim AND claim_epoch = 2),
            bool_or(taak_id = %s), bool_or(taak_id = %s) FROM c2', :t1, :t2),
    $$VALUES (2, true, false, true)$$,
    'the tasks whose lease ran out are re-claimed with a higher epoch; the extended one not'
);
SELECT throws_ok(
    format('SELECT nmc.finish_taak(%s, 1)', :t2), 'NM011', NULL,
    'the old owner''s finish is refused once another claim took over (NM011)'
);
SELECT lives_ok(format('SELECT nmc.finish_taak(%s, 2)', :t2), 'the new owner finishes');
SELECT results_eq(
    format(
        'SELECT staat::text, lease_tot, afgerond_op = nmc.now() FROM nmc.taak WHERE id = %s', :t2
    ),
    $$VALUES ('done', NULL::timestamptz, true)$$,
    'a finished task is done, without a lease'
);
SELECT throws_ok(
    format('SELECT nmc.finish_taak(%s, 2)', :t2), 'NM011', NULL,
    'finishing twice is refused (NM011)'
);

-- Deferral: growing backoff, no attempt counted.
SELECT is(nmc.defer_taak(:t1, 1, 'http-503'), 'uitgesteld', 'an outage defers the task');
SELECT results_eq(
    format('SELECT staat::text, due = nmc.now() + interval ''5 seconds'', uitstellen, pogingen,
            laatste_fout, lease_eigenaar FROM nmc.taak WHERE id = %s', :t1),
    $$VALUES ('open', true, 1, 0, 'http-503', NULL::text)$$,
    'deferred: open again after 5 s, one deferral, no attempt counted'
);
SELECT nmc.advance_clock('5 seconds');
SELECT claim_epoch AS e FROM nmc.claim_taken('ongeldig-melden', 'w', 1) \gset
SELECT nmc.defer_taak(:t1, :e, 'timeout');
SELECT ok(
    (SELECT due = nmc.now() + interval '10 seconds' FROM nmc.taak WHERE id = :t1),
    'the next deferral waits twice as long'
);
SELECT is(
    nmc.uitstel(20), interval '10 minutes', 'the backoff is capped at ten minutes'
);

-- Failure: counted, backoff, exhausted after five.
UPDATE nmc.taak SET due = nmc.now() WHERE id = :t1;
CREATE FUNCTION pg_temp.claim_en_faal() RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_t bigint; v_e integer;
BEGIN
    UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'ongeldig-melden' AND staat = 'open';
    SELECT c.taak_id, c.claim_epoch INTO v_t, v_e
    FROM nmc.claim_taken('ongeldig-melden', 'w', 1) AS c;
    RETURN nmc.fail_taak(v_t, v_e, 'bug');
END $$;
SELECT is(pg_temp.claim_en_faal(), 'opnieuw', 'an internal failure retries (1)');
SELECT is((SELECT pogingen FROM nmc.taak WHERE id = :t1), 1, 'and counts one attempt');
SELECT is(pg_temp.claim_en_faal(), 'opnieuw', 'retry (2)');
SELECT is(pg_temp.claim_en_faal(), 'opnieuw', 'retry (3)');
SELECT is(pg_temp.claim_en_faal(), 'opnieuw', 'retry (4)');
SELECT is(pg_temp.claim_en_faal(), 'mislukt', 'the fifth failure exhausts a non-send task');
SELECT results_eq(
    format('SELECT staat::text, pogingen, lease_tot FROM nmc.taak WHERE id = %s', :t1),
    $$VALUES ('mislukt', 5, NULL::timestamptz)$$,
    'it waits in state mislukt for an operator'
);
SELECT is_empty(
    $$SELECT * FROM nmc.claim_taken('ongeldig-melden', 'w', 5)$$,
    'a mislukt task is never claimed again by itself'
);

-- Batch finish skips stale epochs and says which it finished.
INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
SELECT
    'ongeldig-melden',
    1002,
    nmc.now(),
    nmc.now()
FROM generate_series(1, 3);
CREATE TEMP TABLE c3 AS SELECT * FROM nmc.claim_taken('ongeldig-melden', 'w', 3);
SELECT is(
    nmc.finish_taken(
        array(SELECT taak_id FROM c3 ORDER BY taak_id),
        array(
            SELECT
                CASE
                    WHEN k.taak_id = (SELECT min(m.taak_id) FROM c3 AS m) THEN 99
                    ELSE k.claim_epoch
                END
            FROM c3 AS k ORDER BY k.taak_id
        )
    ),
    array(SELECT taak_id FROM c3 ORDER BY taak_id OFFSET 1),
    'finish_taken finishes the tasks it holds and leaves a stale one alone'
);
SELECT is(
    (SELECT t.staat::text FROM nmc.taak AS t WHERE t.id = (SELECT min(m.taak_id) FROM c3 AS m)),
    'claimed',
    'the stale one is untouched'
);
SELECT throws_ok(
    format('SELECT nmc.defer_taak(%s, 99)', (SELECT min(taak_id) FROM c3)),
    'NM011', NULL, 'defer with a stale epoch is refused (NM011)'
);

SELECT * FROM finish();
ROLLBACK;
