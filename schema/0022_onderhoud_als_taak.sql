-- Maintenance as tasks (SPEC §5, §9): the jobs, one open task each, run by every worker with
-- the default kinds; the register of active KEKs that tells maintenance where to re-wrap to;
-- the youngest event of a closed partition, kept once; the partition width as a setting;
-- indexes that keep each cleanup batch a short range read.

CREATE TABLE nmc.onderhoudswerk (
    werk text PRIMARY KEY CHECK (werk IN ('partities', 'retentie', 'herwrappen')),
    herhaal_na interval NOT NULL CHECK (herhaal_na > '0 seconds'),
    batch integer NOT NULL CHECK (batch BETWEEN 1 AND 5000)
);
COMMENT ON TABLE nmc.onderhoudswerk IS
'The maintenance jobs (task kind onderhoud): per job the time between runs (herhaal_na) and '
'the rows one run handles at most (batch). nmc.ensure_onderhoud keeps exactly one open task '
'per job; each run is one short transaction and plans the next (due at once while a batch '
'came back full). partities: the next event partition at 80%, then the drop rule; '
'retentie: one batch of nmc.delete_expired; herwrappen: re-wrap data keys under an older '
'KEK to the newest active one. Kept forever; an operator may change the numbers.';
COMMENT ON COLUMN nmc.onderhoudswerk.herhaal_na IS
'How long after a run that found less than a full batch the next run is due.';

INSERT INTO nmc.onderhoudswerk (werk, herhaal_na, batch) VALUES
('partities', '5 minutes', 1),
('retentie', '1 minute', 1000),
('herwrappen', '5 minutes', 500);

-- One open (or claimed) task per job; a mislukt one waits for an operator beside it.
CREATE UNIQUE INDEX taak_uniek_onderhoud ON nmc.taak ((payload ->> 'werk'))
WHERE staat IN ('open', 'claimed') AND soort = 'onderhoud';

CREATE TABLE nmc.kek (
    kek_id text PRIMARY KEY CHECK (pg_catalog.length(kek_id) BETWEEN 1 AND 100),
    actief_gemeld_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.kek IS
'The KEKs a worker has reported as the active one of its ring (the id only, never key '
'material), with the first time it did. The KEK reported active most recently for the '
'first time is where maintenance re-wraps the data keys to (nmc.herwrap_doel), so workers of '
'an older ring during a rolling deploy never wrap keys back. Kept forever (a few rows).';

-- The live data keys per KEK: the re-wrap job reads the keys under any other KEK than its
-- target as a range of this index, and `nmc admin kek status` counts from it. Erased keys
-- leave it, so it holds only the keys of the last weeks.
CREATE INDEX notificatie_kek_levend ON nmc.notificatie (kek_id, id)
WHERE sleutel_gewrapt IS NOT NULL;

-- Done tasks are deleted after a short term: a range of this index, not a scan of the table.
CREATE INDEX taak_afgerond ON nmc.taak (afgerond_op) WHERE staat = 'done';

ALTER TABLE nmc.instellingen
ADD COLUMN event_partitie_breedte bigint NOT NULL DEFAULT 16777216
CHECK (event_partitie_breedte >= 1000);
COMMENT ON COLUMN nmc.instellingen.event_partitie_breedte IS
'Width in xids of each new event partition (2^24). Retention drops whole partitions, so an '
'event is kept up to the time one partition spans beyond the delivery-proof retention: a '
'small deployment that uses few xids a day may want narrower ones '
'(nmc.set_event_partitie_breedte).';

ALTER TABLE nmc.event_partitie
ADD COLUMN gesloten_op timestamptz,
ADD COLUMN jongste_tijdstip timestamptz;
COMMENT ON COLUMN nmc.event_partitie.gesloten_op IS
'When maintenance found the range closed (every transaction with an xid in it ended, so no '
'event can be added) and read its youngest event, once.';
COMMENT ON COLUMN nmc.event_partitie.jongste_tijdstip IS
'The tijdstip of the youngest event in the closed range (NULL: it holds none): the drop '
'rule compares it with the delivery-proof retention without reading the partition again.';
