-- Judging one receipt or reconciliation answer (SPEC §4 notes, §6): under the
-- notification's row lock, through the single writer. One function for both paths.

CREATE OR REPLACE FUNCTION nmc.poging_status_voor(p_notifynl_status text)
RETURNS nmc.poging_status
LANGUAGE sql
-- STABLE, not IMMUTABLE: the text-to-enum cast in its body is stable, and an IMMUTABLE
-- function with a stable body is never inlined.
STABLE
PARALLEL SAFE
-- No SET search_path, so PostgreSQL inlines it into the caller's statement (every name in
-- it is schema-qualified; the callers pin search_path): planned once with the caller's plan.
AS $$
    SELECT CASE p_notifynl_status
        WHEN 'delivered' THEN 'bezorgd'
        WHEN 'permanent-failure' THEN 'permanent-mislukt'
        WHEN 'temporary-failure' THEN 'tijdelijk-mislukt'
        WHEN 'technical-failure' THEN 'technisch-mislukt'
    END::nmc.poging_status
$$;
COMMENT ON FUNCTION nmc.poging_status_voor(text) IS
'The attempt status for a final NotifyNL e-mail status; NULL for any other status.';

CREATE OR REPLACE FUNCTION nmc.plan_vaststellen(
    p_n nmc.notificatie, p_poging_id uuid, p_completed_at timestamptz
)
RETURNS void
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Settle after the MEBV term plus NotifyNL's callback window, so a failure with a
    -- completed_at inside the term cannot cross the settlement.
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
    SELECT
        'vaststellen', p_n.dv_id, p_n.id, p_poging_id,
        p_completed_at + i.vaststellingstermijn + i.callback_venster, p_n.trace_id, nmc.now()
    FROM nmc.instellingen AS i
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO UPDATE SET due = excluded.due, poging_id = excluded.poging_id;
END
$$;
COMMENT ON FUNCTION nmc.plan_vaststellen(nmc.notificatie, uuid, timestamptz) IS
'Plans (or re-points) the one settlement task of a bezorgd notification: it names the '
'attempt bezorgd rests on and is due at that attempt''s completed_at + settlement term + '
'callback window. Internal.';

CREATE OR REPLACE FUNCTION nmc.record_receipt(
    p_poging_id uuid, p_status text, p_op timestamptz
)
RETURNS void
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Beside the outcome, never over it; the newest (by completed_at) is kept.
    UPDATE nmc.poging AS p
    SET vastgelegde_receipt_status = pg_catalog.left(p_status, 50), vastgelegde_receipt_op = p_op
    WHERE p.id = p_poging_id
        AND (p.vastgelegde_receipt_op IS NULL OR p.vastgelegde_receipt_op <= p_op);
END
$$;
COMMENT ON FUNCTION nmc.record_receipt(uuid, text, timestamptz) IS
'Records a receipt on an attempt without applying it (a status the NMC does not know, or a '
'late receipt on an outcome that is settled): vastgelegde_receipt_status and _op take it '
'when it is not older than the one recorded there; status, afgerond_op and '
'laatste_receipt_* stay as they are. Internal.';

