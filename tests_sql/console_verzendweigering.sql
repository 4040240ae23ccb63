-- The console's view of the berichttypen NotifyNL refuses, as the console's own role.
BEGIN;
SELECT plan(3);
\ir fixtures/setup.sql

-- Two sends of DV 1001's aanslag refused for a team-only key; one of 1002 still open.
SELECT pg_temp.nieuwe_notificatie() AS een \gset
SELECT pg_temp.nieuwe_notificatie() AS twee \gset
SELECT pg_temp.nieuwe_notificatie(1002, NULL, 'herinnering') AS ander \gset
SELECT nmc.defer_verzenden(c.taak_id, c.claim_epoch, 'sleutel')
FROM nmc.claim_verzenden('w', 20) AS c
WHERE c.notificatie_id IN (:'een', :'twee');
SELECT nmc.advance_clock('1 minute');

SET LOCAL ROLE nmc_console;
SELECT results_eq(
    $$SELECT dv_id, naam, berichttype, soort, sinds = nmc.now() - interval '1 minute', aantal,
             wachtend
      FROM nmc.console_verzendweigeringen()$$,
    $$VALUES (1001, 'Test DV een', 'aanslag', 'sleutel', true, 2::bigint, 2::bigint)$$,
    'the refused berichttype: kind, since, refused sends, sends waiting for the fix'
);
RESET ROLE;

-- The fix: one send of the berichttype goes out; the console shows nothing any more.
SELECT nmc.advance_clock('20 minutes');
SELECT nmc.finish_verzenden(c.taak_id, c.claim_epoch, 'verzonden', gen_random_uuid())
FROM nmc.claim_verzenden('w', 20) AS c WHERE c.notificatie_id = :'een';
SET LOCAL ROLE nmc_console;
SELECT is_empty(
    $$SELECT 1 FROM nmc.console_verzendweigeringen()$$,
    'an accepted send clears the berichttype from the view'
);
SELECT throws_ok(
    $$SELECT count(*) FROM nmc.verzendweigering$$,
    '42501', NULL,
    'the console reads the refusals only through its function'
);

SELECT * FROM finish();
ROLLBACK;
