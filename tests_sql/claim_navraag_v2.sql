-- The reconciliation claim names the Notify service of the attempt's berichttype: NotifyNL
-- answers a service only about its own notifications, so the worker needs that service's key.
BEGIN;
SELECT plan(3);
\ir fixtures/setup.sql

INSERT INTO nmc.berichttype (dv_id, code, notifynl_template_id, notify_service)
VALUES (1001, 'besluit', 'b1b1b1b1-0000-4000-8000-00000000000b', 'besluiten');

-- Accepts, claims and commits a send of berichttype p_type; returns the attempt id.
CREATE FUNCTION pg_temp.verzonden(p_type text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE v_id uuid := pg_temp.nieuwe_notificatie(p_berichttype => p_type); v_c record;
BEGIN
    SELECT * INTO v_c FROM nmc.claim_verzenden('w', 100) AS c WHERE c.notificatie_id = v_id;
    PERFORM nmc.finish_verzenden(v_c.taak_id, v_c.claim_epoch, 'verzonden', gen_random_uuid());
    RETURN v_c.poging_id;
END $$;

SELECT pg_temp.verzonden('aanslag') AS a \gset
SELECT pg_temp.verzonden('besluit') AS b \gset
SELECT nmc.advance_clock('1 hour');
CREATE TEMP TABLE geclaimd AS SELECT * FROM nmc.claim_navraag_v2('w', 10);

SELECT results_eq(
    format(
        'SELECT poging_id = %L, notify_service FROM geclaimd ORDER BY poging_id = %L',
        :'b', :'b'
    ),
    $$VALUES (false, 'standaard'), (true, 'besluiten')$$,
    'each claimed reconciliation carries its berichttype''s Notify service'
);
SELECT is(
    (SELECT count(*)::integer FROM geclaimd WHERE notifynl_id IS NOT NULL),
    2,
    'with the NotifyNL id to look up'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.verzendbudget
        WHERE soort = 'navraag' AND notify_service IN ('standaard', 'besluiten')
    ),
    2,
    'each from the reconciliation share of its own service''s budget'
);

SELECT * FROM finish();
ROLLBACK;
