-- The look for work before a claim (nmc.soorten_met_werk): whether a kind has an open task
-- that is due, whatever its DV, in one index probe. taak_claim leads with the DV (the
-- claims walk it per DV), so through it the same question reads every open task of the kind
-- that is not due yet (a settlement task waits a week).

CREATE INDEX taak_due ON nmc.taak (soort, due) WHERE staat = 'open';
COMMENT ON INDEX nmc.taak_due IS
'Open tasks per kind in due order, whatever their DV: the look for work before a claim '
'(nmc.soorten_met_werk) reads one entry per kind.';
