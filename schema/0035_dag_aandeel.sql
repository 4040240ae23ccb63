-- A fair share of a NotifyNL service's day (SPEC §5, docs/dag-aandeel.md): the sends each
-- DV was granted per service per hour, so the claim can keep a reserve of the day for the
-- DVs other than the heavy consumers. Rows per service x DV x hour, kept two days
-- (nmc.delete_expired).

CREATE TABLE nmc.verzendaandeel (
    notify_service text NOT NULL CHECK (pg_catalog.length(notify_service) BETWEEN 1 AND 100),
    uur timestamptz NOT NULL,
    dv_id integer NOT NULL,
    gebruikt integer NOT NULL CHECK (gebruikt > 0),
    PRIMARY KEY (notify_service, uur, dv_id)
);
COMMENT ON TABLE nmc.verzendaandeel IS
'Sends granted per NotifyNL service, DV and whole hour (UTC), written by the claim with '
'the tokens it takes (nmc.boek_verzendaandeel) and read by the fair share of the day '
'(nmc.verzendaandeel_ruimte). Kept two days.';
COMMENT ON COLUMN nmc.verzendaandeel.uur IS 'The start of the hour the sends were granted in.';
COMMENT ON COLUMN nmc.verzendaandeel.gebruikt IS 'Sends granted to the DV in that hour.';
