-- The trace context a task's span links to: the intake span of its notificatie (the trace
-- id the tasks carry, and the intake's span id beside it on the notificatie). Read only
-- when tracing is on: the worker asks for the notifications of the tasks it claimed.

CREATE OR REPLACE FUNCTION nmc.intake_sporen(p_notificatie_ids uuid[])
RETURNS TABLE (notificatie_id uuid, trace_id text, span_id text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id, n.trace_id, n.intake_span_id
    FROM nmc.notificatie AS n
    WHERE n.id = ANY(p_notificatie_ids) AND n.intake_span_id IS NOT NULL
$$;
COMMENT ON FUNCTION nmc.intake_sporen(uuid[]) IS
'The W3C trace context of the intake span of each named notificatie that has one (trace id '
'and span id, hex): what the span of a task of that notificatie links to. Notifications '
'accepted before the span id was kept, and unknown ids, give no row. Nothing personal.';
