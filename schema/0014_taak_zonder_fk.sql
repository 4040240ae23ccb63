-- Batch intake: the foreign key taak.notificatie_id -> notificatie cost an SPI probe and a
-- row lock per inserted task (~12% of a 1000-item intake). triggers/taak_notificatie.sql
-- keeps the reference per statement instead: inserted tasks must name existing
-- notifications (one set check), deleting notifications deletes their tasks (the former
-- ON DELETE CASCADE), and a task's notification never changes.
ALTER TABLE nmc.taak DROP CONSTRAINT taak_notificatie_id_fkey;

COMMENT ON COLUMN nmc.taak.notificatie_id IS
'The notification concerned (NULL for DV- and system-wide tasks). Not a foreign key: '
'triggers/taak_notificatie.sql checks new tasks as a set, deletes the tasks of deleted '
'notifications and refuses a change.';
