-- The one clock every rule reads (SPEC §10), and the cluster epoch of the feed cursor.

CREATE TABLE nmc.klok (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    verschuiving interval NOT NULL DEFAULT '0 seconds' CHECK (verschuiving >= '0 seconds')
);
INSERT INTO nmc.klok DEFAULT VALUES;
COMMENT ON TABLE nmc.klok IS
'One row: how far the NMC clock (nmc.now()) runs ahead of the database time. Zero in '
'production; tests and the demo move it forward with nmc.advance_clock. Kept forever.';

CREATE TABLE nmc.cluster_epoch (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    epoch integer NOT NULL DEFAULT 1 CHECK (epoch >= 1),
    verhoogd_op timestamptz NOT NULL DEFAULT pg_catalog.now()
);
INSERT INTO nmc.cluster_epoch DEFAULT VALUES;
COMMENT ON TABLE nmc.cluster_epoch IS
'One row: the epoch part of every feed cursor. An operator raises it after a restore or '
'a promotion that breaks the xid series, so older cursors get 410. Kept forever.';
