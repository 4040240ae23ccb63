-- The look for work before a claim: which of the given task kinds have anything to claim
-- now. A worker asks this once per poll interval for all its kinds that are waiting, and
-- only those with work run their claim: an idle kind's claim found nothing at a cost
-- (planned per call) that was most of an idle stack's.

CREATE OR REPLACE FUNCTION nmc.soorten_met_werk(p_soorten nmc.taak_soort[])
RETURNS text[]
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden): not five custom ones first on
-- each of the pool's connections.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
BEGIN
    -- PL/pgSQL, not SQL: its plan is kept for the session. As a SQL function (with its SET
    -- clause it is never inlined) the query was planned on every call, at 15x the cost.
    -- What the claims take (nmc.taak_claimbaar): an open task that is due, or a lease that
    -- ran out. Asked of the kind's earliest due and earliest lease end, each one step into
    -- the start of its partial index (taak_due, taak_lease) whatever the statistics say:
    -- as EXISTS (... due <= now) a small table's plan scanned the table once per kind
    -- (2.2 ms a look on 2,000 tasks, against 0.18 ms).
    RETURN (
        SELECT coalesce(pg_catalog.array_agg(s.soort::text ORDER BY s.soort), '{}')
        FROM unnest(p_soorten) AS s (soort)
        WHERE s.soort <> 'terugkoppelen' AND nmc.taak_claimbaar('open', (
            SELECT pg_catalog.min(t.due) FROM nmc.taak AS t
            WHERE t.soort = s.soort AND t.staat = 'open'
        ), NULL, v_nu) OR s.soort = 'terugkoppelen' AND EXISTS (
            -- A webhook's task is due every webhook_interval whether or not it has events:
            -- the look wakes it only when events wait after its delivery position, or for
            -- upkeep once its position went a minute untouched (the claim then moves it up
            -- to the watermark and checks the gap and the validation again). An idle
            -- webhook's claim and finish were most of an idle stack's CPU.
            SELECT 1 FROM nmc.taak AS t
            LEFT JOIN nmc.webhookpositie AS w ON w.dv_id = t.dv_id
            WHERE t.soort = 'terugkoppelen' AND t.staat = 'open'
                AND nmc.taak_claimbaar('open', t.due, NULL, v_nu)
                AND (
                    w.dv_id IS NULL
                    OR w.bijgewerkt_op <= v_nu - INTERVAL '1 minute'
                    OR nmc.webhook_events_wachten(w.dv_id, w.xid, w.event_id)
                )
        ) OR nmc.taak_claimbaar('claimed', NULL, (
            SELECT pg_catalog.min(t.lease_tot) FROM nmc.taak AS t
            WHERE t.soort = s.soort AND t.staat = 'claimed'
        ), v_nu)
    );
END
$$;
COMMENT ON FUNCTION nmc.soorten_met_werk(nmc.taak_soort[]) IS
'Of the given task kinds, those with something to claim now (nmc.taak_claimbaar, as the '
'claims find it: an open task due by nmc.now(), or a claimed one whose lease ran out), '
'sorted. The '
'worker''s look for work before it runs a kind''s claim: two index probes per kind. A '
'webhook''s task (terugkoppelen) counts only when events wait after its delivery position '
'(nmc.webhook_events_wachten) or its position went a minute untouched: stricter than its '
'claim, which takes any due task.';
