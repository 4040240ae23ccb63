-- The optional webhook (SPEC §7): one terugkoppelen task per DV reads the same log under
-- the same watermark from the DV's own delivery position. A 2xx moves only that position;
-- it is not an acknowledgement. Never one retry per event, never redelivery from zero.

CREATE OR REPLACE FUNCTION nmc.ensure_terugkoppelen()
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_epoch CONSTANT integer := (SELECT c.epoch FROM nmc.cluster_epoch AS c);
    v_gepland integer;
BEGIN
    -- A new webhook starts at the current watermark: older events are in the feed. A
    -- position of an older epoch (nmc.raise_epoch moves them all itself; this catches one
    -- left behind) restarts where a feed consumer of the old epoch restarts after its 410:
    -- at the oldest available event, so nothing the DV may have missed is skipped.
    INSERT INTO nmc.webhookpositie AS w (
        dv_id, epoch, xid, event_id, bijgewerkt_op, geleverd_op
    )
    SELECT
        d.dv_id, v_epoch, pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()), 0,
        v_nu, v_nu
    FROM nmc.dienstverlener AS d
    WHERE d.actief AND d.webhook_url IS NOT NULL
    ON CONFLICT (dv_id) DO UPDATE
    SET epoch = excluded.epoch, xid = '0', event_id = 0, bijgewerkt_op = v_nu,
        geleverd_op = v_nu
    WHERE w.epoch <> excluded.epoch;

    INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
    SELECT 'terugkoppelen', d.dv_id, greatest(v_nu, coalesce(w.gepauzeerd_tot, v_nu)), v_nu
    FROM nmc.dienstverlener AS d
    INNER JOIN nmc.webhookpositie AS w ON w.dv_id = d.dv_id
    WHERE d.actief AND d.webhook_url IS NOT NULL AND NOT w.uitgeschakeld
    ON CONFLICT (dv_id) WHERE staat IN ('open', 'claimed') AND soort = 'terugkoppelen'
    DO NOTHING;
    GET DIAGNOSTICS v_gepland = ROW_COUNT;
    RETURN v_gepland;
END
$$;
COMMENT ON FUNCTION nmc.ensure_terugkoppelen() IS
'Gives every active DV with a webhook (not disabled) its delivery position and its one '
'terugkoppelen task; idempotent (workers call it periodically). Returns how many tasks it '
'planned.';

CREATE OR REPLACE FUNCTION nmc.claim_terugkoppelen(p_eigenaar text, p_batch integer DEFAULT 5)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, dv_id integer, webhook_url text, epoch integer,
    pagina json
)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        c.taak_id, c.claim_epoch, c.dv_id,
        -- No URL for a DV that was deactivated or lost its webhook: the worker closes the task.
        -- Nor for a webhook whose URL was not validated: this release's workers claim with
        -- nmc.claim_terugkoppelen_v2 and validate it first.
        CASE
            WHEN d.actief AND nmc.webhook_gevalideerd(d.dv_id, d.webhook_url) THEN d.webhook_url
        END,
        w.epoch,
        -- The shape of a feed page (nmc.page_events), so the worker seals the same cursor.
        nmc.read_events(d.dv_id, w.xid, w.event_id, d.webhook_max_batch, w.epoch, nmc.now())
    FROM nmc.claim_taken('terugkoppelen', p_eigenaar, p_batch) AS c
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = c.dv_id
    INNER JOIN nmc.webhookpositie AS w ON w.dv_id = c.dv_id
$$;
COMMENT ON FUNCTION nmc.claim_terugkoppelen(text, integer) IS
'Claims DVs'' webhook tasks and returns for each the URL (NULL when the DV is inactive, has '
'no webhook or its URL is not validated: close the task) and the next batch of events from '
'its delivery position (at most webhook_max_batch, below the watermark) as a feed page: '
'{events, xid, eventId, epoch, uitgegevenOp}, the position after the batch. An empty batch '
'only moves the position up to the watermark. The previous release''s form of '
'nmc.claim_terugkoppelen_v2 (drop it in the next).';

