-- One function for every count that lives in the database (SPEC §9), so the metrics
-- endpoint sends one query. Labels hold kinds, statuses and DV ids: never personal data.

CREATE OR REPLACE FUNCTION nmc.metrics()
RETURNS TABLE (naam text, labels jsonb, waarde double precision)
-- PL/pgSQL, not SQL: its plan is kept for the session. PostgreSQL 15 plans a SQL function's
-- query again at every call, and planning this one cost more than running it (6 of 10 ms a
-- scrape on the demo's 3,000 notifications).
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Small reads, planned on tables that are too small for autovacuum ever to analyze them (the
-- DV register, the one settings row): the estimates run high, and compiling the plan (JIT)
-- would cost a scrape hundreds of milliseconds.
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    -- The tasks that are not done, read once for the four task metrics: one pass per state
    -- over that state's partial index (taak_due, taak_lease, taak_mislukt), never the done
    -- tasks kept for a week. (SELECT nmc.now()): the clock once per scrape, not per row.
    WITH taken AS MATERIALIZED (
        SELECT t.soort, t.staat, t.dv_id, t.due <= t.nu AS due_nu,
            t.laatste_fout IS NOT NULL AS herhaald, pg_catalog.count(*) AS aantal,
            pg_catalog.min(t.due) AS oudste_due
        FROM (
            SELECT x.soort, x.staat, x.dv_id, x.due, x.laatste_fout, (SELECT nmc.now()) AS nu
            FROM nmc.taak AS x WHERE x.staat = 'open'
            UNION ALL
            SELECT x.soort, x.staat, x.dv_id, x.due, x.laatste_fout, (SELECT nmc.now())
            FROM nmc.taak AS x WHERE x.staat = 'claimed'
            UNION ALL
            SELECT x.soort, x.staat, x.dv_id, x.due, x.laatste_fout, (SELECT nmc.now())
            FROM nmc.taak AS x WHERE x.staat = 'mislukt'
        ) AS t
        GROUP BY 1, 2, 3, 4, 5
    ),

    -- The notifications per key, from their count (nmc.notificatietelling), not a scan of
    -- every notification kept.
    telling AS MATERIALIZED (
        SELECT n.dv_id, n.regie, n.status, n.reden, pg_catalog.sum(n.aantal) AS aantal
        FROM nmc.notificatietelling AS n
        GROUP BY n.dv_id, n.regie, n.status, n.reden
    )

    SELECT 'nmc_taken', pg_catalog.jsonb_build_object('soort', t.soort, 'staat', t.staat),
        pg_catalog.sum(t.aantal)::double precision
    FROM taken AS t
    GROUP BY t.soort, t.staat
    UNION ALL
    SELECT 'nmc_taak_oudste_due_seconden', pg_catalog.jsonb_build_object('soort', t.soort),
        greatest(EXTRACT(EPOCH FROM (SELECT nmc.now()) - pg_catalog.min(t.oudste_due)), 0)
        ::double precision
    FROM taken AS t WHERE t.staat = 'open' AND t.due_nu
    GROUP BY t.soort
    UNION ALL
    SELECT 'nmc_notificaties', pg_catalog.jsonb_build_object('status', n.status),
        pg_catalog.sum(n.aantal)::double precision
    FROM telling AS n
    GROUP BY n.status
    HAVING pg_catalog.sum(n.aantal) > 0
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
        coalesce(pg_catalog.sum(n.aantal) FILTER (WHERE n.reden = 'geen-contactgegevens'), 0)
        ::double precision / pg_catalog.sum(n.aantal)
    FROM telling AS n WHERE n.regie = 'centraal' AND nmc.is_terminal(n.status)
    GROUP BY n.dv_id
    HAVING pg_catalog.sum(n.aantal) > 0
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
    UNION ALL
    -- The backlog per kind and DV: due open tasks (system tasks have no dv label).
    SELECT 'nmc_taak_achterstand', pg_catalog.jsonb_build_object('soort', t.soort, 'dv', t.dv_id),
        pg_catalog.sum(t.aantal)::double precision
    FROM taken AS t WHERE t.staat = 'open' AND t.due_nu
    GROUP BY t.soort, t.dv_id
    UNION ALL
    -- Open tasks waiting after a failed or deferred try (a periodic job that keeps failing is
    -- late even though its due moves on).
    SELECT 'nmc_taak_herhaald', pg_catalog.jsonb_build_object('soort', t.soort),
        pg_catalog.sum(t.aantal)::double precision
    FROM taken AS t WHERE t.staat = 'open' AND t.herhaald
    GROUP BY t.soort
    UNION ALL
    -- Seconds since each DV with a beheer channel had its last daily report finished (-1:
    -- none yet).
    SELECT 'nmc_beheerrapport_leeftijd_seconden', pg_catalog.jsonb_build_object('dv', d.dv_id),
        coalesce(
            EXTRACT(EPOCH FROM (SELECT nmc.now()) - (
                SELECT pg_catalog.max(r.afgerond_op) FROM nmc.beheerrapport AS r
                WHERE r.dv_id = d.dv_id
            )),
            -1
        )::double precision
    FROM nmc.dienstverlener AS d
    WHERE d.actief AND nmc.beheerkanaal_soort(d.beheerkanaal) IS NOT NULL
    UNION ALL
    -- What a minute allows, next to nmc_verzendbudget_gebruikt (the rate per 60 s that
    -- nmc.take_budget paces the kind to), for every service configured, named by an active
    -- berichttype or used in this window.
    SELECT 'nmc_verzendbudget_plafond',
        pg_catalog.jsonb_build_object('service', s.code, 'soort', k.soort),
        r.per_minuut::double precision
    FROM (
        SELECT n.code FROM nmc.notify_service AS n
        UNION
        SELECT bt.notify_service FROM nmc.berichttype AS bt WHERE bt.actief
        UNION
        SELECT b.notify_service FROM nmc.verzendbudget AS b
        WHERE b.venster_start = pg_catalog.date_trunc('minute', (SELECT nmc.now()))
    ) AS s (code)
    CROSS JOIN LATERAL nmc.verzendtempo_instelling(s.code) AS c
    CROSS JOIN (VALUES ('verzenden'), ('navraag')) AS k (soort)
    CROSS JOIN LATERAL nmc.verzendtempo_kind(
        c.per_minuut, c.navraag_aandeel, c.burst, k.soort
    ) AS r
    UNION ALL
    -- The service's UTC day: sends granted today, its limit, whether NotifyNL said it is
    -- used up, and the 429s NotifyNL answered per kind (counters).
    SELECT o.naam, pg_catalog.jsonb_build_object('service', d.notify_service) || o.extra,
        o.waarde
    FROM nmc.verzenddag() AS d
    CROSS JOIN LATERAL (
        VALUES
        ('nmc_verzenddag_gebruikt', '{}'::jsonb, d.gebruikt::double precision),
        ('nmc_verzenddag_limiet', '{}'::jsonb, d.dag_limiet::double precision),
        ('nmc_verzenddag_op', '{}'::jsonb, CASE WHEN d.dag_op THEN 1 ELSE 0 END::double precision),
        ('nmc_notifynl_limiet_totaal', '{"limiet": "tempo"}'::jsonb,
            d.tempo_weigeringen::double precision),
        ('nmc_notifynl_limiet_totaal', '{"limiet": "dag"}'::jsonb,
            d.dag_weigeringen::double precision)
    ) AS o (naam, extra, waarde)
    UNION ALL
    -- The webhook's state per DV: consecutive failures, paused (or switched off by a 410,
    -- or for a gap), paused for a gap (events after its position were in a dropped
    -- partition: it waits for the DV to set its position), seconds since it last delivered
    -- up to its position.
    SELECT o.naam, pg_catalog.jsonb_build_object('dv', d.dv_id), o.waarde
    FROM nmc.dienstverlener AS d
    INNER JOIN nmc.webhookpositie AS w ON w.dv_id = d.dv_id
    CROSS JOIN LATERAL (
        VALUES
        ('nmc_webhook_mislukt', w.mislukt::double precision),
        (
            'nmc_webhook_gepauzeerd',
            (
                w.uitgeschakeld OR w.gat_op IS NOT NULL
                OR coalesce(w.gepauzeerd_tot > (SELECT nmc.now()), false)
            )::integer::double precision
        ),
        ('nmc_webhook_gat', (w.gat_op IS NOT NULL)::integer::double precision),
        (
            'nmc_webhook_achterstand_seconden',
            greatest(EXTRACT(EPOCH FROM (SELECT nmc.now()) - w.geleverd_op), 0)::double precision
        )
    ) AS o (naam, waarde)
    WHERE d.actief AND d.webhook_url IS NOT NULL
    UNION ALL
    -- 1 when the DV's current webhook URL passed its validation (a webhook is not used before).
    SELECT 'nmc_webhook_gevalideerd', pg_catalog.jsonb_build_object('dv', d.dv_id),
        (coalesce(v.url = d.webhook_url AND v.uitkomst IN ('geldig', 'bestaand'), false))::integer
        ::double precision
    FROM nmc.dienstverlener AS d
    LEFT JOIN nmc.webhookvalidatie AS v ON v.dv_id = d.dv_id
    WHERE d.actief AND d.webhook_url IS NOT NULL
    UNION ALL
    -- 1 for an active berichttype whose NotifyNL template is gone (intake refuses it, NM033),
    -- 0 once read and there; a template never read is not reported.
    SELECT 'nmc_berichttype_niet_beschikbaar',
        pg_catalog.jsonb_build_object('dv', b.dv_id, 'berichttype', b.code),
        (t.staat = 'verdwenen')::integer::double precision
    FROM nmc.berichttype AS b
    INNER JOIN nmc.notifynl_template AS t
        ON t.notify_service = b.notify_service AND t.template_id = b.notifynl_template_id
    WHERE b.actief AND t.staat <> 'onbekend'
    UNION ALL
    -- Maintenance: the default partition holds what no xid range does (0 in normal operation);
    -- counted up to 100000.
    SELECT 'nmc_event_default_rijen', '{}'::jsonb, pg_catalog.count(*)::double precision
    FROM (SELECT 1 FROM nmc.event_default LIMIT 100000) AS r
    UNION ALL
    -- The watermark: how long the oldest committed event the feed cannot serve yet has been
    -- waiting behind it (0: none). Read from the first events at or above the watermark in
    -- feed order (their time follows that order up to a transaction's length), so a scrape
    -- costs the same however long a transaction holds it back. Works on a standby too.
    SELECT 'nmc_feed_watermerk_achterstand_seconden', '{}'::jsonb,
        coalesce(
            greatest(EXTRACT(EPOCH FROM (SELECT nmc.now()) - pg_catalog.min(h.tijdstip)), 0), 0
        )::double precision
    FROM (
        SELECT e.tijdstip FROM nmc.event AS e
        WHERE e.xid >= pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())
        ORDER BY e.xid, e.event_id
        LIMIT 100
    ) AS h
    UNION ALL
    -- The oldest open transaction holding an xid (any database of the cluster: xids are the
    -- cluster's, and every one holds back every DV's feed), or prepared. Real time, not the
    -- NMC clock: it is the server's. Only where the owner may see every session's start
    -- (pg_read_all_stats, which the bootstrap grants when it can); else not reported.
    SELECT 'nmc_oudste_schrijftransactie_seconden', '{}'::jsonb,
        coalesce(EXTRACT(EPOCH FROM pg_catalog.max(pg_catalog.now() - x.begin)), 0)
        ::double precision
    FROM (
        SELECT a.xact_start FROM pg_catalog.pg_stat_activity AS a
        WHERE a.backend_xid IS NOT NULL
        UNION ALL
        SELECT p.prepared FROM pg_catalog.pg_prepared_xacts AS p
    ) AS x (begin)
    HAVING pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
    UNION ALL
    -- The berichttypen NotifyNL refuses for a reason of our own configuration
    -- (nmc.verzendweigering): the refused sends since the refusal began, and for how long.
    SELECT o.naam,
        pg_catalog.jsonb_build_object('dv', w.dv_id, 'berichttype', w.berichttype, 'soort', w.soort),
        o.waarde
    FROM nmc.verzendweigering AS w
    CROSS JOIN LATERAL (
        VALUES
        ('nmc_verzendweigering', w.aantal::double precision),
        (
            'nmc_verzendweigering_seconden',
            greatest(EXTRACT(EPOCH FROM (SELECT nmc.now()) - w.sinds), 0)::double precision
        )
    ) AS o (naam, waarde)
    UNION ALL
    -- Notifications ended technisch-mislukt because NotifyNL could not render them (the
    -- template changed after the intake), per DV and berichttype, over the days kept.
    SELECT 'nmc_onverwerkbaar_totaal',
        pg_catalog.jsonb_build_object('dv', o.dv_id, 'berichttype', o.berichttype),
        pg_catalog.sum(o.aantal)::double precision
    FROM nmc.onverwerkbaar AS o
    GROUP BY o.dv_id, o.berichttype;
