-- The NotifyNL callback (SPEC §6): store first (without the address), answer after.

CREATE OR REPLACE FUNCTION nmc.store_receipts_v2(
    p_references text[],
    p_notifynl_ids uuid[],
    p_statussen text[],
    p_completed_at timestamptz[],
    p_sent_at timestamptz[],
    p_template_ids uuid[],
    p_template_versies integer[]
)
RETURNS TABLE (item integer, resultaat text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_n CONSTANT integer := coalesce(pg_catalog.cardinality(p_references), 0);
    v_resultaten text [];
BEGIN
    IF v_n = 0 OR v_n > 1000
        OR coalesce(pg_catalog.cardinality(p_notifynl_ids), 0) <> v_n
        OR coalesce(pg_catalog.cardinality(p_statussen), 0) <> v_n
        OR coalesce(pg_catalog.cardinality(p_completed_at), 0) <> v_n
        OR coalesce(pg_catalog.cardinality(p_sent_at), 0) <> v_n
        OR coalesce(pg_catalog.cardinality(p_template_ids), v_n) <> v_n
        OR coalesce(pg_catalog.cardinality(p_template_versies), v_n) <> v_n THEN
        RAISE EXCEPTION 'store_receipts takes 1 to 1000 receipts with every array of the same length'
            USING ERRCODE = 'NM016';
    END IF;

    WITH ontvangen AS (
        -- The reference is our attempt id; anything else is not ours to store.
        SELECT
            u.nr,
            u.notifynl_id,
            u.status,
            u.completed_at,
            u.sent_at,
            u.template_id,
            u.template_versie,
            p.id AS poging_id,
            n.id AS notificatie_id,
            n.dv_id,
            n.trace_id,
            pg_catalog.row_number() OVER (
                PARTITION BY p.id, u.completed_at, u.status ORDER BY u.nr
            ) AS volgnr
        -- (absent template arrays: unnest pads them with NULLs)
        FROM unnest(
            p_references, p_notifynl_ids, p_statussen, p_completed_at, p_sent_at,
            p_template_ids, p_template_versies
        ) WITH ORDINALITY AS u (
            reference, notifynl_id, status, completed_at, sent_at, template_id,
            template_versie, nr
        )
        -- (the CASE keeps a reference that is not a UUID away from the cast)
        LEFT JOIN nmc.poging AS p
            ON p.id = (
                CASE
                    WHEN u.reference ~ '^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$'
                        THEN u.reference
                END
            )::uuid
        LEFT JOIN nmc.notificatie AS n ON n.id = p.notificatie_id
    ),

    opgeslagen AS (
        -- One task per (attempt, completed_at, status): a duplicate within this batch or of
        -- an earlier callback is a no-op.
        INSERT INTO nmc.taak (
            soort, dv_id, notificatie_id, poging_id, due, trace_id, payload,
            receipt_completed_at, aangemaakt_op
        )
        SELECT
            'receipt', o.dv_id, o.notificatie_id, o.poging_id, v_nu, o.trace_id,
            pg_catalog.jsonb_build_object(
                'id', o.notifynl_id, 'status', o.status, 'completed_at', o.completed_at,
                'sent_at', o.sent_at
            )
            -- The template from the receipt, when it came with one (the delivery proof).
            || pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'template_id', o.template_id, 'template_version', o.template_versie
            )),
            o.completed_at, v_nu
        FROM ontvangen AS o
        WHERE o.poging_id IS NOT NULL AND o.volgnr = 1
        ORDER BY o.nr
        ON CONFLICT (poging_id, receipt_completed_at, (payload ->> 'status'))
        WHERE soort = 'receipt'
        DO NOTHING
        RETURNING poging_id, receipt_completed_at, payload ->> 'status' AS status
    )

    SELECT
        pg_catalog.array_agg(
            CASE
                WHEN o.poging_id IS NULL THEN 'onbekende-reference'
                WHEN o.volgnr = 1 AND EXISTS (
                    SELECT 1 FROM opgeslagen AS s
                    WHERE s.poging_id = o.poging_id
                        AND s.receipt_completed_at IS NOT DISTINCT FROM o.completed_at
                        AND s.status = o.status
                ) THEN 'opgeslagen'
                ELSE 'dubbel'
            END
            ORDER BY o.nr
        )
    INTO v_resultaten
    FROM ontvangen AS o;

    IF 'onbekende-reference' = ANY(v_resultaten) THEN
        PERFORM nmc.count_teller(
            'receipt_onbekende_reference',
            pg_catalog.array_length(
                pg_catalog.array_positions(v_resultaten, 'onbekende-reference'), 1
            )::bigint
        );
    END IF;

    RETURN QUERY
    SELECT (r.nr - 1)::integer, r.resultaat
    FROM unnest(v_resultaten) WITH ORDINALITY AS r (resultaat, nr)
    ORDER BY r.nr;
END
$$;
COMMENT ON FUNCTION nmc.store_receipts_v2(
    text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], integer[]
) IS
'Stores 1 to 1000 NotifyNL delivery receipts (parallel arrays, one element per receipt; '
'the template id and version from the receipt for the delivery proof, NULL arrays when '
'absent) as receipt tasks in the caller''s transaction, never the e-mail address. Per item '
'(0-based): opgeslagen, dubbel (the same attempt, completed_at and status was stored '
'before or earlier in this batch: a no-op) or onbekende-reference (matches no attempt: '
'counted, not stored). The API gathers concurrent callbacks into one call and answers '
'each 200 after it commits. NM016: empty, too long or unequal arrays.';

CREATE OR REPLACE FUNCTION nmc.store_receipt(
    p_reference text,
    p_notifynl_id uuid,
    p_status text,
    p_completed_at timestamptz,
    p_sent_at timestamptz
)
RETURNS text
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.resultaat
    FROM nmc.store_receipts_v2(
        ARRAY[p_reference], ARRAY[p_notifynl_id], ARRAY[p_status], ARRAY[p_completed_at],
        ARRAY[p_sent_at], NULL, NULL
    ) AS r
$$;
COMMENT ON FUNCTION nmc.store_receipt(text, uuid, text, timestamptz, timestamptz) IS
'Stores one NotifyNL delivery receipt: nmc.store_receipts_v2 with one item, without a '
'template. Returns '
'opgeslagen, dubbel or onbekende-reference.';
