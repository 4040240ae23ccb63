-- The daily beheer report (ADR 0024: "Onbevestigde terminale statussen ouder dan een per DV
-- afgesproken termijn worden per DV gemeld op het beheerkanaal uit het DV-contract", and "een
-- DV met een ongewoon hoog aandeel geen-contactgegevens wordt gemeld"). One open task of kind
-- beheerrapport per DV with a beheer channel, planned like the maintenance jobs (its payload
-- names the job) and re-planned by its own run for the next day; one report per DV and day
-- (nmc.beheerrapport). The worker sends it (mailto: through NotifyNL with the NMC's own
-- template, https: as a signed POST); a report holds notification ids and counts only.

CREATE OR REPLACE FUNCTION nmc.beheerkanaal_soort(p_kanaal text)
RETURNS text
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN p_kanaal ~* '^mailto:[^@?[:space:]]+@[^@?[:space:]]+(\?.*)?$' THEN 'mailto'
        -- An http: URL too, as for webhooks (tests and demos on loopback); https: in production.
        WHEN p_kanaal ~* '^https?://[^/?#[:space:]]+' THEN 'https'
    END
$$;
COMMENT ON FUNCTION nmc.beheerkanaal_soort(text) IS
'Internal: the kind of a beheer channel, mailto (an e-mail address) or https (an http(s) '
'URL), or NULL for anything else (no report is planned for it).';

CREATE OR REPLACE FUNCTION nmc.beheerrapport_due(p_dag date)
RETURNS timestamptz
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (p_dag + i.beheerrapport_tijd) AT TIME ZONE 'Europe/Amsterdam'
    FROM nmc.instellingen AS i
$$;
COMMENT ON FUNCTION nmc.beheerrapport_due(date) IS
'Internal: the moment the report of day p_dag (Europe/Amsterdam) is due: that day at '
'settings.beheerrapport_tijd, local time.';

CREATE OR REPLACE FUNCTION nmc.ensure_beheerrapporten()
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_vandaag CONSTANT date := (v_nu AT TIME ZONE 'Europe/Amsterdam')::date;
    v_gepland integer;
BEGIN
    -- Due at the next report time: today's when it is still to come, else tomorrow's. A DV
    -- whose report task is mislukt waits for an operator (nmc.reopen_taak): none beside it.
    INSERT INTO nmc.taak (soort, dv_id, due, payload, aangemaakt_op)
    SELECT
        'beheerrapport', d.dv_id,
        CASE
            WHEN nmc.beheerrapport_due(v_vandaag) > v_nu THEN nmc.beheerrapport_due(v_vandaag)
            ELSE nmc.beheerrapport_due(v_vandaag + 1)
        END,
        '{"werk": "beheerrapport"}'::jsonb, v_nu
    FROM nmc.dienstverlener AS d
    WHERE d.actief AND nmc.beheerkanaal_soort(d.beheerkanaal) IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM nmc.taak AS t
            WHERE t.dv_id = d.dv_id AND t.staat = 'mislukt'
                AND t.payload ->> 'werk' = 'beheerrapport'
        )
    ON CONFLICT (dv_id) WHERE staat IN ('open', 'claimed') AND payload ->> 'werk' = 'beheerrapport'
    DO NOTHING;
    GET DIAGNOSTICS v_gepland = ROW_COUNT;
    RETURN v_gepland;
END
$$;
COMMENT ON FUNCTION nmc.ensure_beheerrapporten() IS
'Gives every active DV with a beheer channel (mailto: or https:) its one open beheerrapport '
'task, due at the next report time (settings.beheerrapport_tijd, Europe/Amsterdam), except '
'a DV whose report task is mislukt (it waits for an operator). Workers call it at their '
'first round and then once a minute; idempotent. Returns how many tasks it planned.';

