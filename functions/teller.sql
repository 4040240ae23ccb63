-- Counters for what the NMC deliberately does not store.

CREATE OR REPLACE FUNCTION nmc.count_teller(p_naam text, p_aantal bigint DEFAULT 1)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO nmc.teller AS t (naam, aantal, bijgewerkt_op)
    VALUES (p_naam, p_aantal, pg_catalog.now())
    ON CONFLICT (naam) DO UPDATE
    SET aantal = t.aantal + excluded.aantal, bijgewerkt_op = excluded.bijgewerkt_op
$$;
COMMENT ON FUNCTION nmc.count_teller(text, bigint) IS
'Raises a named counter (nmc.teller) by p_aantal. Internal.';
