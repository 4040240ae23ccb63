-- Settlement after the 7-day term, by moving the clock.
BEGIN;
SELECT plan(5);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT
    taak_id AS t,
    claim_epoch AS e,
    poging_id AS p
FROM nmc.claim_verzenden('w', 10) \gset
SELECT nmc.finish_verzenden(:t, :e, 'verzonden', gen_random_uuid());
SELECT pg_temp.navraag_antwoord(:'p', NULL, 'delivered', nmc.now(), NULL);

SELECT nmc.advance_clock('7 days');
SELECT
    is(nmc.process_vaststellingen(), 0, 'nothing is settled at exactly 7 days (callback window)');
SELECT nmc.advance_clock('30 minutes');
SELECT is(nmc.process_vaststellingen(), 1, 'after 7 days plus the callback window it settles');
SELECT results_eq(
    format('SELECT status::text, versie FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES ('definitief-bezorgd', 5)$$,
    'bezorgd became definitief-bezorgd'
);

-- A settlement task whose notification moved on closes without a transition.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'x') AS x \gset
SELECT pg_temp.naar_status(:'x', 'niet-bezorgbaar');
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('vaststellen', 1001, :'x', nmc.now(), nmc.now());
SELECT is(nmc.process_vaststellingen(), 0, 'a terminal notification is not settled');
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE notificatie_id = :'x' AND soort = 'vaststellen'),
    'done', 'but its task is closed'
);

SELECT * FROM finish();
ROLLBACK;
