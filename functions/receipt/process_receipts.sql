-- Receipt tasks need no external call: a worker processes a batch in one transaction.

-- What both sets below start from and end with.

CREATE OR REPLACE FUNCTION nmc.receipts_enkel(p_taak_ids bigint[])
RETURNS TABLE (taak_id bigint, notificatie_id uuid, poging_id uuid, payload jsonb, c timestamptz)
LANGUAGE plpgsql
STABLE
ROWS 50
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
BEGIN
    -- An attempt or a notification with another receipt in the batch goes one by one
    -- (their order counts).
    RETURN QUERY
    SELECT k.id, k.notificatie_id, k.poging_id, k.payload, k.c
    FROM (
        SELECT
            t.id, t.notificatie_id, t.poging_id, t.payload,
            -- Capped at the NMC clock, as nmc.judge_receipt orders receipts.
            least(coalesce((t.payload ->> 'completed_at')::timestamptz, v_nu), v_nu) AS c,
            pg_catalog.count(*) OVER (PARTITION BY t.poging_id) AS per_poging,
            pg_catalog.count(*) OVER (PARTITION BY t.notificatie_id) AS per_notificatie
        FROM nmc.taak AS t
        WHERE t.id = ANY(p_taak_ids)
    ) AS k
    WHERE k.per_poging = 1 AND k.per_notificatie = 1;
END
$$;
COMMENT ON FUNCTION nmc.receipts_enkel(bigint[]) IS
'Of the receipt tasks p_taak_ids, those that are the only one of their attempt and of their '
'notification in the batch, with the payload and completed_at capped at the NMC clock: '
'what a set may take. Internal to nmc.apply_receipts_bezorgd and nmc.apply_receipts_mislukt.';

