-- One function for every count that lives in the database (SPEC §9), so the metrics
-- endpoint sends one query. Labels hold kinds, statuses and DV ids: never personal data.

CREATE OR REPLACE FUNCTION nmc.metrics()
RETURNS TABLE (naam text, labels jsonb, waarde double precision)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Small reads, planned on tables that are too small for autovacuum ever to analyze them (the
-- DV register, the one settings row): the estimates run high, and compiling the plan (JIT)
-- would cost a scrape hundreds of milliseconds.
SET jit = off
AS $$
    -- (SELECT nmc.now()): the clock once per scrape, not a function call per row.
    SELECT 'nmc_taken', pg_catalog.jsonb_build_object('soort', t.soort, 'staat', t.staat),
        pg_catalog.count(*)::double precision
    FROM nmc.taak AS t WHERE t.staat <> 'done'
    GROUP BY t.soort, t.staat
    UNION ALL
    SELECT 'nmc_taak_oudste_due_seconden', pg_catalog.jsonb_build_object('soort', t.soort),
        greatest(EXTRACT(EPOCH FROM (SELECT nmc.now()) - pg_catalog.min(t.due)), 0)::double precision
    FROM nmc.taak AS t WHERE t.staat = 'open' AND t.due <= (SELECT nmc.now())
    GROUP BY t.soort
    UNION ALL
    SELECT 'nmc_notificaties', pg_catalog.jsonb_build_object('status', n.status),
        pg_catalog.count(*)::double precision
    FROM nmc.notificatie AS n
    GROUP BY n.status
    UNION ALL
    SELECT o.naam, pg_catalog.jsonb_build_object('dv', r.dv_id), o.waarde
    FROM nmc.report_onbevestigd_v2() AS r
    CROSS JOIN LATERAL (
        VALUES
        ('nmc_onbevestigd_terminaal', r.aantal::double precision),
        ('nmc_onbevestigd_terminaal_afgekapt', (r.afgekapt::integer)::double precision)
    ) AS o (naam, waarde)
    UNION ALL
    SELECT 'nmc_teller_totaal', pg_catalog.jsonb_build_object('naam', t.naam),
        t.aantal::double precision
    FROM nmc.teller AS t
    UNION ALL
    SELECT 'nmc_geen_contactgegevens_aandeel', pg_catalog.jsonb_build_object('dv', n.dv_id),
        (pg_catalog.count(*) FILTER (WHERE n.reden = 'geen-contactgegevens'))::double precision
        / pg_catalog.count(*)
    FROM nmc.notificatie AS n WHERE n.regie = 'centraal' AND n.terminaal_op IS NOT NULL
    GROUP BY n.dv_id
    UNION ALL
    SELECT 'nmc_verzendbudget_gebruikt',
        pg_catalog.jsonb_build_object('service', b.notify_service, 'soort', b.soort),
        b.gebruikt::double precision
    FROM nmc.verzendbudget AS b
    WHERE b.venster_start = pg_catalog.date_trunc('minute', (SELECT nmc.now()))
    UNION ALL
    SELECT 'nmc_feed_achterstand_seconden', pg_catalog.jsonb_build_object('dv', d.dv_id),
        coalesce(EXTRACT(EPOCH FROM (SELECT nmc.now()) - b.bevestigd_op), -1)::double precision
    FROM nmc.dienstverlener AS d LEFT JOIN nmc.bevestiging AS b ON b.dv_id = d.dv_id
    WHERE d.actief
$$;
COMMENT ON FUNCTION nmc.metrics() IS
'Every database-held metric as (name, labels, value): tasks per kind and state, seconds '
'the oldest due task of each kind waits, notifications per status (bezorgstatus-onbekend '
'included), unacknowledged overdue terminal statuses per DV (at most '
'settings.onbevestigd_telgrens read per DV; nmc_onbevestigd_terminaal_afgekapt 1: the '
'count is "at least"), counters (rejected and '
'malformed receipts, unknown statuses), the share of geen-contactgegevens among finished '
'centraal notifications per DV, send-budget use in the current window, and feed lag per '
'DV (seconds since its last acknowledgement; -1 when it never acknowledged).';