END
$$;
COMMENT ON FUNCTION nmc.metrics() IS
'Every database-held metric as (name, labels, value): tasks per kind and state (done '
'ones left out), seconds '
'the oldest due task of each kind waits, notifications per status (bezorgstatus-onbekend '
'included; from nmc.notificatietelling), unacknowledged overdue terminal statuses per DV (at most '
'settings.onbevestigd_telgrens read per DV; nmc_onbevestigd_terminaal_afgekapt 1: the '
'count is "at least"), counters (rejected and '
'malformed receipts, unknown statuses), the share of geen-contactgegevens among finished '
'centraal notifications per DV, send-budget use in the current window and its ceiling per '
'service and kind, feed lag per DV (seconds since its last acknowledgement; -1 when it never '
'acknowledged), due open tasks per kind and DV, open tasks after a failed or deferred try '
'per kind, the age of each DV''s last beheer report, each webhook''s failures, pause, delivery '
'age and validation, the rows of the default event partition, how long the watermark holds '
'back the oldest committed event, the age of the oldest open write transaction (when '
'the owner has pg_read_all_stats), the berichttypen NotifyNL refuses for our configuration '
'(refused sends and seconds since the refusal began, per DV, berichttype and kind) and the '
'notifications NotifyNL could not render per DV and berichttype.';

CREATE OR REPLACE FUNCTION nmc.metrics_replica(p_max_achterstand double precision)
RETURNS TABLE (naam text, labels jsonb, waarde double precision)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    v_achterstand CONSTANT double precision := nmc.check_replica(p_max_achterstand, NULL);
BEGIN
    RETURN QUERY
    SELECT m.naam, m.labels, m.waarde FROM nmc.metrics() AS m
    UNION ALL
    SELECT 'nmc_replica_achterstand_seconden', '{}'::jsonb, v_achterstand;
END
$$;
COMMENT ON FUNCTION nmc.metrics_replica(double precision) IS
'/metrics read on a standby: the rows of nmc.metrics() plus nmc_replica_achterstand_seconden '
'(the replay lag of this server, nmc.replica_achterstand), or NMR01 (DETAIL = that lag) when '
'it is more than p_max_achterstand seconds behind: the API then reads nmc.metrics() on the '
'primary and exports the lag from the DETAIL.';
