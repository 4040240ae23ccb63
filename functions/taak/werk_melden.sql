-- A hint that work may wait, for the workers' lookouts: the API sends it (debounced, in a
-- transaction of its own) after an intake or a batch of receipts; a worker listens on a
-- direct connection of its own. Only a hint: the look (nmc.soorten_met_werk) stays the
-- truth, and a worker without the hint looks at its full pace. NOTIFY takes a lock that
-- serialises the commits of the transactions that send one: hence never inside an intake.

CREATE OR REPLACE FUNCTION nmc.meld_werk()
RETURNS void
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.pg_notify('nmc_werk', '')
$$;
COMMENT ON FUNCTION nmc.meld_werk() IS
'Notifies channel nmc_werk (no payload) at commit: a hint to idle workers that work may '
'wait. Sent by the API in a transaction of its own, at most a few times a second.';

CREATE OR REPLACE FUNCTION nmc.luister_naar_werk()
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Takes effect when the calling transaction commits (the worker calls it in autocommit).
    LISTEN nmc_werk;
END
$$;
COMMENT ON FUNCTION nmc.luister_naar_werk() IS
'LISTEN on channel nmc_werk for this session (effective at commit): the worker''s hint '
'connection, a direct one (a LISTEN does not survive PgBouncer''s transaction mode).';
