-- The intake's span beside its trace id: the W3C trace context of the request that accepted
-- the notification (the DV's `traceparent`, or a new one) is its trace id (trace_id, which
-- every task copies) and the span id of the NMC's intake span. A task's span, hours or days
-- later, links to that span (nmc.intake_sporen). NULL for notifications accepted before.
ALTER TABLE nmc.notificatie ADD COLUMN intake_span_id text
CONSTRAINT notificatie_intake_span_id_check CHECK (
    pg_catalog.octet_length(intake_span_id) = 16
    AND pg_catalog.ltrim(intake_span_id, '0123456789abcdef') = ''
    AND intake_span_id <> '0000000000000000'
);
COMMENT ON COLUMN nmc.notificatie.intake_span_id IS
'The span id (16 lower-case hex digits, W3C trace context) of the intake span, in the trace '
'trace_id names; the tasks of the notification link their spans to it. NULL when the '
'notification was accepted before it was kept.';
