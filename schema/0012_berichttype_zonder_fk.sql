-- Batch intake: the foreign key notificatie (dv_id, berichttype) -> berichttype cost one
-- SPI probe per inserted row (~15% of a 1000-item intake). The intake function already
-- joins every item to an active berichttype of the DV before inserting, and a berichttype
-- is never deleted or renamed (triggers/berichttype_blijvend.sql refuses both), so the
-- reference holds without the per-row check.
ALTER TABLE nmc.notificatie DROP CONSTRAINT notificatie_dv_id_berichttype_fkey;

COMMENT ON COLUMN nmc.notificatie.berichttype IS
'Code of the DV''s berichttype (dv_id, code). Not a foreign key: nmc.intake_notificaties '
'only stores codes of existing berichttypen, which are retired but never deleted or '
'renamed (trigger berichttype_blijvend).';
