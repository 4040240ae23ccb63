-- Reconciliation (SPEC §6): ask NotifyNL for attempts without a receipt, after 1, 6 and
-- 24 hours and then daily until NotifyNL's retention ends, within the budget share.

CREATE OR REPLACE FUNCTION nmc.next_navraag(p_verzonden_op timestamptz, p_na timestamptz)
RETURNS timestamptz
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT pg_catalog.min(m.moment)
        FROM nmc.instellingen AS i,
            LATERAL (
                SELECT p_verzonden_op + s.na AS moment
                FROM unnest(ARRAY[INTERVAL '1 hour', INTERVAL '6 hours']) AS s (na)
                UNION ALL
                SELECT p_verzonden_op + d * INTERVAL '1 day'
                FROM pg_catalog.generate_series(1, 400) AS d
                UNION ALL
                -- The last ask when the retention ends: only then is silence a dead end.
                SELECT p_verzonden_op + i.notifynl_bewaartermijn
            ) AS m
        WHERE m.moment > p_na AND m.moment <= p_verzonden_op + i.notifynl_bewaartermijn
    );
END
$$;
COMMENT ON FUNCTION nmc.next_navraag(timestamptz, timestamptz) IS
'The next reconciliation moment after p_na for an attempt sent at p_verzonden_op: +1 h, '
'+6 h, +24 h, then daily, and last the moment NotifyNL''s retention ends (so the dead end '
'comes only once the retention has passed); NULL when none is left.';

CREATE OR REPLACE FUNCTION nmc.claim_navraag_v2(p_eigenaar text, p_batch integer DEFAULT 20)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, notificatie_id uuid, poging_id uuid,
    notifynl_id uuid, trace_id text, notify_service text
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
    v_budget record;
    v_gekozen bigint [] := '{}';
BEGIN
    -- Within the fixed reconciliation share of each service's window; the rest waits.
    FOR v_budget IN
        SELECT b.notify_service, pg_catalog.array_agg(l.taak_id ORDER BY l.rang, l.taak_id) AS taken
        FROM nmc.lock_due_taken('reconciliëren', greatest(p_batch, 1)) AS l
        INNER JOIN nmc.taak AS t ON t.id = l.taak_id
        INNER JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
        INNER JOIN nmc.berichttype AS b ON b.dv_id = n.dv_id AND b.code = n.berichttype
        GROUP BY b.notify_service
    LOOP
        v_gekozen := v_gekozen || v_budget.taken[
            1:nmc.take_budget(v_budget.notify_service, 'navraag',
                pg_catalog.cardinality(v_budget.taken))
        ];
    END LOOP;

    -- The service too: NotifyNL answers a service only about its own notifications, so the
    -- worker asks with the key of the service the attempt was sent through.
    RETURN QUERY
    UPDATE nmc.taak AS t
    SET staat = 'claimed', lease_eigenaar = p_eigenaar,
        lease_tot = v_nu + (SELECT i.lease_duur FROM nmc.instellingen AS i),
        claim_epoch = t.claim_epoch + 1
    FROM nmc.poging AS p, nmc.notificatie AS n, nmc.berichttype AS b
    WHERE t.id = ANY(v_gekozen) AND p.id = t.poging_id AND n.id = t.notificatie_id
        AND b.dv_id = n.dv_id AND b.code = n.berichttype
    RETURNING
        t.id, t.claim_epoch, t.notificatie_id, t.poging_id, p.notifynl_id, t.trace_id,
        b.notify_service;
END
$$;
COMMENT ON FUNCTION nmc.claim_navraag_v2(text, integer) IS
'Claims up to p_batch due reconciliation tasks, fairly across DVs and within the '
'reconciliation share of each NotifyNL service''s budget window. Returns the attempt, '
'its NotifyNL id to look up and the Notify service of its berichttype (whose API key the '
'look-up needs).';