CREATE OR REPLACE FUNCTION nmc.begin_beheerrapport_v2(
    p_taak_id bigint, p_claim_epoch integer, p_drempel double precision
)
RETURNS TABLE (
    rapport_id uuid, dv_id integer, oin text, naam text, kanaal text, dag date,
    onbevestigd integer, afgekapt boolean, oudste timestamptz, bevestigingstermijn interval,
    notificatie_ids uuid[], aandeel double precision, drempel double precision,
    boven_drempel boolean, te_melden boolean, afgerond boolean, template_id uuid,
    notify_service text, budget boolean, webhook_gat boolean, onverwerkbaar jsonb,
    onverwerkbaar_dag date, niet_beschikbaar text[]
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_taak CONSTANT nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_nu CONSTANT timestamptz := nmc.now();
    v_dag CONSTANT date := (v_nu AT TIME ZONE 'Europe/Amsterdam')::date;
    v_i nmc.instellingen;
    v_dv nmc.dienstverlener;
    v_soort text;
    v_rapport nmc.beheerrapport;
    v_aantal integer;
    v_oudste timestamptz;
    v_ids uuid [];
    v_aandeel double precision;
    v_boven boolean;
    v_gat boolean;
    v_budget boolean := false;
    v_onverwerkbaar jsonb;
    v_niet text [];
BEGIN
    IF v_taak.soort <> 'beheerrapport' OR v_taak.payload ->> 'werk' IS DISTINCT FROM 'beheerrapport'
        THEN
        RAISE EXCEPTION 'task % is not a beheer report', p_taak_id USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_i FROM nmc.instellingen;
    SELECT * INTO v_dv FROM nmc.dienstverlener AS d WHERE d.dv_id = v_taak.dv_id;
    v_soort := CASE WHEN v_dv.actief THEN nmc.beheerkanaal_soort(v_dv.beheerkanaal) END;
    IF v_soort IS NULL THEN
        -- Deactivated, or no (usable) channel any more: no report; the worker closes the task.
        RETURN QUERY SELECT
            NULL::uuid, v_taak.dv_id, v_dv.oin, v_dv.naam, NULL::text, v_dag, 0, false,
            NULL::timestamptz, v_dv.bevestigingstermijn, '{}'::uuid [], NULL::double precision,
            p_drempel, false, false, false, v_i.beheerrapport_template_id,
            v_i.beheerrapport_notify_service, false, false, '[]'::jsonb, v_dag - 1,
            '{}'::text [];
        RETURN;
    END IF;

    -- A report this task began and did not finish (its answer was lost, it was deferred) goes
    -- on as today's: its id is the NotifyNL reference a try looks up, so a new id after
    -- midnight would send the e-mail again. The DV has one open report task at a time, so a
    -- report made since the task was planned is this task's.
    UPDATE nmc.beheerrapport AS r SET dag = v_dag
    WHERE r.id = (
        SELECT o.id FROM nmc.beheerrapport AS o
        WHERE o.dv_id = v_dv.dv_id AND o.uitkomst IS NULL
            AND o.aangemaakt_op >= v_taak.aangemaakt_op
        ORDER BY o.dag DESC
        LIMIT 1
    )
        AND r.dag < v_dag
        AND NOT EXISTS (
            SELECT 1 FROM nmc.beheerrapport AS t WHERE t.dv_id = v_dv.dv_id AND t.dag = v_dag
        );

    SELECT * INTO v_rapport FROM nmc.beheerrapport AS r
    WHERE r.dv_id = v_dv.dv_id AND r.dag = v_dag
    FOR UPDATE;
    IF FOUND AND v_rapport.uitkomst IS NOT NULL THEN
        -- Today's report went out (or had nothing to say): once a day per DV.
        RETURN QUERY SELECT
            v_rapport.id, v_dv.dv_id, v_dv.oin, v_dv.naam, v_dv.beheerkanaal, v_dag,
            v_rapport.onbevestigd, v_rapport.onbevestigd_afgekapt, NULL::timestamptz,
            v_dv.bevestigingstermijn, '{}'::uuid [], v_rapport.geen_contactgegevens_aandeel,
            v_rapport.geen_contactgegevens_drempel, v_rapport.boven_drempel, false, true,
            v_i.beheerrapport_template_id, v_i.beheerrapport_notify_service, false,
            v_rapport.webhook_gat, '[]'::jsonb, v_dag - 1, '{}'::text [];
        RETURN;
    END IF;

    -- The terminal events past the DV's acknowledgement, as nmc.report_onbevestigd_v2 reads
    -- them (oldest first, at most settings.onbevestigd_telgrens, from event_terminaal), the
    -- ones older than its ack term counted, and their notifications listed (each once).
    WITH gelezen AS (
        SELECT e.notificatie_id, e.tijdstip, e.xid, e.event_id
        FROM nmc.event AS e
        LEFT JOIN nmc.bevestiging AS b
            ON b.dv_id = v_dv.dv_id AND b.epoch = (SELECT c.epoch FROM nmc.cluster_epoch AS c)
        WHERE e.dv_id = v_dv.dv_id
            AND e.naar IN (
                'definitief-bezorgd', 'niet-bezorgbaar', 'technisch-mislukt',
                'bezorgstatus-onbekend', 'verlopen', 'geannuleerd'
            )
            AND e.xid >= coalesce(b.xid, '0'::xid8)
            AND (e.xid, e.event_id) > (coalesce(b.xid, '0'::xid8), coalesce(b.event_id, 0))
        ORDER BY e.dv_id, e.xid, e.event_id
        LIMIT v_i.onbevestigd_telgrens
    ),

    achter AS (
        SELECT g.* FROM gelezen AS g WHERE g.tijdstip < v_nu - v_dv.bevestigingstermijn
    ),

    eerste AS (
        SELECT f.notificatie_id, f.xid, f.event_id
        FROM (
            SELECT DISTINCT ON (a.notificatie_id) a.notificatie_id, a.xid, a.event_id
            FROM achter AS a
            ORDER BY a.notificatie_id, a.xid, a.event_id
        ) AS f
        ORDER BY f.xid, f.event_id
        LIMIT v_i.beheerrapport_max_ids
    )

    SELECT
        (SELECT pg_catalog.count(*) FROM achter)::integer,
        (SELECT pg_catalog.min(a.tijdstip) FROM achter AS a),
        coalesce(
            (
                SELECT pg_catalog.array_agg(f.notificatie_id ORDER BY f.xid, f.event_id)
                FROM eerste AS f
            ),
            '{}'
        )
    INTO v_aantal, v_oudste, v_ids;

    SELECT
        (pg_catalog.count(*) FILTER (WHERE n.reden = 'geen-contactgegevens'))::double precision
        / NULLIF(pg_catalog.count(*), 0)
    INTO v_aandeel
    FROM nmc.notificatie AS n
    -- Over a recent window (settings.beheerrapport_venster), not the whole kept year: a new
    -- spike shows at once, an early one stops flagging a small DV.
    WHERE n.dv_id = v_dv.dv_id AND n.regie = 'centraal'
        AND n.terminaal_op >= v_nu - v_i.beheerrapport_venster;
    v_boven := coalesce(v_aandeel > p_drempel, false);
    -- A webhook paused for a gap (nmc.webhook_gat) waits for the DV: it is told here.
    v_gat := EXISTS (
        SELECT 1 FROM nmc.webhookpositie AS w
        WHERE w.dv_id = v_dv.dv_id AND w.gat_op IS NOT NULL AND v_dv.webhook_url IS NOT NULL
    );

    -- Yesterday's notifications NotifyNL could not render (the template changed after the
    -- intake), per berichttype: each day is in the report of the day after.
    SELECT coalesce(
        pg_catalog.jsonb_agg(
            pg_catalog.jsonb_build_object('berichttype', o.berichttype, 'aantal', o.aantal)
            ORDER BY o.berichttype
        ),
        '[]'::jsonb
    )
    INTO v_onverwerkbaar
    FROM nmc.onverwerkbaar AS o
    WHERE o.dv_id = v_dv.dv_id AND o.dag = v_dag - 1;

    -- The DV's berichttypen whose NotifyNL template is gone (the intake refuses them, NM033).
    v_niet := ARRAY(
        SELECT b.code FROM nmc.berichttype AS b
        INNER JOIN nmc.notifynl_template AS t
            ON t.notify_service = b.notify_service AND t.template_id = b.notifynl_template_id
        WHERE b.dv_id = v_dv.dv_id AND b.actief AND t.staat = 'verdwenen'
        ORDER BY b.code
    );

    -- The same report all day: a try after a lost answer keeps its id (the NotifyNL
    -- reference), with the counts as they are now.
    INSERT INTO nmc.beheerrapport AS r (
        id, dv_id, dag, kanaal, onbevestigd, onbevestigd_afgekapt,
        geen_contactgegevens_aandeel, geen_contactgegevens_drempel, boven_drempel, webhook_gat,
        aangemaakt_op
    )
    VALUES (
        pg_catalog.gen_random_uuid(), v_dv.dv_id, v_dag, v_soort, v_aantal,
        v_aantal >= v_i.onbevestigd_telgrens, v_aandeel, p_drempel, v_boven, v_gat, v_nu
    )
    ON CONFLICT (dv_id, dag) DO UPDATE
    SET kanaal = excluded.kanaal, onbevestigd = excluded.onbevestigd,
        onbevestigd_afgekapt = excluded.onbevestigd_afgekapt,
        geen_contactgegevens_aandeel = excluded.geen_contactgegevens_aandeel,
        geen_contactgegevens_drempel = excluded.geen_contactgegevens_drempel,
        boven_drempel = excluded.boven_drempel, webhook_gat = excluded.webhook_gat
    RETURNING * INTO v_rapport;

    -- An e-mail goes through NotifyNL: it takes a token of its service's send budget (the
    -- budget is the only user of NotifyNL's rate limit), once a template is configured.
    IF v_soort = 'https' THEN
        v_budget := true;
    ELSIF (
        v_aantal > 0 OR v_boven OR v_gat OR v_onverwerkbaar <> '[]'::jsonb
        OR pg_catalog.cardinality(v_niet) > 0
    )
        AND v_i.beheerrapport_template_id IS NOT NULL THEN
        v_budget := nmc.take_budget(v_i.beheerrapport_notify_service, 'verzenden', 1) > 0;
    END IF;

    RETURN QUERY SELECT
        v_rapport.id, v_dv.dv_id, v_dv.oin, v_dv.naam, v_dv.beheerkanaal, v_dag, v_aantal,
        v_rapport.onbevestigd_afgekapt, v_oudste, v_dv.bevestigingstermijn, v_ids, v_aandeel,
        p_drempel, v_boven,
        v_aantal > 0 OR v_boven OR v_gat OR v_onverwerkbaar <> '[]'::jsonb
        OR pg_catalog.cardinality(v_niet) > 0,
        false, v_i.beheerrapport_template_id, v_i.beheerrapport_notify_service, v_budget, v_gat,
        v_onverwerkbaar, v_dag - 1, v_niet;
