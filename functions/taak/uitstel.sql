-- Growing backoff for deferred and failed tasks.

CREATE OR REPLACE FUNCTION nmc.uitstel(p_keer integer)
RETURNS interval
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT least(i.uitstel_basis * pg_catalog.power(2, least(p_keer, 30)), i.uitstel_max)
        FROM nmc.instellingen AS i
    );
END
$$;
COMMENT ON FUNCTION nmc.uitstel(integer) IS
'The wait before the next try after p_keer earlier deferrals or failures: uitstel_basis '
'doubled per try, capped at uitstel_max (settings).';
