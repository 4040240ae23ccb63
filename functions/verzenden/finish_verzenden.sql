-- The commit after the send call (SPEC §5): fenced by the claim epoch, under the
-- notification's row lock, through the single writer.

CREATE OR REPLACE FUNCTION nmc.finish_verzenden(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_uitkomst text,
    p_notifynl_id uuid DEFAULT NULL,
    p_contactgegeven_id uuid DEFAULT NULL
)
RETURNS nmc.notificatie_status
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taak nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_notificatie nmc.notificatie;
    v_poging nmc.poging;
BEGIN
    SELECT * INTO v_notificatie
    FROM nmc.notificatie AS n WHERE n.id = v_taak.notificatie_id FOR UPDATE;
    SELECT * INTO v_poging
    FROM nmc.poging AS p WHERE p.notificatie_id = v_notificatie.id
    ORDER BY p.nummer DESC LIMIT 1
    FOR UPDATE;

    CASE p_uitkomst
        WHEN 'verzonden' THEN
            IF p_notifynl_id IS NULL THEN
                RAISE EXCEPTION 'a sent attempt needs its NotifyNL id' USING ERRCODE = '22023';
            END IF;
            -- A receipt may have come first and recorded the id (and the transition) on
            -- the worker's behalf; another id for the same attempt is a duplicate.
            UPDATE nmc.poging AS p
            SET notifynl_id = coalesce(p.notifynl_id, p_notifynl_id),
                duplicaat_ids = CASE
                    WHEN p.notifynl_id IS NULL OR p.notifynl_id = p_notifynl_id
                        OR p_notifynl_id = ANY(p.duplicaat_ids) THEN p.duplicaat_ids
                    ELSE p.duplicaat_ids || p_notifynl_id
                END,
                status = CASE WHEN p.status = 'gepland' THEN 'verzonden' ELSE p.status END,
                verzonden_op = coalesce(p.verzonden_op, v_nu),
                contactgegeven_id = coalesce(p_contactgegeven_id, p.contactgegeven_id)
            WHERE p.id = v_poging.id;
            IF v_notificatie.status = 'in-verzending' THEN
                PERFORM nmc.transition_notificatie(v_notificatie.id, 'verzonden');
            END IF;
            -- Reconciliation asks NotifyNL after an hour if no receipt came.
            IF v_poging.status = 'gepland' THEN
                INSERT INTO nmc.taak (
                    soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op
                )
                VALUES (
                    'reconciliëren', v_notificatie.dv_id, v_notificatie.id, v_poging.id,
                    v_nu + INTERVAL '1 hour', v_notificatie.trace_id, v_nu
                )
                ON CONFLICT (poging_id)
                WHERE staat IN ('open', 'claimed') AND soort = 'reconciliëren'
                DO NOTHING;
            END IF;
        WHEN 'ongeldig-adres' THEN
            -- NotifyNL refused the address (400): this attempt can never succeed.
            UPDATE nmc.poging AS p
            SET status = 'permanent-mislukt', afgerond_op = v_nu,
                contactgegeven_id = coalesce(p_contactgegeven_id, p.contactgegeven_id)
            WHERE p.id = v_poging.id;
            PERFORM nmc.transition_notificatie(v_notificatie.id, 'niet-bezorgbaar', 'onbereikbaar');
        WHEN 'geen-contactgegevens' THEN
            -- The Profielservice knows no party or no e-mail: no attempt was made.
            DELETE FROM nmc.poging AS p WHERE p.id = v_poging.id AND p.status = 'gepland';
            PERFORM nmc.transition_notificatie(
                v_notificatie.id, 'niet-bezorgbaar', 'geen-contactgegevens'
            );
        WHEN 'verlopen' THEN
            -- A re-claim found nothing at NotifyNL and geldig_tot has passed.
            IF v_nu <= v_notificatie.geldig_tot THEN
                RAISE EXCEPTION 'geldig_tot has not passed; send instead' USING ERRCODE = 'NM014';
            END IF;
            DELETE FROM nmc.poging AS p WHERE p.id = v_poging.id AND p.status = 'gepland';
            PERFORM nmc.transition_notificatie(v_notificatie.id, 'verlopen', 'verlopen');
        ELSE
            RAISE EXCEPTION 'unknown send outcome %', p_uitkomst USING ERRCODE = '22023';
    END CASE;

    PERFORM nmc.close_taak(p_taak_id);
    RETURN (SELECT n.status FROM nmc.notificatie AS n WHERE n.id = v_notificatie.id);
END
$$;
COMMENT ON FUNCTION nmc.finish_verzenden(bigint, integer, text, uuid, uuid) IS
'Commits the outcome of a send task, fenced by its claim epoch (NM011 when stale). '
'p_uitkomst: verzonden (NotifyNL 201 or found by reference; the attempt takes the '
'NotifyNL id, in-verzending -> verzonden, a resend only records the attempt, and a '
'reconcile task is planned +1 h), ongeldig-adres (NotifyNL 400: niet-bezorgbaar, '
'onbereikbaar), geen-contactgegevens (Profielservice: niet-bezorgbaar), verlopen (a '
're-claim that found nothing after geldig_tot). Closes the task; returns the status.';
