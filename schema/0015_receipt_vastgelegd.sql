-- Receipts that are recorded on an attempt without being applied to it. The attempt's
-- outcome (status, afgerond_op) and laatste_receipt_status / laatste_receipt_op are those
-- of the receipt it rests on, the source of the delivery proof; a receipt that may not
-- change that outcome is kept beside it, not over it:
-- * a receipt status the NMC does not know (SPEC §4 notes: recorded, counted, no transition);
-- * a late receipt on an outcome that is settled: a delivered attempt that the receipt
--   does not fail (after the settlement term, or a status that cannot undo delivered), or
--   any attempt that no longer runs under a terminal notification.
ALTER TABLE nmc.poging
ADD COLUMN vastgelegde_receipt_status text
CHECK (pg_catalog.length(vastgelegde_receipt_status) <= 50),
ADD COLUMN vastgelegde_receipt_op timestamptz;

COMMENT ON COLUMN nmc.poging.vastgelegde_receipt_status IS
'The raw NotifyNL status of the newest receipt (by completed_at) recorded on this attempt '
'without being applied: a status the NMC does not know, or a late receipt that may not '
'rewrite the outcome (a delivered attempt past its settlement term, an attempt of a '
'terminal notification). Never overwrites status, afgerond_op or laatste_receipt_status.';
COMMENT ON COLUMN nmc.poging.vastgelegde_receipt_op IS
'completed_at (capped at the NMC clock; the NMC clock when the answer had none) of the '
'receipt in vastgelegde_receipt_status.';
COMMENT ON COLUMN nmc.poging.laatste_receipt_status IS
'The raw NotifyNL status of the newest receipt applied to the attempt: the one its '
'status and afgerond_op rest on. Receipts only recorded go to vastgelegde_receipt_status.';
