-- The send budget: NotifyNL's pace (never more than the rate in any 60 seconds, bursts
-- bounded) and its UTC day per service, in one row per service and kind.
BEGIN;
SELECT plan(29);

INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel)
VALUES ('klein', 100, 0.2);
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst, dag_limiet)
VALUES ('dag', 600, 0.1, 20, 70);
-- Start on a whole minute, 5 minutes before 00:00 UTC (the day's edge is tested below).
UPDATE nmc.klok SET verschuiving = (
    date_trunc('day', now() AT TIME ZONE 'UTC') + INTERVAL '2 days' - INTERVAL '5 minutes'
) AT TIME ZONE 'UTC' - now();

-- klein: sends get 100 - 20% = 80 a minute, a burst of one second of that (2), then 78 a
-- minute evenly: one token every 60/78 s.
SELECT is(nmc.take_budget('klein', 'verzenden', 30), 2, 'a quiet service grants its burst');
SELECT is(nmc.take_budget('klein', 'verzenden', 30), 0, 'and then nothing at the same instant');
SELECT nmc.advance_clock('1 second');
SELECT is(
    nmc.take_budget('klein', 'verzenden', 30), 1,
    'a second later one token more (the even pace: 60/78 s a token)'
);
SELECT is(nmc.take_budget('klein', 'verzenden', 0), 0, 'asking for nothing takes nothing');
SELECT throws_ok(
    $$ SELECT nmc.take_budget('klein', 'anders', 1) $$, '22023', NULL,
    'an unknown kind is refused'
);

-- Five minutes of greedy takes every 0.5 s: what any 60-second span holds.
CREATE TEMP TABLE toekenning (op TIMESTAMPTZ, soort TEXT, aantal INTEGER);
DO $$
BEGIN
    FOR i IN 1..600 LOOP
        PERFORM nmc.advance_clock('500 milliseconds');
        INSERT INTO toekenning VALUES
            (nmc.now(), 'verzenden', nmc.take_budget('klein', 'verzenden', 1000)),
            (nmc.now(), 'navraag', nmc.take_budget('klein', 'navraag', 1000));
    END LOOP;
END
$$;
SELECT cmp_ok(
    (SELECT max(s.n) FROM (
        SELECT
            sum(b.aantal) OVER (
                ORDER BY b.op RANGE BETWEEN INTERVAL '59.999 seconds'
                PRECEDING AND CURRENT ROW
            ) AS n
        FROM toekenning AS b WHERE b.soort = 'verzenden'
    ) AS s)::INTEGER, '<=', 80,
    'no 60-second span holds more sends than the rate less the reconciliation share (80)'
);
SELECT cmp_ok(
    (SELECT sum(b.aantal) FROM toekenning AS b WHERE b.soort = 'verzenden')::INTEGER, '>=',
    78 * 5 - 1,
    'and the pace uses the even rate (78 a minute) in full over five minutes'
);
SELECT cmp_ok(
    (SELECT max(b.aantal) FROM toekenning AS b WHERE b.soort = 'verzenden'), '<=', 2,
    'no take is larger than the burst'
);
SELECT cmp_ok(
    (SELECT max(s.n) FROM (
        SELECT
            sum(b.aantal) OVER (
                ORDER BY b.op RANGE BETWEEN INTERVAL '59.999 seconds'
                PRECEDING AND CURRENT ROW
            ) AS n
        FROM toekenning AS b WHERE b.soort = 'navraag'
    ) AS s)::INTEGER, '<=', 20,
    'reconciliation keeps to its own share (20 a minute) in any 60 seconds'
);
SELECT is(
    (SELECT count(*)::INTEGER FROM nmc.verzendtempo WHERE notify_service = 'klein'), 2,
    'the pace keeps one row per service and kind, however many takes'
);
SELECT is(
    (
        SELECT sum(gebruikt)::INTEGER FROM nmc.verzendbudget
        WHERE notify_service = 'klein' AND soort = 'verzenden'
    ),
    (SELECT sum(aantal)::INTEGER FROM toekenning WHERE soort = 'verzenden') + 3,
    'the per-minute record holds every grant'
);

-- dag: a limit of 70 sends a UTC day; the five minutes above crossed 00:00, so this is the
-- new day's start. Burst 20 (the setting), then 580 a minute evenly.
SELECT is(nmc.take_budget('dag', 'verzenden', 100), 20, 'the burst is the setting');
SELECT nmc.advance_clock('10 seconds');
SELECT is(nmc.take_budget('dag', 'verzenden', 100), 20, 'at most the burst at once');
SELECT nmc.advance_clock('10 seconds');
SELECT is(nmc.take_budget('dag', 'verzenden', 100), 20, 'again');
SELECT nmc.advance_clock('10 seconds');
SELECT is(nmc.take_budget('dag', 'verzenden', 100), 10, 'until the day''s 70 are used');
SELECT nmc.advance_clock('1 hour');
SELECT is(nmc.take_budget('dag', 'verzenden', 100), 0, 'and nothing more that UTC day');
SELECT is(
    nmc.take_budget('dag', 'navraag', 5), 1,
    'reconciliation is not counted against the day (it gets its own burst, 1 of 60 a minute)'
);
SELECT nmc.advance_clock(
    (date_trunc('day', nmc.now() AT TIME ZONE 'UTC') + INTERVAL '1 day') AT TIME ZONE 'UTC'
    - nmc.now()
);
SELECT is(
    nmc.take_budget('dag', 'verzenden', 100), 20,
    'at 00:00 UTC the day starts anew'
);
SELECT is(
    (
        SELECT dag_gebruikt
        FROM nmc.verzendtempo
        WHERE notify_service = 'dag' AND soort = 'verzenden'
    ),
    20,
    'counted from zero for the new day'
);

-- A service without settings has NotifyNL's defaults: 3000 a minute less 10%, a burst of
-- one second of that.
SELECT is(
    nmc.take_budget('onbekend', 'verzenden', 2000), 45,
    'a service without settings: 2700 a minute for sends, a burst of 45'
);
SELECT throws_ok(
    $$ INSERT INTO nmc.notify_service (code, burst) VALUES ('te-groot', 1001) $$, '23514', NULL,
    'a burst above upstream''s bucket (1000) is refused'
);
SELECT is(
    (SELECT per_minuut FROM nmc.verzendtempo_kind(3000, 0.1, NULL, 'navraag')), 300,
    'reconciliation''s share of the default rate'
);

-- The parts of the rule, directly.
SELECT results_eq(
    $$SELECT * FROM nmc.verzendtempo_instelling('nergens')$$,
    $$VALUES (3000, 0.1, NULL::integer, 250000)$$,
    'a service without a row has NotifyNL''s defaults'
);
SELECT results_eq(
    $$SELECT * FROM nmc.verzendtempo_interval(610, 10, false)
      UNION ALL SELECT * FROM nmc.verzendtempo_interval(610, 10, true)$$,
    $$VALUES (0.1::double precision, 10), (0.2::double precision, 5)$$,
    'the interval is 60 / (rate - burst) seconds, doubled with half the burst when slowed'
);
SELECT is(
    nmc.verzendtempo_toekenning(
        nmc.now() + INTERVAL '0.35 seconds', nmc.now(), 610, 10, FALSE, 100, 100
    ),
    6,
    'a schedule 0.35 s ahead leaves 10 - 3.5 whole tokens of the burst'
);
SELECT is(
    nmc.verzendtempo_toekenning(nmc.now(), nmc.now(), 610, 10, FALSE, 100, 4),
    4,
    'a grant never exceeds what is left of the day'
);
SELECT results_eq(
    $$SELECT nmc.verzendtempo_dag_rest(v, v.dag, 100, 7),
             nmc.verzendtempo_dag_rest(v, v.dag + 1, 100, 7),
             nmc.verzendtempo_dag_rest(v, v.dag, NULL, 7)
      FROM nmc.verzendtempo AS v WHERE v.notify_service = 'dag' AND v.soort = 'verzenden'$$,
    $$VALUES (80, 100, 7)$$,
    'left of the day: the limit less today''s sends; all of it on a new day; no limit for reads'
);
SELECT results_eq(
    $$SELECT notify_service, per_minuut, burst, gebruikt, dag_limiet, dag_op
      FROM nmc.verzenddag() WHERE notify_service IN ('dag', 'klein')$$,
    $$VALUES ('dag', 540, 20, 20, 70, false), ('klein', 80, 2, 0, 250000, false)$$,
    'the day per service: pace, sends today (none yet for klein on this day), limit'
);

-- The day is read per service row by every metrics scrape: it and its helpers are inlined
-- into the caller's statement, no function call per row.
CREATE FUNCTION pg_temp.plan(p_sql TEXT) RETURNS SETOF TEXT
LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN ' || p_sql; END $$;
SELECT is(
    (
        SELECT count(*)::INTEGER FROM pg_temp.plan('SELECT * FROM nmc.verzenddag()') AS l
        WHERE l LIKE '%Function Scan%'
    ),
    0,
    'nmc.verzenddag, nmc.verzendtempo_instelling and nmc.verzendtempo_kind are inlined'
);

SELECT * FROM finish();
ROLLBACK;
