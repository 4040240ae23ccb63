-- Fair selection of due send tasks (SPEC §5): as nmc.lock_due_taken, but only tasks that
-- can get a token. A NotifyNL service whose day is used up, and a DV that has used its fair
-- share of a service's day, get none until the day turns (or the share grows): their tasks
-- wait where they are, and are not selected, so a closed service's backlog cannot fill a
-- round's batch and starve the open services. The tasks carry their notification's
-- berichttype (nmc.taak.berichttype), so the selection seeks per DV and open berichttype
-- in nmc.taak_verzenden_open and never walks a closed backlog.

CREATE OR REPLACE FUNCTION nmc.verzenden_dicht(p_dv_ids integer[])
RETURNS TABLE (dv_id integer, berichttype text)
-- PL/pgSQL, so the statement's plan is kept per session: a claim calls it every round.
LANGUAGE plpgsql
STABLE
ROWS 10
SET search_path = pg_catalog, pg_temp
-- The functions it joins are estimated at 1000 rows each: without this, that estimate
-- alone made PostgreSQL JIT-compile the statement (seconds) on every claim.
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    -- The services of these DVs' berichttypen, each judged once: the day used (or said
    -- used by NotifyNL), else the heavy consumers without headroom in its fair share.
    WITH service AS (
        SELECT DISTINCT b.notify_service AS code
        FROM nmc.berichttype AS b WHERE b.dv_id = ANY(p_dv_ids)
    ),

    stand AS (
        -- No pace row yet: nothing sent, the day is open.
        SELECT s.code, v.notify_service IS NOT NULL AND nmc.verzendtempo_dag_rest(
            v, ((SELECT nmc.now()) AT TIME ZONE 'UTC')::date, i.dag_limiet, 1
        ) = 0 AS dag_op
        FROM service AS s
        CROSS JOIN LATERAL nmc.verzendtempo_instelling(s.code) AS i
        LEFT JOIN nmc.verzendtempo AS v ON v.notify_service = s.code AND v.soort = 'verzenden'
    ),

    gesloten AS (
        SELECT st.code, st.dag_op, r.zware_dvs, r.ruimte
        FROM stand AS st
        LEFT JOIN LATERAL nmc.verzendaandeel_ruimte(st.code) AS r ON NOT st.dag_op
    )

    SELECT b.dv_id, b.code
    FROM nmc.berichttype AS b
    INNER JOIN gesloten AS g ON b.notify_service = g.code
    WHERE b.dv_id = ANY(p_dv_ids)
        AND (g.dag_op OR (g.ruimte <= 0 AND b.dv_id = ANY(g.zware_dvs)));
END
$$;
COMMENT ON FUNCTION nmc.verzenden_dicht(integer[]) IS
'The (DV, berichttype) pairs of these DVs whose sends get no token now: their NotifyNL '
'service''s UTC day is used up, or the DV is a heavy consumer of the service without '
'headroom in its fair share (nmc.verzendaandeel_ruimte). Internal to '
'nmc.lock_due_verzenden.';

CREATE OR REPLACE FUNCTION nmc.lock_due_verzenden(p_batch integer)
RETURNS TABLE (taak_id bigint, rang integer)
LANGUAGE plpgsql
-- A batch, not the default guess of 1000 rows (see nmc.lock_due_taken).
ROWS 50
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_ids bigint [];
    v_rangen integer [];
    v_alle_dvs integer [];
    v_dicht_dv integer [];
    v_dicht_code text [];
    v_paar_dv integer [];
    v_paar_code text [];
    v_dvs integer [];
    v_aandeel integer;