CREATE OR REPLACE FUNCTION nmc.judge_receipt(
    p_poging_id uuid,
    p_notifynl_id uuid,
    p_status text,
    p_completed_at timestamptz,
    p_sent_at timestamptz
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_instelling nmc.instellingen;
    v_n nmc.notificatie;
    v_p nmc.poging;
    v_nieuw nmc.poging_status := nmc.poging_status_voor(p_status);
    v_c timestamptz := least(coalesce(p_completed_at, v_nu), v_nu);
    v_telt boolean;
    v_vastgelegd boolean;
    v_rust_op uuid;
    v_termijn_eind timestamptz;
    v_ander nmc.poging;
    v_tweede nmc.poging;
    v_vast boolean;
BEGIN
    SELECT * INTO v_instelling FROM nmc.instellingen;
    SELECT n.* INTO v_n
    FROM nmc.notificatie AS n
    WHERE n.id = (SELECT p.notificatie_id FROM nmc.poging AS p WHERE p.id = p_poging_id)
    FOR UPDATE;
    SELECT * INTO v_p FROM nmc.poging AS p WHERE p.id = p_poging_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'poging not found' USING ERRCODE = 'NM005';
    END IF;

    -- Final (bezorgstatus-onbekend excepted: a late receipt may still correct it): the
    -- delivery proof is final too, so nothing on the attempt changes any more; the receipt
    -- is recorded beside it and shown in the history.
    v_vast := nmc.is_terminal(v_n.status) AND v_n.status <> 'bezorgstatus-onbekend';

    -- The id. No id yet: the worker died between NotifyNL's 201 and its commit, so the
    -- receipt commits the send on its behalf. Another id: a duplicate of this attempt.
    IF v_p.notifynl_id IS NULL AND p_notifynl_id IS NOT NULL AND NOT v_vast THEN
        UPDATE nmc.poging AS p
        SET notifynl_id = p_notifynl_id,
            status = CASE WHEN p.status = 'gepland' THEN 'verzonden' ELSE p.status END,
            verzonden_op = coalesce(p_sent_at, p.verzonden_op, v_nu)
        WHERE p.id = p_poging_id
        RETURNING p.* INTO v_p;
        IF v_n.status = 'in-verzending' THEN
            PERFORM nmc.transition_notificatie(v_n.id, 'verzonden');
            v_n.status := 'verzonden';
        END IF;
    ELSIF p_notifynl_id <> v_p.notifynl_id AND NOT p_notifynl_id = ANY(v_p.duplicaat_ids) THEN
        UPDATE nmc.poging AS p SET duplicaat_ids = p.duplicaat_ids || p_notifynl_id
        WHERE p.id = p_poging_id;
    END IF;

    IF p_status NOT IN (
        'created', 'sending', 'pending', 'delivered', 'permanent-failure', 'temporary-failure',
        'technical-failure'
    ) THEN
        -- Unknown: recorded beside what is known and counted, no transition;
        -- reconciliation carries on.
        PERFORM nmc.record_receipt(p_poging_id, p_status, v_c);
        PERFORM nmc.count_teller('receipt_onbekende_status');
        RETURN 'onbekende-status';
    END IF;
    IF v_nieuw IS NULL THEN
        RETURN 'niet-definitief';
    END IF;

    -- Ordered per attempt by the receipt's own completed_at (capped at the NMC clock):
    -- an older receipt never overrides a newer one, whatever order they arrive in.
    IF v_p.laatste_receipt_op IS NOT NULL AND v_c < v_p.laatste_receipt_op THEN
        RETURN 'ouder';
    END IF;

    -- The attempt bezorgd rests on is the one its open settlement task names (a failure
    -- recorded on it meanwhile does not change that); its term ends before the task's due.
    SELECT t.poging_id, t.due - v_instelling.callback_venster INTO v_rust_op, v_termijn_eind
    FROM nmc.taak AS t
    WHERE t.notificatie_id = v_n.id AND t.soort = 'vaststellen' AND t.staat IN ('open', 'claimed')
    LIMIT 1;
    -- A failure counts on a running attempt; on bezorgd only on the attempt bezorgd
    -- rests on, within the settlement term; on any other terminal status never.
    v_telt := CASE
        WHEN v_n.status = 'bezorgd' THEN
            v_rust_op = p_poging_id AND v_c <= v_termijn_eind
            AND p_status IN ('temporary-failure', 'permanent-failure')
        WHEN v_n.status IN ('in-verzending', 'verzonden', 'bezorgstatus-onbekend') THEN
            v_p.status IN ('gepland', 'verzonden', 'onbekend')
        ELSE false
    END;

    -- An outcome that is settled is never rewritten (its completed_at is the delivery
    -- proof's): a delivered attempt, unless this failure counts against it, and every
    -- attempt of a final notification, also one still running when it became final (its
    -- final proof stays as it was). Such a receipt is recorded beside the outcome.
    v_vastgelegd := NOT v_telt
        AND NOT (p_status = 'delivered' AND v_n.status IN ('verzonden', 'bezorgstatus-onbekend'))
        AND (v_p.status = 'bezorgd' OR v_vast);
    IF v_vastgelegd THEN
        PERFORM nmc.record_receipt(p_poging_id, p_status, v_c);
    ELSE
        UPDATE nmc.poging AS p
        SET status = v_nieuw, afgerond_op = v_c, laatste_receipt_op = v_c,
            laatste_receipt_status = p_status, verzonden_op = coalesce(p_sent_at, p.verzonden_op)
        WHERE p.id = p_poging_id;
    END IF;

    -- A processed receipt ends the attempt's reconciliation.
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = v_nu
    WHERE t.notificatie_id = v_n.id AND t.soort = 'reconciliëren' AND t.poging_id = p_poging_id
        AND t.staat = 'open';

    -- Every permanent failure under centraal regie is reported to the Profielservice.
    IF p_status = 'permanent-failure' AND v_n.regie = 'centraal' THEN
        INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
        VALUES ('ongeldig-melden', v_n.dv_id, v_n.id, p_poging_id, v_nu, v_n.trace_id, v_nu)
        ON CONFLICT (notificatie_id, soort)
        WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
            AND notificatie_id IS NOT NULL
        DO NOTHING;
    END IF;

    -- Delivered on any attempt (a late one on attempt 1 while attempt 2 runs, too).
    IF p_status = 'delivered' THEN
        IF v_n.status IN ('verzonden', 'bezorgstatus-onbekend') THEN
            PERFORM nmc.transition_notificatie(v_n.id, 'bezorgd');
            PERFORM nmc.plan_vaststellen(v_n, p_poging_id, v_c);
            RETURN 'bezorgd';
        END IF;
        RETURN 'vastgelegd';
    END IF;

    IF NOT v_telt THEN
        RETURN 'vastgelegd';
    END IF;
    IF v_n.status = 'bezorgd' THEN
        UPDATE nmc.taak AS t SET staat = 'done', afgerond_op = v_nu
        WHERE t.notificatie_id = v_n.id AND t.soort = 'vaststellen' AND t.staat = 'open';
        -- Another attempt was delivered too: bezorgd now rests on that one.
        SELECT p.* INTO v_ander FROM nmc.poging AS p
        WHERE p.notificatie_id = v_n.id AND p.id <> p_poging_id AND p.status = 'bezorgd'
        ORDER BY p.afgerond_op DESC LIMIT 1;
        IF FOUND THEN
            PERFORM nmc.plan_vaststellen(v_n, v_ander.id, v_ander.afgerond_op);
            RETURN 'vastgelegd';
        END IF;
    END IF;

    IF p_status = 'permanent-failure' THEN
        PERFORM nmc.transition_notificatie(v_n.id, 'niet-bezorgbaar', 'onbereikbaar');
        RETURN 'niet-bezorgbaar';
    END IF;
    IF v_n.status = 'bezorgstatus-onbekend' THEN
        -- A late temporary/technical failure there is recorded only: no resend.
        RETURN 'vastgelegd';
    END IF;
    IF v_p.nummer = 2 THEN
        IF p_status = 'temporary-failure' THEN
            PERFORM nmc.transition_notificatie(v_n.id, 'niet-bezorgbaar', 'onbereikbaar');
            RETURN 'niet-bezorgbaar';
        END IF;
        PERFORM nmc.transition_notificatie(v_n.id, 'technisch-mislukt', 'technisch');
        RETURN 'technisch-mislukt';
    END IF;
    -- Attempt 1 failed temporarily or technically while an attempt 2 exists (bezorgd
    -- rested on a late delivered on attempt 1): the outcome rests on attempt 2.
    SELECT p.* INTO v_tweede FROM nmc.poging AS p
    WHERE p.notificatie_id = v_n.id AND p.nummer = 2;
    IF FOUND THEN
        IF v_tweede.status IN ('gepland', 'verzonden', 'onbekend') THEN
            IF v_n.status = 'bezorgd' THEN
                PERFORM nmc.transition_notificatie(v_n.id, 'verzonden');
            END IF;
            RETURN 'vastgelegd';
        END IF;
        -- No attempt is left: attempt 2's own failure decides.
        IF v_tweede.status = 'technisch-mislukt' THEN
            PERFORM nmc.transition_notificatie(v_n.id, 'technisch-mislukt', 'technisch');
            RETURN 'technisch-mislukt';
        END IF;
        PERFORM nmc.transition_notificatie(v_n.id, 'niet-bezorgbaar', 'onbereikbaar');
        RETURN 'niet-bezorgbaar';
    END IF;
    -- Attempt 1 failed temporarily or technically: resend, unless geldig_tot has passed.
    IF v_nu > v_n.geldig_tot THEN
        PERFORM nmc.transition_notificatie(v_n.id, 'verlopen', 'verlopen');
        RETURN 'verlopen';
    END IF;
    IF v_n.status = 'bezorgd' THEN
        PERFORM nmc.transition_notificatie(v_n.id, 'verzonden');
    END IF;
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, trace_id, aangemaakt_op)
    VALUES ('verzenden', v_n.dv_id, v_n.id, v_nu, v_n.trace_id, v_nu)
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
            AND notificatie_id IS NOT NULL
    DO NOTHING;
    RETURN 'herverzenden';
END
$$;
COMMENT ON FUNCTION nmc.judge_receipt(uuid, uuid, text, timestamptz, timestamptz) IS
'Judges one NotifyNL outcome for an attempt, from a receipt or a reconciliation answer, '
'under the notification''s row lock: takes over a missing NotifyNL id (committing the '
'send on the worker''s behalf) or records a duplicate id; orders per attempt by '
'completed_at (capped at the NMC clock; older is ignored); records the outcome on the '
'attempt and closes its waiting reconciliation. SPEC §4: delivered on any attempt -> '
'bezorgd plus a settlement task naming that attempt (due completed_at + term + callback '
'window); permanent -> niet-bezorgbaar (and, under centraal, an ongeldig-melden task); '
'temporary/technical on attempt 1 -> resend (verlopen past geldig_tot), but with an '
'attempt 2 present that attempt decides; on attempt 2 -> niet-bezorgbaar / '
'technisch-mislukt. On bezorgd a temporary or permanent failure counts only on the '
'attempt the open settlement task names and before its term ends (another delivered '
'attempt then carries bezorgd); other failures and those on non-running attempts are '
'recorded only. A settled outcome is never rewritten: a receipt that does not count on a '
'delivered attempt, or on any attempt of a terminal notification other than '
'bezorgstatus-onbekend (also one still running when it became terminal, whose missing '
'NotifyNL id is not taken over either: the final proof stays), and a status the NMC does '
'not know (counted) are recorded beside it (nmc.record_receipt). Returns what it did. '
'Internal: called through '
'nmc.apply_receipt_v2, which writes the judgement into the receipt history.';

CREATE OR REPLACE FUNCTION nmc.apply_receipt_v2(
    p_poging_id uuid,
    p_notifynl_id uuid,
    p_status text,
    p_completed_at timestamptz,
    p_sent_at timestamptz,
    p_bron text,
    p_ontvangen_op timestamptz,
    p_template_id uuid,
    p_template_versie integer
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n_voor nmc.notificatie;
    v_p_voor nmc.poging;
    v_n_na nmc.notificatie;
    v_p_na nmc.poging;
    v_resultaat text;
    v_toegepast boolean;
BEGIN
    -- The locks nmc.judge_receipt takes, in its order (notification, then attempt), so the
    -- state before the judgement is the one it judges.
    SELECT n.* INTO v_n_voor
    FROM nmc.notificatie AS n
    WHERE n.id = (SELECT p.notificatie_id FROM nmc.poging AS p WHERE p.id = p_poging_id)
    FOR UPDATE;
    SELECT * INTO v_p_voor FROM nmc.poging AS p WHERE p.id = p_poging_id FOR UPDATE;

    v_resultaat := nmc.judge_receipt(p_poging_id, p_notifynl_id, p_status, p_completed_at, p_sent_at);

    SELECT * INTO v_n_na FROM nmc.notificatie AS n WHERE n.id = v_n_voor.id;
    SELECT * INTO v_p_na FROM nmc.poging AS p WHERE p.id = p_poging_id;
    -- Changed the outcome: the attempt's outcome (status, completed_at, the receipt it rests
    -- on) or the notification's status. A duplicate id or a receipt recorded beside the
    -- outcome did not.
    v_toegepast := v_n_na.versie <> v_n_voor.versie
        OR v_p_na.status IS DISTINCT FROM v_p_voor.status
        OR v_p_na.afgerond_op IS DISTINCT FROM v_p_voor.afgerond_op
        OR v_p_na.laatste_receipt_op IS DISTINCT FROM v_p_voor.laatste_receipt_op
        OR v_p_na.laatste_receipt_status IS DISTINCT FROM v_p_voor.laatste_receipt_status;

    INSERT INTO nmc.receiptgeschiedenis (
        notificatie_id, poging_id, bron, notifynl_id, status, completed_at, sent_at,
        template_id, template_versie, ontvangen_op, verwerkt_op, resultaat, toegepast,
        na_eindstatus, notificatie_versie
    ) VALUES (
        v_n_voor.id, p_poging_id, p_bron, p_notifynl_id, pg_catalog.left(p_status, 50),
        p_completed_at, p_sent_at, p_template_id,
        CASE WHEN p_template_versie >= 0 THEN p_template_versie END,
        coalesce(p_ontvangen_op, nmc.now()), nmc.now(), pg_catalog.left(v_resultaat, 50),
        v_toegepast, nmc.is_terminal(v_n_voor.status) AND NOT v_toegepast, v_n_na.versie
    );
    RETURN v_resultaat;
END
$$;
COMMENT ON FUNCTION nmc.apply_receipt_v2(
    uuid, uuid, text, timestamptz, timestamptz, text, timestamptz, uuid, integer
) IS
'Judges one NotifyNL outcome for an attempt (nmc.judge_receipt, under the notification''s '
'row lock) and writes the judgement into nmc.receiptgeschiedenis: p_bron callback (a '
'stored receipt, p_ontvangen_op when it was stored) or navraag (a reconciliation answer), '
'NotifyNL''s status, id, source times and template from the receipt, the result, whether '
'it changed the outcome (the attempt''s or the notification''s) and whether it came after '
'the final status. Returns nmc.judge_receipt''s answer. Internal.';
