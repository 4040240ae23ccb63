-- The send claim's selection skips what cannot get a token: the tasks of a service whose
-- day is used up, and those of a DV that has used its fair share of a service's day. A
-- closed service's backlog then cannot fill a round's batch and starve the open ones.
BEGIN;
SELECT plan(13);
\ir fixtures/setup.sql

UPDATE nmc.dienstverlener SET quotum_per_minuut = 10000, quotum_per_dag = 100000;
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst, dag_limiet)
VALUES ('dicht', 100000, 0.0, 1000, 1000), ('open', 100000, 0.0, 1000, 1000),
('gedeeld', 100000, 0.0, 1000, 400);
-- 12:00 UTC, so the day does not turn during the test.
UPDATE nmc.klok SET verschuiving = (
    date_trunc('day', now() AT TIME ZONE 'UTC') + INTERVAL '2 days 12 hours'
) AT TIME ZONE 'UTC' - now();
-- The day of 'dicht' is used up: NotifyNL said so (TooManyRequestsError).
INSERT INTO nmc.verzendtempo (notify_service, soort, tat, dag, dag_gebruikt, dag_op)
VALUES ('dicht', 'verzenden', nmc.now(), (nmc.now() AT TIME ZONE 'UTC')::DATE, 10, true);

-- DV 1001 sends 'aanslag' through the closed service and 'open-bericht' through the open.
UPDATE nmc.berichttype SET notify_service = 'dicht' WHERE dv_id = 1001 AND code = 'aanslag';
UPDATE nmc.berichttype SET notify_service = 'open' WHERE dv_id = 1002;
INSERT INTO nmc.berichttype (dv_id, code, notifynl_template_id, regie_toegestaan, notify_service)
VALUES (1001, 'open-bericht', 'a0a0a0a0-0000-4000-8000-000000000004', '{decentraal}', 'open');

SELECT trigger_is(
    'nmc', 'taak', 'taak_berichttype', 'nmc', 'vul_taak_berichttype',
    'nmc.vul_taak_berichttype gives a send task its notification''s berichttype'
);

-- Every send task knows its berichttype, also one written without it.
SELECT pg_temp.nieuwe_notificatie(1001) AS eerste \gset
SELECT is(
    (SELECT berichttype FROM nmc.taak WHERE notificatie_id = :'eerste'), 'aanslag',
    'the intake writes the send task with its notification''s berichttype'
);
DELETE FROM nmc.taak WHERE notificatie_id = :'eerste';
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('verzenden', 1001, :'eerste', nmc.now(), nmc.now());
SELECT is(
    (SELECT berichttype FROM nmc.taak WHERE notificatie_id = :'eerste'), 'aanslag',
    'a send task written without it gets it from its notification'
);

-- A large backlog on the closed service first, the open service's tasks a minute later.
SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 59);
SELECT nmc.advance_clock('1 minute');
SELECT pg_temp.nieuwe_notificatie(1001, p_berichttype => 'open-bericht')
FROM generate_series(1, 3);
SELECT results_eq(
    $$SELECT dv_id, berichttype FROM nmc.verzenden_dicht(ARRAY[1001, 1002]) ORDER BY 1, 2$$,
    $$VALUES (1001, 'aanslag')$$,
    'closed: the pair whose service''s day is used up; the open service''s pairs are not'
);
SELECT results_eq(
    $$SELECT n.berichttype, count(*)::integer FROM nmc.lock_due_verzenden(20) AS l
      INNER JOIN nmc.taak AS t ON t.id = l.taak_id
      INNER JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
      GROUP BY n.berichttype$$,
    $$VALUES ('open-bericht', 3)$$,
    'the selection holds only the tasks that can get a token'
);
SELECT results_eq(
    $$SELECT berichttype, notify_service, count(*)::integer FROM nmc.claim_verzenden('w', 20)
      GROUP BY berichttype, notify_service$$,
    $$VALUES ('open-bericht', 'open', 3)$$,
    'a DV''s backlog on a closed service does not hide its tasks on an open one'
);
SELECT is(
    (SELECT count(*)::INTEGER FROM nmc.taak WHERE soort = 'verzenden' AND staat = 'open'),
    60,
    'the closed service''s tasks stay open: they wait, none deferred'
);
SELECT nmc.close_taken(array_agg(t.id)) FROM nmc.taak AS t
WHERE t.soort = 'verzenden' AND t.staat = 'claimed';

