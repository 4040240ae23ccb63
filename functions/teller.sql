-- Counters for what the NMC deliberately does not store.

CREATE OR REPLACE FUNCTION nmc.count_teller(p_naam text, p_aantal bigint DEFAULT 1)
RETURNS void
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO nmc.teller AS t (naam, aantal, bijgewerkt_op)
    VALUES (p_naam, p_aantal, pg_catalog.now())
    ON CONFLICT (naam) DO UPDATE
    SET aantal = t.aantal + excluded.aantal, bijgewerkt_op = excluded.bijgewerkt_op;
END
$$;
COMMENT ON FUNCTION nmc.count_teller(text, bigint) IS
'Raises a named counter (nmc.teller) by p_aantal. Internal.';

CREATE OR REPLACE FUNCTION nmc.count_refused_callback(p_aantal integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_aantal IS NULL OR p_aantal NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'a count of refused callbacks is between 1 and 1000000'
            USING ERRCODE = '22023';
    END IF;
    PERFORM nmc.count_teller('receipt_ongeautoriseerd', p_aantal);
END
$$;
COMMENT ON FUNCTION nmc.count_refused_callback(integer) IS
'Counts NotifyNL callbacks the API refused with 401 (no or a wrong bearer token): rejected '
'receipts are counted, not stored (ADR 0024). The API adds up the refusals that arrive '
'while one count is being written (p_aantal), so a flood costs one statement at a time. '
'Only the number: nothing of the request is kept.';
