-- Intake quota per DV (SPEC §7): a counter per minute and per day, taken in the intake
-- transaction, so a refused intake (429) leaves no trace.

CREATE OR REPLACE FUNCTION nmc.take_intake_quotum(
    p_dv nmc.dienstverlener,
    p_aantal integer,
    p_nu timestamptz
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_minuut CONSTANT timestamptz := pg_catalog.date_trunc('minute', p_nu);
    v_dag CONSTANT timestamptz := pg_catalog.date_trunc('day', p_nu, 'Europe/Amsterdam');
    v_boven text;
BEGIN
    -- Each session counts in its own share of the window's rows (by backend pid), so
    -- concurrent intakes of one DV do not wait for each other's commit; the check sums
    -- all shares. Committed counts of others are seen, in-flight ones not: concurrent
    -- intakes may overshoot the quota by at most their number, never undercount.
    INSERT INTO nmc.quotumgebruik AS q (dv_id, venster, venster_start, deel, aantal)
    VALUES
    (p_dv.dv_id, 'minuut', v_minuut, pg_catalog.pg_backend_pid() % 16, p_aantal),
    (p_dv.dv_id, 'dag', v_dag, pg_catalog.pg_backend_pid() % 16, p_aantal)
    ON CONFLICT (dv_id, venster, venster_start, deel)
    DO UPDATE SET aantal = q.aantal + excluded.aantal;

    SELECT g.venster INTO v_boven
    FROM (
        SELECT q.venster, pg_catalog.sum(q.aantal) AS aantal
        FROM nmc.quotumgebruik AS q
        WHERE q.dv_id = p_dv.dv_id
            AND ((q.venster = 'minuut' AND q.venster_start = v_minuut)
                 OR (q.venster = 'dag' AND q.venster_start = v_dag))
        GROUP BY q.venster
    ) AS g
    WHERE (g.venster = 'minuut' AND g.aantal > p_dv.quotum_per_minuut)
        OR (g.venster = 'dag' AND g.aantal > p_dv.quotum_per_dag)
    -- The day window waits longest; report it when both are exceeded.
    ORDER BY g.venster = 'dag' DESC
    LIMIT 1;

    IF v_boven IS NOT NULL THEN
        RAISE EXCEPTION 'intake quota per % exceeded', v_boven
            USING ERRCODE = 'NM009',
            DETAIL = pg_catalog.ceil(EXTRACT(EPOCH FROM (
                CASE v_boven
                    WHEN 'minuut' THEN v_minuut + INTERVAL '1 minute'
                    ELSE (v_dag AT TIME ZONE 'Europe/Amsterdam' + INTERVAL '1 day')
                        AT TIME ZONE 'Europe/Amsterdam'
                END - p_nu
            )))::bigint::text;
    END IF;
END
$$;
COMMENT ON FUNCTION nmc.take_intake_quotum(nmc.dienstverlener, integer, timestamptz) IS
'Counts p_aantal new notifications against the DV''s quota per minute and per (Amsterdam) '
'day (an upsert into this session''s share of the window, then the sum). Over either '
'quota: NM009 with '
'DETAIL = seconds until the exceeded window ends (the Retry-After); the caller''s '
'transaction rolls back, counter included.';
