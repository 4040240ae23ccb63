-- The NotifyNL callback (SPEC §6): store first (without the address), answer after.

CREATE OR REPLACE FUNCTION nmc.store_receipt(
    p_reference text,
    p_notifynl_id uuid,
    p_status text,
    p_completed_at timestamptz,
    p_sent_at timestamptz
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_poging_id uuid;
    v_notificatie nmc.notificatie;
    v_nieuw bigint;
BEGIN
    -- The reference is our attempt id; anything else is not ours to store.
    IF p_reference ~ '^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$' THEN
        SELECT p.id INTO v_poging_id FROM nmc.poging AS p WHERE p.id = p_reference::uuid;
    END IF;
    IF v_poging_id IS NULL THEN
        PERFORM nmc.count_teller('receipt_onbekende_reference');
        RETURN 'onbekende-reference';
    END IF;
    SELECT n.* INTO v_notificatie
    FROM nmc.notificatie AS n INNER JOIN nmc.poging AS p ON p.notificatie_id = n.id
    WHERE p.id = v_poging_id;

    INSERT INTO nmc.taak (
        soort, dv_id, notificatie_id, poging_id, due, trace_id, payload, receipt_completed_at,
        aangemaakt_op
    )
    VALUES (
        'receipt', v_notificatie.dv_id, v_notificatie.id, v_poging_id, v_nu,
        v_notificatie.trace_id,
        pg_catalog.jsonb_build_object(
            'id', p_notifynl_id, 'status', p_status, 'completed_at', p_completed_at,
            'sent_at', p_sent_at
        ),
        p_completed_at, v_nu
    )
    ON CONFLICT (poging_id, receipt_completed_at, (payload ->> 'status'))
    WHERE soort = 'receipt'
    DO NOTHING
    RETURNING id INTO v_nieuw;

    RETURN CASE WHEN v_nieuw IS NULL THEN 'dubbel' ELSE 'opgeslagen' END;
END
$$;
COMMENT ON FUNCTION nmc.store_receipt(text, uuid, text, timestamptz, timestamptz) IS
'Stores one NotifyNL delivery receipt as a receipt task (never the e-mail address). '
'Returns opgeslagen, dubbel (the same attempt, completed_at and status was stored before: '
'a no-op) or onbekende-reference (matches no attempt: counted, not stored). The callback '
'answers 200 after this commits.';
