-- The notifications per status, kept as they change instead of counted at every scrape:
-- /metrics counted nmc.notificatie whole (per status, and per DV for the share of
-- geen-contactgegevens), a scan of every notification kept for the delivery proof's year
-- at every scrape. Every statement that writes notificatie adds its change here as delta
-- rows (triggers/notificatie_telling.sql: insert-only, so concurrent writers never wait for
-- each other); the retention job folds them together (nmc.voeg_tellingen_samen).

CREATE TABLE nmc.notificatietelling (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dv_id integer NOT NULL,
    regie nmc.regie NOT NULL,
    status nmc.notificatie_status NOT NULL,
    reden nmc.reden,
    aantal bigint NOT NULL
);
COMMENT ON TABLE nmc.notificatietelling IS
'The notifications per DV, regie, status and reason as delta rows: the sum of aantal per '
'key is how many notifications have it now. Written by the statement triggers on '
'nmc.notificatie (nmc.tel_notificaties), folded to one row per key by the retention job '
'(nmc.voeg_tellingen_samen); read by nmc.metrics.';
COMMENT ON COLUMN nmc.notificatietelling.id IS 'Row id (insert order).';
COMMENT ON COLUMN nmc.notificatietelling.dv_id IS 'The DV of the counted notifications.';
COMMENT ON COLUMN nmc.notificatietelling.regie IS 'Their regie.';
COMMENT ON COLUMN nmc.notificatietelling.status IS 'Their status.';
COMMENT ON COLUMN nmc.notificatietelling.reden IS 'Their reason (NULL: none).';
COMMENT ON COLUMN nmc.notificatietelling.aantal IS
'The change in the number of notifications with this key (negative: they left it).';

-- The notifications already there, counted once. SHARE mode holds off every writer until
-- this migration commits, with the triggers that count from then on (the same transaction):
-- no change falls between the count and the first delta.
LOCK TABLE nmc.notificatie IN SHARE MODE;
INSERT INTO nmc.notificatietelling (dv_id, regie, status, reden, aantal)
SELECT
    n.dv_id,
    n.regie,
    n.status,
    n.reden,
    pg_catalog.count(*) AS aantal
FROM nmc.notificatie AS n
GROUP BY n.dv_id, n.regie, n.status, n.reden;
