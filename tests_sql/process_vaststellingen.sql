-- Settlement after the 7-day term, by moving the clock.
BEGIN;
SELECT plan(10);
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

-- A batch is one set: two settled together, a third (moved on) only closed, in one call.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'b1') AS b1 \gset
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'b2') AS b2 \gset
CREATE TEMPORARY TABLE geclaimd AS SELECT * FROM nmc.claim_verzenden('w', 10);
SELECT nmc.finish_verzenden(g.taak_id, g.claim_epoch, 'verzonden', gen_random_uuid())
FROM geclaimd AS g;
SELECT pg_temp.navraag_antwoord(g.poging_id, NULL, 'delivered', nmc.now(), NULL)
FROM geclaimd AS g;
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'b3') AS b3 \gset
SELECT pg_temp.naar_status(:'b3', 'geannuleerd');
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('vaststellen', 1001, :'b3', nmc.now(), nmc.now());
SELECT nmc.advance_clock('7 days 31 minutes');
SELECT set_eq(
    'SELECT notificatie_id FROM nmc.process_vaststellingen_v2(10)',
    format('VALUES (%L::uuid), (%L::uuid)', :'b1', :'b2'),
    'one call settles the batch and returns the settled ones'
);
SELECT results_eq(
    format(
        'SELECT status::text, versie FROM nmc.notificatie WHERE id IN (%L, %L) ORDER BY id',
        :'b1', :'b2'
    ),
    $$VALUES ('definitief-bezorgd', 5), ('definitief-bezorgd', 5)$$,
    'each settled notification one version higher'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.event
        WHERE notificatie_id IN (:'b1', :'b2') AND naar = 'definitief-bezorgd' AND sequence = 5
    ),
    2, 'each with its own event'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.vaststelling WHERE notificatie_id IN (:'b1', :'b2')),
    2, 'each settlement recorded for the proof'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.taak
        WHERE
            soort = 'vaststellen'
            AND staat <> 'done'
            AND notificatie_id IN (:'b1', :'b2', :'b3')
    ),
    0, 'every task of the batch is closed, the moved-on one too'
);

SELECT * FROM finish();
ROLLBACK;
