-- NotifyNL's two 429s: a RateLimitError slows the service's pace, a TooManyRequestsError
-- closes its UTC day for every worker; the task that met one waits as each demands.
BEGIN;
SELECT plan(25);
\ir fixtures/setup.sql

INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst)
VALUES ('standaard', 610, 0.0, 10), ('ander', 610, 0.0, 10);
-- 12:00 UTC on a whole day.
UPDATE nmc.klok SET verschuiving = (
    date_trunc('day', now() AT TIME ZONE 'UTC') + INTERVAL '2 days 12 hours'
) AT TIME ZONE 'UTC' - now();

SELECT throws_ok(
    $$ SELECT nmc.meld_notifynl_limiet('standaard', 'minuut') $$, '22023', NULL,
    'an unknown limit is refused'
);

-- The day: once NotifyNL says it is used up, nothing more is granted until 00:00 UTC.
SELECT is(nmc.take_budget('standaard', 'verzenden', 5), 5, 'sends are granted');
SELECT nmc.meld_notifynl_limiet('standaard', 'dag');
SELECT nmc.advance_clock('1 hour');
SELECT is(
    nmc.take_budget('standaard', 'verzenden', 5), 0,
    'after TooManyRequestsError no send of that service is granted that day'
);
SELECT is(nmc.take_budget('ander', 'verzenden', 5), 5, 'another service is not affected');
SELECT is(
    nmc.take_budget('standaard', 'navraag', 1), 1,
    'reconciliation of the service goes on (NotifyNL does not count reads)'
);
SELECT nmc.advance_clock('10 hours 59 minutes 59 seconds');
SELECT is(nmc.take_budget('standaard', 'verzenden', 5), 0, 'not at 23:59:59 UTC either');
SELECT nmc.advance_clock('1 second');
SELECT is(nmc.take_budget('standaard', 'verzenden', 5), 5, 'at 00:00 UTC sends go again');
SELECT is(
    (
        SELECT dag_weigeringen FROM nmc.verzendtempo
        WHERE notify_service = 'standaard' AND soort = 'verzenden'
    ),
    1::BIGINT,
    'the used-up day is counted for the service'
);

SELECT nmc.meld_notifynl_limiet('standaard', 'dag');
SELECT results_eq(
    $$SELECT notify_service, gebruikt, dag_op, dag_weigeringen FROM nmc.console_budget_dag()
      WHERE notify_service = 'standaard'$$,
    $$VALUES ('standaard', 5, true, 2::bigint)$$,
    'the console shows the day: sends today, used up, the TooManyRequestsErrors'
);
SELECT results_eq(
    $$SELECT naam, waarde FROM nmc.metrics()
      WHERE labels = '{"service": "standaard"}'::jsonb
         OR labels = '{"service": "standaard", "limiet": "dag"}'::jsonb
      ORDER BY naam$$,
    $$VALUES ('nmc_notifynl_limiet_totaal', 2::double precision),
             ('nmc_verzenddag_gebruikt', 5), ('nmc_verzenddag_limiet', 250000),
             ('nmc_verzenddag_op', 1)$$,
    'and so do the metrics'
);
SELECT nmc.advance_clock('1 day');

-- The pace: after a RateLimitError half the pace for a minute (610 a minute less the
-- burst of 10: one token every 0.1 s; slowed, one every 0.2 s and a burst of 5).
SELECT nmc.advance_clock('1 minute');
SELECT nmc.meld_notifynl_limiet('ander', 'tempo');
CREATE TEMP TABLE greedy (fase TEXT, aantal INTEGER);
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM nmc.advance_clock('1 second');
        INSERT INTO greedy VALUES ('traag', nmc.take_budget('ander', 'verzenden', 1000));
    END LOOP;
    PERFORM nmc.advance_clock('1 minute');
    FOR i IN 1..20 LOOP
        PERFORM nmc.advance_clock('1 second');
        INSERT INTO greedy VALUES ('gewoon', nmc.take_budget('ander', 'verzenden', 1000));
    END LOOP;
END
$$;
SELECT is(
    (SELECT sum(aantal)::INTEGER FROM greedy WHERE fase = 'traag'), 100,
    'slowed: half the pace, 5 a second'
);
SELECT is(
    (SELECT sum(aantal)::INTEGER FROM greedy WHERE fase = 'gewoon'), 200,
    'a minute later the whole pace again, 10 a second'
);
SELECT is(
    (
        SELECT tempo_weigeringen FROM nmc.verzendtempo
        WHERE notify_service = 'ander' AND soort = 'verzenden'
    ),
    1::BIGINT,
    'the rate limit is counted for the service'
);