END
$$;
COMMENT ON FUNCTION nmc.begin_beheerrapport_v2(bigint, integer, double precision) IS
'For the claimed beheerrapport task (fenced by epoch): today''s (Europe/Amsterdam) report of '
'its DV, recorded in nmc.beheerrapport (one per DV and day; a later try keeps its id, also '
'on a later day: an unfinished report the task began becomes that day''s): the '
'channel (NULL: the DV is inactive or has no mailto:/https: channel, close the task), the '
'terminal statuses past its acknowledgement older than its bevestigingstermijn (count, '
'afgekapt when settings.onbevestigd_telgrens was reached, the oldest, at most '
'settings.beheerrapport_max_ids notification ids, oldest first), its share of '
'geen-contactgegevens among the centraal notifications that became terminal within '
'settings.beheerrapport_venster and whether it is above p_drempel, whether its webhook is '
'paused for a gap (webhook_gat: it waits for the DV to set its position), the notifications '
'of yesterday (onverwerkbaar_dag) NotifyNL could not render, per berichttype '
'(onverwerkbaar: [{berichttype, aantal}], from nmc.onverwerkbaar), the codes of its active '
'berichttypen whose NotifyNL template is gone (niet_beschikbaar); te_melden when any needs '
'reporting; afgerond when today''s report was finished already; the template and '
'Notify service of the e-mail; budget: an e-mail took its send token (false: wait, or no '
'template), an https: call always may.';

