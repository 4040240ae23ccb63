-- The NMC clock (SPEC §10): every rule reads nmc.now(); tests move it forward.

CREATE OR REPLACE FUNCTION nmc.now()
RETURNS timestamptz
-- PL/pgSQL, not SQL: a SQL function with SECURITY DEFINER is never inlined, and PostgreSQL
-- 15 plans its query again at every call site in every transaction (some 14 calls per
-- notification, ~40 us each); PL/pgSQL keeps the plan for the session (~10 us a call).
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pg_catalog.now() + (SELECT k.verschuiving FROM nmc.klok AS k);
END
$$;
COMMENT ON FUNCTION nmc.now() IS
'The NMC clock: transaction start time plus the test offset in nmc.klok (zero in '
'production). Every lifecycle rule reads this, never now() directly.';

CREATE OR REPLACE FUNCTION nmc.advance_clock(p_duur interval)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_duur IS NULL OR p_duur < '0 seconds' THEN
        RAISE EXCEPTION 'the NMC clock only moves forward'
            USING ERRCODE = 'NM012', HINT = 'Pass a positive interval, e.g. ''7 days''.';
    END IF;
    UPDATE nmc.klok SET verschuiving = verschuiving + p_duur;
    RETURN nmc.now();
END
$$;
COMMENT ON FUNCTION nmc.advance_clock(interval) IS
'Moves the NMC clock forward (tests and the demo only: no application role may execute '
'it; the CLI also refuses unless NMC_TEST_CLOCK=1). Returns the new clock time.';
