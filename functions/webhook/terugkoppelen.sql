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
    WHERE d.actief AND d.webhook_url IS NOT NULL AND NOT w.uitgeschakeld AND w.gat_op IS NULL
    ON CONFLICT (dv_id) WHERE staat IN ('open', 'claimed') AND soort = 'terugkoppelen'
    DO NOTHING;
    GET DIAGNOSTICS v_gepland = ROW_COUNT;
    RETURN v_gepland;
END
$$;
COMMENT ON FUNCTION nmc.ensure_terugkoppelen() IS
'Gives every active DV with a webhook (not disabled, not paused for a gap) its delivery '
'position and its one terugkoppelen task; idempotent (workers call it periodically). '
'Returns how many tasks it planned.';

-- A gap (audit 2, item 6): events after the delivery position were in an event partition
-- that has been dropped, so the feed answers 410 for this position. A batch read from it
-- would skip them without a word; the webhook pauses instead, until the DV sets its
-- position (nmc.set_webhook_positie). The position (0, 0) is "the oldest available event"
-- (an epoch raise, nmc.raise_epoch): a partition dropped before it was set skipped nothing.
CREATE OR REPLACE FUNCTION nmc.webhook_gat(p_w nmc.webhookpositie)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1 FROM nmc.event_partitie AS p
        WHERE p.verwijderd_op IS NOT NULL
            AND p_w.xid < p.xid_tot
            AND (p_w.xid <> '0'::xid8 OR p_w.event_id <> 0 OR p.verwijderd_op > p_w.geleverd_op)
    )
$$;
COMMENT ON FUNCTION nmc.webhook_gat(nmc.webhookpositie) IS
'Internal: true when a dropped event partition ends above the webhook''s delivery position '
'(the rule of nmc.check_cursor: the feed answers 410 for it), so events after the position '
'are gone; for the position (0, 0), the oldest available event, only a partition dropped '
'after it was set counts.';

CREATE OR REPLACE FUNCTION nmc.claim_terugkoppelen_v3(
    p_eigenaar text, p_batch integer DEFAULT 5
)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, dv_id integer, webhook_url text, epoch integer,
    pagina json, gevalideerd boolean, gat boolean
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v record;
BEGIN
    -- One statement, one snapshot: the gap is judged on the partitions the batch is read
    -- from (a drop that commits in between cannot slip between the check and the read).
    FOR v IN
        SELECT
            c.taak_id, c.claim_epoch, c.dv_id, d.actief, d.webhook_url, w.epoch, g.gevalideerd,
            g.gat,
            -- A webhook not validated for its URL gets no batch: it is validated first. One
            -- with a gap gets none either: it pauses.
            CASE
                WHEN g.gevalideerd AND NOT g.gat
                    THEN nmc.read_events(
                        d.dv_id, w.xid, w.event_id, d.webhook_max_batch, w.epoch, v_nu
                    )
            END AS pagina
        FROM nmc.claim_taken('terugkoppelen', p_eigenaar, p_batch) AS c
        INNER JOIN nmc.dienstverlener AS d ON d.dv_id = c.dv_id
        INNER JOIN nmc.webhookpositie AS w ON w.dv_id = c.dv_id
        CROSS JOIN LATERAL (
            SELECT
                d.webhook_url IS NOT NULL AND nmc.webhook_gevalideerd(d.dv_id, d.webhook_url),
                d.actief AND d.webhook_url IS NOT NULL AND nmc.webhook_gat(w)
        ) AS g (gevalideerd, gat)
    LOOP
        IF v.gat THEN
            -- Paused for the gap: the worker closes the task; none is planned until the DV
            -- sets its position.
            UPDATE nmc.webhookpositie AS w
            SET gat_op = coalesce(w.gat_op, v_nu), bijgewerkt_op = v_nu
            WHERE w.dv_id = v.dv_id;
        END IF;
        taak_id := v.taak_id;
        claim_epoch := v.claim_epoch;
        dv_id := v.dv_id;
        webhook_url := CASE WHEN v.actief THEN v.webhook_url END;
        epoch := v.epoch;
        pagina := v.pagina;
        gevalideerd := v.gevalideerd;
        gat := v.gat;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION nmc.claim_terugkoppelen_v3(text, integer) IS
'Claims DVs'' webhook tasks and returns for each the URL (NULL when the DV is inactive or '
'has no webhook: close the task), whether that URL passed its validation, whether the '
'position has a gap (nmc.webhook_gat: the webhook is then paused, webhookpositie.gat_op, '
'and the worker closes the task without a call), and when validated and without a gap '
'the next batch of events from its delivery position (at most webhook_max_batch, below '
'the watermark) as a feed page: {events, xid, eventId, epoch, uitgegevenOp}, the position '
'after the batch. An empty batch only moves the position up to the watermark. A webhook '
'that is not validated comes without a page: the worker validates it '
'(nmc.record_webhookvalidatie) and defers the task.';

-- The forms of earlier releases (their workers may call them during a rolling deploy): a
-- webhook with a gap comes without a URL, so those workers close its task without a call.
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
        c.taak_id, c.claim_epoch, c.dv_id, CASE WHEN NOT c.gat THEN c.webhook_url END, c.epoch,
        c.pagina, c.gevalideerd
    FROM nmc.claim_terugkoppelen_v3(p_eigenaar, p_batch) AS c
$$;
COMMENT ON FUNCTION nmc.claim_terugkoppelen_v2(text, integer) IS
'The previous release''s form of nmc.claim_terugkoppelen_v3, without the gap column: a '
'webhook with a gap is claimed without a URL (the worker closes the task). Drop it in the '
'next release.';