-- The task that met the 429.
UPDATE nmc.berichttype SET notify_service = 'standaard';
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'dag') AS dag \gset
SELECT pg_temp.nieuwe_notificatie(
    p_dvref => 'kort', p_geldig_tot => nmc.now() + INTERVAL '2 hours'
) AS kort \gset
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'tempo') AS tempo \gset
CREATE TEMP TABLE geclaimd AS SELECT * FROM nmc.claim_verzenden('w', 20);
SELECT is(
    nmc.defer_limiet_taak(
        (SELECT taak_id FROM geclaimd WHERE notificatie_id = :'dag'),
        (SELECT claim_epoch FROM geclaimd WHERE notificatie_id = :'dag'),
        'standaard', 'dag', 'notifynl-dag-limiet'
    ),
    'uitgesteld',
    'a send that met a used-up day is deferred'
);
SELECT results_eq(
    format($$SELECT t.staat::text, t.due, t.uitstellen, t.laatste_fout
             FROM nmc.taak AS t WHERE t.notificatie_id = %L AND t.soort = 'verzenden'$$, :'dag'),
    $$SELECT 'open', (date_trunc('day', nmc.now() AT TIME ZONE 'UTC') + INTERVAL '1 day')
        AT TIME ZONE 'UTC', 0, 'notifynl-dag-limiet'$$,
    'to 00:00 UTC, without counting it against the task'
);
SELECT is(
    nmc.defer_limiet_taak(
        (SELECT taak_id FROM geclaimd WHERE notificatie_id = :'kort'),
        (SELECT claim_epoch FROM geclaimd WHERE notificatie_id = :'kort'),
        'standaard', 'dag', 'notifynl-dag-limiet'
    ),
    'verlopen',
    'a send whose geldigTot passes before 00:00 UTC ends verlopen'
);
SELECT is(
    nmc.defer_limiet_taak(
        (SELECT taak_id FROM geclaimd WHERE notificatie_id = :'tempo'),
        (SELECT claim_epoch FROM geclaimd WHERE notificatie_id = :'tempo'),
        'standaard', 'tempo', 'notifynl-tempo-limiet'
    ),
    'uitgesteld',
    'a send that met a rate limit is deferred'
);
SELECT results_eq(
    format(
        $$SELECT t.due > nmc.now(), t.due < nmc.now() + INTERVAL '1 hour', t.uitstellen
             FROM nmc.taak AS t WHERE t.notificatie_id = %L AND t.soort = 'verzenden'$$,
        :'tempo'
    ),
    $$VALUES (true, true, 1)$$,
    'with the backoff of any deferral'
);
SELECT nmc.advance_clock('1 day');  -- the day of standaard is used up again above
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'los') AS los \gset
CREATE TEMP TABLE los AS
SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = :'los';
SELECT is(
    nmc.defer_taak_tot(
        (SELECT taak_id FROM los), (SELECT claim_epoch FROM los), 'x',
        nmc.now() + INTERVAL '5 minutes', FALSE
    ),
    'uitgesteld',
    'a deferral to a given time'
);
SELECT results_eq(
    format($$SELECT t.due = nmc.now() + INTERVAL '5 minutes', t.uitstellen
             FROM nmc.taak AS t WHERE t.notificatie_id = %L AND t.soort = 'verzenden'$$, :'los'),
    $$VALUES (true, 0)$$,
    'waits until then, uncounted'
);
SELECT throws_ok(
    format(
        $$SELECT nmc.defer_limiet_taak(%s, 99, 'standaard', 'dag', 'x')$$,
        (SELECT taak_id FROM geclaimd WHERE notificatie_id = :'tempo')
    ),
    'NM011', NULL,
    'a stale claim is refused'
);

-- The operator's settings.
SELECT nmc.set_notify_service('nieuw', p_dag_limiet => 500000);
SELECT nmc.set_notify_service('ander', p_per_minuut => 1200, p_burst_afleiden => TRUE);
SELECT results_eq(
    $$SELECT code, per_minuut, navraag_aandeel, burst, burst_ingesteld, dag_limiet, eigen_rij
      FROM nmc.list_notify_services() WHERE code IN ('nieuw', 'ander')$$,
    $$VALUES ('ander', 1200, 0.0, 20, false, 250000, true),
             ('nieuw', 3000, 0.1, 45, false, 500000, true)$$,
    'a new service has NotifyNL''s defaults; NULL keeps a value; the burst is derived again'
);
SELECT throws_ok(
    $$SELECT nmc.set_notify_service('ander', p_burst => 2000)$$, '23514', NULL,
    'a burst above upstream''s bucket is refused'
);
SELECT throws_ok(
    $$SELECT nmc.set_notify_service('ander', p_burst => 5, p_burst_afleiden => true)$$,
    '22023', NULL,
    'a burst both given and derived is refused'
);
SELECT ok(
    EXISTS (SELECT 1 FROM nmc.list_notify_services() WHERE code = 'standaard'),
    'a service named by a berichttype is listed'
);

SELECT * FROM finish();
ROLLBACK;
