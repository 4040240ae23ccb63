-- What a claim may take (SPEC §5), written once: an open task whose due has come, or a
-- claimed one whose lease ran out (its worker died). The worker's look for work
-- (nmc.soorten_met_werk) and the claims (nmc.lock_due_taken, nmc.lock_due_verzenden) all
-- ask it, so they cannot disagree about a deferred task or an expired lease.

CREATE OR REPLACE FUNCTION nmc.taak_claimbaar(
    p_staat nmc.taak_staat, p_due timestamptz, p_lease_tot timestamptz, p_nu timestamptz
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement. A caller that
-- walks one state's partial index (taak_due, taak_claim, taak_verzenden_open: open;
-- taak_lease: claimed) passes that state as a constant beside its own `staat = ...`: the
-- CASE then folds to that state's comparison alone (due <= now, lease_tot < now), the
-- same index condition as when it was written out.
AS $$
    SELECT CASE p_staat
        WHEN 'open' THEN p_due <= p_nu
        WHEN 'claimed' THEN p_lease_tot < p_nu
        ELSE false
    END
$$;
COMMENT ON FUNCTION nmc.taak_claimbaar(nmc.taak_staat, timestamptz, timestamptz, timestamptz) IS
'Whether a task in state p_staat may be claimed at p_nu: open and due (p_due <= p_nu), or '
'claimed with its lease run out (p_lease_tot < p_nu); never in any other state. The one '
'rule of nmc.soorten_met_werk, nmc.lock_due_taken and nmc.lock_due_verzenden; inlined '
'(pass the state scanned as a constant to keep its partial index).';
