-- A send task carries its notification's berichttype, so the send claim can pass over the
-- tasks of a (DV, berichttype) whose NotifyNL service gives no token now (its day used
-- up, or the DV's fair share of it used) with an index seek per open pair, instead of
-- locking them and leaving a closed service's backlog to fill the round's batch.

ALTER TABLE nmc.taak ADD COLUMN berichttype text;
COMMENT ON COLUMN nmc.taak.berichttype IS
'Of a send task (verzenden): its notification''s berichttype (which never changes), '
'written by the intake or taken from the notification by a trigger '
'(nmc.vul_taak_berichttype). NULL for the other kinds.';

UPDATE nmc.taak AS t SET berichttype = n.berichttype
FROM nmc.notificatie AS n
WHERE t.notificatie_id = n.id AND t.soort = 'verzenden' AND t.staat IN ('open', 'claimed');

CREATE INDEX taak_verzenden_open ON nmc.taak (dv_id, berichttype, due)
WHERE soort = 'verzenden' AND staat = 'open';
COMMENT ON INDEX nmc.taak_verzenden_open IS
'The open send tasks per DV and berichttype in due order: the send claim seeks each open '
'(DV, berichttype) pair (nmc.lock_due_verzenden).';
