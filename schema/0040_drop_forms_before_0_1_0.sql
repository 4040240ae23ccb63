-- Old forms of API functions kept beside their replacements for a rolling deploy, which no
-- supported release calls: release 0.1.0 (commit 7b6fbba, the previous release of
-- tests_py/previous_release/) already calls each replacement, and so does this one
-- (docs/migrations.md, "Dropping an old form, a release later"). Their modules no longer
-- create them; a database migrated to 0.1.0 or later loses them here, a fresh one never had
-- them. Schema files run before the modules, so the replacements are untouched.

-- The intake before the payload pepper (an unkeyed SHA-256 as payload hash): replaced by
-- nmc.intake_notificatie_v2 / nmc.intake_notificaties_v2, now _v3; 0.1.0 calls _v2.
DROP FUNCTION IF EXISTS nmc.intake_notificatie(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, bytea, bytea, bytea, text,
    timestamptz, uuid, text, text, bytea[]
);
DROP FUNCTION IF EXISTS nmc.intake_notificaties(
    integer, nmc.regie, smallint, text, uuid, uuid[], text[], bytea[], bytea[], bytea[],
    bytea[], bytea[], timestamptz[], text[], text[], bytea[]
);
-- The receipts without their template: nmc.store_receipts_v2 (0.1.0 calls it).
DROP FUNCTION IF EXISTS nmc.store_receipts(
    text[], uuid[], text[], timestamptz[], timestamptz[]
);
-- A receipt applied without the receipt history (internal, never granted):
-- nmc.apply_receipt_v2.
DROP FUNCTION IF EXISTS nmc.apply_receipt(uuid, uuid, text, timestamptz, timestamptz);
-- The reconciliation claim without the Notify service: nmc.claim_navraag_v2 (0.1.0 calls it).
DROP FUNCTION IF EXISTS nmc.claim_navraag(text, integer);
-- The webhook claim that closed an unvalidated webhook's task: nmc.claim_terugkoppelen_v2
-- (0.1.0 calls it), now _v3.
DROP FUNCTION IF EXISTS nmc.claim_terugkoppelen(text, integer);
-- The webhook finish without the batch's epoch: nmc.finish_terugkoppelen_v2 (0.1.0 calls it).
DROP FUNCTION IF EXISTS nmc.finish_terugkoppelen(bigint, integer, text, xid8, bigint);
-- Maintenance planned without the worker's name: nmc.ensure_onderhoud_v2 (no release
-- called the first form: 0.1.0 had no maintenance tasks).
DROP FUNCTION IF EXISTS nmc.ensure_onderhoud(text);
-- The re-wrap list that read from the start of the table on every call:
-- nmc.list_rewrap_v2 (0.1.0's admin calls it).
DROP FUNCTION IF EXISTS nmc.list_rewrap(text, integer);
-- The unacknowledged report without afgekapt: nmc.report_onbevestigd_v2 (0.1.0's admin
-- calls it).
DROP FUNCTION IF EXISTS nmc.report_onbevestigd();
