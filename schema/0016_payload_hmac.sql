-- The payload hash becomes a keyed HMAC under the `payload` pepper, with its version on the
-- row like the dvRef HMAC. An unkeyed SHA-256 over the canonical request (recipient
-- included) lets anyone holding the database or a backup test candidate e-mail addresses
-- or identifying numbers offline, also after erasure.
--
-- Rows stored before this change (and by an API process of the previous release during a
-- rolling deploy, through the old intake signatures) keep their unkeyed SHA-256 under
-- version 0, so that their replays are still recognised; erasure clears it
-- (nmc.process_wissen), and here for the rows erased already.

ALTER TABLE nmc.notificatie
ADD COLUMN payload_pepper_versie smallint NOT NULL DEFAULT 0
CHECK (payload_pepper_versie >= 0);

ALTER TABLE nmc.notificatie ALTER COLUMN payload_hash DROP NOT NULL;

UPDATE nmc.notificatie SET payload_hash = NULL
WHERE gewist_op IS NOT NULL AND payload_pepper_versie = 0;

-- Only an erased row of version 0 is without its hash.
ALTER TABLE nmc.notificatie ADD CONSTRAINT notificatie_payload_hash_aanwezig CHECK (
    payload_hash IS NOT NULL OR (payload_pepper_versie = 0 AND gewist_op IS NOT NULL)
);

COMMENT ON COLUMN nmc.notificatie.payload_hash IS
'For idempotent replays (same dvRef, same payload): HMAC-SHA256 of the canonical request '
'under the payload pepper of payload_pepper_versie (nmc.crypto.payload_hmac). Version 0: '
'the unkeyed SHA-256 of a row accepted before the payload pepper, set to NULL when the row '
'is erased (a replay of it is then answered as another payload).';
COMMENT ON COLUMN nmc.notificatie.payload_pepper_versie IS
'The payload pepper version payload_hash is keyed with; 0 = an unkeyed SHA-256 (rows from '
'before the payload pepper, and those an API process of that release still writes through '
'the old intake signatures during a rolling deploy).';