-- The previous release's form (its workers may call it during a rolling deploy): without
-- the gap and the unrenderable notifications, which those workers cannot put in a report.
CREATE OR REPLACE FUNCTION nmc.begin_beheerrapport(
    p_taak_id bigint, p_claim_epoch integer, p_drempel double precision
)
RETURNS TABLE (
    rapport_id uuid, dv_id integer, oin text, naam text, kanaal text, dag date,
    onbevestigd integer, afgekapt boolean, oudste timestamptz, bevestigingstermijn interval,
    notificatie_ids uuid[], aandeel double precision, drempel double precision,
    boven_drempel boolean, te_melden boolean, afgerond boolean, template_id uuid,
    notify_service text, budget boolean
)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        r.rapport_id, r.dv_id, r.oin, r.naam, r.kanaal, r.dag, r.onbevestigd, r.afgekapt,
        r.oudste, r.bevestigingstermijn, r.notificatie_ids, r.aandeel, r.drempel,
        r.boven_drempel, r.te_melden AND (r.onbevestigd > 0 OR r.boven_drempel), r.afgerond,
        r.template_id, r.notify_service, r.budget
    FROM nmc.begin_beheerrapport_v2(p_taak_id, p_claim_epoch, p_drempel) AS r
$$;
COMMENT ON FUNCTION nmc.begin_beheerrapport(bigint, integer, double precision) IS
'The previous release''s form of nmc.begin_beheerrapport_v2, without webhook_gat, the '
'unrenderable notifications and the unavailable berichttypen (te_melden only for '
'unacknowledged statuses or the share). '
'Drop it in the next release.';


