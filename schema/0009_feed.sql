-- Feed call rate per DV (SPEC §7: a per-DV call rate, enforced in the database so it
-- holds across API processes).

CREATE TABLE nmc.feedaanroep (
    dv_id integer NOT NULL REFERENCES nmc.dienstverlener (dv_id),
    venster_start timestamptz NOT NULL,
    aantal integer NOT NULL CHECK (aantal >= 0),
    PRIMARY KEY (dv_id, venster_start)
);
COMMENT ON TABLE nmc.feedaanroep IS
'Feed calls per DV per one-minute window, for the per-DV call rate (429 '
'aanroeplimiet-overschreden). Retention: windows older than an hour are removed by '
'maintenance.';

ALTER TABLE nmc.event_partitie ADD COLUMN verwijderd_op timestamptz;
COMMENT ON COLUMN nmc.event_partitie.verwijderd_op IS
'When maintenance dropped the partition; the row stays so a cursor into it gets 410.';
