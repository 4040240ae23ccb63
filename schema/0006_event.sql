-- The event log: append only, partitioned on the writer's transaction id (SPEC §3, §7).

CREATE TABLE nmc.event (
    event_id bigint GENERATED ALWAYS AS IDENTITY,
    notificatie_id uuid NOT NULL,
    dv_id integer NOT NULL,
    sequence integer NOT NULL CHECK (sequence >= 1),
    van nmc.notificatie_status,
    naar nmc.notificatie_status NOT NULL,
    reden nmc.reden,
    tijdstip timestamptz NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    PRIMARY KEY (xid, event_id),
    CHECK ((van IS NULL) = (sequence = 1))
) PARTITION BY RANGE (xid);
COMMENT ON TABLE nmc.event IS
'The event log: one row per status transition of a notification, written by '
'nmc.transition_notificatie in the same transaction. Append only (UPDATE and DELETE are '
'refused). Holds no contact data, identifying number or DV reference: pseudonymous data '
'the DV can trace back. The source of the feed, the webhook, reporting and the delivery '
'proof. Partitioned on xid ranges (plus a default partition); a partition is dropped when '
'its youngest event is older than the delivery-proof retention (1 year, config) and no '
'live cursor points into it.';
COMMENT ON COLUMN nmc.event.sequence IS 'The notification''s version after this transition.';
COMMENT ON COLUMN nmc.event.tijdstip IS 'Registration time on the NMC clock (nmc.now()).';
COMMENT ON COLUMN nmc.event.xid IS
'xid8 of the writing transaction: the feed reads on (xid, event_id) below the watermark.';

CREATE INDEX event_feed ON nmc.event (dv_id, xid, event_id);
CREATE INDEX event_notificatie ON nmc.event (notificatie_id, sequence);

CREATE TABLE nmc.event_default PARTITION OF nmc.event DEFAULT;
COMMENT ON TABLE nmc.event_default IS
'Catches events outside every xid range; empty in normal operation (maintenance creates '
'the next range before the current one is full).';

CREATE TABLE nmc.event_partitie (
    naam text PRIMARY KEY,
    xid_van xid8 NOT NULL UNIQUE,
    xid_tot xid8 NOT NULL,
    aangemaakt_op timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CHECK (xid_tot > xid_van)
);
COMMENT ON TABLE nmc.event_partitie IS
'The xid ranges of the event log, for maintenance (create at 80%, drop by the retention '
'rule) and for the feed (a cursor below the oldest range is expired). Kept while the '
'partition exists.';

-- The first range starts at 0 and ends a whole block above the current xid, so a fresh
-- database and one migrated step by step in the same cluster get the same bound.
DO $$
DECLARE
    v_blok CONSTANT bigint := 16777216;
    v_tot bigint := ((pg_catalog.pg_current_xact_id()::text::bigint / v_blok) + 2) * v_blok;
BEGIN
    EXECUTE pg_catalog.format(
        'CREATE TABLE nmc.event_x%s PARTITION OF nmc.event FOR VALUES FROM (%L) TO (%L)',
        pg_catalog.lpad('0', 12, '0'), '0', v_tot::text
    );
    INSERT INTO nmc.event_partitie (naam, xid_van, xid_tot)
    VALUES ('event_x' || pg_catalog.lpad('0', 12, '0'), '0', v_tot::text::xid8);
END
$$;
