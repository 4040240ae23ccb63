-- The transaction id of a notification's intake: the xid of its first event (sequence 1 is
-- written by the intake's own transaction), and a lower bound of every later one. The
-- delivery proof reads its events from the partitions from there on instead of probing
-- every partition of the log (a year's term holds some forty).

ALTER TABLE nmc.notificatie ADD COLUMN aanname_xid xid8;
-- Set as a default afterwards, so the rows already there keep NULL (no bound: read every
-- partition) and only new rows get their own intake's xid.
ALTER TABLE nmc.notificatie ALTER COLUMN aanname_xid SET DEFAULT pg_catalog.pg_current_xact_id();
COMMENT ON COLUMN nmc.notificatie.aanname_xid IS
'xid8 of the intake''s transaction (the default; NULL for a notification taken in before the '
'column existed): every event of the notification is at or above it, so a read of its '
'events skips the older event partitions.';
