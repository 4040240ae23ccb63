-- The delivery proof stays as it was once final: what it names is
-- written down when it happens, not read live at every request. Re-onboarding a DV with
-- another name, or its berichttype with another NotifyNL template, must not rewrite the
-- proof of a notification accepted or sent before. A forced transition is named in the
-- proof with the event it wrote.
--
-- Nullable columns without a default: instant on a large table, and the previous release's
-- functions (which do not set them) keep working. Rows from before this file have NULL and
-- the proof falls back to the live value for them, as before.

ALTER TABLE nmc.notificatie
ADD COLUMN dv_naam text,
ADD COLUMN notifynl_template_id uuid;
COMMENT ON COLUMN nmc.notificatie.dv_naam IS
'The DV''s name at intake, as the delivery proof names the DV (NULL: accepted before it was '
'recorded; the proof then reads the current name).';
COMMENT ON COLUMN nmc.notificatie.notifynl_template_id IS
'The berichttype''s NotifyNL template at intake: the one the delivery proof names while no '
'attempt was sent (NULL: accepted before it was recorded).';

ALTER TABLE nmc.poging ADD COLUMN notifynl_template_id uuid;
COMMENT ON COLUMN nmc.poging.notifynl_template_id IS
'The NotifyNL template this attempt was claimed (and sent) with: the one the delivery proof '
'names (NULL: claimed before it was recorded).';

ALTER TABLE nmc.beheeractie ADD COLUMN sequence integer CHECK (sequence >= 1);
COMMENT ON COLUMN nmc.beheeractie.sequence IS
'For a forced transition: the sequence of the event it wrote, so the delivery proof ties '
'the action to its event (NULL for other actions and those recorded before this column).';
