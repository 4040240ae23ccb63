-- The operator's tools (SPEC §5: an exhausted task waits for an operator, who reopens it
-- or forces a transition). Admin only; every action is audited.

CREATE OR REPLACE FUNCTION nmc.list_taken(
    p_staat nmc.taak_staat DEFAULT 'mislukt', p_soort nmc.taak_soort DEFAULT NULL,
    p_limiet integer DEFAULT 100
)
RETURNS TABLE (
    id bigint, soort nmc.taak_soort, staat nmc.taak_staat, dv_id integer,
    notificatie_id uuid, due timestamptz, pogingen integer, uitstellen integer,
    laatste_fout text, lease_eigenaar text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.soort, t.staat, t.dv_id, t.notificatie_id, t.due, t.pogingen, t.uitstellen,
        t.laatste_fout, t.lease_eigenaar
    FROM nmc.taak AS t
    WHERE t.staat = p_staat AND (p_soort IS NULL OR t.soort = p_soort)
    ORDER BY t.due, t.id
    LIMIT least(greatest(p_limiet, 1), 10000)
$$;
COMMENT ON FUNCTION nmc.list_taken(nmc.taak_staat, nmc.taak_soort, integer) IS
'Tasks in a state (default mislukt), optionally of one kind, oldest due first. For '
'`nmc admin tasks list`.';

CREATE OR REPLACE FUNCTION nmc.reopen_taak(p_taak_id bigint, p_toelichting text, p_door text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak nmc.taak;
BEGIN
    SELECT * INTO v_taak FROM nmc.taak AS t WHERE t.id = p_taak_id FOR UPDATE;
    IF NOT FOUND OR v_taak.staat <> 'mislukt' THEN
        RAISE EXCEPTION 'only a mislukt task can be reopened' USING ERRCODE = 'NM020';
    END IF;
    UPDATE nmc.taak AS t
    SET staat = 'open', due = nmc.now(), pogingen = 0, uitstellen = 0
    WHERE t.id = p_taak_id;
    INSERT INTO nmc.beheeractie (soort, notificatie_id, taak_id, toelichting, door, tijdstip)
    VALUES ('heropen-taak', v_taak.notificatie_id, p_taak_id, p_toelichting, p_door, nmc.now());
END
$$;
COMMENT ON FUNCTION nmc.reopen_taak(bigint, text, text) IS
'Reopens a mislukt task (due now, counters reset) and audits who and why. NM020 for a '
'task that is not mislukt.';

CREATE OR REPLACE FUNCTION nmc.forceerbaar(p_naar nmc.notificatie_status)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    -- bezorgd rests on NotifyNL's delivered receipt and definitief-bezorgd on the settlement
    -- after the MEBV term: forced, the delivery proof would show evidence of a delivery that
    -- never happened.
    SELECT p_naar NOT IN ('bezorgd', 'definitief-bezorgd')
$$;
COMMENT ON FUNCTION nmc.forceerbaar(nmc.notificatie_status) IS
'True when an operator may force a notification into p_naar: every status but bezorgd and '
'definitief-bezorgd, which only a delivered receipt and the settlement reach (the delivery '
'proof rests on them). nmc.force_transition refuses the others (NM021); the console does '
'not offer them.';

CREATE OR REPLACE FUNCTION nmc.force_transition(
    p_notificatie_id uuid, p_naar nmc.notificatie_status, p_reden nmc.reden,
    p_toelichting text, p_door text
)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_van nmc.notificatie_status;
    v_versie integer;
BEGIN
    IF NOT nmc.forceerbaar(p_naar) THEN
        RAISE EXCEPTION 'a forced transition into % is not allowed', p_naar
            USING ERRCODE = 'NM021',
            HINT = 'bezorgd and definitief-bezorgd rest on a delivered receipt and the settlement';
    END IF;
    SELECT n.status INTO v_van FROM nmc.notificatie AS n WHERE n.id = p_notificatie_id
    FOR UPDATE;
    -- Through the single writer: only along allowed pairs, with its event.
    v_versie := nmc.transition_notificatie(p_notificatie_id, p_naar, p_reden);
    -- Its open tasks would act on a state that no longer holds.
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
    WHERE t.notificatie_id = p_notificatie_id AND t.staat IN ('open', 'claimed', 'mislukt')
        AND t.soort IN ('verzenden', 'reconciliëren', 'vaststellen');
    -- With the event's sequence: the delivery proof names the action beside its event.
    INSERT INTO nmc.beheeractie (
        soort, notificatie_id, van, naar, sequence, toelichting, door, tijdstip
    )
    VALUES (
        'forceer-overgang', p_notificatie_id, v_van, p_naar, v_versie, p_toelichting, p_door,
        nmc.now()
    );
    RETURN v_versie;
END
$$;
COMMENT ON FUNCTION nmc.force_transition(
    uuid, nmc.notificatie_status, nmc.reden, text, text
) IS
'An operator''s forced transition: never into bezorgd or definitief-bezorgd (NM021, '
'nmc.forceerbaar), through nmc.transition_notificatie (allowed pairs only, with its event), '
'closing the notification''s send, reconcile and settle tasks, audited in nmc.beheeractie '
'with the event''s sequence (the delivery proof names it). Returns the new version.';
