-- The look for work before a claim: a kind has work exactly when its claim would find some.
BEGIN;
SELECT plan(9);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
CREATE FUNCTION pg_temp.taak(p_soort nmc.taak_soort, p_due interval, p_dv integer DEFAULT 1001)
RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
    VALUES (p_soort, p_dv, nmc.now() + p_due, nmc.now())
    RETURNING id
$$;
CREATE FUNCTION pg_temp.werk(VARIADIC p_soorten nmc.taak_soort[]) RETURNS text[]
LANGUAGE sql AS $$ SELECT nmc.soorten_met_werk(p_soorten) $$;

SELECT is(
    pg_temp.werk('verzenden', 'receipt', 'vaststellen'), '{}'::text[],
    'no tasks: no kind has work'
);

-- A backlog that is not due yet (a settlement a week ahead) is no work.
SELECT pg_temp.taak('vaststellen', '7 days') FROM generate_series(1, 50);
SELECT is(pg_temp.werk('vaststellen'), '{}'::text[], 'only tasks due later: no work yet');

SELECT pg_temp.taak('vaststellen', '-1 second', 1002) AS due_taak \gset
SELECT is(
    pg_temp.werk('verzenden', 'vaststellen'), '{vaststellen}'::text[],
    'a task due now (of any DV) is work for its kind only'
);
SELECT is(pg_temp.werk('verzenden'), '{}'::text[], 'a kind not asked for is not answered');
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('vaststellen', 20)), 1,
    'and the claim finds that same task'
);

-- The clock moves on: what was due later is due now.
SELECT nmc.advance_clock('7 days 1 minute');
SELECT is(
    pg_temp.werk('receipt', 'vaststellen'), '{vaststellen}'::text[],
    'once the clock passes their due time, the later tasks are work'
);

-- A claimed task is work again once its lease ran out (a worker died), not before.
DELETE FROM nmc.taak;
SELECT pg_temp.taak('ongeldig-melden', '-1 second') AS t \gset
SELECT count(*) FROM nmc.claim_taken('ongeldig-melden', 'worker-a', 20);
SELECT is(pg_temp.werk('ongeldig-melden'), '{}'::text[], 'a task under a live lease: no work');
SELECT nmc.advance_clock('3 minutes');
SELECT is(
    pg_temp.werk('ongeldig-melden', 'wissen'), '{ongeldig-melden}'::text[],
    'a lease that ran out: work (the claim re-claims it)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('ongeldig-melden', 20)), 1,
    'and the claim finds it'
);

SELECT * FROM finish();
ROLLBACK;
