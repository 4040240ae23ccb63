-- Reporting an address invalid at the Profielservice (SPEC §4 notes): the only task
-- besides the send that decrypts the identifying number.

CREATE OR REPLACE FUNCTION nmc.claim_ongeldig_melden(p_eigenaar text, p_batch integer DEFAULT 20)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, notificatie_id uuid, poging_id uuid, dv_id integer,
    contactgegeven_id uuid, gemeld_op timestamptz, ontvanger_versleuteld bytea,
    sleutel_gewrapt bytea, kek_id text, trace_id text
)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH geclaimd AS (
        SELECT c.taak_id, c.claim_epoch, c.notificatie_id, c.poging_id, c.dv_id, c.trace_id
        FROM nmc.claim_taken('ongeldig-melden', p_eigenaar, p_batch) AS c
    )

    SELECT
        g.taak_id, g.claim_epoch, g.notificatie_id, g.poging_id, g.dv_id,
        p.contactgegeven_id,
        -- When the address failed: the attempt's own outcome, or a bounce recorded beside
        -- a delivered attempt it could no longer undo (past the settlement term).
        coalesce(
            CASE WHEN p.status = 'permanent-mislukt' THEN p.afgerond_op END,
            CASE
                WHEN p.vastgelegde_receipt_status = 'permanent-failure'
                    THEN p.vastgelegde_receipt_op
            END,
            p.afgerond_op,
            nmc.now()
        ),
        n.ontvanger_versleuteld, n.sleutel_gewrapt, n.kek_id, g.trace_id
    FROM geclaimd AS g
    INNER JOIN nmc.notificatie AS n ON n.id = g.notificatie_id
    LEFT JOIN nmc.poging AS p ON p.id = g.poging_id
$$;
COMMENT ON FUNCTION nmc.claim_ongeldig_melden(text, integer) IS
'Claims up to p_batch ongeldig-melden tasks (as nmc.claim_taken) and returns what the '
'report needs: the encrypted identifying number with its wrapped key, the id of the '
'Profielservice contactgegeven the failed attempt used, and gemeld_op, when the address '
'failed (the permanent failure''s completed_at, also of one only recorded beside a '
'delivered attempt). sleutel_gewrapt NULL means the '
'data was erased: nothing left to report (finish the task).';

CREATE OR REPLACE FUNCTION nmc.count_malformed_receipt()
RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.count_teller('receipt_ongeldig')
$$;
COMMENT ON FUNCTION nmc.count_malformed_receipt() IS
'Counts a NotifyNL callback the API refused as malformed (400); nothing is stored.';
