-- Counters of things that leave no row behind (rejected receipts, unknown statuses).

CREATE TABLE nmc.teller (
    naam text PRIMARY KEY CHECK (naam ~ '^[a-z_]{1,100}$'),
    aantal bigint NOT NULL DEFAULT 0 CHECK (aantal >= 0),
    bijgewerkt_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.teller IS
'Monotonic counters for the metrics endpoint: events the NMC deliberately does not store '
'(a receipt whose reference matches no attempt, a malformed receipt, a receipt status '
'the NMC does not know). Names only, never personal data. Kept forever.';
