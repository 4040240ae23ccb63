-- The send budget (SPEC §5): NotifyNL's limits per service, read from its own code
-- (shared/notifynl-contract.md, Limits). Its rate limit counts a rolling 60-second window
-- (the fork) or a token bucket of at most min(ceil(rate/3)+1, 1000) tokens refilled at
-- rate/60 a second (upstream); its day counts sends per UTC day. The NMC paces each kind
-- with a generic cell rate algorithm (GCRA) on one row: a burst of at most b tokens, then
-- one token every 60/(r - b) seconds, so no 60-second span ever holds more than r and no
-- burst exceeds the bucket. No refiller and no other lock.

CREATE OR REPLACE FUNCTION nmc.verzendtempo_instelling(p_service text)
RETURNS TABLE (
    per_minuut integer, navraag_aandeel numeric, burst integer, dag_limiet integer
)
LANGUAGE sql
STABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): it is read per service row.
AS $$
    -- A service without a row of its own has NotifyNL's defaults.
    SELECT
        coalesce(s.budget_per_minuut, 3000),
        coalesce(s.navraag_aandeel, 0.1),
        s.burst,
        coalesce(s.dag_limiet, 250000)
    FROM (SELECT 1) AS een
    LEFT JOIN nmc.notify_service AS s ON s.code = p_service
$$;
COMMENT ON FUNCTION nmc.verzendtempo_instelling(text) IS
'The limits of a NotifyNL service as the budget applies them: rate per 60 s, the '
'reconciliation share, the burst (NULL: derived) and the daily limit; NotifyNL''s '
'defaults (3000, 0.1, NULL, 250000) for a service without a row in nmc.notify_service.';

CREATE OR REPLACE FUNCTION nmc.verzendtempo_kind(
    p_per_minuut integer, p_navraag_aandeel numeric, p_burst integer, p_soort text
)
RETURNS TABLE (per_minuut integer, burst integer)
LANGUAGE sql
IMMUTABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): it is read per service row.
AS $$
    -- Reconciliation has a fixed share of the rate (its GETs are not rate limited by
    -- NotifyNL: the share is headroom that also absorbs the workers' jitter); sends the rest.
    -- The burst: the setting for sends, else one second of the kind's rate; always below
    -- the rate, so the even part of the pace (r - b a minute) is never empty.
    SELECT k.r, least(greatest(coalesce(CASE WHEN p_soort = 'verzenden' THEN p_burst END,
        pg_catalog.ceil(k.r / 60.0)::integer), 1), greatest(k.r - 1, 1), 1000)
    FROM (
        SELECT CASE p_soort
            WHEN 'navraag' THEN greatest(pg_catalog.floor(p_per_minuut * p_navraag_aandeel), 1)
            WHEN 'verzenden' THEN p_per_minuut - pg_catalog.floor(p_per_minuut * p_navraag_aandeel)
        END::integer AS r
    ) AS k
$$;
COMMENT ON FUNCTION nmc.verzendtempo_kind(integer, numeric, integer, text) IS
'Rate per 60 s and burst of one kind (verzenden, navraag) from a service''s settings '
'(nmc.verzendtempo_instelling). NULL rate for an unknown kind.';

CREATE OR REPLACE FUNCTION nmc.verzendtempo_interval(
    p_per_minuut integer, p_burst integer, p_vertraagd boolean
)
RETURNS TABLE (t double precision, b integer)
LANGUAGE sql
IMMUTABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): planned once with the caller's plan.
AS $$
    -- The even part of the pace is r - b tokens a minute, so a burst plus a minute of the
    -- even pace is r: never more than r in any 60 seconds. After a RateLimitError: half the
    -- pace and half the burst.
    SELECT
        60.0 / greatest(p_per_minuut - p_burst, 1) * CASE WHEN p_vertraagd THEN 2 ELSE 1 END,
        CASE WHEN p_vertraagd THEN greatest(p_burst / 2, 1) ELSE p_burst END
$$;
COMMENT ON FUNCTION nmc.verzendtempo_interval(integer, integer, boolean) IS
'The GCRA interval in seconds (60 / (rate - burst), doubled when slowed) and the burst. '
'Internal to nmc.take_budget.';

