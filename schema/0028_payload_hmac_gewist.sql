-- Erasure clears the keyed payload HMAC too. The payload pepper is on every
-- API pod: with it and the database (or a backup) anyone could still confirm a guessed
-- recipient of an erased notification, for as long as its row is kept (the delivery-proof
-- retention). The HMAC serves idempotency only (same dvRef, same payload); after the erase
-- term a re-submit of the dvRef cannot be judged and is answered as another payload (409
-- NM007), as an erased row of version 0 already was. The dvRef HMAC stays: it keeps the
-- dvRef taken for the row's retention.

ALTER TABLE nmc.notificatie DROP CONSTRAINT notificatie_payload_hash_aanwezig;

UPDATE nmc.notificatie SET payload_hash = NULL
WHERE gewist_op IS NOT NULL AND payload_hash IS NOT NULL;

-- Only an erased row is without its payload hash.
ALTER TABLE nmc.notificatie ADD CONSTRAINT notificatie_payload_hash_aanwezig CHECK (
    payload_hash IS NOT NULL OR gewist_op IS NOT NULL
);

COMMENT ON COLUMN nmc.notificatie.payload_hash IS
'For idempotent replays (same dvRef, same payload): HMAC-SHA256 of the canonical request '
'under the payload pepper of payload_pepper_versie (nmc.crypto.payload_hmac). Version 0: '
'the unkeyed SHA-256 of a row accepted before the payload pepper. Set to NULL when the row '
'is erased, keyed or not (a replay of it is then answered as another payload): kept, it '
'would let the holder of the pepper confirm a guessed recipient.';

-- A per-DV call rate for the delivery proof and the history: each proof is
-- signed and each answer writes an LDV record. Counted like the feed's calls
-- (nmc.feedaanroep), in a table of their own so that a DV polling its feed does not use up
-- its proofs, nor the other way round.

ALTER TABLE nmc.instellingen
ADD COLUMN bewijs_aanroepen_per_minuut integer NOT NULL DEFAULT 600
CHECK (bewijs_aanroepen_per_minuut > 0);
COMMENT ON COLUMN nmc.instellingen.bewijs_aanroepen_per_minuut IS
'Per DV, how many delivery-proof and history calls a minute are answered; beyond it 429 '
'aanroeplimiet-overschreden with Retry-After (nmc.take_bewijs_aanroep).';

CREATE TABLE nmc.bewijsaanroep (
    dv_id integer NOT NULL REFERENCES nmc.dienstverlener (dv_id),
    venster_start timestamptz NOT NULL,
    aantal integer NOT NULL CHECK (aantal >= 0),
    PRIMARY KEY (dv_id, venster_start)
);
COMMENT ON TABLE nmc.bewijsaanroep IS
'Delivery-proof and history calls per DV per one-minute window, for their call rate (429 '
'aanroeplimiet-overschreden). Retention: windows older than an hour are removed by '
'maintenance (nmc.delete_expired).';

-- The re-wrap target follows the workers, not one of them. Before, the
-- first report of a KEK by any worker made it the target at once, so one worker with a new
-- ring moved every key to a KEK the others may not hold. Now each worker's last report is
-- kept (nmc.kek_melding), and the target moves to a newer KEK only when every worker that
-- reported lately reports that one (nmc.herwrap_doel_bijwerken); nmc.kek.doel_sinds says
-- when a KEK became the target.

ALTER TABLE nmc.kek ADD COLUMN doel_sinds timestamptz;
COMMENT ON COLUMN nmc.kek.doel_sinds IS
'When this KEK became the re-wrap target (NULL: never); the target is the one that became it '
'last (nmc.herwrap_doel).';

-- The target as it was: the KEK first reported most recently.
UPDATE nmc.kek AS k SET doel_sinds = k.actief_gemeld_op
WHERE k.kek_id = (
    SELECT x.kek_id FROM nmc.kek AS x ORDER BY x.actief_gemeld_op DESC, x.kek_id DESC LIMIT 1
);

CREATE TABLE nmc.kek_melding (
    eigenaar text PRIMARY KEY CHECK (pg_catalog.length(eigenaar) BETWEEN 1 AND 200),
    kek_id text NOT NULL REFERENCES nmc.kek (kek_id),
    gemeld_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.kek_melding IS
'Per worker (its lease owner name; a worker of the previous release per KEK it reports), '
'the KEK it last reported as the active one of its ring and when (an id, never key '
'material). Retention: reports older than a day are removed at the next report (a few '
'rows).';
