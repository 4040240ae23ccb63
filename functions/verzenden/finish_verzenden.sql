-- The commit after the send call (SPEC §5): fenced by the claim epoch, under the
-- notification's row lock, through the single writer.

CREATE OR REPLACE FUNCTION nmc.finish_verzenden_batch(
    p_taak_ids bigint[],
    p_claim_epochs integer[],
    p_uitkomsten text[],
    p_notifynl_ids uuid[] DEFAULT NULL,
    p_contactgegeven_ids uuid[] DEFAULT NULL
)
RETURNS TABLE (item integer, status nmc.notificatie_status, fout text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_aantal CONSTANT integer := coalesce(pg_catalog.cardinality(p_taak_ids), 0);
    v_notificaties uuid [];
    v_fouten text [];
    v_pogingen uuid [];
    v_gepland boolean [];
    v_herverzenden boolean [];
    v_van nmc.notificatie_status [];
    v_naar nmc.notificatie_status [];
    v_redenen nmc.reden [];
    v_dvs integer [];
    v_berichttypen text [];
    v_centraal boolean [];
BEGIN
    IF coalesce(pg_catalog.cardinality(p_claim_epochs), 0) <> v_aantal
        OR coalesce(pg_catalog.cardinality(p_uitkomsten), 0) <> v_aantal
        OR coalesce(pg_catalog.cardinality(p_notifynl_ids), v_aantal) <> v_aantal
        OR coalesce(pg_catalog.cardinality(p_contactgegeven_ids), v_aantal) <> v_aantal THEN
        RAISE EXCEPTION 'the arrays differ in length' USING ERRCODE = '22023';
    END IF;
    IF v_aantal = 0 THEN
        RETURN;
    END IF;

    -- 1. Fencing, per item: the task is locked (id order) and held only while it is claimed
    -- with exactly this epoch (NM011 otherwise). A task named twice is held by its first
    -- item alone: after that item's commit it is closed.
    SELECT
        pg_catalog.array_agg(CASE WHEN k.vastgehouden THEN k.notificatie_id END ORDER BY k.i),
        pg_catalog.array_agg(
            CASE
                WHEN NOT k.vastgehouden THEN 'NM011'
                WHEN k.notificatie_id IS NULL THEN 'NM005'
            END
            ORDER BY k.i
        )
    INTO v_notificaties, v_fouten
    FROM (
        SELECT
            u.i,
            t.notificatie_id,
            coalesce(
                t.staat = 'claimed' AND t.claim_epoch = u.epoch
                AND pg_catalog.row_number() OVER (PARTITION BY u.id ORDER BY u.i) = 1,
                false
            ) AS vastgehouden
        FROM unnest(p_taak_ids, p_claim_epochs) WITH ORDINALITY AS u (id, epoch, i)
        LEFT JOIN (
            SELECT t.id, t.staat, t.claim_epoch, t.notificatie_id
            FROM nmc.taak AS t
            WHERE t.id = ANY(p_taak_ids)
            ORDER BY t.id
            FOR UPDATE
        ) AS t ON u.id = t.id
    ) AS k;

    -- 2. The row locks of the notifications and their attempts (id order), before reading.
    PERFORM 1 FROM (
        SELECT n.id FROM nmc.notificatie AS n
        WHERE n.id = ANY(v_notificaties)
        ORDER BY n.id
        FOR UPDATE
    ) AS n;
    -- (An index probe per notification, whatever the statistics say; the notifications'
    -- locks already order everyone who writes their attempts.)
    PERFORM 1
    FROM unnest(v_notificaties) AS u (id),
        LATERAL (
            SELECT p.id FROM nmc.poging AS p
            WHERE p.notificatie_id = u.id
            ORDER BY p.nummer
            FOR UPDATE
        ) AS p;

    -- 3. Per item, under those locks: the refusals of the single commit (22023 an unknown
    -- outcome or a sent attempt without its NotifyNL id; NM014 verlopen before geldig_tot;
    -- NM001 a transition the notification no longer allows), and the transition to make.
    SELECT
        pg_catalog.array_agg(
            coalesce(k.fout, CASE
                WHEN k.uitkomst IS NULL
                    OR k.uitkomst NOT IN (
                        'verzonden', 'ongeldig-adres', 'onverwerkbaar', 'geen-contactgegevens',
                        'verlopen'
                    )
                    THEN '22023'
                WHEN k.uitkomst = 'verzonden' AND k.notifynl_id IS NULL THEN '22023'
                WHEN k.uitkomst = 'verlopen' AND v_nu <= k.geldig_tot THEN 'NM014'
                WHEN k.naar IS NOT NULL AND NOT nmc.transition_allowed(k.van, k.naar)
                    THEN 'NM001'
            END)
            ORDER BY k.i
        ),
        pg_catalog.array_agg(k.poging_id ORDER BY k.i),
        pg_catalog.array_agg(k.poging_status = 'gepland' ORDER BY k.i),
        pg_catalog.array_agg(k.van ORDER BY k.i),
        pg_catalog.array_agg(k.naar ORDER BY k.i),
        pg_catalog.array_agg(k.reden ORDER BY k.i),
        -- Attempt 1 already failed temporarily or technically (a receipt came between the
        -- 201 and this commit): its resend is still to be planned.
        pg_catalog.array_agg(
            coalesce(
                k.uitkomst = 'verzonden' AND k.van = 'verzonden' AND k.poging_nummer = 1
                AND k.poging_status IN ('tijdelijk-mislukt', 'technisch-mislukt'),
                false
            )
            ORDER BY k.i
        ),
        pg_catalog.array_agg(k.dv_id ORDER BY k.i),
        pg_catalog.array_agg(k.berichttype ORDER BY k.i),
        pg_catalog.array_agg(coalesce(k.regie = 'centraal', false) ORDER BY k.i)
    INTO
        v_fouten, v_pogingen, v_gepland, v_van, v_naar, v_redenen, v_herverzenden, v_dvs,
        v_berichttypen, v_centraal
    FROM (
        SELECT
            u.i,
            u.fout,
            u.uitkomst,
            u.notifynl_id,
            n.status AS van,
            n.geldig_tot,
            n.dv_id,
            n.berichttype,
            n.regie,
            p.id AS poging_id,
            p.status AS poging_status,
            p.nummer AS poging_nummer,
            CASE u.uitkomst
                -- A receipt may have made this transition on the worker's behalf already;
                -- a resend (verzonden) only records its attempt.
                WHEN 'verzonden' THEN
                    CASE WHEN n.status = 'in-verzending' THEN 'verzonden' END
                WHEN 'ongeldig-adres' THEN 'niet-bezorgbaar'
                -- NotifyNL cannot render the request (the template changed after the
                -- intake): it never will, so no retry.
                WHEN 'onverwerkbaar' THEN 'technisch-mislukt'
                WHEN 'geen-contactgegevens' THEN 'niet-bezorgbaar'
                WHEN 'verlopen' THEN 'verlopen'
            END::nmc.notificatie_status AS naar,
            CASE u.uitkomst
                WHEN 'ongeldig-adres' THEN 'onbereikbaar'
                WHEN 'onverwerkbaar' THEN 'technisch'
                WHEN 'geen-contactgegevens' THEN 'geen-contactgegevens'
                WHEN 'verlopen' THEN 'verlopen'
            END::nmc.reden AS reden
        FROM unnest(v_notificaties, v_fouten, p_uitkomsten, p_notifynl_ids)
            WITH ORDINALITY AS u (notificatie_id, fout, uitkomst, notifynl_id, i)
        LEFT JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
        LEFT JOIN LATERAL (
            SELECT p.id, p.status, p.nummer FROM nmc.poging AS p
            WHERE p.notificatie_id = n.id
            ORDER BY p.nummer DESC LIMIT 1
        ) AS p ON true
    ) AS k;

    -- 4. The commits of every item without a refusal, each kind of write once.
    -- 201 (or found by reference): the attempt takes the NotifyNL id, or keeps another id
    -- as a duplicate (a receipt came first, or an earlier call did reach NotifyNL).
    -- 400 on email_address: the address can never work for this attempt; a 400 NotifyNL
    -- could not render: the request can never work as it is.
    UPDATE nmc.poging AS p
    SET notifynl_id = CASE
            WHEN u.uitkomst = 'verzonden' THEN coalesce(p.notifynl_id, u.notifynl_id)
            ELSE p.notifynl_id
        END,
        duplicaat_ids = CASE
            WHEN u.uitkomst <> 'verzonden' OR p.notifynl_id IS NULL
                OR p.notifynl_id = u.notifynl_id OR u.notifynl_id = ANY(p.duplicaat_ids)
                THEN p.duplicaat_ids
            ELSE p.duplicaat_ids || u.notifynl_id
        END,
        status = CASE
            WHEN u.uitkomst = 'ongeldig-adres' THEN 'permanent-mislukt'::nmc.poging_status
            WHEN u.uitkomst = 'onverwerkbaar' THEN 'technisch-mislukt'::nmc.poging_status
            WHEN p.status = 'gepland' THEN 'verzonden'::nmc.poging_status
            ELSE p.status
        END,
        verzonden_op = CASE
            WHEN u.uitkomst = 'verzonden' THEN coalesce(p.verzonden_op, v_nu)
            ELSE p.verzonden_op
        END,
        afgerond_op = CASE
            WHEN u.uitkomst IN ('ongeldig-adres', 'onverwerkbaar') THEN v_nu ELSE p.afgerond_op
        END,
        contactgegeven_id = coalesce(u.contactgegeven_id, p.contactgegeven_id)
    FROM unnest(v_pogingen, v_fouten, p_uitkomsten, p_notifynl_ids, p_contactgegeven_ids)
        AS u (poging_id, fout, uitkomst, notifynl_id, contactgegeven_id)
    WHERE p.id = u.poging_id AND u.fout IS NULL
        AND u.uitkomst IN ('verzonden', 'ongeldig-adres', 'onverwerkbaar');

    -- No e-mail address (Profielservice), or nothing found after geldig_tot: the attempt
    -- that was never made goes.
    DELETE FROM nmc.poging AS p
    USING unnest(v_pogingen, v_fouten, p_uitkomsten) AS u (poging_id, fout, uitkomst)
    WHERE p.id = u.poging_id AND u.fout IS NULL AND p.status = 'gepland'
        AND u.uitkomst IN ('geen-contactgegevens', 'verlopen');

    PERFORM 1 FROM nmc.transition_notificaties(
        ARRAY(
            SELECT u.id FROM unnest(v_notificaties, v_fouten, v_naar) AS u (id, fout, naar)
            WHERE u.fout IS NULL AND u.naar IS NOT NULL
        ),
        ARRAY(
            SELECT u.naar FROM unnest(v_fouten, v_naar) AS u (fout, naar)
            WHERE u.fout IS NULL AND u.naar IS NOT NULL
        ),
        ARRAY(
            SELECT u.reden FROM unnest(v_fouten, v_naar, v_redenen) AS u (fout, naar, reden)
            WHERE u.fout IS NULL AND u.naar IS NOT NULL
        )
    );

    -- Reconciliation asks NotifyNL after an hour if no receipt came.
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
    SELECT 'reconciliëren', n.dv_id, n.id, u.poging_id, v_nu + INTERVAL '1 hour', n.trace_id, v_nu
    FROM unnest(v_notificaties, v_pogingen, v_fouten, v_gepland, p_uitkomsten) AS u (
        notificatie_id, poging_id, fout, gepland, uitkomst
    )
    INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
    WHERE u.fout IS NULL AND u.uitkomst = 'verzonden' AND u.gepland
    ON CONFLICT (poging_id)
    WHERE staat IN ('open', 'claimed') AND soort = 'reconciliëren'
    DO NOTHING;

    -- An invalid address under centraal regie (NotifyNL's 400, or the worker's check of its
    -- rule before the call) is reported to the Profielservice, as after a permanent-failure
    -- receipt (nmc.judge_receipt; notifynl-contract.md, Errors).
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
    SELECT 'ongeldig-melden', n.dv_id, n.id, u.poging_id, v_nu, n.trace_id, v_nu
    FROM unnest(v_notificaties, v_pogingen, v_fouten, p_uitkomsten, v_centraal) AS u (
        notificatie_id, poging_id, fout, uitkomst, centraal
    )
    INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
    WHERE u.fout IS NULL AND u.uitkomst = 'ongeldig-adres' AND u.centraal
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO NOTHING;

    -- What NotifyNL could not render, counted per DV, berichttype and day (the metrics, the
    -- DV's beheer report).
    INSERT INTO nmc.onverwerkbaar AS o (dv_id, berichttype, dag, aantal)
    SELECT u.dv_id, u.berichttype, (v_nu AT TIME ZONE 'Europe/Amsterdam')::date,
        pg_catalog.count(*)
    FROM unnest(v_dvs, v_berichttypen, v_fouten, p_uitkomsten) AS u (
        dv_id, berichttype, fout, uitkomst
    )
    WHERE u.fout IS NULL AND u.uitkomst = 'onverwerkbaar'
    GROUP BY u.dv_id, u.berichttype
    ORDER BY u.dv_id, u.berichttype
    ON CONFLICT (dv_id, berichttype, dag) DO UPDATE SET aantal = o.aantal + excluded.aantal;
    -- Its template changed after the intake: read it again soon, so the intake checks the
    -- new placeholders (nmc.markeer_template_verouderd).
    PERFORM nmc.markeer_template_verouderd(u.dv_id, u.berichttype)
    FROM (
        SELECT DISTINCT d.dv_id, d.berichttype
        FROM unnest(v_dvs, v_berichttypen, v_fouten, p_uitkomsten) AS d (
            dv_id, berichttype, fout, uitkomst
        )
        WHERE d.fout IS NULL AND d.uitkomst = 'onverwerkbaar'
    ) AS u;

    -- A send NotifyNL accepted: its berichttype is no longer refused (nmc.defer_verzenden).
    -- The table is empty but for a refusal under way: the probe costs nothing otherwise.
    IF EXISTS (SELECT 1 FROM nmc.verzendweigering) THEN
        DELETE FROM nmc.verzendweigering AS w
        USING unnest(v_dvs, v_berichttypen, v_fouten, p_uitkomsten) AS u (
            dv_id, berichttype, fout, uitkomst
        )
        WHERE w.dv_id = u.dv_id AND w.berichttype = u.berichttype AND u.fout IS NULL
            AND u.uitkomst = 'verzonden';
    END IF;

    PERFORM nmc.close_taken(ARRAY(
        SELECT u.id FROM unnest(p_taak_ids, v_fouten) AS u (id, fout) WHERE u.fout IS NULL
    ));

    -- The resend of a temporary or technical failure on attempt 1 that a receipt judged
    -- before this commit: its plan met this task, still claimed, and did nothing. Of the
    -- two commits the second plans it, and that is this one.
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, trace_id, aangemaakt_op)
    SELECT 'verzenden', n.dv_id, n.id, v_nu, n.trace_id, v_nu
    FROM unnest(v_notificaties, v_fouten, v_herverzenden) AS u (notificatie_id, fout, herverzenden)
    INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
    WHERE u.fout IS NULL AND u.herverzenden
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO NOTHING;

    -- The status after the call, known without reading the rows again: the transition's
    -- target, or (no transition, or a refusal) the status read under the lock in step 3.
    RETURN QUERY
    SELECT
        u.i::integer,
        CASE WHEN u.fout IS NULL THEN coalesce(u.naar, u.van) ELSE u.van END,
        u.fout
    FROM unnest(v_van, v_naar, v_fouten) WITH ORDINALITY AS u (van, naar, fout, i)
    ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION nmc.finish_verzenden_batch(bigint[], integer[], text[], uuid[], uuid[])
IS
'Commits the outcomes of many send tasks in one transaction (the worker''s group commit): '
'item i is task p_taak_ids[i] with epoch p_claim_epochs[i], outcome p_uitkomsten[i] and '
'its NotifyNL and contactgegeven ids, with the meaning of nmc.finish_verzenden. Every item '
'is judged on its own: a refused item changes nothing and the others still commit. '
'Returns per item (1-based) the notification''s status after the call and fout, the '
'SQLSTATE of a refusal: NM011 stale epoch (also a task named twice, after its first '
'item), 22023 unknown outcome or verzonden without NotifyNL id, NM014 verlopen before '
'geldig_tot, NM001 a transition the notification no longer allows, NM005 no '
'notification. Arrays of different length refuse the whole call (22023). Locks tasks, '
'then notifications, then attempts, each in id order; the transitions go through '
'nmc.transition_notificaties in one call. A verzonden commit after a receipt already '
'failed attempt 1 temporarily or technically (between the 201 and this commit, while the '
'task was still claimed) plans the resend that receipt could not. Also counts the '
'onverwerkbaar items per DV, berichttype and day (nmc.onverwerkbaar), plans the '
'ongeldig-melden task of an ongeldig-adres under centraal regie, and clears the refused '
'state (nmc.verzendweigering) of the berichttypen of the verzonden items.';

-- The template version NotifyNL rendered (its 201's template.version), kept on the attempt
-- for the delivery proof. Beside the outcome rather than inside it: the outcome's rules stay
-- in nmc.finish_verzenden_batch, which this calls first.
CREATE OR REPLACE FUNCTION nmc.finish_verzenden_batch_v2(
    p_taak_ids bigint[],
    p_claim_epochs integer[],
    p_uitkomsten text[],
    p_notifynl_ids uuid[],
    p_contactgegeven_ids uuid[],
    p_template_versies integer[]
)
RETURNS TABLE (item integer, status nmc.notificatie_status, fout text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF coalesce(pg_catalog.cardinality(p_template_versies), 0)
        <> coalesce(pg_catalog.cardinality(p_taak_ids), 0) THEN
        RAISE EXCEPTION 'the arrays differ in length' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT r.item, r.status, r.fout
    FROM nmc.finish_verzenden_batch(
        p_taak_ids, p_claim_epochs, p_uitkomsten, p_notifynl_ids, p_contactgegeven_ids
    ) AS r;
    -- The attempt that now holds the NotifyNL id (only a committed verzonden item's does).
    UPDATE nmc.poging AS p SET template_versie = u.versie
    FROM unnest(p_uitkomsten, p_notifynl_ids, p_template_versies) AS u (uitkomst, id, versie)
    WHERE u.uitkomst = 'verzonden' AND u.versie >= 1 AND p.notifynl_id = u.id
        AND p.template_versie IS DISTINCT FROM u.versie;
END
$$;
COMMENT ON FUNCTION nmc.finish_verzenden_batch_v2(
    bigint[], integer[], text[], uuid[], uuid[], integer[]
) IS
'nmc.finish_verzenden_batch (the outcomes, their rules and refusals, unchanged), then per '
'verzonden item the version of the NotifyNL template its 201 named (p_template_versies, '
'NULL when unknown: a send found by reference) on the attempt holding its NotifyNL id, for '
'the delivery proof. 22023 when p_template_versies differs in length.';

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
    v_status nmc.notificatie_status;
    v_fout text;
BEGIN
    SELECT r.status, r.fout INTO v_status, v_fout
    FROM nmc.finish_verzenden_batch(
        ARRAY[p_taak_id], ARRAY[p_claim_epoch], ARRAY[p_uitkomst], ARRAY[p_notifynl_id],
        ARRAY[p_contactgegeven_id]
    ) AS r;
    CASE v_fout
        WHEN 'NM011' THEN
            RAISE EXCEPTION 'stale claim: task % is no longer held with epoch %',
                p_taak_id, p_claim_epoch
                USING ERRCODE = 'NM011';
        WHEN 'NM014' THEN
            RAISE EXCEPTION 'geldig_tot has not passed; send instead' USING ERRCODE = 'NM014';
        WHEN 'NM001' THEN
            RAISE EXCEPTION 'the outcome % is not allowed from status %', p_uitkomst, v_status
                USING ERRCODE = 'NM001', DETAIL = v_status::text;
        WHEN 'NM005' THEN
            RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
        WHEN '22023' THEN
            IF p_uitkomst = 'verzonden' THEN
                RAISE EXCEPTION 'a sent attempt needs its NotifyNL id' USING ERRCODE = '22023';
            END IF;
            RAISE EXCEPTION 'unknown send outcome %', p_uitkomst USING ERRCODE = '22023';
        ELSE
            RETURN v_status;
    END CASE;
END
$$;
COMMENT ON FUNCTION nmc.finish_verzenden(bigint, integer, text, uuid, uuid) IS
'Commits the outcome of a send task, fenced by its claim epoch (NM011 when stale). '
'p_uitkomst: verzonden (NotifyNL 201 or found by reference; the attempt takes the '
'NotifyNL id, in-verzending -> verzonden, a resend only records the attempt, and a '
'reconcile task is planned +1 h; a resend a receipt judged meanwhile is planned), '
'ongeldig-adres (NotifyNL 400 ValidationError on email_address, or its rule checked before '
'the call: niet-bezorgbaar, onbereikbaar; under centraal an ongeldig-melden task reports the '
'address to the Profielservice), onverwerkbaar (NotifyNL cannot render the request: Missing '
'personalisation, message too long; technisch-mislukt, technisch, no retry; counted per '
'DV, berichttype and day), geen-contactgegevens '
'(Profielservice: niet-bezorgbaar), verlopen (a re-claim that found nothing after '
'geldig_tot; NM014 before it). Closes the task; returns the status. The one-item form of '
'nmc.finish_verzenden_batch, whose refusal it raises.';