BEGIN
    -- The DVs with open send tasks: a loose index scan over taak_claim, one seek per DV.
    WITH RECURSIVE dv AS (
        (
            SELECT t.dv_id FROM nmc.taak AS t
            WHERE t.soort = 'verzenden' AND t.staat = 'open' AND t.dv_id IS NOT NULL
            ORDER BY t.dv_id LIMIT 1
        )
        UNION ALL
        SELECT (
            SELECT t.dv_id FROM nmc.taak AS t
            WHERE t.soort = 'verzenden' AND t.staat = 'open' AND t.dv_id > dv.dv_id
            ORDER BY t.dv_id LIMIT 1
        )
        FROM dv WHERE dv.dv_id IS NOT NULL
    )

    SELECT coalesce(pg_catalog.array_agg(dv.dv_id), '{}') INTO v_alle_dvs
    FROM dv WHERE dv.dv_id IS NOT NULL;

    -- The closed pairs of those DVs and of any DV with a lease that ran out.
    SELECT coalesce(pg_catalog.array_agg(d.dv_id), '{}'),
        coalesce(pg_catalog.array_agg(d.berichttype), '{}')
    INTO v_dicht_dv, v_dicht_code
    FROM nmc.verzenden_dicht(v_alle_dvs || ARRAY(
        SELECT DISTINCT t.dv_id FROM nmc.taak AS t
        WHERE t.soort = 'verzenden' AND t.staat = 'claimed'
            AND nmc.taak_claimbaar('claimed', t.due, t.lease_tot, v_nu)
    )) AS d;

    -- 1. Leases that ran out: the worker died; its work comes first (rank 0), unless its
    -- pair is closed.
    SELECT coalesce(pg_catalog.array_agg(t.id), '{}') INTO v_ids
    FROM (
        SELECT t.id FROM nmc.taak AS t
        WHERE t.soort = 'verzenden' AND t.staat = 'claimed'
            AND nmc.taak_claimbaar('claimed', t.due, t.lease_tot, v_nu)
            AND NOT EXISTS (
                SELECT 1 FROM unnest(v_dicht_dv, v_dicht_code) AS d (dv_id, code)
                WHERE d.dv_id = t.dv_id AND d.code = t.berichttype
            )
        ORDER BY t.lease_tot
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED
    ) AS t;
    v_rangen := pg_catalog.array_fill(0, ARRAY[pg_catalog.cardinality(v_ids)]);
    IF pg_catalog.cardinality(v_ids) >= p_batch THEN
        RETURN QUERY SELECT u.id, u.rang FROM unnest(v_ids, v_rangen) AS u (id, rang)
        LIMIT p_batch;
        RETURN;
    END IF;

    -- The open pairs: every berichttype of a DV with open tasks that is not closed, and
    -- per DV the pair without a berichttype (a task written so: never skipped).
    SELECT coalesce(pg_catalog.array_agg(p.dv_id ORDER BY p.dv_id, p.code), '{}'),
        coalesce(pg_catalog.array_agg(p.code ORDER BY p.dv_id, p.code), '{}')
    INTO v_paar_dv, v_paar_code
    FROM (
        SELECT b.dv_id, b.code FROM nmc.berichttype AS b
        WHERE b.dv_id = ANY(v_alle_dvs)
            AND NOT EXISTS (
                SELECT 1 FROM unnest(v_dicht_dv, v_dicht_code) AS d (dv_id, code)
                WHERE d.dv_id = b.dv_id AND d.code = b.code
            )
        UNION ALL
        SELECT a.dv_id, NULL FROM unnest(v_alle_dvs) AS a (dv_id)
    ) AS p;

    -- 2. At most as many DVs as there is room for, those waiting longest on an open pair
    -- first: the oldest due task of each pair is one seek in taak_verzenden_open.
    SELECT coalesce(pg_catalog.array_agg(w.dv_id ORDER BY w.oudste, w.dv_id), '{}')
    INTO v_dvs
    FROM (
        SELECT o.dv_id, pg_catalog.min(o.due) AS oudste
        FROM (
            SELECT p.dv_id, x.due
            FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                LATERAL (
                    SELECT t.due FROM nmc.taak AS t
                    WHERE p.code IS NOT NULL AND t.soort = 'verzenden' AND t.staat = 'open'
                        AND t.dv_id = p.dv_id AND t.berichttype = p.code
                        AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                    ORDER BY t.due LIMIT 1
                ) AS x
            UNION ALL
            SELECT p.dv_id, x.due
            FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                LATERAL (
                    SELECT t.due FROM nmc.taak AS t
                    WHERE p.code IS NULL AND t.soort = 'verzenden' AND t.staat = 'open'
                        AND t.dv_id = p.dv_id AND t.berichttype IS NULL
                        AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                    ORDER BY t.due LIMIT 1
                ) AS x
        ) AS o
        GROUP BY o.dv_id
        ORDER BY oudste, o.dv_id
        LIMIT p_batch - pg_catalog.cardinality(v_ids)
    ) AS w;

    -- 3. An equal share of the remaining batch per DV, oldest due first over its open
    -- pairs; each pair locks at most the share (SKIP LOCKED), the DV keeps its oldest.
    IF pg_catalog.cardinality(v_dvs) > 0 THEN
        v_aandeel := pg_catalog.ceil(
            (p_batch - pg_catalog.cardinality(v_ids))::numeric / pg_catalog.cardinality(v_dvs)
        );
        SELECT v_ids || coalesce(pg_catalog.array_agg(k.id), '{}'),
            v_rangen || coalesce(pg_catalog.array_agg(k.rang), '{}')
        INTO v_ids, v_rangen
        FROM (
            SELECT g.id, g.rang FROM (
                SELECT c.id, (pg_catalog.row_number() OVER (
                    PARTITION BY c.dv_id ORDER BY c.due, c.id
                ))::integer AS rang
                FROM (
                    SELECT p.dv_id, t.id, t.due
                    FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                        LATERAL (
                            SELECT t.id, t.due FROM nmc.taak AS t
                            WHERE p.code IS NOT NULL AND t.soort = 'verzenden'
                                AND t.staat = 'open' AND t.dv_id = p.dv_id
                                AND t.berichttype = p.code
                                AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                            ORDER BY t.due
                            LIMIT v_aandeel
                            FOR UPDATE SKIP LOCKED
                        ) AS t
                    WHERE p.dv_id = ANY(v_dvs)
                    UNION ALL
                    SELECT p.dv_id, t.id, t.due
                    FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                        LATERAL (
                            SELECT t.id, t.due FROM nmc.taak AS t
                            WHERE p.code IS NULL AND t.soort = 'verzenden'
                                AND t.staat = 'open' AND t.dv_id = p.dv_id
                                AND t.berichttype IS NULL
                                AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                            ORDER BY t.due
                            LIMIT v_aandeel
                            FOR UPDATE SKIP LOCKED
                        ) AS t
                    WHERE p.dv_id = ANY(v_dvs)
                ) AS c
            ) AS g
            WHERE g.rang <= v_aandeel
        ) AS k;
    END IF;

    -- 4. Capacity left (some DVs had less than their share): fill from the open pairs,
    -- in (DV, berichttype) order, each pair's oldest first; never from a closed one.
    IF pg_catalog.cardinality(v_ids) < p_batch THEN
        SELECT v_ids || coalesce(pg_catalog.array_agg(f.id), '{}'),
            v_rangen || coalesce(pg_catalog.array_agg(p_batch), '{}')
        INTO v_ids, v_rangen
        FROM (
            SELECT x.id
            FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                LATERAL (
                    SELECT t.id FROM nmc.taak AS t
                    WHERE p.code IS NOT NULL AND t.soort = 'verzenden' AND t.staat = 'open'
                        AND t.dv_id = p.dv_id AND t.berichttype = p.code
                        AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                        AND t.id <> ALL(v_ids)
                    ORDER BY t.due
                    LIMIT p_batch - pg_catalog.cardinality(v_ids)
                    FOR UPDATE SKIP LOCKED
                ) AS x
            UNION ALL
            SELECT x.id
            FROM unnest(v_paar_dv, v_paar_code) AS p (dv_id, code),
                LATERAL (
                    SELECT t.id FROM nmc.taak AS t
                    WHERE p.code IS NULL AND t.soort = 'verzenden' AND t.staat = 'open'
                        AND t.dv_id = p.dv_id AND t.berichttype IS NULL
                        AND nmc.taak_claimbaar('open', t.due, t.lease_tot, v_nu)
                        AND t.id <> ALL(v_ids)
                    ORDER BY t.due
                    LIMIT p_batch - pg_catalog.cardinality(v_ids)
                    FOR UPDATE SKIP LOCKED
                ) AS x
            LIMIT p_batch - pg_catalog.cardinality(v_ids)
        ) AS f;
    END IF;

    -- Shares are rounded up: cut back to the batch, keeping the round robin.
    RETURN QUERY
    SELECT u.id, u.rang FROM unnest(v_ids, v_rangen) AS u (id, rang)
    ORDER BY u.rang, u.id
    LIMIT p_batch;
END
$$;
COMMENT ON FUNCTION nmc.lock_due_verzenden(integer) IS
'Returns up to p_batch claimable send tasks, locked FOR UPDATE SKIP LOCKED: expired leases '
'first (rank 0), then an equal share for each DV with due work that can get a token (at '
'most p_batch DVs, longest waiting first; rank = position within the DV). Skips the tasks '
'of a (DV, berichttype) whose NotifyNL service''s day is used up or whose DV has used its '
'fair share of it (nmc.verzenden_dicht): they wait, unclaimed and not deferred. Rows '
'locked beyond the cut are released at the claim''s commit; capacity left is filled from '
'the open pairs.';
