-- The proof call counter of a DV was one row per minute: every proof and history call of
-- the DV updated it and held its lock until the call's commit, so a DV's proofs (fetched a
-- few at a time) went one at a time, each waiting for the others' (two thirds of a proof's
-- time in the year run). Now each database connection counts in a row of its own
-- (deel: its backend pid) and the rate is the sum of the DV's rows of the minute.

ALTER TABLE nmc.bewijsaanroep ADD COLUMN deel integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN nmc.bewijsaanroep.deel IS
'The backend pid of the connection that counted these calls: one row per DV, minute and '
'connection, so concurrent calls of one DV do not wait for each other''s row lock. The '
'DV''s rate in the minute is the sum over deel (nmc.take_bewijs_aanroep).';
ALTER TABLE nmc.bewijsaanroep DROP CONSTRAINT bewijsaanroep_pkey;
ALTER TABLE nmc.bewijsaanroep ADD PRIMARY KEY (dv_id, venster_start, deel);
COMMENT ON TABLE nmc.bewijsaanroep IS
'Delivery-proof and history calls per DV per one-minute window and per database connection '
'(deel), for their call rate (429 aanroeplimiet-overschreden): the sum of a DV''s rows of '
'the minute. Retention: windows older than an hour are removed by maintenance '
'(nmc.delete_expired).';
