-- The operator console (`nmc console`): a resumed webhook is an operator action too, audited
-- in nmc.beheeractie with the DV it concerns.

ALTER TABLE nmc.beheeractie DROP CONSTRAINT beheeractie_soort_check;
ALTER TABLE nmc.beheeractie ADD CONSTRAINT beheeractie_soort_check
CHECK (soort IN ('forceer-overgang', 'heropen-taak', 'hervat-webhook'));
ALTER TABLE nmc.beheeractie ADD COLUMN dv_id integer;
COMMENT ON COLUMN nmc.beheeractie.dv_id IS
'The DV the action concerns where it is not a notification''s (a resumed webhook).';
COMMENT ON TABLE nmc.beheeractie IS
'Audit trail of what operators did by hand (the admin CLI and the console): forced '
'transitions (which also wrote their event through the single writer), reopened tasks and '
'resumed webhooks, with who and why. The explanation must not hold personal data (the CLI '
'and the console say so). Retention: the delivery-proof retention (1 year), like the '
'events it explains.';
