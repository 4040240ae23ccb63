-- The single writer of notificatie.status (SPEC §4, ADR 0024).

CREATE OR REPLACE FUNCTION nmc.transition_notificatie(
    p_notificatie_id uuid,
    p_naar nmc.notificatie_status,
    p_reden nmc.reden DEFAULT NULL
)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_dv_id integer;
    v_van nmc.notificatie_status;
    v_versie integer;
BEGIN
    -- 1. The row lock comes before any write to the row.
    SELECT n.dv_id, n.status, n.versie
    INTO v_dv_id, v_van, v_versie
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;

    -- 2. Only the allowed pairs, with a reason that fits the target status.
    IF NOT nmc.transition_allowed(v_van, p_naar) THEN
        RAISE EXCEPTION 'transition from % to % is not allowed', v_van, p_naar
            USING ERRCODE = 'NM001', DETAIL = v_van::text;
    END IF;
    IF NOT nmc.reden_fits(p_naar, p_reden) THEN
        RAISE EXCEPTION 'reason % does not fit status %', coalesce(p_reden::text, 'NULL'), p_naar
            USING ERRCODE = 'NM013';
    END IF;

    -- 3 and 4. The event first (sequence = new version), then the row; the guard
    -- trigger checks that the one matches the other.
    INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
    VALUES (p_notificatie_id, v_dv_id, v_versie + 1, v_van, p_naar, p_reden, v_nu);

    UPDATE nmc.notificatie
    SET status = p_naar,
        reden = p_reden,
        versie = v_versie + 1,
        bijgewerkt_op = v_nu,
        terminaal_op = CASE WHEN nmc.is_terminal(p_naar) THEN v_nu END
    WHERE id = p_notificatie_id;

    -- Personal data goes a fixed term after the terminal status (SPEC §8).
    IF nmc.is_terminal(p_naar) THEN
        INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
        SELECT 'wissen', v_dv_id, p_notificatie_id, v_nu + i.wistermijn, v_nu
        FROM nmc.instellingen AS i
        ON CONFLICT (notificatie_id, soort)
        WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
            AND notificatie_id IS NOT NULL
        DO UPDATE SET due = excluded.due;
    END IF;

    RETURN v_versie + 1;
END
$$;
COMMENT ON FUNCTION nmc.transition_notificatie(uuid, nmc.notificatie_status, nmc.reden) IS
'The only writer of notificatie.status: locks the row (FOR UPDATE), checks the pair '
'against nmc.allowed_transitions() and the reason against the status, raises the version '
'by one and writes the event with sequence = the new version in the same transaction. '
'On a terminal status it plans the wissen task (erase term later). Returns the new '
'version. Refusals: NM005 not found, NM001 pair not allowed (DETAIL = the current status), '
'NM013 reason does not fit. Internal: callers are other nmc functions.';