CREATE OR REPLACE FUNCTION nmc.claim_terugkoppelen_v2(
    p_eigenaar text, p_batch integer DEFAULT 5
)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, dv_id integer, webhook_url text, epoch integer,
    pagina json, gevalideerd boolean
)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        c.taak_id, c.claim_epoch, c.dv_id,
        CASE WHEN d.actief THEN d.webhook_url END,
        w.epoch,
        -- A webhook not validated for its URL gets no batch: it is validated first.
        CASE
            WHEN v.gevalideerd
                THEN nmc.read_events(
                    d.dv_id, w.xid, w.event_id, d.webhook_max_batch, w.epoch, nmc.now()
                )
        END,
        v.gevalideerd
    FROM nmc.claim_taken('terugkoppelen', p_eigenaar, p_batch) AS c
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = c.dv_id
    INNER JOIN nmc.webhookpositie AS w ON w.dv_id = c.dv_id
    CROSS JOIN LATERAL (
        SELECT d.webhook_url IS NOT NULL AND nmc.webhook_gevalideerd(d.dv_id, d.webhook_url)
    ) AS v (gevalideerd)
$$;
COMMENT ON FUNCTION nmc.claim_terugkoppelen_v2(text, integer) IS
'Claims DVs'' webhook tasks and returns for each the URL (NULL when the DV is inactive or '
'has no webhook: close the task), whether that URL passed its validation, and when it did '
'the next batch of events from its delivery position (at most webhook_max_batch, below the '
'watermark) as a feed page: {events, xid, eventId, epoch, uitgegevenOp}, the position after '
'the batch. An empty batch only moves the position up to the watermark. A webhook that is '
'not validated comes without a page: the worker validates it '
'(nmc.record_webhookvalidatie) and defers the task.';

