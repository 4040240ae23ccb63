-- The watchdog: delete the tasks under live notifications; it plans the missing one.
BEGIN;
SELECT plan(9);
\ir fixtures/setup.sql

CREATE TEMP TABLE levend AS
SELECT
    s.status::nmc.notificatie_status AS status,
    s.loopt,
    pg_temp.nieuwe_notificatie() AS id
FROM (
    VALUES ('aangenomen', NULL), ('in-verzending', NULL), ('verzonden', TRUE),
    ('verzonden', FALSE), ('bezorgd', NULL)
) AS s (status, loopt);
SELECT pg_temp.naar_status(id, status) FROM levend;
-- verzonden with a running attempt, and one without (its attempt failed)
INSERT INTO nmc.poging (id, notificatie_id, nummer, status, afgerond_op, aangemaakt_op)
SELECT
    gen_random_uuid(),
    l.id,
    1,
    CASE WHEN l.loopt THEN 'verzonden' ELSE 'tijdelijk-mislukt' END::nmc.poging_status,
    nmc.now(),
    nmc.now()
FROM levend AS l WHERE l.status = 'verzonden';
INSERT INTO nmc.poging (id, notificatie_id, nummer, status, afgerond_op, aangemaakt_op)
SELECT
    gen_random_uuid(),
    l.id,
    1,
    'bezorgd',
    nmc.now() - interval '1 day',
    nmc.now()
FROM levend AS l WHERE l.status = 'bezorgd';
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'dood') AS dood \gset
SELECT pg_temp.naar_status(:'dood', 'technisch-mislukt');

DELETE FROM nmc.taak;
SELECT nmc.ensure_controle();
SELECT nmc.ensure_controle();
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE soort = 'controle'), 1,
    'there is exactly one watchdog task'
);
SELECT
    taak_id AS ct,
    claim_epoch AS ce
FROM nmc.claim_taken('controle', 'w', 1) \gset
SELECT is(nmc.run_controle(:ct, :ce), 5, 'the watchdog plans a task for each of the five');

SELECT is(
    (
        SELECT t.soort::text FROM nmc.taak AS t INNER JOIN levend AS l ON t.notificatie_id = l.id
        WHERE l.status = 'aangenomen'
    ),
    'verzenden', 'aangenomen gets a send task'
);
SELECT is(
    (
        SELECT t.soort::text FROM nmc.taak AS t INNER JOIN levend AS l ON t.notificatie_id = l.id
        WHERE l.status = 'in-verzending'
    ),
    'verzenden', 'in-verzending gets a send task (a re-claim of the same attempt)'
);
SELECT set_eq(
    $$SELECT t.soort::text, t.poging_id IS NOT NULL FROM nmc.taak AS t
      JOIN levend AS l ON l.id = t.notificatie_id WHERE l.status = 'verzonden'$$,
    $$VALUES ('reconciliëren', true), ('verzenden', false)$$,
    'verzonden gets reconciliation of the running attempt, or a send when none runs'
);
SELECT ok(
    (
        SELECT t.soort = 'vaststellen' AND t.due = p.afgerond_op + interval '7 days 30 minutes'
        FROM nmc.taak AS t INNER JOIN levend AS l ON t.notificatie_id = l.id
        INNER JOIN nmc.poging AS p ON l.id = p.notificatie_id WHERE l.status = 'bezorgd'
    ),
    'bezorgd gets its settlement task, due at completed_at + term + window'
);
SELECT is_empty(
    format('SELECT 1 FROM nmc.taak WHERE notificatie_id = %L', :'dood'),
    'a terminal notification gets nothing'
);
SELECT results_eq(
    format(
        'SELECT staat::text, due = nmc.now() + interval ''5 minutes'' FROM nmc.taak WHERE id = %s',
        :ct
    ),
    $$VALUES ('open', true)$$,
    'the watchdog reopens itself for the next round in 5 minutes'
);
SELECT nmc.advance_clock('5 minutes');
SELECT
    taak_id AS ct2,
    claim_epoch AS ce2
FROM nmc.claim_taken('controle', 'w', 1) \gset
SELECT is(nmc.run_controle(:ct2, :ce2), 0, 'a second round finds nothing missing');

SELECT * FROM finish();
ROLLBACK;
