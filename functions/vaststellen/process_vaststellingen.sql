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
    v_taak record;
BEGIN
    FOR v_taak IN
        SELECT t.id, t.notificatie_id, t.poging_id, t.due FROM nmc.taak AS t
        INNER JOIN nmc.lock_due_taken('vaststellen', greatest(p_batch, 1)) AS l ON l.taak_id = t.id
        ORDER BY t.id
    LOOP
        -- Asks NotifyNL nothing: its retention need not cover the settlement term.
        -- And only on evidence: the attempt it names delivered, with NotifyNL's
        -- completed_at. Without one (a bezorgd an earlier release let an operator force) it
        -- stays bezorgd for an operator; the watchdog plans the next term.
        IF (SELECT n.status FROM nmc.notificatie AS n WHERE n.id = v_taak.notificatie_id
            FOR UPDATE) = 'bezorgd' AND EXISTS (
            SELECT 1 FROM nmc.poging AS p
            WHERE p.id = v_taak.poging_id AND p.notificatie_id = v_taak.notificatie_id
                AND p.status = 'bezorgd' AND p.afgerond_op IS NOT NULL
        ) THEN
            PERFORM nmc.transition_notificatie(v_taak.notificatie_id, 'definitief-bezorgd');
            -- The delivery proof's settlement: the task goes after a short term, this stays.
            INSERT INTO nmc.vaststelling (
                notificatie_id, poging_id, completed_at, termijn, callback_venster, gepland_op,
                vastgesteld_op
            )
            SELECT
                v_taak.notificatie_id, p.id, p.afgerond_op, i.vaststellingstermijn,
                i.callback_venster, v_taak.due, nmc.now()
            FROM nmc.poging AS p, nmc.instellingen AS i
            WHERE p.id = v_taak.poging_id AND p.afgerond_op IS NOT NULL
            ON CONFLICT (notificatie_id) DO NOTHING;
            notificatie_id := v_taak.notificatie_id;
            RETURN NEXT;
        END IF;
        PERFORM nmc.close_taak(v_taak.id);
    END LOOP;
END
$$;
COMMENT ON FUNCTION nmc.process_vaststellingen_v2(integer) IS
'Settles up to p_batch due vaststellen tasks: a notification still bezorgd whose task names '
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
