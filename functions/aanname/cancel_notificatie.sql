-- Cancel by the DV (SPEC §7): only while aangenomen, through the single writer.

CREATE OR REPLACE FUNCTION nmc.cancel_notificatie(p_dv_id integer, p_notificatie_id uuid)
RETURNS TABLE (status nmc.notificatie_status, versie integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_status nmc.notificatie_status;
    v_versie integer;
BEGIN
    -- Locks in the order the send claim takes them (task, then notification), so a
    -- cancel racing a claim waits instead of deadlocking; then whoever is second sees
    -- the other's result under the notification's row lock.
    PERFORM 1 FROM nmc.taak AS t
    WHERE t.notificatie_id = p_notificatie_id AND t.soort = 'verzenden'
        AND t.staat IN ('open', 'claimed') AND t.dv_id = p_dv_id
    FOR UPDATE;
    SELECT n.status INTO v_status
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id AND n.dv_id = p_dv_id
    FOR UPDATE;
    IF NOT FOUND THEN
        -- Another DV's notification does not exist for the caller.
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;
    IF v_status <> 'aangenomen' THEN
        RAISE EXCEPTION 'only an aangenomen notificatie can be cancelled, this one is %', v_status
            USING ERRCODE = 'NM006', DETAIL = v_status::text;
    END IF;

    v_versie := nmc.transition_notificatie(p_notificatie_id, 'geannuleerd', 'geannuleerd');
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
    WHERE t.notificatie_id = p_notificatie_id AND t.soort = 'verzenden'
        AND t.staat IN ('open', 'claimed');

    RETURN QUERY SELECT 'geannuleerd'::nmc.notificatie_status, v_versie;
END
$$;
COMMENT ON FUNCTION nmc.cancel_notificatie(integer, uuid) IS
'Cancels the caller DV''s notification while it is aangenomen (transition to geannuleerd, '
'reason geannuleerd) and closes its open send task. Refusals: NM005 not found (also for '
'another DV''s id), NM006 not aangenomen (DETAIL = the current status).';
