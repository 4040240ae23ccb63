-- The claim of tasks of any kind but verzenden (which has its own: budget and transition).

CREATE OR REPLACE FUNCTION nmc.claim_taken(
    p_soort nmc.taak_soort,
    p_eigenaar text,
    p_batch integer DEFAULT 20
)
RETURNS TABLE (
    taak_id bigint, claim_epoch integer, dv_id integer, notificatie_id uuid, poging_id uuid,
    payload jsonb, trace_id text, pogingen integer, herclaim boolean
)
LANGUAGE plpgsql
-- A batch is p_batch tasks at most (20 by default): without this the planner takes a set
-- function for 1000 rows, and a caller's join with the tasks' notifications and attempts
-- (nmc.claim_ongeldig_melden) became a hash join over a scan of both whole tables, whose
-- cost grew with the rows kept (a year's term) instead of an index probe per task.
ROWS 20
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF p_soort = 'verzenden' THEN
        RAISE EXCEPTION 'verzenden tasks are claimed with nmc.claim_verzenden'
            USING ERRCODE = 'NM017';
    END IF;
    RETURN QUERY
    UPDATE nmc.taak AS t
    SET staat = 'claimed',
        lease_eigenaar = p_eigenaar,
        lease_tot = nmc.now() + (SELECT i.lease_duur FROM nmc.instellingen AS i),
        claim_epoch = t.claim_epoch + 1
    FROM nmc.lock_due_taken(p_soort, greatest(p_batch, 1)) AS l
    WHERE t.id = l.taak_id
    RETURNING t.id, t.claim_epoch, t.dv_id, t.notificatie_id, t.poging_id, t.payload,
        t.trace_id, t.pogingen, t.claim_epoch > 1;
END
$$;
COMMENT ON FUNCTION nmc.claim_taken(nmc.taak_soort, text, integer) IS
'Claims up to p_batch due tasks of one kind (not verzenden) fairly across DVs: sets the '
'lease owner and lease end (settings.lease_duur) and raises each claim epoch. Its own '
'transaction: commit before the work. herclaim is true when the task was claimed before '
'(an expired lease or a deferral).';

CREATE OR REPLACE FUNCTION nmc.lock_claimed_taak(p_taak_id bigint, p_claim_epoch integer)
RETURNS nmc.taak
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak nmc.taak;
BEGIN
    SELECT * INTO v_taak FROM nmc.taak AS t WHERE t.id = p_taak_id FOR UPDATE;
    IF NOT FOUND OR v_taak.staat <> 'claimed' OR v_taak.claim_epoch <> p_claim_epoch THEN
        RAISE EXCEPTION 'stale claim: task % is no longer held with epoch %',
            p_taak_id, p_claim_epoch
            USING ERRCODE = 'NM011';
    END IF;
    RETURN v_taak;
END
$$;
COMMENT ON FUNCTION nmc.lock_claimed_taak(bigint, integer) IS
'Fencing: locks the task and returns it only while it is claimed with exactly this epoch; '
'otherwise NM011 (another claim took it over after the lease ran out, or it was closed). '
'Every commit after external work starts here.';

CREATE OR REPLACE FUNCTION nmc.extend_lease(p_taak_id bigint, p_claim_epoch integer)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tot timestamptz;
BEGIN
    PERFORM nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    UPDATE nmc.taak AS t
    SET lease_tot = nmc.now() + (SELECT i.lease_duur FROM nmc.instellingen AS i)
    WHERE t.id = p_taak_id
    RETURNING t.lease_tot INTO v_tot;
    RETURN v_tot;
END
$$;
COMMENT ON FUNCTION nmc.extend_lease(bigint, integer) IS
'Extends one task''s lease by settings.lease_duur from now, before an external call. '
'NM011 when the epoch is stale. Returns the new lease end.';

CREATE OR REPLACE FUNCTION nmc.extend_leases(p_taak_ids bigint[], p_claim_epochs integer[])
RETURNS TABLE (item integer, lease_tot timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_tot CONSTANT timestamptz := nmc.now() + (SELECT i.lease_duur FROM nmc.instellingen AS i);
BEGIN
    IF coalesce(pg_catalog.cardinality(p_taak_ids), 0)
        <> coalesce(pg_catalog.cardinality(p_claim_epochs), 0) THEN
        RAISE EXCEPTION 'p_taak_ids and p_claim_epochs differ in length' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    WITH verlengd AS (
        UPDATE nmc.taak AS t
        SET lease_tot = v_tot
        FROM unnest(p_taak_ids, p_claim_epochs) AS u (id, epoch)
        WHERE t.id = u.id AND t.staat = 'claimed' AND t.claim_epoch = u.epoch
        RETURNING t.id, t.claim_epoch
    )

    SELECT u.i::integer, CASE WHEN v.id IS NOT NULL THEN v_tot END
    FROM unnest(p_taak_ids, p_claim_epochs) WITH ORDINALITY AS u (id, epoch, i)
    LEFT JOIN verlengd AS v ON u.id = v.id AND u.epoch = v.claim_epoch
    ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION nmc.extend_leases(bigint[], integer[]) IS
'nmc.extend_lease for many tasks in one statement (calls that start together): item i '
'extends task p_taak_ids[i] held with epoch p_claim_epochs[i] by settings.lease_duur from '
'now. Returns per item (1-based) the new lease end, or NULL when that epoch is stale (the '
'task was taken over or closed; the others are extended all the same). 22023 when the '
'arrays differ in length.';

CREATE OR REPLACE FUNCTION nmc.finish_taak(p_taak_id bigint, p_claim_epoch integer)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    PERFORM nmc.close_taak(p_taak_id);
END
$$;
COMMENT ON FUNCTION nmc.finish_taak(bigint, integer) IS
'Marks a claimed task done. NM011 when the epoch is stale.';

CREATE OR REPLACE FUNCTION nmc.finish_taken(p_taak_ids bigint[], p_claim_epochs integer[])
RETURNS bigint[]
-- PL/pgSQL, not SQL: its plan is kept for the session (a SQL function with a SET clause
-- is never inlined, and PostgreSQL 15 plans its query again at every call).
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_uitkomst bigint[];
BEGIN
    WITH klaar AS (
        UPDATE nmc.taak AS t
        SET staat = 'done', afgerond_op = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
        FROM unnest(p_taak_ids, p_claim_epochs) AS u (id, epoch)
        WHERE t.id = u.id AND t.staat = 'claimed' AND t.claim_epoch = u.epoch
        RETURNING t.id
    )

    SELECT coalesce(pg_catalog.array_agg(k.id ORDER BY k.id), '{}')
    INTO v_uitkomst FROM klaar AS k;
    RETURN v_uitkomst;
END
$$;
COMMENT ON FUNCTION nmc.finish_taken(bigint[], integer[]) IS
'Marks many claimed tasks done in one statement; a task whose epoch is stale is left '
'alone. Returns the ids actually finished, so the caller sees which were fenced off.';

CREATE OR REPLACE FUNCTION nmc.close_taken(p_taak_ids bigint[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Once per call: nmc.now() in the SET list was a function call per row.
    v_nu timestamptz;
BEGIN
    IF coalesce(pg_catalog.cardinality(p_taak_ids), 0) > 0 THEN
        v_nu := nmc.now();
        UPDATE nmc.taak AS t
        SET staat = 'done', afgerond_op = v_nu, lease_eigenaar = NULL, lease_tot = NULL
        WHERE t.id = ANY(p_taak_ids);
    END IF;
END
$$;
COMMENT ON FUNCTION nmc.close_taken(bigint[]) IS
'Internal: marks tasks done and drops their leases in one statement (callers have checked '
'the epochs). PL/pgSQL, so its plan is cached per session.';

CREATE OR REPLACE FUNCTION nmc.close_taak(p_taak_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE nmc.taak AS t
    SET staat = 'done', afgerond_op = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
    WHERE t.id = p_taak_id;
END
$$;
COMMENT ON FUNCTION nmc.close_taak(bigint) IS
'Internal: marks a task done and drops its lease (callers have checked the epoch); the '
'one-task form of nmc.close_taken. PL/pgSQL, so its plan is cached per session (as a SQL '
'function it was planned again on every call).';
