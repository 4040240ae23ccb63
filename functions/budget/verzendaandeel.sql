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
SET search_path = pg_catalog, pg_temp
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
RETURNS TABLE (zware_dvs integer [], ruimte integer)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The last hour from whole-hour rows: this hour and the part of the previous hour
    -- that is still within 60 minutes.
    WITH klok AS (
        SELECT
            pg_catalog.date_trunc('hour', n.nu) AS uur,
            (pg_catalog.date_trunc('day', n.nu AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS dag,
            EXTRACT(EPOCH FROM n.nu - pg_catalog.date_trunc('hour', n.nu)) / 3600.0 AS verstreken,
            EXTRACT(EPOCH FROM (
                pg_catalog.date_trunc('day', n.nu AT TIME ZONE 'UTC') + INTERVAL '1 day'
            ) AT TIME ZONE 'UTC' - n.nu)::double precision AS over
        FROM (SELECT nmc.now() AS nu) AS n
    ),

    per_dv AS (
        SELECT a.dv_id,
            pg_catalog.sum(a.gebruikt) FILTER (WHERE a.uur >= k.dag) AS vandaag,
            pg_catalog.sum(CASE WHEN a.uur = k.uur THEN a.gebruikt
                ELSE a.gebruikt * (1 - k.verstreken) END)
                FILTER (WHERE a.uur >= k.uur - INTERVAL '1 hour') AS laatste_uur
        FROM nmc.verzendaandeel AS a CROSS JOIN klok AS k
        WHERE a.notify_service = p_service AND a.uur >= least(k.dag, k.uur - INTERVAL '1 hour')
        GROUP BY a.dv_id
    ),

    -- Heavy: today's largest consumer (the lowest id of a tie), or above the base share.
    gerangschikt AS (
        SELECT p.dv_id, coalesce(p.vandaag, 0) AS vandaag, coalesce(p.laatste_uur, 0) AS laatste_uur,
            coalesce(p.vandaag, 0) > 0 AND (
                pg_catalog.row_number() OVER (ORDER BY coalesce(p.vandaag, 0) DESC, p.dv_id) = 1
                OR coalesce(p.vandaag, 0) > 0.1 * i.dag_limiet
            ) AS zwaar
        FROM per_dv AS p CROSS JOIN nmc.verzendtempo_instelling(p_service) AS i
    )

    SELECT
        coalesce(pg_catalog.array_agg(g.dv_id ORDER BY g.dv_id) FILTER (WHERE g.zwaar), '{}'),
        greatest(i.dag_limiet - nmc.verzendaandeel_reserve(
            i.dag_limiet, k.over,
            coalesce(pg_catalog.sum(g.laatste_uur) FILTER (WHERE NOT g.zwaar), 0)
        ) - coalesce(pg_catalog.sum(g.vandaag), 0), 0)::integer
    FROM klok AS k
    CROSS JOIN nmc.verzendtempo_instelling(p_service) AS i
    LEFT JOIN gerangschikt AS g ON true
    GROUP BY i.dag_limiet, k.over
$$;
COMMENT ON FUNCTION nmc.verzendaandeel_ruimte(text) IS
'The fair share of a service''s UTC day now: its heavy consumers today (the largest, and '
'any DV above 10% of the daily limit) and how many sends they may still take together '
'(the limit less the reserve for the other DVs, nmc.verzendaandeel_reserve, less '
'today''s sends). Other DVs are bounded by the day alone. Read by nmc.claim_verzenden '
'before it takes tokens.';

CREATE OR REPLACE FUNCTION nmc.boek_verzendaandeel(p_service text, p_dv_ids integer [])
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    -- One row per DV in the hour; DVs in id order so concurrent claims lock alike.
    INSERT INTO nmc.verzendaandeel AS a (notify_service, uur, dv_id, gebruikt)
    SELECT p_service, pg_catalog.date_trunc('hour', nmc.now()), d.dv_id, pg_catalog.count(*)
    FROM unnest(p_dv_ids) AS d (dv_id)
    GROUP BY d.dv_id
    ORDER BY d.dv_id
    ON CONFLICT (notify_service, uur, dv_id) DO UPDATE
    SET gebruikt = a.gebruikt + excluded.gebruikt
$$;
COMMENT ON FUNCTION nmc.boek_verzendaandeel(text, integer []) IS
'Counts granted sends of a service per DV in the current hour (one element of p_dv_ids per '
'send) for the fair share of the day. Internal to nmc.claim_verzenden.';
