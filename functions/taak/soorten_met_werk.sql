-- The look for work before a claim: which of the given task kinds have anything to claim
-- now. A worker asks this once per poll interval for all its kinds that are waiting, and
-- only those with work run their claim: an idle kind's claim found nothing at a cost
-- (planned per call) that was most of an idle stack's.

CREATE OR REPLACE FUNCTION nmc.soorten_met_werk(p_soorten nmc.taak_soort[])
RETURNS text[]
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- What nmc.lock_due_taken claims: an open task that is due, or a lease that ran out.
    WITH nu AS (SELECT nmc.now() AS nu)

    SELECT coalesce(pg_catalog.array_agg(s.soort::text ORDER BY s.soort), '{}')
    FROM unnest(p_soorten) AS s (soort), nu
    WHERE EXISTS (
        SELECT 1 FROM nmc.taak AS t
        WHERE t.soort = s.soort AND t.staat = 'open' AND t.due <= nu.nu
    ) OR EXISTS (
        SELECT 1 FROM nmc.taak AS t
        WHERE t.soort = s.soort AND t.staat = 'claimed' AND t.lease_tot < nu.nu
    )
$$;
COMMENT ON FUNCTION nmc.soorten_met_werk(nmc.taak_soort[]) IS
'Of the given task kinds, those with something to claim now (as nmc.lock_due_taken finds '
'it: an open task due by nmc.now(), or a claimed one whose lease ran out), sorted. The '
'worker''s look for work before it runs a kind''s claim: two index probes per kind.';