CREATE OR REPLACE FUNCTION nmc.verzendtempo_toekenning(
    p_tat timestamptz, p_nu timestamptz, p_per_minuut integer, p_burst integer,
    p_vertraagd boolean, p_gewenst integer, p_dag_rest integer
)
RETURNS integer
-- PL/pgSQL: its plan is kept for the session; as SQL (its body has a FROM, so it is never
-- inlined) it was planned at every call, three times per claim.
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_t double precision;
    v_b integer;
BEGIN
    SELECT g.t, g.b INTO v_t, v_b
    FROM nmc.verzendtempo_interval(p_per_minuut, p_burst, p_vertraagd) AS g;
    -- GCRA: with interval T and burst b the next token is due at tat; k tokens are granted
    -- at once while tat + (k - 1)T <= now + (b - 1)T, i.e. k <= b - (tat - now)/T.
    RETURN greatest(least(
        p_gewenst,
        p_dag_rest,
        pg_catalog.floor(v_b - EXTRACT(EPOCH FROM greatest(p_tat, p_nu) - p_nu) / v_t + 1e-9)::integer
    ), 0);
END
$$;
COMMENT ON FUNCTION nmc.verzendtempo_toekenning(
    timestamptz, timestamptz, integer, integer, boolean, integer, integer
) IS
'How many of p_gewenst tokens the pace grants now (GCRA), bounded by what is left of the '
'day. Internal to nmc.take_budget.';

CREATE OR REPLACE FUNCTION nmc.verzendtempo_dag_rest(
    p_rij nmc.verzendtempo, p_dag date, p_dag_limiet integer, p_gewenst integer
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): planned once with the caller's plan.
AS $$
    -- No limit for reconciliation (NULL limit); a new UTC day starts with the whole limit.
    SELECT CASE
        WHEN p_dag_limiet IS NULL THEN p_gewenst
        WHEN p_rij.dag <> p_dag THEN p_dag_limiet
        WHEN p_rij.dag_op THEN 0
        ELSE greatest(p_dag_limiet - p_rij.dag_gebruikt, 0)
    END
$$;
COMMENT ON FUNCTION nmc.verzendtempo_dag_rest(nmc.verzendtempo, date, integer, integer) IS
'What is left of the service''s UTC day for a take (p_gewenst when the kind has no daily '
'limit). Internal to nmc.take_budget.';

CREATE OR REPLACE FUNCTION nmc.take_budget(p_service text, p_soort text, p_gewenst integer)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_dag CONSTANT date := (v_nu AT TIME ZONE 'UTC')::date;
    v_instelling record;
    v_kind record;
    v_dag_limiet integer;
    v_toegekend integer;