CREATE OR REPLACE FUNCTION nmc.write_receipts_geschiedenis(
    p_taak_ids bigint[], p_resultaten text[], p_versies integer[]
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
BEGIN
    -- As nmc.apply_receipt_v2 writes it for a receipt a set applied: applied (it changed the
    -- attempt's outcome), before any final status.
    INSERT INTO nmc.receiptgeschiedenis (
        notificatie_id, poging_id, bron, notifynl_id, status, completed_at, sent_at,
        template_id, template_versie, ontvangen_op, verwerkt_op, resultaat, toegepast,
        na_eindstatus, notificatie_versie
    )
    SELECT
        t.notificatie_id, t.poging_id, 'callback', (t.payload ->> 'id')::uuid,
        t.payload ->> 'status', (t.payload ->> 'completed_at')::timestamptz,
        (t.payload ->> 'sent_at')::timestamptz, (t.payload ->> 'template_id')::uuid,
        CASE
            WHEN t.payload ->> 'template_version' ~ '^[0-9]{1,9}$'
                THEN (t.payload ->> 'template_version')::integer
        END,
        coalesce(t.aangemaakt_op, v_nu), v_nu, u.resultaat, true, false, u.versie
    FROM unnest(p_taak_ids, p_resultaten, p_versies) AS u (taak_id, resultaat, versie)
    INNER JOIN nmc.taak AS t ON u.taak_id = t.id
    ORDER BY u.taak_id;
END
$$;
COMMENT ON FUNCTION nmc.write_receipts_geschiedenis(bigint[], text[], integer[]) IS
'Writes the receipt history of receipt tasks a set applied, as nmc.apply_receipt_v2 writes '
'it: from each task''s payload, with its result and the notification''s version after it, '
'applied and before any final status. Internal to nmc.apply_receipts_bezorgd and '
'nmc.apply_receipts_mislukt.';

-- The common receipt as one set (SPEC §4 notes): a delivered for a running attempt, by its
-- own NotifyNL id, of a verzonden notification. What nmc.judge_receipt and
-- nmc.apply_receipt_v2 do for such a receipt, each kind of write once for the whole set.

CREATE OR REPLACE FUNCTION nmc.apply_receipts_bezorgd(p_taak_ids bigint[])
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taken bigint [];
    v_notificaties uuid [];
    v_pogingen uuid [];
    v_c timestamptz [];
    v_versies integer [];
BEGIN
    -- Which receipts are that common one, judged under the locks.
    SELECT
        coalesce(pg_catalog.array_agg(k.taak_id ORDER BY k.notificatie_id), '{}'),
        coalesce(pg_catalog.array_agg(k.notificatie_id ORDER BY k.notificatie_id), '{}'),
        coalesce(pg_catalog.array_agg(k.poging_id ORDER BY k.notificatie_id), '{}'),
        coalesce(pg_catalog.array_agg(k.c ORDER BY k.notificatie_id), '{}')
    INTO v_taken, v_notificaties, v_pogingen, v_c
    FROM nmc.receipts_enkel(p_taak_ids) AS k
    INNER JOIN nmc.poging AS p ON k.poging_id = p.id
    INNER JOIN nmc.notificatie AS n ON p.notificatie_id = n.id AND k.notificatie_id = n.id
    WHERE k.payload ->> 'status' = 'delivered'
        AND (k.payload ->> 'id')::uuid = p.notifynl_id
        AND p.status = 'verzonden' AND n.status = 'verzonden'
        AND (p.laatste_receipt_op IS NULL OR k.c >= p.laatste_receipt_op);
    IF pg_catalog.cardinality(v_taken) = 0 THEN
        RETURN v_taken;
    END IF;

    -- The attempt delivered, its reconciliation ended, the notification bezorgd.
    UPDATE nmc.poging AS p
    SET status = 'bezorgd', afgerond_op = u.c, laatste_receipt_op = u.c,
        laatste_receipt_status = 'delivered',
        verzonden_op = coalesce((t.payload ->> 'sent_at')::timestamptz, p.verzonden_op)
    FROM unnest(v_pogingen, v_c, v_taken) AS u (poging_id, c, taak_id)
    INNER JOIN nmc.taak AS t ON u.taak_id = t.id
    WHERE p.id = u.poging_id;
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = v_nu
    FROM unnest(v_notificaties, v_pogingen) AS u (notificatie_id, poging_id)
    WHERE t.notificatie_id = u.notificatie_id AND t.soort = 'reconciliëren'
        AND t.poging_id = u.poging_id AND t.staat = 'open';
    SELECT pg_catalog.array_agg(o.versie ORDER BY o.notificatie_id) INTO v_versies
    FROM nmc.transition_notificaties(
        v_notificaties,
        pg_catalog.array_fill(
            'bezorgd'::nmc.notificatie_status, ARRAY[pg_catalog.cardinality(v_notificaties)]
        )
    ) AS o;

    -- The settlement task naming the delivered attempt (nmc.plan_vaststellen).
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
    SELECT
        'vaststellen', n.dv_id, n.id, u.poging_id,
        u.c + i.vaststellingstermijn + i.callback_venster, n.trace_id, v_nu
    FROM unnest(v_notificaties, v_pogingen, v_c) AS u (notificatie_id, poging_id, c)
    INNER JOIN nmc.notificatie AS n ON u.notificatie_id = n.id
    CROSS JOIN nmc.instellingen AS i
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO UPDATE SET due = excluded.due, poging_id = excluded.poging_id;

    PERFORM nmc.write_receipts_geschiedenis(
        v_taken, pg_catalog.array_fill('bezorgd'::text, ARRAY[pg_catalog.cardinality(v_taken)]),
        v_versies
    );
    PERFORM nmc.close_taken(v_taken);
    RETURN v_taken;
END
$$;
COMMENT ON FUNCTION nmc.apply_receipts_bezorgd(bigint[]) IS
'Of the receipt tasks p_taak_ids (their notifications locked by the caller), applies as one '
'set those that nmc.judge_receipt '
'would judge bezorgd on the plain path: delivered, with the attempt''s own NotifyNL id, '
'for a running attempt (verzonden, no newer receipt) of a verzonden notification, the '
'attempt and the notification once in the batch. Writes what nmc.apply_receipt_v2 writes '
'for each (the attempt bezorgd, its open reconciliation done, the transition to bezorgd '
'through nmc.transition_notificaties, the settlement task, the receipt history) and closes '
'their tasks. Returns the tasks it handled; the others are left for the one-by-one path. '
'Internal.';

-- The common failures as one set: a permanent, temporary or technical failure for a
-- running attempt, by its own NotifyNL id, of a verzonden notification. What
-- nmc.judge_receipt and nmc.apply_receipt_v2 do for such a receipt, each kind of write once
-- for the whole set.

CREATE OR REPLACE FUNCTION nmc.apply_receipts_mislukt(p_taak_ids bigint[])
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taken bigint [];
    v_notificaties uuid [];
    v_pogingen uuid [];
    v_statussen text [];
    v_c timestamptz [];
    v_uitkomsten text [];
    v_overgangen uuid [];
    v_naar nmc.notificatie_status [];
    v_redenen nmc.reden [];
BEGIN
    -- Which receipts are such a failure, judged under the locks, and what each leads to
    -- (nmc.judge_receipt): permanent, or temporary on attempt 2 -> niet-bezorgbaar;
    -- technical on attempt 2 -> technisch-mislukt; temporary or technical on attempt 1 ->
    -- a resend, or verlopen past geldig_tot. Attempt 1 with an attempt 2 beside it goes
    -- one by one.
    SELECT
        coalesce(pg_catalog.array_agg(k.taak_id ORDER BY k.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(k.notificatie_id ORDER BY k.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(k.poging_id ORDER BY k.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(k.payload ->> 'status' ORDER BY k.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(k.c ORDER BY k.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(
            CASE
                WHEN k.payload ->> 'status' = 'permanent-failure'
                    OR (p.nummer = 2 AND k.payload ->> 'status' = 'temporary-failure')
                    THEN 'niet-bezorgbaar'
                WHEN p.nummer = 2 THEN 'technisch-mislukt'
                WHEN v_nu > n.geldig_tot THEN 'verlopen'
                ELSE 'herverzenden'
            END
            ORDER BY k.taak_id
        ), '{}')
    INTO v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten
    FROM nmc.receipts_enkel(p_taak_ids) AS k
    INNER JOIN nmc.poging AS p ON k.poging_id = p.id
    INNER JOIN nmc.notificatie AS n ON p.notificatie_id = n.id AND k.notificatie_id = n.id
    WHERE k.payload ->> 'status' IN ('permanent-failure', 'temporary-failure', 'technical-failure')
        AND (k.payload ->> 'id')::uuid = p.notifynl_id
        AND p.status = 'verzonden' AND n.status = 'verzonden'
        AND (p.laatste_receipt_op IS NULL OR k.c >= p.laatste_receipt_op)
        AND (
            p.nummer = 2 OR k.payload ->> 'status' = 'permanent-failure'
            OR NOT EXISTS (
                SELECT 1 FROM nmc.poging AS a WHERE a.notificatie_id = n.id AND a.nummer = 2
            )
        );
    IF pg_catalog.cardinality(v_taken) = 0 THEN
        RETURN v_taken;
    END IF;

    -- The attempt's outcome, its reconciliation ended.
    UPDATE nmc.poging AS p
    SET status = nmc.poging_status_voor(m.status), afgerond_op = m.c, laatste_receipt_op = m.c,
        laatste_receipt_status = m.status,
        verzonden_op = coalesce((t.payload ->> 'sent_at')::timestamptz, p.verzonden_op)
    FROM unnest(v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten) AS m (
        taak_id, notificatie_id, poging_id, status, c, uitkomst
    )
    INNER JOIN nmc.taak AS t ON m.taak_id = t.id
    WHERE p.id = m.poging_id;
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = v_nu
    FROM unnest(v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten) AS m (
        taak_id, notificatie_id, poging_id, status, c, uitkomst
    )
    WHERE t.notificatie_id = m.notificatie_id AND t.soort = 'reconciliëren'
        AND t.poging_id = m.poging_id AND t.staat = 'open';

    -- Every permanent failure under centraal regie is reported to the Profielservice.
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
    SELECT 'ongeldig-melden', n.dv_id, n.id, m.poging_id, v_nu, n.trace_id, v_nu
    FROM unnest(v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten) AS m (
        taak_id, notificatie_id, poging_id, status, c, uitkomst
    )
    INNER JOIN nmc.notificatie AS n ON m.notificatie_id = n.id
    WHERE m.status = 'permanent-failure' AND n.regie = 'centraal'
    ORDER BY m.taak_id
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO NOTHING;

    -- The final statuses through the single writer (the outcome is the status's name),
    -- the resends as send tasks.
    SELECT
        coalesce(pg_catalog.array_agg(m.notificatie_id ORDER BY m.taak_id), '{}'),
        coalesce(pg_catalog.array_agg(
            m.uitkomst::nmc.notificatie_status ORDER BY m.taak_id
        ), '{}'),
        coalesce(pg_catalog.array_agg(
            CASE m.uitkomst
                WHEN 'niet-bezorgbaar' THEN 'onbereikbaar'
                WHEN 'technisch-mislukt' THEN 'technisch'
                ELSE 'verlopen'
            END::nmc.reden
            ORDER BY m.taak_id
        ), '{}')
    INTO v_overgangen, v_naar, v_redenen
    FROM unnest(v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten) AS m (
        taak_id, notificatie_id, poging_id, status, c, uitkomst
    )
    WHERE m.uitkomst <> 'herverzenden';
    IF pg_catalog.cardinality(v_overgangen) > 0 THEN
        PERFORM 1 FROM nmc.transition_notificaties(v_overgangen, v_naar, v_redenen);
    END IF;
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, trace_id, aangemaakt_op)
    SELECT 'verzenden', n.dv_id, n.id, v_nu, n.trace_id, v_nu
    FROM unnest(v_taken, v_notificaties, v_pogingen, v_statussen, v_c, v_uitkomsten) AS m (
        taak_id, notificatie_id, poging_id, status, c, uitkomst
    )
    INNER JOIN nmc.notificatie AS n ON m.notificatie_id = n.id
    WHERE m.uitkomst = 'herverzenden'
    ORDER BY m.taak_id
    ON CONFLICT (notificatie_id, soort)
    WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
    AND notificatie_id IS NOT NULL
    DO NOTHING;

    -- (each at the notification's version now: after its transition, if it had one)
    PERFORM nmc.write_receipts_geschiedenis(
        v_taken,
        v_uitkomsten,
        ARRAY(
            SELECT n.versie
            FROM unnest(v_notificaties) WITH ORDINALITY AS m (notificatie_id, i)
            INNER JOIN nmc.notificatie AS n ON m.notificatie_id = n.id
            ORDER BY m.i
        )
    );
    PERFORM nmc.close_taken(v_taken);
    RETURN v_taken;
END
$$;
COMMENT ON FUNCTION nmc.apply_receipts_mislukt(bigint[]) IS
'Of the receipt tasks p_taak_ids (their notifications locked by the caller), applies as one '
'set those that nmc.judge_receipt '
'would judge on the plain failure path: a permanent, temporary or technical failure with '
'the attempt''s own NotifyNL id, for a running attempt (verzonden, no newer receipt) of a '
'verzonden notification, the attempt and the notification once in the batch, and for a '
'temporary or technical failure on attempt 1 no attempt 2 beside it. Writes what '
'nmc.apply_receipt_v2 writes for each (the attempt''s outcome, its open reconciliation done, '
'an ongeldig-melden task for a permanent failure under centraal regie, niet-bezorgbaar, '
'technisch-mislukt or verlopen through nmc.transition_notificaties, or a send task for the '
'resend, the receipt history) and closes their tasks. Returns the tasks it handled; the '
'others are left for the one-by-one path. Internal.';

-- The default batch (the worker's, nmc.worker.receipt.BATCH) stays below 64: each receipt on
-- the one-by-one path is a subtransaction that writes (its BEGIN ... EXCEPTION block), and a
-- transaction with more than 64 overflows the backend's cache of subtransaction ids, so
-- that every other snapshot looks them up in pg_subtrans while it runs.
CREATE OR REPLACE FUNCTION nmc.process_receipts_v2(p_batch integer DEFAULT 50)
RETURNS TABLE (notificatie_id uuid)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_taken bigint [];
    v_samen bigint [] := '{}';
    v_taak nmc.taak;
    v_fout text;
BEGIN
    SELECT coalesce(pg_catalog.array_agg(l.taak_id), '{}') INTO v_taken
    FROM nmc.lock_due_taken('receipt', greatest(p_batch, 1)) AS l;
    IF pg_catalog.cardinality(v_taken) = 0 THEN
        RETURN;
    END IF;
    -- The common delivered receipts as one set, then the common failures as another;
    -- should either fail, every receipt goes the one-by-one way below, where a failure is
    -- counted on its own task.
    BEGIN
        -- Every notification of the batch locked first, once and in id order (the receipts
        -- of the batch then take locks already held, whatever their order).
        PERFORM 1 FROM (
            SELECT n.id FROM nmc.notificatie AS n
            WHERE n.id IN (SELECT t.notificatie_id FROM nmc.taak AS t WHERE t.id = ANY(v_taken))
            ORDER BY n.id
            FOR UPDATE
        ) AS n;
        v_samen := nmc.apply_receipts_bezorgd(v_taken);
        v_samen := v_samen || nmc.apply_receipts_mislukt(ARRAY(
            SELECT u.id FROM unnest(v_taken) AS u (id) WHERE u.id <> ALL(v_samen)
        ));
    EXCEPTION WHEN OTHERS THEN
        v_samen := '{}';
    END;
    RETURN QUERY
    SELECT t.notificatie_id FROM nmc.taak AS t WHERE t.id = ANY(v_samen) ORDER BY t.id;

    FOR v_taak IN
        SELECT t.* FROM nmc.taak AS t
        WHERE t.id = ANY(v_taken) AND t.id <> ALL(v_samen)
        ORDER BY t.receipt_completed_at NULLS FIRST, t.id
    LOOP
        BEGIN
            -- Judged and written into the receipt history, received when it was stored.
            PERFORM nmc.apply_receipt_v2(
                v_taak.poging_id,
                (v_taak.payload ->> 'id')::uuid,
                v_taak.payload ->> 'status',
                (v_taak.payload ->> 'completed_at')::timestamptz,
                (v_taak.payload ->> 'sent_at')::timestamptz,
                'callback',
                v_taak.aangemaakt_op,
                (v_taak.payload ->> 'template_id')::uuid,
                CASE
                    WHEN v_taak.payload ->> 'template_version' ~ '^[0-9]{1,9}$'
                        THEN (v_taak.payload ->> 'template_version')::integer
                END
            );
            PERFORM nmc.close_taak(v_taak.id);
        EXCEPTION WHEN OTHERS THEN
            -- A failure inside the NMC: counted on the task, retried, and after the
            -- maximum left for an operator. The SQLSTATE only: no personal data.
            GET STACKED DIAGNOSTICS v_fout = RETURNED_SQLSTATE;
            UPDATE nmc.taak AS t
            SET pogingen = t.pogingen + 1,
                laatste_fout = 'sqlstate ' || v_fout,
                due = nmc.now() + nmc.uitstel(t.pogingen),
                staat = CASE
                    WHEN t.pogingen + 1 >= (SELECT i.max_pogingen FROM nmc.instellingen AS i)
                        THEN 'mislukt'::nmc.taak_staat
                    ELSE 'open'::nmc.taak_staat
                END,
                lease_eigenaar = NULL,
                lease_tot = NULL
            WHERE t.id = v_taak.id;
        END;
        notificatie_id := v_taak.notificatie_id;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION nmc.process_receipts_v2(integer) IS
'Processes up to p_batch (50: fewer than 64 subtransactions) due receipt tasks (fairly '
'across DVs): the plain delivered ones as one set (nmc.apply_receipts_bezorgd), the plain '
'failures as another (nmc.apply_receipts_mislukt), the others oldest completed_at first, '
'one by one, '
'with nmc.apply_receipt_v2 (judged, and written into the receipt history) in the caller''s '
'transaction; a receipt that fails is counted on '
'its task and retried with backoff (state mislukt after the maximum). Returns one row per '
'task it handled: the notificatie (whose intake span the worker''s span links to).';

CREATE OR REPLACE FUNCTION nmc.process_receipts(p_batch integer DEFAULT 100)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.count(*)::integer FROM nmc.process_receipts_v2(p_batch)
$$;
COMMENT ON FUNCTION nmc.process_receipts(integer) IS
'The receipt processing of the release before the intake span (superseded by '
'nmc.process_receipts_v2; kept for a rolling deploy, to be dropped in a later release): '
'how many tasks nmc.process_receipts_v2 handled.';
