-- Fair selection of due tasks (SPEC §5): expired leases first, then a share of the batch
-- per DV with due work, then whatever capacity is left. Rows are locked SKIP LOCKED, so
-- concurrent claimers divide the work instead of queueing on it.

CREATE OR REPLACE FUNCTION nmc.lock_due_taken(p_soort nmc.taak_soort, p_batch integer)
RETURNS TABLE (taak_id bigint, rang integer)
LANGUAGE plpgsql
-- A batch, not the default guess of 1000 rows: with that guess the claims joined the
-- result to nmc.taak by hashing a scan of the whole table instead of probing its key.
ROWS 50
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_ids bigint [];
    v_rangen integer [];
    v_dvs integer [];
    v_aandeel integer;
BEGIN
    -- 1. Leases that ran out: the worker died; its work comes first (rank 0).
    SELECT coalesce(pg_catalog.array_agg(t.id), '{}') INTO v_ids
    FROM (
        SELECT t.id FROM nmc.taak AS t
        WHERE t.soort = p_soort AND t.staat = 'claimed'
            AND nmc.taak_claimbaar('claimed', t.due, t.lease_tot, v_nu)
        ORDER BY t.lease_tot
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED
    ) AS t;
    v_rangen := pg_catalog.array_fill(0, ARRAY[pg_catalog.cardinality(v_ids)]);

    IF pg_catalog.cardinality(v_ids) < p_batch THEN
        -- 2. The DVs with due work: a loose index scan over taak_claim, one seek per DV,
        -- so a DV with a large future backlog costs no more than one without.
        WITH RECURSIVE dv AS (
            (
                SELECT t.dv_id FROM nmc.taak AS t
                WHERE t.soort = p_soort AND t.staat = 'open' AND t.dv_id IS NOT NULL
                ORDER BY t.dv_id LIMIT 1
            )
            UNION ALL
            SELECT (
                SELECT t.dv_id FROM nmc.taak AS t
                WHERE t.soort = p_soort AND t.staat = 'open' AND t.dv_id > dv.dv_id
                ORDER BY t.dv_id LIMIT 1
            )
            FROM dv WHERE dv.dv_id IS NOT NULL
        )

        -- At most as many DVs as there is room for, those waiting longest first, so with
        -- more DVs than the batch holds every DV still gets its turn.
        SELECT coalesce(pg_catalog.array_agg(w.dv_id ORDER BY w.oudste, w.dv_id), '{}')
        INTO v_dvs
        FROM (
            SELECT dv.dv_id, o.oudste
            FROM dv,
                LATERAL (
                    SELECT t.due AS oudste FROM nmc.taak AS t
                    WHERE t.soort = p_soort AND t.staat = 'open' AND t.dv_id = dv.dv_id
                        AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                    ORDER BY t.due LIMIT 1
                ) AS o
            WHERE dv.dv_id IS NOT NULL
            ORDER BY o.oudste, dv.dv_id
            LIMIT p_batch - pg_catalog.cardinality(v_ids)
        ) AS w;

        -- 3. An equal share of the remaining batch per DV, oldest due first; the rank
        -- (position within its DV) lets a later cut keep the round robin.
        IF pg_catalog.cardinality(v_dvs) > 0 THEN
            v_aandeel := pg_catalog.ceil(
                (p_batch - pg_catalog.cardinality(v_ids))::numeric / pg_catalog.cardinality(v_dvs)
            );
            SELECT v_ids || coalesce(pg_catalog.array_agg(k.id), '{}'),
                v_rangen || coalesce(pg_catalog.array_agg(k.rang), '{}')
            INTO v_ids, v_rangen
            FROM unnest(v_dvs) AS d (dv_id),
                LATERAL (
                    SELECT
                        t.id,
                        (pg_catalog.row_number() OVER (ORDER BY t.due))::integer AS rang
                    FROM (
                        SELECT t.id, t.due FROM nmc.taak AS t
                        WHERE t.soort = p_soort AND t.staat = 'open' AND t.dv_id = d.dv_id
                            AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                        ORDER BY t.due
                        LIMIT v_aandeel
                        FOR UPDATE SKIP LOCKED
                    ) AS t
                ) AS k;
        END IF;
    END IF;

    -- 4. Capacity left (some DVs had less than their share, or the kind has no DV):
    -- fill from any due task, in index order.
    IF pg_catalog.cardinality(v_ids) < p_batch THEN
        SELECT v_ids || coalesce(pg_catalog.array_agg(t.id), '{}'),
            v_rangen || coalesce(pg_catalog.array_agg(p_batch), '{}')
        INTO v_ids, v_rangen
        FROM (
            SELECT t.id FROM nmc.taak AS t
            WHERE t.soort = p_soort AND t.staat = 'open'
                AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                AND t.id <> ALL(v_ids)
            ORDER BY t.dv_id, t.due
            LIMIT p_batch - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS t;
    END IF;

    -- Shares are rounded up: cut back to the batch, keeping the round robin.
    RETURN QUERY
    SELECT u.id, u.rang FROM unnest(v_ids, v_rangen) AS u (id, rang)
    ORDER BY u.rang, u.id
    LIMIT p_batch;
END
$$;
COMMENT ON FUNCTION nmc.lock_due_taken(nmc.taak_soort, integer) IS
'Returns up to p_batch claimable tasks of one kind, locked FOR UPDATE SKIP LOCKED: expired '
'leases first (rank 0), then an equal share for each DV with due work (at most p_batch '
'DVs, longest waiting first; rank = position within the DV, so cutting by rank keeps the '
'round robin), then any due task to fill the batch. Rows locked beyond the cut stay '
'unclaimed and are released at the claim''s commit.';