BEGIN
    IF p_gewenst <= 0 THEN
        RETURN 0;
    END IF;
    SELECT * INTO v_instelling FROM nmc.verzendtempo_instelling(p_service);
    SELECT * INTO v_kind FROM nmc.verzendtempo_kind(
        v_instelling.per_minuut, v_instelling.navraag_aandeel, v_instelling.burst, p_soort
    );
    IF v_kind.per_minuut IS NULL THEN
        RAISE EXCEPTION 'unknown budget kind %', p_soort USING ERRCODE = '22023';
    END IF;
    -- NotifyNL counts sends against the day, not the reads of reconciliation.
    v_dag_limiet := CASE p_soort WHEN 'verzenden' THEN v_instelling.dag_limiet END;

    -- One statement: the SET expressions read the row as it was, under the row lock the
    -- upsert takes, so concurrent takes queue on the row and each sees the one before.
    -- The per-minute record (nmc.verzendbudget) is written by the same statement.
    WITH tempo AS (
        INSERT INTO nmc.verzendtempo AS v (notify_service, soort, tat, laatst_toegekend, dag,
            dag_gebruikt)
        SELECT p_service, p_soort, v_nu + g.toegekend * i.t * INTERVAL '1 second',
            g.toegekend, v_dag, CASE WHEN p_soort = 'verzenden' THEN g.toegekend ELSE 0 END
        FROM nmc.verzendtempo_interval(v_kind.per_minuut, v_kind.burst, false) AS i
        CROSS JOIN LATERAL (
            SELECT nmc.verzendtempo_toekenning(
                v_nu, v_nu, v_kind.per_minuut, v_kind.burst, false, p_gewenst,
                coalesce(v_dag_limiet, p_gewenst)
            ) AS toegekend
        ) AS g
        ON CONFLICT (notify_service, soort) DO UPDATE
        SET laatst_toegekend = nmc.verzendtempo_toekenning(
                v.tat, v_nu, v_kind.per_minuut, v_kind.burst, v.vertraagd_tot > v_nu,
                p_gewenst, nmc.verzendtempo_dag_rest(v, v_dag, v_dag_limiet, p_gewenst)
            ),
            tat = greatest(v.tat, v_nu) + nmc.verzendtempo_toekenning(
                v.tat, v_nu, v_kind.per_minuut, v_kind.burst, v.vertraagd_tot > v_nu,
                p_gewenst, nmc.verzendtempo_dag_rest(v, v_dag, v_dag_limiet, p_gewenst)
            ) * (
                SELECT i.t FROM nmc.verzendtempo_interval(
                    v_kind.per_minuut, v_kind.burst, coalesce(v.vertraagd_tot > v_nu, false)
                ) AS i
            ) * INTERVAL '1 second',
            dag_gebruikt = CASE WHEN v.dag = v_dag THEN v.dag_gebruikt ELSE 0 END
                + CASE WHEN p_soort = 'verzenden' THEN nmc.verzendtempo_toekenning(
                    v.tat, v_nu, v_kind.per_minuut, v_kind.burst, v.vertraagd_tot > v_nu,
                    p_gewenst, nmc.verzendtempo_dag_rest(v, v_dag, v_dag_limiet, p_gewenst)
                ) ELSE 0 END,
            dag_op = v.dag_op AND v.dag = v_dag,
            dag = v_dag
        RETURNING v.laatst_toegekend
    ),

    minuut AS (
        INSERT INTO nmc.verzendbudget AS b (
            notify_service, venster_start, soort, gebruikt, laatst_toegekend
        )
        SELECT p_service, pg_catalog.date_trunc('minute', v_nu), p_soort, t.laatst_toegekend,
            t.laatst_toegekend
        FROM tempo AS t WHERE t.laatst_toegekend > 0
        ON CONFLICT (notify_service, venster_start, soort) DO UPDATE
        SET gebruikt = b.gebruikt + excluded.gebruikt,
            laatst_toegekend = excluded.laatst_toegekend
    )

    SELECT t.laatst_toegekend INTO v_toegekend FROM tempo AS t;
    RETURN v_toegekend;
END
$$;
COMMENT ON FUNCTION nmc.take_budget(text, text, integer) IS
'Takes up to p_gewenst tokens of kind verzenden or navraag of a NotifyNL service and '
'returns how many were granted (0 while the pace or the day allows none). The pace per '
'kind: a burst of at most b, then evenly r - b a minute, so never more than r in any 60 '
'seconds (r: the rate less the reconciliation share for sends, that share for '
'reconciliation); halved for a minute after a RateLimitError. Sends also stop at the '
'service''s daily limit, or once NotifyNL said the day is used up, until 00:00 UTC. One '
'upsert of the service''s nmc.verzendtempo row (and of the minute''s nmc.verzendbudget '
'record); exact however many workers take at once.';

CREATE OR REPLACE FUNCTION nmc.verzenddag()
RETURNS SETOF nmc.verzenddag_stand
LANGUAGE sql
STABLE
-- No SET search_path, so it is inlined into nmc.metrics and the console's budget view
-- (pinned there): as a function of its own it cost about half a millisecond per service.
AS $$
    -- Today's sends per service: a service whose row is of an earlier day sent nothing yet.
    SELECT v.notify_service, k.per_minuut, k.burst, d.dag,
        CASE WHEN v.dag = d.dag THEN v.dag_gebruikt ELSE 0 END, i.dag_limiet,
        v.dag_op AND v.dag = d.dag, v.tempo_weigeringen, v.dag_weigeringen
    FROM nmc.verzendtempo AS v
    CROSS JOIN (SELECT ((SELECT nmc.now()) AT TIME ZONE 'UTC')::date AS dag) AS d
    CROSS JOIN LATERAL nmc.verzendtempo_instelling(v.notify_service) AS i
    CROSS JOIN LATERAL nmc.verzendtempo_kind(
        i.per_minuut, i.navraag_aandeel, i.burst, 'verzenden'
    ) AS k
    WHERE v.soort = 'verzenden'
    ORDER BY v.notify_service
$$;
COMMENT ON FUNCTION nmc.verzenddag() IS
'Per NotifyNL service: the send pace (rate per 60 s and burst), today''s sends (UTC day) '
'against the daily limit, whether NotifyNL said the day is used up, and the 429s it '
'answered (RateLimitError, TooManyRequestsError).';