-- Whether a webhook has events to deliver: the rule of the finish (deliver again at once)
-- and of the worker's look for work (nmc.soorten_met_werk).
CREATE OR REPLACE FUNCTION nmc.webhook_events_wachten(
    p_dv_id integer, p_xid xid8, p_event_id bigint
)
RETURNS boolean
-- PL/pgSQL: its plan is kept for the session. As SQL its EXISTS keeps it from being inlined
-- (no sublinks in an inlined function), so it was planned again at every call.
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM nmc.event AS e
        WHERE e.dv_id = p_dv_id
            AND e.xid >= p_xid
            AND (e.xid, e.event_id) > (p_xid, p_event_id)
            AND e.xid < pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())
    );
END
$$;
COMMENT ON FUNCTION nmc.webhook_events_wachten(integer, xid8, bigint) IS
'Whether events of DV p_dv_id wait after the delivery position (p_xid, p_event_id) below '
'the visibility watermark: what the webhook''s next batch would hold.';

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
            v_meer := nmc.webhook_events_wachten(v_taak.dv_id, p_xid, p_event_id);
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

CREATE OR REPLACE FUNCTION nmc.resume_webhook(p_dv_id integer)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_gat timestamptz;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM nmc.dienstverlener AS d
        WHERE d.dv_id = p_dv_id AND d.actief AND d.webhook_url IS NOT NULL
    ) THEN
        RAISE EXCEPTION 'this dienstverlener has no webhook' USING ERRCODE = 'NM005';
    END IF;
    UPDATE nmc.webhookpositie AS w
    SET mislukt = 0, gepauzeerd_tot = NULL, uitgeschakeld = false, bijgewerkt_op = nmc.now()
    WHERE w.dv_id = p_dv_id
    RETURNING w.gat_op INTO v_gat;
    UPDATE nmc.taak AS t SET due = nmc.now()
    WHERE t.dv_id = p_dv_id AND t.soort = 'terugkoppelen' AND t.staat = 'open';
    PERFORM nmc.ensure_terugkoppelen();
    -- A pause for a gap is not ended by resuming: delivering on would skip the lost events.
    -- The DV sets its position (nmc.set_webhook_positie).
    RETURN CASE WHEN v_gat IS NULL THEN 'hervat' ELSE 'gat' END;
END
$$;
COMMENT ON FUNCTION nmc.resume_webhook(integer) IS
'At the DV''s request (POST /webhook/hervatten): ends a pause or a 410-disable at once, '
'keeping the delivery position; returns hervat, or gat when the webhook stays paused for a '
'gap (only nmc.set_webhook_positie ends that). NM005 when the DV has no webhook.';

CREATE OR REPLACE FUNCTION nmc.set_webhook_positie(
    p_dv_id integer,
    p_epoch integer,
    p_xid xid8,
    p_event_id bigint,
    p_uitgegeven_op timestamptz
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_epoch CONSTANT integer := (SELECT c.epoch FROM nmc.cluster_epoch AS c);
    v_dv nmc.dienstverlener;
    v_xid xid8 := p_xid;
    v_event_id bigint := p_event_id;
BEGIN
    SELECT * INTO v_dv FROM nmc.dienstverlener AS d
    WHERE d.dv_id = p_dv_id AND d.actief AND d.webhook_url IS NOT NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'this dienstverlener has no webhook' USING ERRCODE = 'NM005';
    END IF;
    IF p_xid IS NULL THEN
        -- The oldest available event: just past the newest dropped range (dropping goes
        -- oldest first), where a feed read without a cursor starts too.
        SELECT coalesce(pg_catalog.max(p.xid_tot), '0'::xid8) INTO v_xid
        FROM nmc.event_partitie AS p WHERE p.verwijderd_op IS NOT NULL;
        v_event_id := 0;
    ELSE
        -- A cursor the feed would answer 410 for is refused the same way (NM018).
        PERFORM nmc.check_cursor(v_dv, p_epoch, p_xid, p_uitgegeven_op);
    END IF;
    -- Forward or back, and the webhook resumes from there (any pause ends). Its age
    -- starts again: the DV asked for it.
    INSERT INTO nmc.webhookpositie AS w (
        dv_id, epoch, xid, event_id, bijgewerkt_op, geleverd_op
    )
    VALUES (p_dv_id, v_epoch, v_xid, v_event_id, v_nu, v_nu)
    ON CONFLICT (dv_id) DO UPDATE
    SET epoch = excluded.epoch, xid = excluded.xid, event_id = excluded.event_id,
        mislukt = 0, gepauzeerd_tot = NULL, uitgeschakeld = false, gat_op = NULL,
        bijgewerkt_op = v_nu, geleverd_op = v_nu;
    -- A batch out now was read from the old position: its finish must not move the new one
    -- (a claimed task is taken back, so that finish is stale, NM011). Due at once.
    UPDATE nmc.taak AS t
    SET staat = 'open', claim_epoch = t.claim_epoch + 1, lease_eigenaar = NULL,
        lease_tot = NULL, due = v_nu
    WHERE t.dv_id = p_dv_id AND t.soort = 'terugkoppelen' AND t.staat IN ('open', 'claimed');
    PERFORM nmc.ensure_terugkoppelen();
    RETURN 'gezet';
END
$$;
COMMENT ON FUNCTION nmc.set_webhook_positie(integer, integer, xid8, bigint, timestamptz) IS
'At the DV''s request (PUT /webhook/positie): sets its webhook delivery position to the '
'position of a feed cursor it holds (epoch, xid, event id, issue time; refused with NM018, '
'410, on the feed''s rules: another epoch, older than the max cursor age, into a dropped '
'partition) or, with p_xid NULL, to the oldest available event; ends any pause (also one '
'for a gap), restarts the position''s age and makes the webhook task due now (a batch out '
'at that moment no longer moves the position). Returns gezet. NM005 when the DV has no '
'webhook.';
