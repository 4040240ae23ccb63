-- Retention maintenance (nmc.delete_expired): the operators' audit trail goes after the
-- delivery-proof retention, like the events it explains, in small batches.
BEGIN;
SELECT plan(4);
\ir fixtures/setup.sql

-- Two actions a year and a day ago, one a month ago; through the real operator tools.
SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT nmc.force_transition(:'id', 'geannuleerd', 'geannuleerd', 'test: oud', 'beheerder');
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, staat, aangemaakt_op)
VALUES ('onderhoud', NULL, NULL, nmc.now(), 'mislukt', nmc.now())
RETURNING id AS taak_id \gset
SELECT nmc.reopen_taak(:taak_id, 'test: oud', 'beheerder');
SELECT nmc.advance_clock('336 days');
UPDATE nmc.taak SET staat = 'mislukt' WHERE id = :taak_id;
SELECT nmc.reopen_taak(:taak_id, 'test: recent', 'beheerder');
SELECT nmc.advance_clock('31 days');

SELECT is(
    (nmc.delete_expired(1) ->> 'beheeracties')::integer, 1,
    'an operator action older than the delivery-proof retention is deleted, one batch at a time'
);
SELECT is(
    (nmc.delete_expired(1000) ->> 'beheeracties')::integer, 1,
    'the next batch takes the other one'
);
SELECT results_eq(
    'SELECT toelichting FROM nmc.beheeractie',
    $$VALUES ('test: recent')$$,
    'a younger action stays'
);
SELECT is(
    (nmc.delete_expired(1000) ->> 'beheeracties')::integer, 0,
    'nothing more to do: 0'
);

SELECT * FROM finish();
ROLLBACK;