CREATE OR REPLACE FUNCTION nmc.finish_terugkoppelen_v2(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_uitkomst text,
    p_xid xid8 DEFAULT NULL,
    p_event_id bigint DEFAULT NULL,
    p_epoch integer DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taak nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_instelling nmc.instellingen;
    v_w nmc.webhookpositie;
    v_max integer;
    v_pauze interval;
    v_meer boolean;
BEGIN
    SELECT * INTO v_instelling FROM nmc.instellingen;
    SELECT * INTO v_w FROM nmc.webhookpositie AS w WHERE w.dv_id = v_taak.dv_id FOR UPDATE;
    SELECT d.webhook_max_mislukt INTO v_max FROM nmc.dienstverlener AS d
    WHERE d.dv_id = v_taak.dv_id;

    IF p_uitkomst = 'geleverd' THEN
        IF p_epoch IS NOT NULL AND p_epoch <> v_w.epoch THEN
            -- The epoch was raised while this batch was out: its position belongs to the
            -- old xid series and must not replace the restarted one. Deliver again at once.
            v_meer := true;
        ELSE
            -- Delivered (or nothing to deliver): the position moves forward, never back,
            -- and its age (what the log's cleanup measures) starts again.
            UPDATE nmc.webhookpositie AS w
            SET xid = p_xid, event_id = p_event_id, mislukt = 0, gepauzeerd_tot = NULL,
                bijgewerkt_op = v_nu, geleverd_op = v_nu
            WHERE w.dv_id = v_taak.dv_id AND (w.xid, w.event_id) <= (p_xid, p_event_id);
            -- Events still waiting behind a full batch go out at once; a backlog is not
            -- drained one batch per webhook_interval.
            v_meer := EXISTS (
                SELECT 1 FROM nmc.event AS e
                WHERE e.dv_id = v_taak.dv_id
                    AND e.xid >= p_xid
                    AND (e.xid, e.event_id) > (p_xid, p_event_id)
                    AND e.xid < pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())
            );
        END IF;
        UPDATE nmc.taak AS t
        SET staat = 'open',
            due = CASE WHEN v_meer THEN v_nu ELSE v_nu + v_instelling.webhook_interval END,
            lease_eigenaar = NULL, lease_tot = NULL, uitstellen = 0
        WHERE t.id = p_taak_id;
        RETURN 'geleverd';
    ELSIF p_uitkomst = 'weg' THEN
        -- The DV answered 410: the webhook stays off until the DV resumes it.
        UPDATE nmc.webhookpositie AS w SET uitgeschakeld = true, bijgewerkt_op = v_nu
        WHERE w.dv_id = v_taak.dv_id;
        PERFORM nmc.close_taak(p_taak_id);
        RETURN 'uitgeschakeld';
    ELSIF p_uitkomst = 'mislukt' THEN
        -- Back off; after the DV's number of failures pause, growing up to a day. The
        -- position and its age stay: a webhook that only fails stops holding the log's
        -- cleanup back once its last delivery is older than the DV's max cursor age.
        v_pauze := CASE
            WHEN v_w.mislukt + 1 < v_max THEN nmc.uitstel(v_w.mislukt)
            ELSE least(
                INTERVAL '1 minute' * pg_catalog.power(2, least(v_w.mislukt + 1 - v_max, 20)),
                v_instelling.webhook_pauze_max
            )
        END;
        UPDATE nmc.webhookpositie AS w
        SET mislukt = w.mislukt + 1,
            gepauzeerd_tot = CASE WHEN w.mislukt + 1 >= v_max THEN v_nu + v_pauze END,
            bijgewerkt_op = v_nu
        WHERE w.dv_id = v_taak.dv_id;
        UPDATE nmc.taak AS t
        SET staat = 'open', due = v_nu + v_pauze, uitstellen = t.uitstellen + 1,
            lease_eigenaar = NULL, lease_tot = NULL
        WHERE t.id = p_taak_id;
        RETURN CASE WHEN v_w.mislukt + 1 >= v_max THEN 'gepauzeerd' ELSE 'uitgesteld' END;
    END IF;
    RAISE EXCEPTION 'unknown webhook outcome %', p_uitkomst USING ERRCODE = '22023';
END
$$;
COMMENT ON FUNCTION nmc.finish_terugkoppelen_v2(bigint, integer, text, xid8, bigint, integer) IS
'Commits one webhook call (fenced by claim epoch). geleverd: the delivery position moves to '
'(p_xid, p_event_id) (forward only; not an acknowledgement), its geleverd_op restarts, and '
'the task is due at once when events wait below the watermark after it, else after '
'webhook_interval; when p_epoch (the cluster epoch the batch was read in) is no longer the '
'position''s, the position stays and the task is due at once. mislukt: backoff; from the '
'DV''s webhook_max_mislukt failures on the webhook pauses, the pause doubling up to '
'webhook_pauze_max; geleverd_op is not touched. weg (410 from the DV): the webhook is '
'disabled until resumed.';

-- The form of the previous release (its workers may call it during a rolling deploy): no
-- epoch of the batch, so no check of it.
CREATE OR REPLACE FUNCTION nmc.finish_terugkoppelen(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_uitkomst text,
    p_xid xid8 DEFAULT NULL,
    p_event_id bigint DEFAULT NULL
)
RETURNS text
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.finish_terugkoppelen_v2(
        p_taak_id, p_claim_epoch, p_uitkomst, p_xid, p_event_id, NULL
    )
$$;
COMMENT ON FUNCTION nmc.finish_terugkoppelen(bigint, integer, text, xid8, bigint) IS
'The previous release''s form of nmc.finish_terugkoppelen_v2, without the batch''s epoch '
'(kept for workers of that release during a rolling deploy; drop it in the next).';

CREATE OR REPLACE FUNCTION nmc.resume_webhook(p_dv_id integer)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM nmc.dienstverlener AS d
        WHERE d.dv_id = p_dv_id AND d.actief AND d.webhook_url IS NOT NULL
    ) THEN
        RAISE EXCEPTION 'this dienstverlener has no webhook' USING ERRCODE = 'NM005';
    END IF;
    UPDATE nmc.webhookpositie AS w
    SET mislukt = 0, gepauzeerd_tot = NULL, uitgeschakeld = false, bijgewerkt_op = nmc.now()
    WHERE w.dv_id = p_dv_id;
    UPDATE nmc.taak AS t SET due = nmc.now()
    WHERE t.dv_id = p_dv_id AND t.soort = 'terugkoppelen' AND t.staat = 'open';
    PERFORM nmc.ensure_terugkoppelen();
    RETURN 'hervat';
END
$$;
COMMENT ON FUNCTION nmc.resume_webhook(integer) IS
'At the DV''s request (POST /webhook/hervatten): ends a pause or a 410-disable at once, '
'keeping the delivery position. NM005 when the DV has no webhook.';
