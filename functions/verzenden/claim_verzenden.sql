-- The send claim (SPEC §5): fair batch, send budget, and the claim as a transition under
-- the notification's row lock, so cancel, claim and a late receipt share one lock.
-- The batch holds only tasks that can get a token (nmc.lock_due_verzenden): a service whose
-- day is used up, or a DV's used fair share, does not fill it.

CREATE OR REPLACE FUNCTION nmc.claim_verzenden(p_eigenaar text, p_batch integer DEFAULT 20)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, notificatie_id uuid, poging_id uuid,
    poging_nummer smallint, herclaim boolean, mag_verzenden boolean, dv_id integer,
    dv_naam text, dienst text, regie nmc.regie, berichttype text, notifynl_template_id uuid,
    notify_service text, ontvanger_versleuteld bytea, gegevens_versleuteld bytea,
    sleutel_gewrapt bytea, kek_id text, trace_id text
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session for every statement (nested functions' too): planning
-- cost more than running them at a claim's or a batch's size (most of a small batch's CPU,
-- docs/pipeline.md, Plans). A table's ANALYZE (autovacuum's, after 10% of changes)
-- invalidates the plans made on it, so they follow the table as it grows.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_lease_tot CONSTANT timestamptz := v_nu + (SELECT i.lease_duur FROM nmc.instellingen AS i);
    v_k_taak bigint [];
    v_k_rang integer [];
    v_k_service text [];
    v_k_verzendbaar boolean [];
    v_k_dv integer [];
    v_budget record;
    v_aandeel record;
    v_kandidaten bigint [];
    v_service_gekozen bigint [];
    v_toegekend integer;
    v_gekozen bigint [] := '{}';
    v_taken bigint [];
    v_epochs integer [];
    v_notificaties uuid [];
    v_paden text [];
    v_pogingen uuid [];
    v_nummers smallint [];
