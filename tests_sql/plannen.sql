-- Plans (docs/pipeline.md, Plans): the worker's claim and commit functions keep one generic
-- plan per session, no function asks for a plan at every call, the helpers called per item
-- are PL/pgSQL or inlinable, and the look for work steps into its partial index on a small
-- table whose statistics would have it scanned.
BEGIN;
SELECT plan(7);
\ir fixtures/setup.sql

SELECT set_eq(
    $$SELECT p.proname::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND 'plan_cache_mode=force_generic_plan' = ANY(p.proconfig)$$,
    $$VALUES ('claim_verzenden'), ('finish_verzenden_batch'), ('finish_verzenden_batch_v2'),
        ('transition_notificaties'), ('store_receipts_v2'),
        ('claim_taken'), ('extend_leases'), ('record_contactgegevens'),
        ('process_receipts_v2'), ('claim_navraag_v2'), ('process_vaststellingen_v2'),
        ('claim_terugkoppelen_v3'), ('read_events'), ('bewijs_events_json_v2'),
        ('soorten_met_werk')$$,
    'the worker''s look, claims and commits, the receipts'' store, the feed''s read and the '
    || 'proof''s events keep one '
    || 'generic plan per session'
);
SELECT is_empty(
    $$SELECT p.proname FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND 'plan_cache_mode=force_custom_plan' = ANY(p.proconfig)$$,
    'no function plans its statements again at every call'
);
SELECT is_empty(
    $$SELECT p.proname FROM pg_catalog.pg_proc AS p
      INNER JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
      WHERE p.pronamespace = 'nmc'::regnamespace AND l.lanname = 'sql'
          AND p.proname IN (
              'now', 'verzendtempo_toekenning', 'plan_vaststellen', 'record_receipt',
              'count_teller', 'boek_verzendaandeel', 'uitstel', 'next_navraag', 'finish_taken',
              'webhook_events_wachten'
          )$$,
    'the clock and the helpers called per item, per claim, per deferral or per look are '
    || 'PL/pgSQL'
);
SELECT is_empty(
    $$SELECT p.proname FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND p.proname IN (
              'verzendtempo_interval', 'verzendtempo_dag_rest', 'verzendaandeel_reserve',
              'poging_status_voor'
          )
          AND (p.proconfig IS NOT NULL OR p.prosecdef)$$,
    'the pace''s pure helpers and poging_status_voor can be inlined (no SET, no definer)'
);

-- The look's form: each kind's earliest due is one step into taak_due, whatever the
-- statistics (an EXISTS per kind was planned as a table scan per kind on the lifecycle
-- benchmark's small task table; this narrow fixture does not reproduce that plan).
DELETE FROM nmc.taak;
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
SELECT 'wissen', NULL, NULL, nmc.now() - g * INTERVAL '1 minute', nmc.now()
FROM pg_catalog.generate_series(1, 2000) AS g;
ANALYZE nmc.taak;
SET LOCAL plan_cache_mode = force_generic_plan;
CREATE FUNCTION pg_temp.plan_regels(p_query TEXT) RETURNS SETOF TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_regel text;
BEGIN
    FOR v_regel IN EXECUTE 'EXPLAIN ' || p_query LOOP
        RETURN NEXT v_regel;
    END LOOP;
END
$$;
PREPARE kijk (nmc.TAAK_SOORT[], TIMESTAMPTZ) AS
SELECT s.soort FROM unnest($1) AS s (soort)
WHERE nmc.taak_claimbaar('open', (
    SELECT pg_catalog.min(t.due) FROM nmc.taak AS t
    WHERE t.soort = s.soort AND t.staat = 'open'
), NULL, $2);
SELECT is_empty(
    $$SELECT l FROM pg_temp.plan_regels(
        'EXECUTE kijk(''{verzenden,wissen,controle}'', nmc.now())'
    ) AS l WHERE l LIKE '%Seq Scan on taak%'$$,
    'the look''s earliest due is an index step, not a table scan, on a small table'
);
SELECT is(
    nmc.soorten_met_werk('{verzenden,wissen,controle}'), '{wissen}'::TEXT[],
    'only the kind with due tasks has work'
);

-- A set function's rows are taken for 1000 unless it says otherwise: the claim of tasks says
-- its batch, so a caller that joins the claimed tasks with their notifications and attempts
-- (nmc.claim_ongeldig_melden) probes them by index instead of scanning both whole tables.
SELECT is(
    (
        SELECT p.prorows FROM pg_catalog.pg_proc AS p
        WHERE p.oid = 'nmc.claim_taken(nmc.taak_soort, text, integer)'::REGPROCEDURE
    ),
    20::REAL, 'nmc.claim_taken returns a batch (its default, 20), not the planner''s 1000 rows'
);

SELECT * FROM finish();
ROLLBACK;
