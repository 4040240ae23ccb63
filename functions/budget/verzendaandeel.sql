-- A fair share of a NotifyNL service's day (SPEC §5, docs/dag-aandeel.md). No DV can take
-- the day from the others: the heavy consumers of the service today (the largest one, and
-- any DV above the base share of the day) may together not push the service's day total
-- above limit - reserve(t); every other DV may use the day up to the limit. The reserve is
--   reserve(t) = max(base share x limit x (time left in the UTC day / 24 h),
--                    the other DVs' sends over the last hour x hours left x safety factor)
-- so it keeps what the others are sending at now until 00:00 UTC, and at least a share of
-- the day that shrinks towards the evening: a heavy consumer stops once its headroom is
-- gone, sends again as the reserve shrinks, and the rest goes after 00:00 UTC.

CREATE OR REPLACE FUNCTION nmc.verzendaandeel_reserve(
    p_dag_limiet integer, p_seconden_over double precision, p_anderen_laatste_uur numeric
)
RETURNS integer
LANGUAGE sql
IMMUTABLE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): planned once with the caller's plan.
AS $$
    -- Base share 10% of the day, safety factor 1.25 (docs/dag-aandeel.md).
    SELECT least(pg_catalog.ceil(greatest(
        0.1 * p_dag_limiet * p_seconden_over / 86400.0,
        p_anderen_laatste_uur * p_seconden_over / 3600.0 * 1.25
    )), p_dag_limiet)::integer
$$;
COMMENT ON FUNCTION nmc.verzendaandeel_reserve(integer, double precision, numeric) IS
'The part of a service''s day kept for the DVs other than its heavy consumers: the larger '
'of 10% of the daily limit times the fraction of the UTC day left and the others'' sends '
'over the last hour times the hours left times 1.25; at most the limit.';

CREATE OR REPLACE FUNCTION nmc.verzendaandeel_ruimte(p_service text)
RETURNS TABLE (zware_dvs integer[], ruimte integer)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_uur CONSTANT timestamptz := pg_catalog.date_trunc('hour', v_nu);
    v_dag CONSTANT timestamptz :=
        pg_catalog.date_trunc('day', v_nu AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    -- The last hour from whole-hour rows: this hour and the part of the previous hour
    -- that is still within 60 minutes.
    v_vorig_deel CONSTANT double precision :=
        1 - EXTRACT(EPOCH FROM v_nu - v_uur)::double precision / 3600.0;
    v_over CONSTANT double precision :=
        EXTRACT(EPOCH FROM v_dag + INTERVAL '1 day' - v_nu)::double precision;
    v_limiet integer;
BEGIN
    SELECT i.dag_limiet INTO v_limiet FROM nmc.verzendtempo_instelling(p_service) AS i;
    RETURN QUERY
    WITH per_dv AS (
        SELECT a.dv_id,
            coalesce(pg_catalog.sum(a.gebruikt) FILTER (WHERE a.uur >= v_dag), 0) AS vandaag,
            coalesce(pg_catalog.sum(
                CASE WHEN a.uur = v_uur THEN a.gebruikt ELSE a.gebruikt * v_vorig_deel END
            ) FILTER (WHERE a.uur >= v_uur - INTERVAL '1 hour'), 0) AS laatste_uur
        FROM nmc.verzendaandeel AS a
        WHERE a.notify_service = p_service AND a.uur >= least(v_dag, v_uur - INTERVAL '1 hour')
        GROUP BY a.dv_id
    ),

    -- Heavy: today's largest consumer (the lowest id of a tie), or above the base share.
    gerangschikt AS (
        SELECT p.dv_id, p.vandaag, p.laatste_uur,
            p.vandaag > 0 AND (
                pg_catalog.row_number() OVER (ORDER BY p.vandaag DESC, p.dv_id) = 1
                OR p.vandaag > 0.1 * v_limiet
            ) AS zwaar
        FROM per_dv AS p
    )

    SELECT
        coalesce(pg_catalog.array_agg(g.dv_id ORDER BY g.dv_id) FILTER (WHERE g.zwaar), '{}'),
        greatest(v_limiet - nmc.verzendaandeel_reserve(
            v_limiet, v_over,
            coalesce(pg_catalog.sum(g.laatste_uur) FILTER (WHERE NOT g.zwaar), 0)::numeric
        ) - coalesce(pg_catalog.sum(g.vandaag), 0), 0)::integer
    FROM gerangschikt AS g;
END
$$;
COMMENT ON FUNCTION nmc.verzendaandeel_ruimte(text) IS
'The fair share of a service''s UTC day now: its heavy consumers today (the largest, and '
'any DV above 10% of the daily limit) and how many sends they may still take together '
'(the limit less the reserve for the other DVs, nmc.verzendaandeel_reserve, less '
'today''s sends). Other DVs are bounded by the day alone. Read by nmc.claim_verzenden '
'before it takes tokens.';

CREATE OR REPLACE FUNCTION nmc.boek_verzendaandeel(p_service text, p_dv_ids integer[])
RETURNS void
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- One row per DV in the hour; DVs in id order so concurrent claims lock alike.
    INSERT INTO nmc.verzendaandeel AS a (notify_service, uur, dv_id, gebruikt)
    SELECT p_service, pg_catalog.date_trunc('hour', nmc.now()), d.dv_id, pg_catalog.count(*)
    FROM unnest(p_dv_ids) AS d (dv_id)
    GROUP BY d.dv_id
    ORDER BY d.dv_id
    ON CONFLICT (notify_service, uur, dv_id) DO UPDATE
    SET gebruikt = a.gebruikt + excluded.gebruikt;
END
$$;
COMMENT ON FUNCTION nmc.boek_verzendaandeel(text, integer[]) IS
'Counts granted sends of a service per DV in the current hour (one element of p_dv_ids per '
'send) for the fair share of the day. Internal to nmc.claim_verzenden.';
