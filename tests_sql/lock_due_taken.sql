-- Fair claims: a share per DV with due work, expired leases first, SKIP LOCKED.
BEGIN;
SELECT plan(11);
\ir fixtures/setup.sql

INSERT INTO nmc.dienstverlener (dv_id, oin, naam) OVERRIDING SYSTEM VALUE
SELECT
    2000 + i,
    lpad((2000 + i)::text, 20, '0'),
    'DV ' || i
FROM generate_series(1, 9) AS i;

-- One DV floods 1000 controle-like tasks (any per-DV kind will do: terugkoppelen is unique
-- per DV, so use receipt-free ongeldig-melden without notification); nine DVs have 3 each.
CREATE FUNCTION pg_temp.taken(p_dv integer, p_aantal integer, p_due interval DEFAULT '0')
RETURNS void LANGUAGE sql AS $$
    INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
    SELECT 'ongeldig-melden', p_dv, nmc.now() - interval '1 hour' + p_due
        + (i * interval '1 millisecond'), nmc.now()
    FROM generate_series(1, p_aantal) AS i
$$;
SELECT pg_temp.taken(1001, 1000);
SELECT pg_temp.taken(2000 + i, 3) FROM generate_series(1, 9) AS i;
SELECT pg_temp.taken(1002, 50, '2 hours');  -- not due yet

CREATE TEMP TABLE ronde AS
SELECT
    l.taak_id,
    l.rang,
    t.dv_id
FROM nmc.lock_due_taken('ongeldig-melden', 20) AS l
INNER JOIN nmc.taak AS t ON l.taak_id = t.id;

SELECT is((SELECT count(*)::integer FROM ronde), 20, 'a round takes the whole batch');
SELECT is(
    (SELECT count(DISTINCT dv_id)::integer FROM ronde),
    10,
    'every DV with due work gets a share, however large one DV''s backlog'
);
SELECT is(
    (SELECT count(*)::integer FROM ronde WHERE dv_id <> 1001),
    18,
    'the nine small DVs get 2 each (their share of 20 over 10 DVs)'
);
SELECT is_empty(
    'SELECT 1 FROM ronde WHERE dv_id = 1002',
    'tasks not yet due are not taken'
);
SELECT ok(
    (
        SELECT
            bool_and(t.due <= all(
                SELECT x.due FROM nmc.taak AS x
                WHERE
                    x.dv_id = r.dv_id AND x.soort = 'ongeldig-melden' AND x.id NOT IN
                    (SELECT r2.taak_id FROM ronde AS r2)
            ))
        FROM ronde AS r INNER JOIN nmc.taak AS t ON r.taak_id = t.id
    ),
    'within a DV the oldest due tasks go first'
);

-- A big batch: shares first, then the flooding DV fills the rest.
CREATE TEMP TABLE groot AS
SELECT
    l.taak_id,
    l.rang,
    t.dv_id
FROM nmc.lock_due_taken('ongeldig-melden', 100) AS l
INNER JOIN nmc.taak AS t ON l.taak_id = t.id;
SELECT is(
    (SELECT count(*)::integer FROM groot WHERE dv_id <> 1001),
    27,
    'with room to spare every small DV is emptied'
);
SELECT is(
    (SELECT count(*)::integer FROM groot),
    100,
    'and the rest of the batch is filled from the large backlog'
);

-- Expired leases come first, ranked 0.
UPDATE nmc.taak SET
    staat = 'claimed', lease_tot = nmc.now() - interval '1 second',
    lease_eigenaar = 'dood'
WHERE id = (SELECT max(id) FROM nmc.taak WHERE dv_id = 1002);
SELECT results_eq(
    $$SELECT t.dv_id, l.rang FROM nmc.lock_due_taken('ongeldig-melden', 1) AS l
      INNER JOIN nmc.taak AS t ON t.id = l.taak_id$$,
    $$VALUES (1002, 0)$$,
    'a task whose lease ran out is taken first, even when not otherwise due'
);
-- More DVs than the batch holds: never more than the batch, and the longest waiting first.
INSERT INTO nmc.dienstverlener (dv_id, oin, naam) OVERRIDING SYSTEM VALUE
SELECT 3000 + i, lpad((3000 + i)::text, 20, '0'), 'DV ' || i FROM generate_series(1, 30) AS i;
INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
SELECT 'reconciliëren', 3000 + i, nmc.now() - (i * interval '1 minute'), nmc.now()
FROM generate_series(1, 30) AS i;
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('reconciliëren', 20)),
    20,
    'with 30 DVs and a batch of 20 the claim returns exactly 20'
);
SELECT set_eq(
    $$SELECT t.dv_id FROM nmc.lock_due_taken('reconciliëren', 5) AS l
      INNER JOIN nmc.taak AS t ON t.id = l.taak_id$$,
    $$VALUES (3030), (3029), (3028), (3027), (3026)$$,
    'the DVs that waited longest get the places'
);
SELECT is_empty(
    $$SELECT * FROM nmc.lock_due_taken('wissen', 10)$$,
    'a kind without tasks gives nothing'
);

SELECT * FROM finish();
ROLLBACK;
