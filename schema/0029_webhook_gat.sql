-- A webhook whose delivery position points into a dropped event partition (the feed answers
-- 410 for that position) pauses for that reason of its own until the DV sets its position
-- (PUT /webhook/positie); the daily beheer report tells of it. The report's share of
-- geen-contactgegevens is taken over a recent window, not the whole kept year.

ALTER TABLE nmc.webhookpositie ADD COLUMN gat_op timestamptz;
COMMENT ON COLUMN nmc.webhookpositie.gat_op IS
'When a gap was found: events after the delivery position were in an event partition that '
'was dropped (the feed answers 410 for this position). The webhook delivers nothing until '
'the DV sets its position (nmc.set_webhook_positie); NULL: no gap.';

ALTER TABLE nmc.beheerrapport ADD COLUMN webhook_gat boolean NOT NULL DEFAULT FALSE;
COMMENT ON COLUMN nmc.beheerrapport.webhook_gat IS
'Whether the report told that the DV''s webhook is paused for a gap (webhookpositie.gat_op).';

ALTER TABLE nmc.instellingen
ADD COLUMN beheerrapport_venster interval NOT NULL DEFAULT '7 days'
CHECK (beheerrapport_venster BETWEEN '1 day' AND '366 days');
COMMENT ON COLUMN nmc.instellingen.beheerrapport_venster IS
'The recent window over which the beheer report takes a DV''s share of '
'geen-contactgegevens (notifications that became terminal within it): a new spike shows, '
'an old one passes.';
