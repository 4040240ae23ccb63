-- The send claim (SPEC §5): fair batch, send budget, and the claim as a transition under
-- the notification's row lock, so cancel, claim and a late receipt share one lock.

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
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_lease_tot CONSTANT timestamptz := v_nu + (SELECT i.lease_duur FROM nmc.instellingen AS i);
    v_k_taak bigint [];
    v_k_rang integer [];
    v_k_service text [];
    v_k_verzendbaar boolean [];
    v_budget record;
    v_toegekend integer;
    v_gekozen bigint [] := '{}';
    v_taak nmc.taak;
    v_notificatie nmc.notificatie;
    v_poging nmc.poging;
    v_herclaim boolean;
BEGIN
    SELECT
        coalesce(pg_catalog.array_agg(l.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(l.rang), '{}'),
        coalesce(pg_catalog.array_agg(b.notify_service), '{}'),
        coalesce(pg_catalog.array_agg(
            n.status IN ('aangenomen', 'in-verzending', 'verzonden')
        ), '{}')
    INTO v_k_taak, v_k_rang, v_k_service, v_k_verzendbaar
    FROM nmc.lock_due_taken('verzenden', greatest(p_batch, 1)) AS l
    INNER JOIN nmc.taak AS t ON t.id = l.taak_id
    INNER JOIN nmc.notificatie AS n ON n.id = t.notificatie_id
    INNER JOIN nmc.berichttype AS b ON b.dv_id = n.dv_id AND b.code = n.berichttype;

    -- Batch = min(backlog, tokens) per service; the cut keeps the round robin (by rank).
    -- Tasks that will not send (the notification moved on) need no token.
    FOR v_budget IN
        SELECT k.service, pg_catalog.count(*)::integer AS aantal
        FROM unnest(v_k_service, v_k_verzendbaar) AS k (service, verzendbaar)
        WHERE k.verzendbaar
        GROUP BY k.service ORDER BY k.service
    LOOP
        v_toegekend := nmc.take_budget(v_budget.service, 'verzenden', v_budget.aantal);
        v_gekozen := v_gekozen || ARRAY(
            SELECT k.taak FROM unnest(v_k_taak, v_k_rang, v_k_service, v_k_verzendbaar)
                AS k (taak, rang, service, verzendbaar)
            WHERE k.verzendbaar AND k.service = v_budget.service
            ORDER BY k.rang, k.taak
            LIMIT v_toegekend
        );
    END LOOP;
    v_gekozen := v_gekozen || ARRAY(
        SELECT k.taak FROM unnest(v_k_taak, v_k_verzendbaar) AS k (taak, verzendbaar)
        WHERE NOT k.verzendbaar
    );

    FOR v_taak IN
        UPDATE nmc.taak AS t
        SET staat = 'claimed', lease_eigenaar = p_eigenaar, lease_tot = v_lease_tot,
            claim_epoch = t.claim_epoch + 1
        WHERE t.id = ANY(v_gekozen)
        RETURNING t.*
    LOOP
        SELECT * INTO v_notificatie
        FROM nmc.notificatie AS n WHERE n.id = v_taak.notificatie_id FOR UPDATE;
        SELECT * INTO v_poging
        FROM nmc.poging AS p WHERE p.notificatie_id = v_notificatie.id
        ORDER BY p.nummer DESC LIMIT 1;
        v_herclaim := false;

        IF v_notificatie.status = 'in-verzending'
            OR (v_notificatie.status = 'verzonden' AND v_poging.status = 'gepland') THEN
            -- Re-claim (an expired lease or a deferral): not a transition. Same attempt,
            -- higher epoch; the worker asks NotifyNL by reference before sending again.
            v_herclaim := true;
            UPDATE nmc.poging AS p SET claim_epoch = v_taak.claim_epoch
            WHERE p.id = v_poging.id
            RETURNING p.* INTO v_poging;
        ELSIF v_notificatie.status = 'aangenomen'
            OR (v_notificatie.status = 'verzonden'
                AND v_poging.status NOT IN ('verzonden', 'onbekend') AND v_poging.nummer < 2) THEN
            IF v_nu > v_notificatie.geldig_tot THEN
                PERFORM nmc.transition_notificatie(v_notificatie.id, 'verlopen', 'verlopen');
                PERFORM nmc.close_taak(v_taak.id);
                CONTINUE;
            END IF;
            -- First send (aangenomen -> in-verzending) or resend (verzonden -> verzonden),
            -- each with a new attempt whose id is the NotifyNL reference.
            PERFORM nmc.transition_notificatie(
                v_notificatie.id,
                CASE v_notificatie.status WHEN 'aangenomen' THEN 'in-verzending'
                    ELSE 'verzonden' END::nmc.notificatie_status
            );
            INSERT INTO nmc.poging (id, notificatie_id, nummer, claim_epoch, aangemaakt_op)
            VALUES (
                gen_random_uuid(), v_notificatie.id, coalesce(v_poging.nummer, 0) + 1,
                v_taak.claim_epoch, v_nu
            )
            RETURNING * INTO v_poging;
        ELSE
            -- Terminal, bezorgd, or an attempt still running: nothing to send.
            PERFORM nmc.close_taak(v_taak.id);
            CONTINUE;
        END IF;

        taak_id := v_taak.id;
        claim_epoch := v_taak.claim_epoch;
        notificatie_id := v_notificatie.id;
        poging_id := v_poging.id;
        poging_nummer := v_poging.nummer;
        herclaim := v_herclaim;
        mag_verzenden := v_nu <= v_notificatie.geldig_tot;
        dv_id := v_notificatie.dv_id;
        SELECT d.naam INTO dv_naam FROM nmc.dienstverlener AS d WHERE d.dv_id = v_notificatie.dv_id;
        dienst := v_notificatie.dienst;
        regie := v_notificatie.regie;
        berichttype := v_notificatie.berichttype;
        SELECT b.notifynl_template_id, b.notify_service INTO notifynl_template_id, notify_service
        FROM nmc.berichttype AS b
        WHERE b.dv_id = v_notificatie.dv_id AND b.code = v_notificatie.berichttype;
        ontvanger_versleuteld := v_notificatie.ontvanger_versleuteld;
        gegevens_versleuteld := v_notificatie.gegevens_versleuteld;
        sleutel_gewrapt := v_notificatie.sleutel_gewrapt;
        kek_id := v_notificatie.kek_id;
        trace_id := v_notificatie.trace_id;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION nmc.claim_verzenden(text, integer) IS
'Claims up to p_batch due send tasks, fairly across DVs and within the send budget of '
'each NotifyNL service (batch = min(backlog, tokens)), in its own transaction. Per task, '
'under the notification''s row lock: aangenomen -> in-verzending with attempt 1, or a '
'resend verzonden -> verzonden with attempt 2; past geldig_tot -> verlopen; terminal, '
'bezorgd or a running attempt -> the task is closed without sending; in-verzending (or a '
'resend attempt still gepland) is a re-claim of the same attempt (herclaim: look it up '
'by reference first). Returns what the worker needs to send, ciphertext included.';