BEGIN
    SELECT
        coalesce(pg_catalog.array_agg(l.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(l.rang), '{}'),
        coalesce(pg_catalog.array_agg(b.notify_service), '{}'),
        coalesce(pg_catalog.array_agg(
            n.status IN ('aangenomen', 'in-verzending', 'verzonden')
        ), '{}'),
        coalesce(pg_catalog.array_agg(n.dv_id), '{}')
    INTO v_k_taak, v_k_rang, v_k_service, v_k_verzendbaar, v_k_dv
    FROM nmc.lock_due_verzenden(greatest(p_batch, 1)) AS l
    INNER JOIN nmc.taak AS t ON t.id = l.taak_id
    INNER JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
    INNER JOIN nmc.berichttype AS b ON b.dv_id = n.dv_id AND b.code = n.berichttype;

    -- Batch = min(backlog, tokens) per service; the cut keeps the round robin (by rank).
    -- Tasks that will not send (the notification moved on) need no token. Before the
    -- tokens, the fair share of the day (nmc.verzendaandeel_ruimte) bounds how many tasks
    -- of the service's heavy consumers are candidates, so no token is taken and not used.
    FOR v_budget IN
        SELECT DISTINCT k.service
        FROM unnest(v_k_service, v_k_verzendbaar) AS k (service, verzendbaar)
        WHERE k.verzendbaar
        ORDER BY k.service
    LOOP
        -- The service's pace row first (take_budget locks it anyway, until the commit):
        -- the claims of a service then read and write its shares one after the other.
        PERFORM 1 FROM nmc.verzendtempo AS v
        WHERE v.notify_service = v_budget.service AND v.soort = 'verzenden'
        FOR UPDATE;
        SELECT * INTO v_aandeel FROM nmc.verzendaandeel_ruimte(v_budget.service);
        v_kandidaten := ARRAY(
            SELECT c.taak FROM (
                SELECT k.taak, k.rang, k.dv = ANY(v_aandeel.zware_dvs) AS zwaar,
                    pg_catalog.row_number() OVER (
                        PARTITION BY k.dv = ANY(v_aandeel.zware_dvs) ORDER BY k.rang, k.taak
                    ) AS volgnummer
                FROM unnest(v_k_taak, v_k_rang, v_k_service, v_k_verzendbaar, v_k_dv)
                    AS k (taak, rang, service, verzendbaar, dv)
                WHERE k.verzendbaar AND k.service = v_budget.service
            ) AS c
            WHERE NOT c.zwaar OR c.volgnummer <= v_aandeel.ruimte
            -- Within a rank the heavy consumers come last: when the pace grants fewer
            -- tokens than there are DVs, the others' first tasks go before theirs.
            ORDER BY c.rang, c.zwaar, c.taak
        );
        CONTINUE WHEN pg_catalog.cardinality(v_kandidaten) = 0;
        v_toegekend := nmc.take_budget(
            v_budget.service, 'verzenden', pg_catalog.cardinality(v_kandidaten)
        );
        v_service_gekozen := v_kandidaten[1:v_toegekend];
        PERFORM nmc.boek_verzendaandeel(v_budget.service, ARRAY(
            SELECT k.dv FROM unnest(v_k_taak, v_k_dv) AS k (taak, dv)
            WHERE k.taak = ANY(v_service_gekozen)
        ));
        v_gekozen := v_gekozen || v_service_gekozen;
    END LOOP;
    v_gekozen := v_gekozen || ARRAY(
        SELECT k.taak FROM unnest(v_k_taak, v_k_verzendbaar) AS k (taak, verzendbaar)
        WHERE NOT k.verzendbaar
    );
    IF pg_catalog.cardinality(v_gekozen) = 0 THEN
        RETURN;
    END IF;

    -- The claim itself: lease and a higher epoch for every chosen task.
    WITH geclaimd AS (
        UPDATE nmc.taak AS t
        SET staat = 'claimed', lease_eigenaar = p_eigenaar, lease_tot = v_lease_tot,
            claim_epoch = t.claim_epoch + 1
        WHERE t.id = ANY(v_gekozen)
        RETURNING t.id, t.claim_epoch, t.notificatie_id
    )

    SELECT
        pg_catalog.array_agg(g.id ORDER BY g.notificatie_id),
        pg_catalog.array_agg(g.claim_epoch ORDER BY g.notificatie_id),
        pg_catalog.array_agg(g.notificatie_id ORDER BY g.notificatie_id)
    INTO v_taken, v_epochs, v_notificaties
    FROM geclaimd AS g;

    -- The notifications' row locks, all together and in id order, before any decision:
    -- cancel, claim and a late receipt share these locks.
    PERFORM 1 FROM (
        SELECT n.id FROM nmc.notificatie AS n
        WHERE n.id = ANY(v_notificaties)
        ORDER BY n.id
        FOR UPDATE
    ) AS n;

    -- Per task, under the lock (this statement sees what the lock holders wrote):
    -- herclaim: in-verzending, or a resend attempt still gepland: a re-claim (an expired
    --   lease or a deferral), not a transition: same attempt, higher epoch; the worker asks
    --   NotifyNL by reference before sending again;
    -- eerste / opnieuw: first send (aangenomen -> in-verzending) or resend (verzonden ->
    --   verzonden), each with a new attempt whose id is the NotifyNL reference;
    -- verlopen: such a send past geldig_tot; sluiten: terminal, bezorgd, or an attempt still
    --   running: nothing to send, the task is closed.
    SELECT
        pg_catalog.array_agg(k.pad ORDER BY k.i),
        pg_catalog.array_agg(
            CASE k.pad WHEN 'herclaim' THEN k.poging_id
                WHEN 'eerste' THEN gen_random_uuid() WHEN 'opnieuw' THEN gen_random_uuid() END
            ORDER BY k.i
        ),
        pg_catalog.array_agg(
            CASE k.pad WHEN 'herclaim' THEN k.nummer
                WHEN 'eerste' THEN (coalesce(k.nummer, 0) + 1)::smallint
                WHEN 'opnieuw' THEN (coalesce(k.nummer, 0) + 1)::smallint END
            ORDER BY k.i
        )
    INTO v_paden, v_pogingen, v_nummers
    FROM (
        SELECT
            u.i,
            p.id AS poging_id,
            p.nummer,
            CASE
                WHEN n.status = 'in-verzending' OR (n.status = 'verzonden' AND p.status = 'gepland')
                    THEN 'herclaim'
                WHEN n.status = 'aangenomen'
                    OR (
                        n.status = 'verzonden' AND p.status NOT IN ('verzonden', 'onbekend')
                        AND p.nummer < 2
                    )
                    THEN CASE
                        WHEN v_nu > n.geldig_tot THEN 'verlopen'
                        WHEN n.status = 'aangenomen' THEN 'eerste'
                        ELSE 'opnieuw'
                    END
                ELSE 'sluiten'
            END AS pad
        FROM unnest(v_notificaties) WITH ORDINALITY AS u (notificatie_id, i)
        INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
        LEFT JOIN LATERAL (
            SELECT p.id, p.nummer, p.status FROM nmc.poging AS p
            WHERE p.notificatie_id = n.id
            ORDER BY p.nummer DESC LIMIT 1
        ) AS p ON true
    ) AS k;

    -- The transitions of the whole batch in one call of the single writer.
    PERFORM 1 FROM nmc.transition_notificaties(
        ARRAY(
            SELECT u.id FROM unnest(v_notificaties, v_paden) AS u (id, pad)
            WHERE u.pad IN ('eerste', 'opnieuw', 'verlopen')
        ),
        ARRAY(
            SELECT CASE u.pad WHEN 'eerste' THEN 'in-verzending' WHEN 'opnieuw' THEN 'verzonden'
                ELSE 'verlopen' END::nmc.notificatie_status
            FROM unnest(v_paden) AS u (pad)
            WHERE u.pad IN ('eerste', 'opnieuw', 'verlopen')
        ),
        ARRAY(
            SELECT CASE u.pad WHEN 'verlopen' THEN 'verlopen' END::nmc.reden
            FROM unnest(v_paden) AS u (pad)
            WHERE u.pad IN ('eerste', 'opnieuw', 'verlopen')
        )
    );

    -- Re-claims: the attempt carries the new epoch, and the template it is sent with now
    -- (the delivery proof names that one, not the berichttype's at a later request).
    UPDATE nmc.poging AS p SET claim_epoch = u.epoch, notifynl_template_id = b.notifynl_template_id
    FROM unnest(v_pogingen, v_epochs, v_paden, v_notificaties) AS u (id, epoch, pad, notificatie_id)
    INNER JOIN nmc.notificatie AS n ON n.id = u.notificatie_id
    INNER JOIN nmc.berichttype AS b ON b.dv_id = n.dv_id AND b.code = n.berichttype
    WHERE p.id = u.id AND u.pad = 'herclaim';

    -- New attempts, one per first send or resend, with the template they are sent with.
    INSERT INTO nmc.poging (
        id, notificatie_id, nummer, claim_epoch, aangemaakt_op, notifynl_template_id
    )
    SELECT u.id, u.notificatie_id, u.nummer, u.epoch, v_nu, b.notifynl_template_id
    FROM unnest(v_pogingen, v_notificaties, v_nummers, v_epochs, v_paden) AS u (
        id, notificatie_id, nummer, epoch, pad
    )
    INNER JOIN nmc.notificatie AS n ON n.id = u.notificatie_id
    INNER JOIN nmc.berichttype AS b ON b.dv_id = n.dv_id AND b.code = n.berichttype
    WHERE u.pad IN ('eerste', 'opnieuw');

    -- Nothing to send: the task is done.
    PERFORM nmc.close_taken(ARRAY(
        SELECT u.taak FROM unnest(v_taken, v_paden) AS u (taak, pad)
        WHERE u.pad IN ('verlopen', 'sluiten')
    ));

    RETURN QUERY
    SELECT
        u.taak, u.epoch, n.id, u.poging, u.nummer, u.pad = 'herclaim', v_nu <= n.geldig_tot,
        n.dv_id, d.naam, n.dienst, n.regie, n.berichttype, b.notifynl_template_id,
        b.notify_service, n.ontvanger_versleuteld, n.gegevens_versleuteld, n.sleutel_gewrapt,
        n.kek_id, n.trace_id
    FROM unnest(v_taken, v_epochs, v_notificaties, v_paden, v_pogingen, v_nummers) AS u (
        taak, epoch, notificatie_id, pad, poging, nummer
    )
    INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
    INNER JOIN nmc.dienstverlener AS d ON n.dv_id = d.dv_id
    INNER JOIN nmc.berichttype AS b ON n.dv_id = b.dv_id AND n.berichttype = b.code
    WHERE u.pad IN ('herclaim', 'eerste', 'opnieuw')
    ORDER BY u.taak;
END
$$;
COMMENT ON FUNCTION nmc.claim_verzenden(text, integer) IS
'Claims up to p_batch due send tasks, fairly across DVs and within the send budget of '
'each NotifyNL service (batch = min(backlog, tokens)), in its own transaction. Per task, '
'under the notification''s row lock: aangenomen -> in-verzending with attempt 1, or a '
'resend verzonden -> verzonden with attempt 2; past geldig_tot -> verlopen; terminal, '
'bezorgd or a running attempt -> the task is closed without sending; in-verzending (or a '
'resend attempt still gepland) is a re-claim of the same attempt (herclaim: look it up '
'by reference first). Set-based: the batch''s notifications are locked together (id '
'order), its transitions are one call of nmc.transition_notificaties and its new attempts '
'one INSERT. Returns what the worker needs to send, ciphertext included.';
