-- Settlement (SPEC §4): bezorgd becomes definitief-bezorgd after the MEBV term.

CREATE OR REPLACE FUNCTION nmc.process_vaststellingen_v2(p_batch integer DEFAULT 100)
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
    v_notificaties uuid [];
    v_pogingen uuid [];
    v_due timestamptz [];
    v_vast uuid [];
BEGIN
    SELECT
        coalesce(pg_catalog.array_agg(t.id ORDER BY t.id), '{}'),
        coalesce(pg_catalog.array_agg(t.notificatie_id ORDER BY t.id), '{}'),
        coalesce(pg_catalog.array_agg(t.poging_id ORDER BY t.id), '{}'),
        coalesce(pg_catalog.array_agg(t.due ORDER BY t.id), '{}')
    INTO v_taken, v_notificaties, v_pogingen, v_due
    FROM nmc.taak AS t
    INNER JOIN nmc.lock_due_taken('vaststellen', greatest(p_batch, 1)) AS l ON l.taak_id = t.id;
    IF pg_catalog.cardinality(v_taken) = 0 THEN
        RETURN;
    END IF;

    -- The batch as one set: the notifications locked together (id order, as every writer
    -- of a set locks them), then settled in one call of the single writer.
    -- Asks NotifyNL nothing: its retention need not cover the settlement term. And only on
    -- evidence: the attempt the task names delivered, with NotifyNL's completed_at. Without
    -- one (a bezorgd an earlier release let an operator force) it stays bezorgd for an
    -- operator; the watchdog plans the next term.
    SELECT coalesce(pg_catalog.array_agg(k.notificatie_id ORDER BY k.notificatie_id), '{}')
    INTO v_vast
    FROM (
        SELECT DISTINCT u.notificatie_id
        FROM unnest(v_notificaties, v_pogingen) AS u (notificatie_id, poging_id)
        INNER JOIN (
            SELECT n.id, n.status FROM nmc.notificatie AS n
            WHERE n.id = ANY(v_notificaties)
            ORDER BY n.id
            FOR UPDATE
        ) AS n ON u.notificatie_id = n.id
        WHERE n.status = 'bezorgd' AND EXISTS (
            SELECT 1 FROM nmc.poging AS p
            WHERE p.id = u.poging_id AND p.notificatie_id = u.notificatie_id
                AND p.status = 'bezorgd' AND p.afgerond_op IS NOT NULL
        )
    ) AS k;

    PERFORM 1 FROM nmc.transition_notificaties(
        v_vast,
        pg_catalog.array_fill(
            'definitief-bezorgd'::nmc.notificatie_status, ARRAY[pg_catalog.cardinality(v_vast)]
        )
    );
    INSERT INTO nmc.vaststelling (
        notificatie_id, poging_id, completed_at, termijn, callback_venster, gepland_op,
        vastgesteld_op
    )
    SELECT
        u.notificatie_id, p.id, p.afgerond_op, i.vaststellingstermijn, i.callback_venster,
        u.due, nmc.now()
    FROM unnest(v_notificaties, v_pogingen, v_due) AS u (notificatie_id, poging_id, due)
    INNER JOIN nmc.poging AS p ON p.id = u.poging_id
    CROSS JOIN nmc.instellingen AS i
    WHERE u.notificatie_id = ANY(v_vast) AND p.afgerond_op IS NOT NULL
    ON CONFLICT (notificatie_id) DO NOTHING;

    -- Settled or not, the task is done (any other status, or no such attempt).
    PERFORM nmc.close_taken(v_taken);
    RETURN QUERY SELECT u.id FROM unnest(v_vast) AS u (id);
END
$$;
COMMENT ON FUNCTION nmc.process_vaststellingen_v2(integer) IS
'Settles up to p_batch due vaststellen tasks as one set (the notifications locked in id '
'order, one call of nmc.transition_notificaties): a notification still bezorgd whose task names '
'a delivered attempt with its completed_at becomes definitief-bezorgd, and the settlement '
'is recorded for the delivery proof (nmc.vaststelling: the attempt, its completed_at, the '
'term, the due time, the settling time); any other status, or no such attempt, just closes '
'the task. Returns one row per settled notificatie (whose intake span the worker''s span '
'links to).';

CREATE OR REPLACE FUNCTION nmc.process_vaststellingen(p_batch integer DEFAULT 100)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.count(*)::integer FROM nmc.process_vaststellingen_v2(p_batch)
$$;
COMMENT ON FUNCTION nmc.process_vaststellingen(integer) IS
'The settlement of the release before the intake span (superseded by '
'nmc.process_vaststellingen_v2; kept for a rolling deploy, to be dropped in a later '
'release): how many notificaties nmc.process_vaststellingen_v2 settled.';
