-- Receipt tasks need no external call: a worker processes a batch in one transaction.

CREATE OR REPLACE FUNCTION nmc.process_receipts_v2(p_batch integer DEFAULT 100)
RETURNS TABLE (notificatie_id uuid)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_taak nmc.taak;
    v_fout text;
BEGIN
    FOR v_taak IN
        SELECT t.* FROM nmc.taak AS t
        INNER JOIN nmc.lock_due_taken('receipt', greatest(p_batch, 1)) AS l ON l.taak_id = t.id
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
'Processes up to p_batch due receipt tasks (fairly across DVs, oldest completed_at first) '
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
