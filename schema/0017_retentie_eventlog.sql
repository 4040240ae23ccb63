-- Retention and the event log: the age of a webhook position, the first partition's
-- COMMENT, and a bounded count of unacknowledged terminal statuses.

-- A webhook position's age is the time of its last delivered position, not of its last
-- attempt: a webhook that keeps failing must stop holding the log's cleanup back once the
-- DV's max cursor age has passed (ADR 0024).
ALTER TABLE nmc.webhookpositie ADD COLUMN geleverd_op timestamptz;
UPDATE nmc.webhookpositie SET geleverd_op = bijgewerkt_op;
ALTER TABLE nmc.webhookpositie ALTER COLUMN geleverd_op SET NOT NULL;
COMMENT ON COLUMN nmc.webhookpositie.geleverd_op IS
'When the delivery position was last delivered up to (a 2xx, or nothing to deliver) or set '
'(a new webhook, an epoch raise). Failures do not change it. Past the DV''s '
'max_cursorleeftijd the position no longer keeps event partitions from being dropped.';
COMMENT ON COLUMN nmc.webhookpositie.bijgewerkt_op IS
'When anything on the row last changed (also a failure, a pause, a resume).';

-- The first xid range was made without a COMMENT (later ranges get one when created).
DO $$
DECLARE
    v_partitie nmc.event_partitie;
BEGIN
    SELECT * INTO v_partitie FROM nmc.event_partitie AS p
    WHERE p.naam = 'event_x000000000000' AND p.verwijderd_op IS NULL;
    IF FOUND THEN
        EXECUTE pg_catalog.format(
            'COMMENT ON TABLE nmc.%I IS %L', v_partitie.naam,
            'Events written by transactions with xid in [' || v_partitie.xid_van || ', '
            || v_partitie.xid_tot || ').'
        );
    END IF;
END
$$;

-- The unacknowledged-terminal-status count (metric and beheer report) reads at most this
-- many terminal events per DV past its acknowledgement, so a scrape costs the same whatever
-- the log's size; past it the count says "at least".
ALTER TABLE nmc.instellingen
ADD COLUMN onbevestigd_telgrens integer NOT NULL DEFAULT 1000
CHECK (onbevestigd_telgrens >= 1);
COMMENT ON COLUMN nmc.instellingen.onbevestigd_telgrens IS
'How many terminal events past a DV''s acknowledgement nmc.report_onbevestigd_v2 reads at '
'most (oldest first); when all of them are overdue the count is reported as at least this.';

-- Only the terminal events, in feed order per DV, with their time: the count reads the
-- oldest ones past the acknowledgement from this index alone. The list is nmc.is_terminal's
-- (tests_sql/metrics.sql holds the two together).
CREATE INDEX event_terminaal ON nmc.event (dv_id, xid, event_id) INCLUDE (tijdstip)
WHERE naar IN (
    'definitief-bezorgd', 'niet-bezorgbaar', 'technisch-mislukt',
    'bezorgstatus-onbekend', 'verlopen', 'geannuleerd'
);