CREATE OR REPLACE FUNCTION nmc.finish_navraag_v2(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_gevonden boolean,
    p_status text DEFAULT NULL,
    p_completed_at timestamptz DEFAULT NULL,
    p_sent_at timestamptz DEFAULT NULL,
    p_notifynl_id uuid DEFAULT NULL,
    p_template_id uuid DEFAULT NULL,
    p_template_versie integer DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taak nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_p nmc.poging;
    v_volgende timestamptz;
    v_status nmc.notificatie_status;
BEGIN
    SELECT * INTO v_p FROM nmc.poging AS p WHERE p.id = v_taak.poging_id;

    -- An answer with a final status is judged exactly like a receipt.
    IF p_gevonden AND nmc.poging_status_voor(p_status) IS NOT NULL THEN
        PERFORM nmc.close_taak(p_taak_id);
        RETURN nmc.apply_receipt_v2(
            v_p.id, p_notifynl_id, p_status, p_completed_at, p_sent_at, 'navraag', v_nu,
            p_template_id, p_template_versie
        );
    END IF;

    -- No outcome yet: ask again at the next moment, if NotifyNL still keeps the message.
    v_volgende := nmc.next_navraag(coalesce(v_p.verzonden_op, v_taak.aangemaakt_op), v_nu);
    IF p_gevonden AND v_volgende IS NOT NULL THEN
        IF p_status IS NOT NULL AND p_status NOT IN ('created', 'sending', 'pending') THEN
            -- A status the NMC does not know: recorded beside what is known, and counted
            -- (and in the receipt history), as for a receipt.
            PERFORM nmc.apply_receipt_v2(
                v_p.id, p_notifynl_id, p_status, p_completed_at, p_sent_at, 'navraag', v_nu,
            p_template_id, p_template_versie
            );
        END IF;
        UPDATE nmc.taak AS t
        SET staat = 'open', due = v_volgende, lease_eigenaar = NULL, lease_tot = NULL
        WHERE t.id = p_taak_id;
        RETURN 'opnieuw';
    END IF;

    -- The attempt got its outcome meanwhile (a receipt came while NotifyNL was asked):
    -- the answer changes nothing.
    IF v_p.status <> 'verzonden' THEN
        PERFORM nmc.close_taak(p_taak_id);
        RETURN 'vastgelegd';
    END IF;

    -- 404, or the retention ends without an outcome: a dead end.
    SELECT n.status INTO v_status
    FROM nmc.notificatie AS n WHERE n.id = v_taak.notificatie_id FOR UPDATE;
    -- Of a final notification (bezorgstatus-onbekend aside) the attempt stays as it was: its
    -- final delivery proof does not change.
    IF nmc.is_terminal(v_status) AND v_status <> 'bezorgstatus-onbekend' THEN
        PERFORM nmc.close_taak(p_taak_id);
        RETURN 'vastgelegd';
    END IF;
    UPDATE nmc.poging AS p SET status = 'onbekend'
    WHERE p.id = v_p.id AND p.status = 'verzonden';
    PERFORM nmc.close_taak(p_taak_id);
    IF v_status = 'verzonden' AND NOT EXISTS (
        SELECT 1 FROM nmc.poging AS p
        WHERE p.notificatie_id = v_taak.notificatie_id AND p.id <> v_p.id
            AND p.status IN ('gepland', 'verzonden')
    ) THEN
        PERFORM nmc.transition_notificatie(v_taak.notificatie_id, 'bezorgstatus-onbekend');
        RETURN 'bezorgstatus-onbekend';
    END IF;
    RETURN 'vastgelegd';
END
$$;
COMMENT ON FUNCTION nmc.finish_navraag_v2(
    bigint, integer, boolean, text, timestamptz, timestamptz, uuid, uuid, integer
) IS
'Commits a reconciliation answer (fenced by epoch). Found with a final status: judged by '
'nmc.apply_receipt_v2. Found without one: asked again at the next moment of the schedule. '
'Not found (404), or NotifyNL''s retention over without an outcome: the attempt becomes '
'onbekend and the notification bezorgstatus-onbekend (unless another attempt still runs), '
'but an attempt of a terminal notification (bezorgstatus-onbekend aside) is left as it is; '
'an attempt that got its outcome meanwhile (a receipt came while NotifyNL was asked) is '
'left as it is. Reconciliation is per attempt: the answer concerns the task''s attempt. '
'p_notifynl_id, p_template_id and p_template_versie are what NotifyNL answered (its id, '
'and the template id and version of GET /v2/notifications/{id}): judged like a receipt''s '
'(an id other than the attempt''s is recorded as a duplicate) and written into the '
'receipt history, which the proof and the history show.';

CREATE OR REPLACE FUNCTION nmc.finish_navraag(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_gevonden boolean,
    p_status text DEFAULT NULL,
    p_completed_at timestamptz DEFAULT NULL,
    p_sent_at timestamptz DEFAULT NULL
)
RETURNS text
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.finish_navraag_v2(
        p_taak_id, p_claim_epoch, p_gevonden, p_status, p_completed_at, p_sent_at, NULL, NULL,
        NULL
    )
$$;
COMMENT ON FUNCTION nmc.finish_navraag(bigint, integer, boolean, text, timestamptz, timestamptz) IS
'Kept for the previous release (its worker calls it during a rolling deploy): '
'nmc.finish_navraag_v2 without NotifyNL''s id and template, which replaces it; to be '
'dropped in a later release.';