CREATE OR REPLACE FUNCTION nmc.finish_beheerrapport(
    p_taak_id bigint, p_claim_epoch integer, p_rapport_id uuid, p_uitkomst text,
    p_notifynl_id uuid DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak CONSTANT nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_rapport nmc.beheerrapport;
BEGIN
    IF p_uitkomst IS NOT NULL AND p_uitkomst NOT IN ('verzonden', 'niets-te-melden') THEN
        RAISE EXCEPTION 'unknown beheer report outcome %', p_uitkomst USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_rapport FROM nmc.beheerrapport AS r
    WHERE r.id = p_rapport_id AND r.dv_id = v_taak.dv_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'report % is not this task''s', p_rapport_id USING ERRCODE = '22023';
    END IF;
    -- A finished report stays as it was (a second run of the same day only re-plans).
    IF v_rapport.uitkomst IS NULL AND p_uitkomst IS NOT NULL THEN
        UPDATE nmc.beheerrapport AS r
        SET uitkomst = p_uitkomst, notifynl_id = p_notifynl_id, afgerond_op = nmc.now()
        WHERE r.id = p_rapport_id
        RETURNING * INTO v_rapport;
    END IF;
    -- The same task, open again for the next day's report.
    UPDATE nmc.taak AS t
    SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL, pogingen = 0, uitstellen = 0,
        laatste_fout = NULL, due = nmc.beheerrapport_due(v_rapport.dag + 1)
    WHERE t.id = p_taak_id;
    -- Retention: the DV's reports older than the delivery-proof retention.
    DELETE FROM nmc.beheerrapport AS r
    WHERE r.dv_id = v_taak.dv_id
        AND r.dag < (
            (nmc.now() - (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i))
            AT TIME ZONE 'Europe/Amsterdam'
        )::date;
    RETURN v_rapport.uitkomst;
END
$$;
COMMENT ON FUNCTION nmc.finish_beheerrapport(bigint, integer, uuid, text, uuid) IS
'Commits a beheer report (fenced by epoch): p_uitkomst verzonden (with the NotifyNL id of '
'an e-mail) or niets-te-melden is recorded on the report unless it was finished already '
'(NULL: only re-plan); the task opens again, due at the next day''s report time; the DV''s '
'reports older than the delivery-proof retention are deleted. Returns the report''s '
'outcome. NM011 when stale; 22023 for an unknown outcome or another task''s report.';

CREATE OR REPLACE FUNCTION nmc.configure_beheerrapport(p_config jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_onbekend text;
BEGIN
    SELECT pg_catalog.string_agg(k, ', ') INTO v_onbekend
    FROM pg_catalog.jsonb_object_keys(p_config) AS k
    WHERE k NOT IN ('notifynlTemplateId', 'notifyService', 'tijd', 'maxIds', 'venster');
    IF v_onbekend IS NOT NULL THEN
        RAISE EXCEPTION 'unknown fields in the beheer report document: %', v_onbekend
            USING ERRCODE = '22023';
    END IF;
    UPDATE nmc.instellingen AS i
    SET beheerrapport_template_id = CASE
            WHEN p_config ? 'notifynlTemplateId' THEN (p_config ->> 'notifynlTemplateId')::uuid
            ELSE i.beheerrapport_template_id
        END,
        beheerrapport_notify_service = coalesce(
            p_config ->> 'notifyService', i.beheerrapport_notify_service
        ),
        beheerrapport_tijd = coalesce((p_config ->> 'tijd')::time, i.beheerrapport_tijd),
        beheerrapport_max_ids = coalesce(
            (p_config ->> 'maxIds')::integer, i.beheerrapport_max_ids
        ),
        beheerrapport_venster = coalesce(
            (p_config ->> 'venster')::interval, i.beheerrapport_venster
        );
END
$$;
COMMENT ON FUNCTION nmc.configure_beheerrapport(jsonb) IS
'Configures the beheer report like a berichttype (`nmc admin beheerrapport configure`): '
'notifynlTemplateId (the NMC''s own NotifyNL template; null clears it), notifyService, tijd '
'(time of day, Europe/Amsterdam), maxIds, venster (the window of the geen-contactgegevens '
'share, an interval). Members left out keep their value. Admin only; '
'22023 for unknown members, the settings'' checks for bad values.';

CREATE OR REPLACE FUNCTION nmc.list_beheerrapporten(p_limiet integer DEFAULT 100)
RETURNS TABLE (
    dv_id integer, dag date, kanaal text, onbevestigd integer, onbevestigd_afgekapt boolean,
    geen_contactgegevens_aandeel double precision, boven_drempel boolean, uitkomst text,
    afgerond_op timestamptz
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.dv_id, r.dag, r.kanaal, r.onbevestigd, r.onbevestigd_afgekapt,
        r.geen_contactgegevens_aandeel, r.boven_drempel, r.uitkomst, r.afgerond_op
    FROM nmc.beheerrapport AS r
    ORDER BY r.dag DESC, r.dv_id
    LIMIT least(greatest(p_limiet, 1), 10000)
$$;
COMMENT ON FUNCTION nmc.list_beheerrapporten(integer) IS
'The latest beheer reports (newest day first), for `nmc admin report beheerrapporten`. '
'Admin only.';
