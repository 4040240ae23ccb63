-- The lease extension before a centraal send (SPEC §5), which also records on the attempt
-- the Profielservice contactgegeven the e-mail is about to go to. A send whose commit is
-- lost is recovered by a commit that carries no such id (a re-claim that finds the send by
-- reference, a receipt that takes over the NotifyNL id); a later permanent failure must
-- still be reported invalid at the Profielservice (SPEC §4 notes).

CREATE OR REPLACE FUNCTION nmc.record_contactgegevens(
    p_taak_ids bigint[],
    p_claim_epochs integer[],
    p_contactgegeven_ids uuid[]
)
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
    v_aantal CONSTANT integer := coalesce(pg_catalog.cardinality(p_taak_ids), 0);
    v_taken bigint [];
    v_notificaties uuid [];
    v_contactgegevens uuid [];
BEGIN
    IF coalesce(pg_catalog.cardinality(p_claim_epochs), 0) <> v_aantal
        OR coalesce(pg_catalog.cardinality(p_contactgegeven_ids), 0) <> v_aantal THEN
        RAISE EXCEPTION 'the arrays differ in length' USING ERRCODE = '22023';
    END IF;
    IF v_aantal = 0 THEN
        RETURN;
    END IF;

    -- 1. The send tasks held with exactly this epoch, locked in id order (a task named
    -- twice records the contactgegeven of its first item).
    SELECT
        pg_catalog.array_agg(t.id ORDER BY t.id),
        pg_catalog.array_agg(t.notificatie_id ORDER BY t.id),
        pg_catalog.array_agg(u.contactgegeven_id ORDER BY t.id)
    INTO v_taken, v_notificaties, v_contactgegevens
    FROM (
        SELECT DISTINCT ON (u.id) u.id, u.epoch, u.contactgegeven_id
        FROM unnest(p_taak_ids, p_claim_epochs, p_contactgegeven_ids)
            WITH ORDINALITY AS u (id, epoch, contactgegeven_id, i)
        ORDER BY u.id, u.i
    ) AS u
    INNER JOIN (
        SELECT t.id, t.claim_epoch, t.notificatie_id
        FROM nmc.taak AS t
        WHERE t.id = ANY(p_taak_ids) AND t.soort = 'verzenden' AND t.staat = 'claimed'
        ORDER BY t.id
        FOR UPDATE
    ) AS t ON u.id = t.id AND u.epoch = t.claim_epoch;

    -- 2. The notifications' row locks (id order) order everyone who writes their attempts.
    PERFORM 1 FROM (
        SELECT n.id FROM nmc.notificatie AS n
        WHERE n.id = ANY(v_notificaties)
        ORDER BY n.id
        FOR UPDATE
    ) AS n;

    -- 3. The attempt the task is about to send: its latest, while no NotifyNL id is known
    -- for it (once one is, the contactgegeven of that send is already there).
    UPDATE nmc.poging AS p
    SET contactgegeven_id = coalesce(u.contactgegeven_id, p.contactgegeven_id)
    FROM unnest(v_notificaties, v_contactgegevens) AS u (notificatie_id, contactgegeven_id),
        LATERAL (
            SELECT q.id FROM nmc.poging AS q
            WHERE q.notificatie_id = u.notificatie_id
            ORDER BY q.nummer DESC LIMIT 1
        ) AS laatste
    WHERE p.id = laatste.id AND p.notifynl_id IS NULL;

    -- 4. The lease, as nmc.extend_leases; NULL for an item whose epoch is stale.
    UPDATE nmc.taak AS t SET lease_tot = v_tot WHERE t.id = ANY(v_taken);
    RETURN QUERY
    SELECT
        u.i::integer,
        CASE WHEN t.id IS NOT NULL THEN v_tot END
    FROM unnest(p_taak_ids, p_claim_epochs) WITH ORDINALITY AS u (id, epoch, i)
    LEFT JOIN nmc.taak AS t ON u.id = t.id AND t.id = ANY(v_taken) AND u.epoch = t.claim_epoch
    ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION nmc.record_contactgegevens(bigint[], integer[], uuid[]) IS
'The lease extension before the NotifyNL call of centraal sends (the worker''s group '
'commit): item i extends send task p_taak_ids[i] held with epoch p_claim_epochs[i] like '
'nmc.extend_leases and records p_contactgegeven_ids[i], the Profielservice contactgegeven '
'the e-mail goes to, on the task''s latest attempt while that has no NotifyNL id. So a '
'commit that recovers a send whose own commit was lost (a re-claim that finds it by '
'reference, a receipt that takes over the NotifyNL id) still knows what to report invalid. '
'Returns per item (1-based) the new lease end, NULL when that epoch is stale (nothing is '
'recorded for it). 22023 when the arrays differ in length. Locks tasks, then '
'notifications, then attempts, each in id order (as nmc.finish_verzenden_batch).';
