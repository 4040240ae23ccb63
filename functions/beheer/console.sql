-- The operator console (`nmc console`, role nmc_console): its reads and its actions.
-- The role owns nothing and holds no table rights, so every function here runs as its
-- owner (SECURITY DEFINER, search_path pinned). The reads return ids, kinds, statuses,
-- reasons, counts, times and error classes only: never a recipient, personalisation, dvRef,
-- beheer channel or webhook path (a webhook shows its host). The actions go through the
-- beheer functions, so a forced transition keeps to the allowed pairs and every action is
-- audited in nmc.beheeractie.

-- ------------------------------------------------------------------------------------------
-- Reads

CREATE OR REPLACE FUNCTION nmc.console_statussen(p_uren integer DEFAULT 24)
RETURNS TABLE (
    dv_id integer, naam text, status nmc.notificatie_status, uur timestamptz, aantal bigint
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    -- Now: the notifications in each non-terminal status (uur NULL).
    SELECT n.dv_id, d.naam, n.status, NULL::timestamptz, pg_catalog.count(*)
    FROM nmc.notificatie AS n
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = n.dv_id
    WHERE n.terminaal_op IS NULL
    GROUP BY n.dv_id, d.naam, n.status
    UNION ALL
    -- Over time: the notifications that reached each terminal status, per hour.
    SELECT n.dv_id, d.naam, n.status, pg_catalog.date_trunc('hour', n.terminaal_op),
        pg_catalog.count(*)
    FROM nmc.notificatie AS n
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = n.dv_id
    WHERE n.terminaal_op >= pg_catalog.date_trunc('hour', (SELECT nmc.now()))
        - INTERVAL '1 hour' * (least(greatest(p_uren, 1), 168) - 1)
    GROUP BY n.dv_id, d.naam, n.status, pg_catalog.date_trunc('hour', n.terminaal_op)
    ORDER BY 1, 3, 4
$$;
COMMENT ON FUNCTION nmc.console_statussen(integer) IS
'Statuses per DV over time, for the console: per DV the notifications now in each '
'non-terminal status (uur NULL), and per hour of the last p_uren (1..168) how many reached '
'each terminal status (from the terminaal_op index).';

CREATE OR REPLACE FUNCTION nmc.console_achterstand()
RETURNS TABLE (
    soort nmc.taak_soort, dv_id integer, naam text, open bigint, due bigint, claimed bigint,
    mislukt bigint, oudste_due timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT t.soort, t.dv_id, d.naam,
        pg_catalog.count(*) FILTER (WHERE t.staat = 'open'),
        pg_catalog.count(*) FILTER (WHERE t.staat = 'open' AND t.due <= (SELECT nmc.now())),
        pg_catalog.count(*) FILTER (WHERE t.staat = 'claimed'),
        pg_catalog.count(*) FILTER (WHERE t.staat = 'mislukt'),
        pg_catalog.min(t.due) FILTER (WHERE t.staat = 'open' AND t.due <= (SELECT nmc.now()))
    FROM nmc.taak AS t
    LEFT JOIN nmc.dienstverlener AS d ON d.dv_id = t.dv_id
    WHERE t.staat <> 'done'
    GROUP BY t.soort, t.dv_id, d.naam
    ORDER BY t.soort, t.dv_id NULLS FIRST
$$;
COMMENT ON FUNCTION nmc.console_achterstand() IS
'Backlog per task kind and DV, for the console: open tasks, of which due now, claimed, '
'mislukt, and the oldest due time of the due ones (dv_id NULL: the watchdog and '
'maintenance, which belong to no DV).';

CREATE OR REPLACE FUNCTION nmc.console_mislukt(
    p_limiet integer DEFAULT 100, p_soort nmc.taak_soort DEFAULT NULL
)
RETURNS TABLE (
    id bigint, soort nmc.taak_soort, dv_id integer, naam text, notificatie_id uuid,
    status nmc.notificatie_status, due timestamptz, pogingen integer, uitstellen integer,
    laatste_fout text, aangemaakt_op timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.soort, t.dv_id, d.naam, t.notificatie_id, n.status, t.due, t.pogingen,
        t.uitstellen, t.laatste_fout, t.aangemaakt_op
    FROM nmc.taak AS t
    LEFT JOIN nmc.dienstverlener AS d ON d.dv_id = t.dv_id
    LEFT JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
    WHERE t.staat = 'mislukt' AND (p_soort IS NULL OR t.soort = p_soort)
    ORDER BY t.due, t.id
    LIMIT least(greatest(p_limiet, 1), 1000)
$$;
COMMENT ON FUNCTION nmc.console_mislukt(integer, nmc.taak_soort) IS
'The mislukt tasks (exhausted, waiting for an operator), oldest due first, with their '
'error class (laatste_fout) and the status of their notification, for the console.';

CREATE OR REPLACE FUNCTION nmc.console_taak(p_taak_id bigint)
RETURNS TABLE (
    id bigint, soort nmc.taak_soort, staat nmc.taak_staat, dv_id integer, naam text,
    notificatie_id uuid, status nmc.notificatie_status, due timestamptz, pogingen integer,
    uitstellen integer, laatste_fout text, lease_tot timestamptz, aangemaakt_op timestamptz,
    afgerond_op timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.soort, t.staat, t.dv_id, d.naam, t.notificatie_id, n.status, t.due,
        t.pogingen, t.uitstellen, t.laatste_fout, t.lease_tot, t.aangemaakt_op, t.afgerond_op
    FROM nmc.taak AS t
    LEFT JOIN nmc.dienstverlener AS d ON d.dv_id = t.dv_id
    LEFT JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
    WHERE t.id = p_taak_id
$$;
COMMENT ON FUNCTION nmc.console_taak(bigint) IS
'One task for the console (no row when it does not exist or was cleaned up): state, '
'counters, error class, lease end, and the status of its notification.';

CREATE OR REPLACE FUNCTION nmc.console_overgangen(p_status nmc.notificatie_status)
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((
        -- The pairs an operator may force from here (not the resend's verzonden ->
        -- verzonden: without a new attempt it would only raise the version; never into
        -- bezorgd or definitief-bezorgd, nmc.forceerbaar), each with the reasons that fit
        -- its target (an empty list: no reason).
        SELECT pg_catalog.jsonb_agg(
            pg_catalog.jsonb_build_object(
                'naar', a.naar,
                'redenen', coalesce((
                    SELECT pg_catalog.jsonb_agg(r.reden ORDER BY r.reden)
                    FROM pg_catalog.unnest(
                        pg_catalog.enum_range(NULL::nmc.reden)
                    ) AS r (reden)
                    WHERE nmc.reden_fits(a.naar, r.reden)
                ), '[]'::jsonb)
            ) ORDER BY a.naar
        )
        FROM nmc.allowed_transitions() AS a
        WHERE a.van = p_status AND a.naar <> a.van AND nmc.forceerbaar(a.naar)
    ), '[]'::jsonb)
$$;
COMMENT ON FUNCTION nmc.console_overgangen(nmc.notificatie_status) IS
'The transitions an operator may force from a status ([{naar, redenen}], empty: nothing to '
'force): the allowed pairs less the resend''s verzonden -> verzonden and those into bezorgd '
'or definitief-bezorgd (nmc.forceerbaar), each with the reasons '
'that fit its target. What the console offers on a notification and links from /mislukt.';

CREATE OR REPLACE FUNCTION nmc.console_notificatie(p_notificatie_id uuid)
RETURNS TABLE (
    id uuid, dv_id integer, naam text, berichttype text, regie nmc.regie,
    status nmc.notificatie_status, reden nmc.reden, versie integer,
    aangenomen_op timestamptz, geldig_tot timestamptz, terminaal_op timestamptz,
    overgangen jsonb
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id, n.dv_id, d.naam, n.berichttype, n.regie, n.status, n.reden, n.versie,
        n.aangenomen_op, n.geldig_tot, n.terminaal_op,
        nmc.console_overgangen(n.status)
    FROM nmc.notificatie AS n
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = n.dv_id
    WHERE n.id = p_notificatie_id
$$;
COMMENT ON FUNCTION nmc.console_notificatie(uuid) IS
'One notification for the console, without any personal data (no recipient, '
'personalisation or dvRef): status, reason, version, times, and the transitions an '
'operator may force from its status (allowed pairs only, never into bezorgd or '
'definitief-bezorgd, with the fitting reasons).';

CREATE OR REPLACE FUNCTION nmc.console_notificatie_events(p_notificatie_id uuid)
RETURNS TABLE (
    sequence integer, van nmc.notificatie_status, naar nmc.notificatie_status,
    reden nmc.reden, tijdstip timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.sequence, e.van, e.naar, e.reden, e.tijdstip
    FROM nmc.event AS e
    WHERE e.notificatie_id = p_notificatie_id
    ORDER BY e.sequence
    LIMIT 1000
$$;
COMMENT ON FUNCTION nmc.console_notificatie_events(uuid) IS
'The events of one notification in sequence order (from the event_notificatie index), '
'for the console.';

CREATE OR REPLACE FUNCTION nmc.console_notificatie_taken(p_notificatie_id uuid)
RETURNS TABLE (
    id bigint, soort nmc.taak_soort, staat nmc.taak_staat, due timestamptz, pogingen integer,
    laatste_fout text, afgerond_op timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.soort, t.staat, t.due, t.pogingen, t.laatste_fout, t.afgerond_op
    FROM nmc.taak AS t
    WHERE t.notificatie_id = p_notificatie_id
    ORDER BY t.id
    LIMIT 1000
$$;
COMMENT ON FUNCTION nmc.console_notificatie_taken(uuid) IS
'The tasks of one notification (still kept), oldest first, for the console.';

CREATE OR REPLACE FUNCTION nmc.console_webhooks_v2()
RETURNS TABLE (
    dv_id integer, naam text, webhook_host text, epoch integer, xid xid8, event_id bigint,
    geleverd_op timestamptz, mislukt integer, max_mislukt integer, gepauzeerd_tot timestamptz,
    uitgeschakeld boolean, gat_op timestamptz, taak_staat nmc.taak_staat,
    taak_due timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT d.dv_id, d.naam,
        -- The host only: a path or query may hold the DV's own secrets.
        pg_catalog.substring(d.webhook_url, '^[a-zA-Z]+://(?:[^/?#@]*@)?([^/?#:]+)'),
        w.epoch, w.xid, w.event_id, w.geleverd_op, w.mislukt, d.webhook_max_mislukt,
        w.gepauzeerd_tot, w.uitgeschakeld, w.gat_op, t.staat, t.due
    FROM nmc.dienstverlener AS d
    LEFT JOIN nmc.webhookpositie AS w ON w.dv_id = d.dv_id
    LEFT JOIN LATERAL (
        SELECT t.staat, t.due FROM nmc.taak AS t
        WHERE t.dv_id = d.dv_id AND t.soort = 'terugkoppelen' AND t.staat <> 'done'
        ORDER BY t.id DESC LIMIT 1
    ) AS t ON true
    WHERE d.webhook_url IS NOT NULL OR w.dv_id IS NOT NULL
    ORDER BY d.dv_id
$$;
COMMENT ON FUNCTION nmc.console_webhooks_v2() IS
'Every DV with a webhook (or a position left from one), for the console: the host of its '
'URL (never the path), the delivery position, consecutive failures against the DV''s '
'limit, paused until, disabled (a 410), paused for a gap since (gat_op: events after the '
'position were dropped; only the DV setting its position ends it), and its terugkoppelen '
'task.';

CREATE OR REPLACE FUNCTION nmc.console_webhooks()
RETURNS TABLE (
    dv_id integer, naam text, webhook_host text, epoch integer, xid xid8, event_id bigint,
    geleverd_op timestamptz, mislukt integer, max_mislukt integer, gepauzeerd_tot timestamptz,
    uitgeschakeld boolean, taak_staat nmc.taak_staat, taak_due timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT w.dv_id, w.naam, w.webhook_host, w.epoch, w.xid, w.event_id, w.geleverd_op,
        w.mislukt, w.max_mislukt, w.gepauzeerd_tot, w.uitgeschakeld, w.taak_staat, w.taak_due
    FROM nmc.console_webhooks_v2() AS w
$$;
COMMENT ON FUNCTION nmc.console_webhooks() IS
'The previous release''s form of nmc.console_webhooks_v2, without the gap pause (kept for '
'consoles of that release during a rolling deploy; drop it in the next).';

CREATE OR REPLACE FUNCTION nmc.console_onbevestigd()
RETURNS TABLE (
    dv_id integer, naam text, aantal bigint, afgekapt boolean, oudste timestamptz,
    bevestigd_op timestamptz, bevestigingstermijn interval
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT d.dv_id, d.naam, coalesce(r.aantal, 0), coalesce(r.afgekapt, false), r.oudste,
        b.bevestigd_op, d.bevestigingstermijn
    FROM nmc.dienstverlener AS d
    LEFT JOIN nmc.report_onbevestigd_v2() AS r ON r.dv_id = d.dv_id
    LEFT JOIN nmc.bevestiging AS b ON b.dv_id = d.dv_id
    WHERE d.actief
    ORDER BY coalesce(r.aantal, 0) DESC, d.dv_id
$$;
COMMENT ON FUNCTION nmc.console_onbevestigd() IS
'Per active DV (also one with none) the unacknowledged terminal statuses older than its '
'ack term (from nmc.report_onbevestigd_v2, "at least" when afgekapt), the oldest, and its '
'last acknowledgement; without the beheer channel.';

CREATE OR REPLACE FUNCTION nmc.console_budget(p_minuten integer DEFAULT 30)
RETURNS TABLE (
    notify_service text, venster_start timestamptz, soort text, gebruikt integer,
    plafond integer
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    -- The ceiling per kind: the rate per 60 s nmc.take_budget paces that kind to.
    SELECT b.notify_service, b.venster_start, b.soort, b.gebruikt, k.per_minuut
    FROM nmc.verzendbudget AS b
    CROSS JOIN LATERAL nmc.verzendtempo_instelling(b.notify_service) AS i
    CROSS JOIN LATERAL nmc.verzendtempo_kind(
        i.per_minuut, i.navraag_aandeel, i.burst, b.soort
    ) AS k
    WHERE b.venster_start > pg_catalog.date_trunc('minute', (SELECT nmc.now()))
        - INTERVAL '1 minute' * least(greatest(p_minuten, 1), 1440)
    ORDER BY b.notify_service, b.venster_start DESC, b.soort DESC
$$;
COMMENT ON FUNCTION nmc.console_budget(integer) IS
'Send-budget use per NotifyNL service, one-minute window (the last p_minuten, 1..1440) '
'and kind (verzenden, navraag), with the rate per 60 s nmc.take_budget paces that kind to.';

CREATE OR REPLACE FUNCTION nmc.console_budget_dag()
RETURNS SETOF nmc.verzenddag_stand
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT * FROM nmc.verzenddag()
$$;
COMMENT ON FUNCTION nmc.console_budget_dag() IS
'The day and pace of every NotifyNL service for the console''s budget view (nmc.verzenddag).';

CREATE OR REPLACE FUNCTION nmc.console_onderhoud()
RETURNS TABLE (
    huidige_xid xid8, partitie text, vulgraad numeric, partities integer,
    verwijderde_partities integer, default_rijen bigint, default_grens integer
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
    SELECT x.huidig, p.naam,
        round(100.0 * (x.huidig::text::numeric - p.xid_van::text::numeric)
            / (p.xid_tot::text::numeric - p.xid_van::text::numeric), 1),
        (SELECT pg_catalog.count(*)::integer FROM nmc.event_partitie AS q
            WHERE q.verwijderd_op IS NULL),
        (SELECT pg_catalog.count(*)::integer FROM nmc.event_partitie AS q
            WHERE q.verwijderd_op IS NOT NULL),
        -- Counted up to one past the limit: more means "more than", and the count stays
        -- cheap however full the default partition ran.
        (SELECT pg_catalog.count(*) FROM (SELECT 1 FROM nmc.event_default LIMIT 10001) AS e),
        10000
    FROM (SELECT pg_catalog.pg_current_snapshot() AS s) AS s0
    CROSS JOIN LATERAL (SELECT pg_catalog.pg_snapshot_xmax(s0.s) AS huidig) AS x
    LEFT JOIN LATERAL (
        SELECT q.naam, q.xid_van, q.xid_tot FROM nmc.event_partitie AS q
        WHERE q.verwijderd_op IS NULL AND q.xid_van <= x.huidig AND x.huidig < q.xid_tot
    ) AS p ON true
$$;
COMMENT ON FUNCTION nmc.console_onderhoud() IS
'The event log''s maintenance state, for the console: the next xid, the range it falls in '
'and how full that range is (a new one is made at 80%), the live and dropped ranges, and '
'the rows in the default partition (empty in normal operation; counted up to '
'default_grens + 1).';

CREATE OR REPLACE FUNCTION nmc.console_event_partities()
RETURNS TABLE (
    naam text, xid_van xid8, xid_tot xid8, aangemaakt_op timestamptz,
    verwijderd_op timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.naam, p.xid_van, p.xid_tot, p.aangemaakt_op, p.verwijderd_op
    FROM nmc.event_partitie AS p
    ORDER BY p.xid_van DESC
    LIMIT 100
$$;
COMMENT ON FUNCTION nmc.console_event_partities() IS
'The newest 100 xid ranges of the event log (dropped ones too, with when), for the console.';

CREATE OR REPLACE FUNCTION nmc.console_onderhoud_taken()
RETURNS TABLE (
    id bigint, soort nmc.taak_soort, werk text, staat nmc.taak_staat, due timestamptz,
    pogingen integer, uitstellen integer, laatste_fout text, aangemaakt_op timestamptz,
    afgerond_op timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- Per kind and job (a maintenance task names its job in payload.werk) the tasks not
    -- done, and the three last done (its latest runs).
    SELECT r.id, r.soort, r.werk, r.staat, r.due, r.pogingen, r.uitstellen, r.laatste_fout,
        r.aangemaakt_op, r.afgerond_op
    FROM (
        SELECT t.id, t.soort, t.payload ->> 'werk' AS werk, t.staat, t.due, t.pogingen,
            t.uitstellen, t.laatste_fout, t.aangemaakt_op, t.afgerond_op,
            pg_catalog.row_number() OVER (
                PARTITION BY t.soort, t.payload ->> 'werk', t.staat = 'done'
                ORDER BY t.afgerond_op DESC NULLS LAST, t.id DESC
            ) AS nummer
        FROM nmc.taak AS t
        WHERE t.soort IN ('controle', 'onderhoud')
    ) AS r
    WHERE r.staat <> 'done' OR r.nummer <= 3
    ORDER BY r.soort, r.werk NULLS FIRST, r.staat = 'done', r.afgerond_op DESC NULLS FIRST,
        r.id DESC
$$;
COMMENT ON FUNCTION nmc.console_onderhoud_taken() IS
'The watchdog and maintenance tasks for the console, per kind and job (payload.werk of a '
'maintenance task): those not done (open, claimed, mislukt) and the three last done runs.';

CREATE OR REPLACE FUNCTION nmc.console_beheeracties(
    p_limiet integer DEFAULT 100, p_voor bigint DEFAULT NULL
)
RETURNS TABLE (
    id bigint, soort text, notificatie_id uuid, taak_id bigint, dv_id integer,
    van nmc.notificatie_status, naar nmc.notificatie_status, toelichting text, door text,
    tijdstip timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a.id, a.soort, a.notificatie_id, a.taak_id, a.dv_id, a.van, a.naar,
        a.toelichting, a.door, a.tijdstip
    FROM nmc.beheeractie AS a
    WHERE p_voor IS NULL OR a.id < p_voor
    ORDER BY a.id DESC
    LIMIT least(greatest(p_limiet, 1), 1000)
$$;
COMMENT ON FUNCTION nmc.console_beheeracties(integer, bigint) IS
'The beheeractie audit trail, newest first, p_limiet (1..1000) rows below id p_voor, for '
'the console.';

-- ------------------------------------------------------------------------------------------
-- Actions: the console checks the operator role and the CSRF token; these run the beheer
-- functions as the owner, so the rules and the audit are the CLI's.

CREATE OR REPLACE FUNCTION nmc.console_reopen_taak(
    p_taak_id bigint, p_toelichting text, p_door text
)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM nmc.reopen_taak(p_taak_id, p_toelichting, p_door);
END
$$;
COMMENT ON FUNCTION nmc.console_reopen_taak(bigint, text, text) IS
'Kept for the previous release (replaced by nmc.console_reopen_taak_v2, where the session '
'says who acts): the console''s reopen, nmc.reopen_taak (mislukt only, NM020 otherwise), '
'audited under the p_door its caller names.';

CREATE OR REPLACE FUNCTION nmc.console_force_transition(
    p_notificatie_id uuid, p_naar nmc.notificatie_status, p_reden nmc.reden,
    p_toelichting text, p_door text
)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN nmc.force_transition(p_notificatie_id, p_naar, p_reden, p_toelichting, p_door);
END
$$;
COMMENT ON FUNCTION nmc.console_force_transition(
    uuid, nmc.notificatie_status, nmc.reden, text, text
) IS
'Kept for the previous release (replaced by nmc.console_force_transition_v2, where the '
'session says who acts): nmc.force_transition (through the single writer, allowed pairs '
'only: NM001; never into bezorgd or definitief-bezorgd: NM021; a fitting reason: NM013; '
'NM005 not found), audited under the p_door its '
'caller names. Returns the new version.';

CREATE OR REPLACE FUNCTION nmc.resume_webhook_beheer(
    p_dv_id integer, p_toelichting text, p_door text
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uitkomst text;
BEGIN
    v_uitkomst := nmc.resume_webhook(p_dv_id);
    INSERT INTO nmc.beheeractie (soort, dv_id, toelichting, door, tijdstip)
    VALUES ('hervat-webhook', p_dv_id, p_toelichting, p_door, nmc.now());
    RETURN v_uitkomst;
END
$$;
COMMENT ON FUNCTION nmc.resume_webhook_beheer(integer, text, text) IS
'An operator resumes a DV''s paused or disabled webhook: nmc.resume_webhook (keeps the '
'delivery position; NM005 when the DV has no webhook), audited in nmc.beheeractie. The '
'console calls nmc.resume_webhook_beheer_v2 (the session says who); this form is kept for '
'the previous release.';