-- More DVs on the closed service than the batch holds, all waiting longer than DV 1002.
INSERT INTO nmc.dienstverlener (dv_id, oin, naam, quotum_per_minuut, quotum_per_dag)
OVERRIDING SYSTEM VALUE
SELECT 2000 + g, lpad((2000 + g)::TEXT, 20, '0'), 'DV ' || g, 10000, 100000
FROM generate_series(1, 6) AS g;
INSERT INTO nmc.berichttype (dv_id, code, notifynl_template_id, regie_toegestaan, notify_service)
SELECT 2000 + g, 'aanslag', 'a0a0a0a0-0000-4000-8000-000000000005', '{decentraal}', 'dicht'
FROM generate_series(1, 6) AS g;
SELECT pg_temp.nieuwe_notificatie(2000 + g) FROM generate_series(1, 6) AS g,
    generate_series(1, 10) AS k;
SELECT nmc.advance_clock('1 minute');
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering')
FROM generate_series(1, 2);
SELECT results_eq(
    $$SELECT dv_id, count(*)::integer FROM nmc.claim_verzenden('w', 5) GROUP BY dv_id$$,
    $$VALUES (1002, 2)$$,
    'the closed service''s DVs do not take the round''s DV slots'
);
SELECT nmc.close_taken(array_agg(t.id)) FROM nmc.taak AS t
WHERE t.soort = 'verzenden' AND t.staat = 'claimed';

-- DV 1001 has used its fair share of 'gedeeld' (the largest consumer, the day less the
-- reserve used), so its tasks there wait while its tasks on 'open' go.
UPDATE nmc.berichttype SET notify_service = 'gedeeld' WHERE dv_id = 1001 AND code = 'aanslag';
INSERT INTO nmc.verzendaandeel (notify_service, uur, dv_id, gebruikt)
VALUES ('gedeeld', date_trunc('hour', nmc.now()), 1001, 390);
SELECT is(
    (SELECT ruimte FROM nmc.verzendaandeel_ruimte('gedeeld')), 0, 'its headroom is used'
);
SELECT nmc.advance_clock('1 minute');
SELECT pg_temp.nieuwe_notificatie(1001, p_berichttype => 'open-bericht')
FROM generate_series(1, 2);
SELECT results_eq(
    $$SELECT berichttype, count(*)::integer FROM nmc.claim_verzenden('w', 20)
      GROUP BY berichttype$$,
    $$VALUES ('open-bericht', 2)$$,
    'a DV whose fair share of one service is used still sends through another'
);
SELECT nmc.close_taken(array_agg(t.id)) FROM nmc.taak AS t
WHERE t.soort = 'verzenden' AND t.staat = 'claimed';

-- Once the day turns the closed service opens again: its backlog is selected as before.
SELECT nmc.advance_clock('12 hours');
SELECT results_eq(
    $$SELECT count(DISTINCT t.dv_id)::integer, count(*)::integer
      FROM nmc.lock_due_verzenden(20) AS l INNER JOIN nmc.taak AS t ON t.id = l.taak_id$$,
    $$VALUES (7, 20)$$,
    'after 00:00 UTC the closed service''s tasks are selected again, fairly per DV'
);

-- A send task of the previous release (no berichttype) is selected as before.
UPDATE nmc.verzendtempo SET dag = (nmc.now() AT TIME ZONE 'UTC')::DATE, dag_op = true
WHERE notify_service = 'dicht';
UPDATE nmc.berichttype SET notify_service = 'dicht' WHERE dv_id = 1001;
UPDATE nmc.taak SET berichttype = null
WHERE id = (SELECT min(id) FROM nmc.taak WHERE soort = 'verzenden' AND dv_id = 1001);
SELECT results_eq(
    $$SELECT count(*)::integer FROM nmc.lock_due_verzenden(20)$$,
    $$VALUES (1)$$,
    'a send task without a berichttype is not skipped'
);
SELECT is(
    (SELECT count(*)::INTEGER FROM nmc.claim_verzenden('w', 20)), 0,
    'and the claim then gives it no token, as its service is closed'
);

SELECT * FROM finish();
ROLLBACK;
