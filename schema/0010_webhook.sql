-- Webhook delivery settings (SPEC §7).

ALTER TABLE nmc.instellingen
ADD COLUMN webhook_interval interval NOT NULL DEFAULT '2 seconds'
CHECK (webhook_interval > '0 seconds'),
ADD COLUMN webhook_pauze_max interval NOT NULL DEFAULT '1 day'
CHECK (webhook_pauze_max > '0 seconds');
COMMENT ON COLUMN nmc.instellingen.webhook_interval IS
'How soon a DV''s webhook task looks again after it delivered everything there was.';
COMMENT ON COLUMN nmc.instellingen.webhook_pauze_max IS
'The longest pause of a failing webhook (the pause grows up to this).';
