-- NotifyNL's two 429s, told apart by their error type (shared/notifynl-contract.md):
-- RateLimitError (our pace: the service counted more than the NMC's pace allows, e.g. other
-- senders on the same service) and TooManyRequestsError (the service's day is used up).

CREATE OR REPLACE FUNCTION nmc.meld_notifynl_limiet(p_service text, p_limiet text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_dag CONSTANT date := (v_nu AT TIME ZONE 'UTC')::date;
BEGIN
    IF p_limiet NOT IN ('tempo', 'dag') THEN
        RAISE EXCEPTION 'unknown NotifyNL limit %', p_limiet USING ERRCODE = '22023';
    END IF;
    -- tempo: the pace is halved for a minute and the burst spent (the next grant waits an
    -- interval); dag: nothing more is granted until 00:00 UTC, for every worker at once.
    INSERT INTO nmc.verzendtempo AS v (
        notify_service, soort, tat, vertraagd_tot, dag, dag_op, tempo_weigeringen,
        dag_weigeringen
    )
    VALUES (
        p_service, 'verzenden', v_nu + INTERVAL '1 second',
        CASE WHEN p_limiet = 'tempo' THEN v_nu + INTERVAL '1 minute' END,
        v_dag, p_limiet = 'dag',
        CASE WHEN p_limiet = 'tempo' THEN 1 ELSE 0 END,
        CASE WHEN p_limiet = 'dag' THEN 1 ELSE 0 END
    )
    ON CONFLICT (notify_service, soort) DO UPDATE
    SET tat = CASE WHEN p_limiet = 'tempo' THEN greatest(v.tat, v_nu + INTERVAL '1 second')
            ELSE v.tat END,
        vertraagd_tot = CASE WHEN p_limiet = 'tempo' THEN v_nu + INTERVAL '1 minute'
            ELSE v.vertraagd_tot END,
        dag_gebruikt = CASE WHEN v.dag = v_dag THEN v.dag_gebruikt ELSE 0 END,
        dag_op = (v.dag_op AND v.dag = v_dag) OR p_limiet = 'dag',
        dag = v_dag,
        tempo_weigeringen = v.tempo_weigeringen + CASE WHEN p_limiet = 'tempo' THEN 1 ELSE 0 END,
        dag_weigeringen = v.dag_weigeringen + CASE WHEN p_limiet = 'dag' THEN 1 ELSE 0 END;
END
$$;
COMMENT ON FUNCTION nmc.meld_notifynl_limiet(text, text) IS
'Records a 429 of NotifyNL for a service''s sends: tempo (RateLimitError) halves its pace '
'for a minute; dag (TooManyRequestsError) marks its UTC day used up, so no worker is '
'granted a send of that service until 00:00 UTC. Both are counted per service.';

CREATE OR REPLACE FUNCTION nmc.defer_limiet_taak(
    p_taak_id bigint, p_claim_epoch integer, p_service text, p_limiet text, p_fout text
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uitkomst text;
BEGIN
    -- The task's lock first (as every claim takes it before the budget row), then the
    -- service's row. A used-up day: the task waits for 00:00 UTC and nothing counts
    -- against it; a rate limit: the backoff of any deferral.
    v_uitkomst := nmc.defer_taak_tot(
        p_taak_id, p_claim_epoch, p_fout,
        CASE WHEN p_limiet = 'dag' THEN
            (pg_catalog.date_trunc('day', nmc.now() AT TIME ZONE 'UTC') + INTERVAL '1 day')
            AT TIME ZONE 'UTC'
        END,
        p_limiet = 'tempo'
    );
    PERFORM nmc.meld_notifynl_limiet(p_service, p_limiet);
    RETURN v_uitkomst;
END
$$;
COMMENT ON FUNCTION nmc.defer_limiet_taak(bigint, integer, text, text, text) IS
'After a 429 of NotifyNL on a call of this task: records it (nmc.meld_notifynl_limiet) and '
'defers the task, until 00:00 UTC without counting it for a used-up day (dag), with the '
'backoff of any deferral for a rate limit (tempo). A send that cannot go before its '
'geldig_tot ends verlopen. Returns uitgesteld or verlopen; NM011 when stale; 22023 for an '
'unknown limit.';

-- The operator's settings of a NotifyNL service (nmc admin notify-service).

CREATE OR REPLACE FUNCTION nmc.list_notify_services()
RETURNS TABLE (
    code text, per_minuut integer, navraag_aandeel numeric, burst integer,
    burst_ingesteld boolean, dag_limiet integer, eigen_rij boolean
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- Every service configured or named by a berichttype, with what the budget applies.
    SELECT s.code, i.per_minuut, i.navraag_aandeel, k.burst, i.burst IS NOT NULL,
        i.dag_limiet, n.code IS NOT NULL
    FROM (
        SELECT c.code FROM nmc.notify_service AS c
        UNION
        SELECT b.notify_service FROM nmc.berichttype AS b
    ) AS s
    LEFT JOIN nmc.notify_service AS n ON n.code = s.code
    CROSS JOIN LATERAL nmc.verzendtempo_instelling(s.code) AS i
    CROSS JOIN LATERAL nmc.verzendtempo_kind(
        i.per_minuut, i.navraag_aandeel, i.burst, 'verzenden'
    ) AS k
    ORDER BY s.code
$$;
COMMENT ON FUNCTION nmc.list_notify_services() IS
'Every NotifyNL service the NMC knows (a row in nmc.notify_service or named by a '
'berichttype) with the limits its budget applies: rate per 60 s, reconciliation share, '
'the send burst (derived unless burst_ingesteld), the daily limit; eigen_rij false: '
'NotifyNL''s defaults.';

CREATE OR REPLACE FUNCTION nmc.set_notify_service(
    p_code text,
    p_per_minuut integer DEFAULT NULL,
    p_navraag_aandeel numeric DEFAULT NULL,
    p_burst integer DEFAULT NULL,
    p_dag_limiet integer DEFAULT NULL,
    p_burst_afleiden boolean DEFAULT FALSE
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_burst IS NOT NULL AND p_burst_afleiden THEN
        RAISE EXCEPTION 'give a burst or derive it, not both' USING ERRCODE = '22023';
    END IF;
    -- NULL keeps what the service has (or NotifyNL's default for a new row); the table's
    -- checks refuse what NotifyNL could not accept (a burst above its bucket of 1000).
    INSERT INTO nmc.notify_service AS s (
        code, budget_per_minuut, navraag_aandeel, burst, dag_limiet
    )
    VALUES (
        p_code, coalesce(p_per_minuut, 3000), coalesce(p_navraag_aandeel, 0.1), p_burst,
        coalesce(p_dag_limiet, 250000)
    )
    ON CONFLICT (code) DO UPDATE
    SET budget_per_minuut = coalesce(p_per_minuut, s.budget_per_minuut),
        navraag_aandeel = coalesce(p_navraag_aandeel, s.navraag_aandeel),
        burst = CASE WHEN p_burst_afleiden THEN NULL ELSE coalesce(p_burst, s.burst) END,
        dag_limiet = coalesce(p_dag_limiet, s.dag_limiet);
END
$$;
COMMENT ON FUNCTION nmc.set_notify_service(text, integer, numeric, integer, integer, boolean) IS
'Sets a NotifyNL service''s limits for the budget (an operator''s: nmc admin notify-service '
'set): the rate per 60 s, the reconciliation share, the send burst (p_burst_afleiden: back '
'to one second of the rate) and the daily limit. NULL keeps the current value. 23514 for '
'values the table refuses, 22023 for a burst both given and derived.';
