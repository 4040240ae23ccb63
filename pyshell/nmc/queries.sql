-- The SQL the shell sends, one named query per `-- name --` header (procrastinate style).
-- Queries with {placeholders} take identifiers composed with psycopg.sql; %(name)s are
-- ordinary parameters.

-- lock_migrations --
-- Serialises concurrent `nmc migrate` runs on one database until their transaction ends;
-- transaction scoped, so it also works behind PgBouncer. The key is 'NMC_MIGR' in ASCII.
SELECT pg_catalog.pg_advisory_xact_lock(5642239984762701650)

-- act_as_owner --
SET LOCAL ROLE nmc_owner

-- migration_table_exists --
SELECT pg_catalog.to_regclass('nmc_migratie.toegepast') IS NOT NULL

-- applied_files --
SELECT t.bestand, t.checksum
FROM nmc_migratie.toegepast AS t

-- record_schema_file --
INSERT INTO nmc_migratie.toegepast (bestand, soort, checksum)
VALUES (%(bestand)s, 'schema', %(checksum)s)

-- record_module --
INSERT INTO nmc_migratie.toegepast (bestand, soort, checksum)
VALUES (%(bestand)s, 'module', %(checksum)s)
ON CONFLICT (bestand) DO UPDATE
SET checksum = excluded.checksum, toegepast_op = pg_catalog.clock_timestamp()

-- clock_now --
SELECT nmc.now()

-- ------------------------------------------------------------------------------------
-- The DV API and the NotifyNL callback (`nmc api`, role nmc_api): one call per request.
-- Explicit casts pick the one signature the grants name.

-- find_dienstverlener --
SELECT d.dv_id, d.naam FROM nmc.find_dienstverlener(%(oin)s::text) AS d

-- intake_notificatie --
-- Byte strings in binary (no hex encoding and parsing). sha256_hash: NULL unless the
-- database asked for it (NMP01).
SELECT r.notificatie_id, r.nieuw
FROM nmc.intake_notificatie_v4(
    %(id)s::uuid, %(dv_id)s::integer, %(berichttype)s::text, %(regie)s::nmc.regie,
    %(dvref_hmac)b::bytea, %(pepper_versie)s::smallint, %(payload_hmac)b::bytea,
    %(payload_pepper_versie)s::smallint, %(ontvanger)b::bytea, %(gegevens)b::bytea,
    %(sleutel)b::bytea, %(kek_id)s::text, %(geldig_tot)s::timestamptz, %(batch_id)s::uuid,
    %(trace_id)s::text, %(span_id)s::text, %(dienst)s::text, %(namen)s::text,
    %(vorige_hmacs)b::bytea[],
    %(vorige_payload_hmacs)b::bytea[], %(sha256_hash)b::bytea
) AS r

-- intake_notificaties --
-- The arrays go in binary: as text, 1000 items of ciphertext cost ~45 ms of hex
-- encoding and parsing per batch, more than the inserts themselves.
SELECT r.item, r.notificatie_id, r.nieuw
FROM nmc.intake_notificaties_v4(
    %(dv_id)s::integer, %(regie)s::nmc.regie, %(pepper_versie)s::smallint,
    %(payload_pepper_versie)s::smallint, %(kek_id)s::text, %(batch_id)s::uuid,
    %(ids)b::uuid[], %(berichttypen)b::text[], %(dvref_hmacs)b::bytea[],
    %(payload_hmacs)b::bytea[], %(ontvangers)b::bytea[], %(gegevens)b::bytea[],
    %(sleutels)b::bytea[], %(geldig_tot)b::timestamptz[], %(trace_ids)b::text[],
    %(span_ids)b::text[], %(diensten)b::text[], %(namen)b::text[], %(vorige_hmacs)b::bytea[], %(vorige_payload_hmacs)b::bytea[],
    %(sha256_hashes)b::bytea[]
) AS r
ORDER BY r.item

-- get_notificatie --
SELECT nmc.get_notificatie(%(dv_id)s::integer, %(id)s::uuid)

-- get_afleverbewijs --
-- The content of the delivery proof; the API signs it (nmc.api.routes_bewijs).
SELECT nmc.get_afleverbewijs(%(dv_id)s::integer, %(id)s::uuid)

-- get_geschiedenis --
SELECT nmc.get_geschiedenis_v2(
    %(dv_id)s::integer, %(id)s::uuid, %(na_sequence)s::integer, %(na_receipts)s::integer,
    %(limiet)s::integer
)

-- find_notificaties --
SELECT f.n
FROM nmc.find_notificaties(
    %(dv_id)s::integer, %(dvref_hmacs)s::bytea[], %(limiet)s::integer,
    %(voor_aangenomen_op)s::timestamptz, %(voor_id)s::uuid
) AS f (n)

-- cancel_notificatie --
SELECT c.status::text, c.versie
FROM nmc.cancel_notificatie(%(dv_id)s::integer, %(id)s::uuid) AS c

-- store_receipt --
SELECT nmc.store_receipt(
    %(reference)s::text, %(notifynl_id)s::uuid, %(status)s::text,
    %(completed_at)s::timestamptz, %(sent_at)s::timestamptz
)

-- store_receipts --
-- With the template id and version from each receipt (the delivery proof's).
SELECT r.item, r.resultaat
FROM nmc.store_receipts_v2(
    %(reference)b::text[], %(notifynl_id)b::uuid[], %(status)b::text[],
    %(completed_at)b::timestamptz[], %(sent_at)b::timestamptz[], %(template_id)b::uuid[],
    %(template_versie)b::integer[]
) AS r
ORDER BY r.item

-- meld_werk --
-- The hint to idle workers (nmc.api.werk_melder), in a transaction of its own.
SELECT nmc.meld_werk()

-- count_malformed_receipt --
SELECT nmc.count_malformed_receipt()

-- count_refused_callback --
SELECT nmc.count_refused_callback(%(aantal)s::integer)

-- apply_dienstverlener --
SELECT nmc.apply_dienstverlener(%(config)s::jsonb)

-- list_templates --
SELECT
    l.dv_id, l.oin, l.berichttype, l.actief, l.notify_service, l.template_id, l.staat,
    l.versie, l.placeholders, l.gelezen_op, l.verdwenen_op, l.verversen_na, l.laatste_fout
FROM nmc.list_templates() AS l

-- lees_templates --
SELECT l.notify_service, l.template_id FROM nmc.lees_templates(%(alle)s::boolean) AS l

-- list_dienstverleners --
SELECT
    l.dv_id, l.oin, l.naam, l.actief, l.berichttypen, l.quotum_per_minuut,
    l.quotum_per_dag, l.webhook_url
FROM nmc.list_dienstverleners() AS l

-- ============================================================================================
-- The worker (`nmc worker`, role nmc_worker): one call of an API function per step.
-- ============================================================================================

-- claim_verzenden --
SELECT
    c.taak_id, c.claim_epoch, c.notificatie_id, c.poging_id, c.poging_nummer, c.herclaim,
    c.mag_verzenden, c.dv_id, c.dv_naam, c.dienst, c.regie::text AS regie, c.berichttype,
    c.notifynl_template_id, c.notify_service, c.ontvanger_versleuteld, c.gegevens_versleuteld,
    c.sleutel_gewrapt, c.kek_id, c.trace_id
FROM nmc.claim_verzenden(%(eigenaar)s::text, %(batch)s::integer) AS c

-- finish_verzenden --
SELECT nmc.finish_verzenden(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(uitkomst)s::text,
    %(notifynl_id)s::uuid, %(contactgegeven_id)s::uuid
)::text AS status

-- extend_lease --
SELECT nmc.extend_lease(%(taak_id)s::bigint, %(claim_epoch)s::integer) AS lease_tot

-- extend_leases --
-- The worker's group commit of lease extensions: one row per item, lease_tot NULL = stale.
SELECT l.item, l.lease_tot
FROM nmc.extend_leases(%(taak_ids)b::bigint[], %(claim_epochs)b::integer[]) AS l
ORDER BY l.item

-- record_contactgegevens --
-- The lease extension before a centraal send, which records the contactgegeven on the
-- attempt: one row per item, lease_tot NULL = stale.
SELECT l.item, l.lease_tot
FROM nmc.record_contactgegevens(
    %(taak_ids)b::bigint[], %(claim_epochs)b::integer[], %(contactgegeven_ids)b::uuid[]
) AS l
ORDER BY l.item

-- finish_verzenden_batch --
-- The worker's group commit of send outcomes: per item the status, or fout (a SQLSTATE).
SELECT r.item, r.status::text AS status, r.fout
FROM nmc.finish_verzenden_batch_v2(
    %(taak_ids)b::bigint[], %(claim_epochs)b::integer[], %(uitkomsten)b::text[],
    %(notifynl_ids)b::uuid[], %(contactgegeven_ids)b::uuid[], %(template_versies)b::integer[]
) AS r
ORDER BY r.item

-- defer_taak --
SELECT nmc.defer_taak(%(taak_id)s::bigint, %(claim_epoch)s::integer, %(fout)s::text) AS uitkomst

-- defer_limiet_taak --
SELECT nmc.defer_limiet_taak(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(service)s::text, %(limiet)s::text,
    %(fout)s::text
) AS uitkomst

-- defer_verzenden --
-- A send NotifyNL refused for a reason of our configuration: deferred, and recorded.
SELECT nmc.defer_verzenden(%(taak_id)s::bigint, %(claim_epoch)s::integer, %(soort)s::text)
AS uitkomst

-- fail_taak --
SELECT nmc.fail_taak(%(taak_id)s::bigint, %(claim_epoch)s::integer, %(fout)s::text) AS uitkomst

-- finish_taak --
SELECT nmc.finish_taak(%(taak_id)s::bigint, %(claim_epoch)s::integer)

-- finish_taken --
SELECT nmc.finish_taken(%(taak_ids)s::bigint [], %(claim_epochs)s::integer []) AS klaar

-- claim_taken --
SELECT
    c.taak_id, c.claim_epoch, c.dv_id, c.notificatie_id, c.poging_id, c.payload, c.trace_id,
    c.pogingen, c.herclaim
FROM nmc.claim_taken(%(soort)s::nmc.taak_soort, %(eigenaar)s::text, %(batch)s::integer) AS c

-- luister_naar_werk --
-- On the worker's own hint connection (nmc.worker.werk_hints), in autocommit.
SELECT nmc.luister_naar_werk()

-- soorten_met_werk --
SELECT nmc.soorten_met_werk(%(soorten)s::nmc.taak_soort []) AS soorten

-- process_receipts --
-- One row per handled task: its notificatie (the count of rows is how many were handled).
SELECT r.notificatie_id FROM nmc.process_receipts_v2(%(batch)s::integer) AS r

-- claim_navraag --
SELECT
    c.taak_id, c.claim_epoch, c.notificatie_id, c.poging_id, c.notifynl_id, c.trace_id,
    c.notify_service
FROM nmc.claim_navraag_v2(%(eigenaar)s::text, %(batch)s::integer) AS c

-- finish_navraag --
-- The answer with what NotifyNL said: its id and the template (id, version) it names.
SELECT nmc.finish_navraag_v2(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(gevonden)s::boolean, %(status)s::text,
    %(completed_at)s::timestamptz, %(sent_at)s::timestamptz, %(notifynl_id)s::uuid,
    %(template_id)s::uuid, %(template_versie)s::integer
) AS uitkomst

-- process_vaststellingen --
-- One row per settled notificatie.
SELECT v.notificatie_id FROM nmc.process_vaststellingen_v2(%(batch)s::integer) AS v

-- intake_sporen --
-- The intake span of each notificatie named (read only when tracing is on).
SELECT s.notificatie_id, s.trace_id, s.span_id
FROM nmc.intake_sporen(%(notificatie_ids)s::uuid[]) AS s

-- ensure_controle --
SELECT nmc.ensure_controle()

-- run_controle --
SELECT nmc.run_controle(%(taak_id)s::bigint, %(claim_epoch)s::integer) AS aantal

-- claim_ongeldig_melden --
SELECT
    c.taak_id, c.claim_epoch, c.notificatie_id, c.poging_id, c.dv_id, c.contactgegeven_id,
    c.gemeld_op, c.ontvanger_versleuteld, c.sleutel_gewrapt, c.kek_id, c.trace_id
FROM nmc.claim_ongeldig_melden(%(eigenaar)s::text, %(batch)s::integer) AS c

-- ensure_terugkoppelen --
SELECT nmc.ensure_terugkoppelen() AS gepland

-- claim_terugkoppelen --
-- gevalideerd: the URL passed its validation (else no pagina: validate it first); gat: the
-- position has a gap and the webhook is paused for it (no pagina: close the task).
SELECT c.taak_id, c.claim_epoch, c.dv_id, c.webhook_url, c.epoch, c.pagina, c.gevalideerd,
    c.gat
FROM nmc.claim_terugkoppelen_v3(%(eigenaar)s::text, %(batch)s::integer) AS c

-- record_webhookvalidatie --
SELECT nmc.record_webhookvalidatie(
    %(dv_id)s::integer, %(url)s::text, %(uitkomst)s::text, %(detail)s::text
) AS gevalideerd

-- ensure_beheerrapporten --
SELECT nmc.ensure_beheerrapporten()

-- begin_beheerrapport --
SELECT b.rapport_id, b.dv_id, b.oin, b.naam, b.kanaal, b.dag, b.onbevestigd, b.afgekapt,
    b.oudste, b.bevestigingstermijn::text AS bevestigingstermijn, b.notificatie_ids, b.aandeel,
    b.drempel, b.boven_drempel, b.te_melden, b.afgerond, b.template_id, b.notify_service,
    b.budget, b.webhook_gat, b.onverwerkbaar, b.onverwerkbaar_dag, b.niet_beschikbaar
FROM nmc.begin_beheerrapport_v2(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(drempel)s::double precision
) AS b

-- finish_beheerrapport --
SELECT nmc.finish_beheerrapport(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(rapport_id)s::uuid, %(uitkomst)s::text,
    %(notifynl_id)s::uuid
) AS uitkomst

-- finish_terugkoppelen --
-- epoch: the cluster epoch the batch was read in (claim_terugkoppelen's epoch).
SELECT nmc.finish_terugkoppelen_v2(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(uitkomst)s::text, %(xid)s::xid8,
    %(event_id)s::bigint, %(epoch)s::integer
) AS uitkomst

-- ============================================================================================
-- The feed, the webhook resume and operations of the DV API (role nmc_api):
-- one call per request. A name is the function's own (only the API calls these) or starts
-- with api_ or admin_, so it cannot clash with the worker's (tests_py/test_queries.py checks).
-- ============================================================================================

-- page_events --
SELECT nmc.page_events(
    %(dv_id)s::integer, %(epoch)s::integer, %(xid)s::xid8, %(event_id)s::bigint,
    %(uitgegeven_op)s::timestamptz, %(limiet)s::integer
)

-- acknowledge_cursor --
SELECT nmc.acknowledge_cursor(
    %(dv_id)s::integer, %(epoch)s::integer, %(xid)s::xid8, %(event_id)s::bigint,
    %(uitgegeven_op)s::timestamptz
)

-- snapshot_notificaties --
SELECT nmc.snapshot_notificaties(%(dv_id)s::integer, %(na)s::uuid, %(limiet)s::integer)

-- take_feed_aanroep_api --
-- With a replica (nmc.api.replica): the primary's half of a feed or snapshot page.
SELECT nmc.take_feed_aanroep_api(
    %(dv_id)s::integer, %(epoch)s::integer, %(xid)s::xid8, %(uitgegeven_op)s::timestamptz
)

-- read_feed_pagina --
-- The replica's half: the page, read-only under the standby's watermark; NMR01 when the
-- server is more than max_lag seconds behind (then the same call on the primary).
SELECT nmc.read_feed_pagina_v2(
    %(dv_id)s::integer, %(epoch)s::integer, %(xid)s::xid8, %(event_id)s::bigint,
    %(uitgegeven_op)s::timestamptz, %(limiet)s::integer, %(max_lag)s::double precision
)

-- read_snapshot_pagina --
-- watermerk: the first page's watermark (NULL on the first page); NMR01 when this server
-- is behind it or more than max_lag seconds behind.
SELECT nmc.read_snapshot_pagina_v2(
    %(dv_id)s::integer, %(na)s::uuid, %(limiet)s::integer, %(watermerk)s::xid8,
    %(max_lag)s::double precision
)

-- resume_webhook --
SELECT nmc.resume_webhook(%(dv_id)s::integer)

-- set_webhook_positie --
-- No cursor (xid NULL): the oldest available event.
SELECT nmc.set_webhook_positie(
    %(dv_id)s::integer, %(epoch)s::integer, %(xid)s::xid8, %(event_id)s::bigint,
    %(uitgegeven_op)s::timestamptz
)

-- api_metrics --
-- Also what `nmc admin report geen-contactgegevens` reads (as admin).
SELECT m.naam, m.labels, m.waarde FROM nmc.metrics() AS m

-- api_metrics_replica --
-- On the replica: the same rows and its replay lag; NMR01 beyond max_lag seconds.
SELECT m.naam, m.labels, m.waarde FROM nmc.metrics_replica(%(max_lag)s::double precision) AS m

-- api_ready --
-- Readiness as nmc_api: the clock answers for this role and this version's functions exist
-- (the role cannot read nmc_migratie; see nmc.api.routes_ops).
SELECT
    nmc.now() IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.page_events(integer, integer, xid8, bigint, timestamptz, integer)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.acknowledge_cursor(integer, integer, xid8, bigint, timestamptz)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure('nmc.snapshot_notificaties(integer, uuid, integer)') IS NOT NULL
    AND pg_catalog.to_regprocedure('nmc.resume_webhook(integer)') IS NOT NULL
    AND pg_catalog.to_regprocedure('nmc.metrics()') IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.take_feed_aanroep_api(integer, integer, xid8, timestamptz)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.read_feed_pagina(integer, integer, xid8, bigint, timestamptz, integer)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.read_feed_pagina_v2(integer, integer, xid8, bigint, timestamptz, integer, float8)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.read_snapshot_pagina_v2(integer, uuid, integer, xid8, float8)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure('nmc.metrics_replica(float8)') IS NOT NULL
    AND pg_catalog.to_regprocedure('nmc.get_afleverbewijs(integer, uuid)') IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.get_geschiedenis(integer, uuid, integer, bigint, integer)'
    ) IS NOT NULL
    AND pg_catalog.to_regprocedure(
        'nmc.store_receipts_v2(text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], '
        || 'integer[])'
    ) IS NOT NULL AS gereed

-- ------------------------------------------------------------------------------------
-- The operator's commands (`nmc admin …`, as the admin connection).

-- get_webhookvalidatie --
SELECT nmc.get_webhookvalidatie(%(dv_id)s::integer) AS validatie

-- configure_beheerrapport --
SELECT nmc.configure_beheerrapport(%(config)s::jsonb)

-- list_beheerrapporten --
SELECT r.dv_id, r.dag::text AS dag, r.kanaal, r.onbevestigd, r.onbevestigd_afgekapt,
    r.geen_contactgegevens_aandeel, r.boven_drempel, r.uitkomst, r.afgerond_op
FROM nmc.list_beheerrapporten(%(limiet)s::integer) AS r

-- admin_raise_epoch --
SELECT nmc.raise_epoch() AS epoch

-- admin_report_onbevestigd --
-- afgekapt: the count reached settings.onbevestigd_telgrens and means "at least".
SELECT r.dv_id, r.naam, r.beheerkanaal, r.aantal, r.afgekapt, r.oudste
FROM nmc.report_onbevestigd_v2() AS r

-- admin_list_taken --
SELECT
    t.id, t.soort::text AS soort, t.staat::text AS staat, t.dv_id, t.notificatie_id, t.due,
    t.pogingen, t.uitstellen, t.laatste_fout, t.lease_eigenaar
FROM nmc.list_taken(
    %(staat)s::nmc.taak_staat, %(soort)s::nmc.taak_soort, %(limiet)s::integer
) AS t

-- admin_reopen_taak --
SELECT nmc.reopen_taak(%(taak_id)s::bigint, %(toelichting)s::text, %(door)s::text)

-- admin_force_transition --
SELECT nmc.force_transition(
    %(notificatie_id)s::uuid, %(naar)s::nmc.notificatie_status, %(reden)s::nmc.reden,
    %(toelichting)s::text, %(door)s::text
) AS versie

-- admin_list_notify_services --
SELECT * FROM nmc.list_notify_services()

-- admin_set_notify_service --
SELECT nmc.set_notify_service(
    %(code)s::text, %(per_minuut)s::integer, %(navraag_aandeel)s::numeric, %(burst)s::integer,
    %(dag_limiet)s::integer, %(burst_afleiden)s::boolean
)

-- admin_bewijs_sleutel_bewaring --
-- `nmc admin keys afleverbewijs activate`: the database clock (a retired key's retiredAt) and
-- how long a retired proof key stays published: the delivery-proof retention plus a day.
SELECT
    nmc.now() AS nu,
    pg_catalog.date_part('epoch', i.bewijs_bewaartermijn + interval '1 day') AS bewaar_seconden
FROM nmc.instellingen AS i

-- admin_kek_status --
-- Live keys per KEK, the re-wrap target of maintenance and when it was first reported active.
SELECT k.kek_id, k.sleutels, k.doel, k.actief_gemeld_op FROM nmc.kek_status_v2() AS k

-- admin_list_rewrap --
-- The next batch after the cursor `na` (NULL: the start); sleutel_gewrapt NULL: nothing to do.
SELECT r.notificatie_id, r.kek_id, r.sleutel_gewrapt
FROM nmc.list_rewrap_v2(%(naar_kek)s::text, %(na)s::uuid, %(batch)s::integer) AS r

-- admin_store_rewrap --
SELECT nmc.store_rewrap(
    %(ids)s::uuid[], %(oude_kek)s::text[], %(sleutels)s::bytea[], %(naar_kek)s::text
) AS opgeslagen

-- maintain_event_partities --
SELECT nmc.maintain_event_partities() AS partitie

-- drop_event_partities --
SELECT nmc.drop_event_partities() AS verwijderd

-- delete_expired --
SELECT nmc.delete_expired(%(batch)s::integer) AS verwijderd

-- Maintenance as tasks and the erasure, by the worker (role nmc_worker).

-- process_wissen --
SELECT nmc.process_wissen(%(batch)s::integer) AS aantal

-- kek_melding_afmelden --
-- A stopping worker withdraws its KEK report (the re-wrap target follows the live ones).
SELECT nmc.kek_melding_afmelden(%(eigenaar)s::text) AS doel

-- ensure_onderhoud --
-- One open task per maintenance job; records the worker's active KEK (an id only), by the
-- worker's name: the re-wrap target moves once every live worker reports a newer one.
SELECT nmc.ensure_onderhoud_v2(%(kek_actief)s::text, %(eigenaar)s::text) AS gepland

-- kek_ids_levend --
-- At start-up: the KEKs that still wrap live data keys; the worker's ring must hold them all.
SELECT k AS kek_id FROM nmc.kek_ids_levend() AS k

-- run_onderhoud --
SELECT nmc.run_onderhoud(%(taak_id)s::bigint, %(claim_epoch)s::integer) AS uitkomst

-- templates_te_verversen --
-- The maintenance job templates: what to read; each read is recorded with record_template.
SELECT c.notify_service, c.template_id
FROM nmc.claim_template_verversen(%(taak_id)s::bigint, %(claim_epoch)s::integer) AS c

-- record_template --
SELECT nmc.record_template(
    %(notify_service)s::text, %(template_id)s::uuid, %(uitkomst)s::text, %(versie)s::integer,
    %(placeholders)s::text[], %(sleutels)s::text[], %(fout)s::text
) AS staat

-- finish_template_verversen --
SELECT nmc.finish_template_verversen(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(meer)s::boolean
) AS due

-- list_herwrap --
SELECT l.notificatie_id, l.kek_id, l.sleutel_gewrapt
FROM nmc.list_herwrap(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(kek_actief)s::text, %(batch)s::integer
) AS l

-- finish_herwrap --
SELECT nmc.finish_herwrap(
    %(taak_id)s::bigint, %(claim_epoch)s::integer, %(ids)s::uuid[], %(oude_kek)s::text[],
    %(sleutels)s::bytea[], %(naar_kek)s::text, %(na_kek)s::text, %(na_id)s::uuid
) AS opgeslagen

-- ------------------------------------------------------------------------------------
-- The worker's operations listener (nmc.worker.ops_http, role nmc_worker).

-- worker_metrics --
-- The same one function as the API's /metrics: every count that lives in the database.
SELECT m.naam, m.labels, m.waarde FROM nmc.metrics() AS m

-- worker_ready --
-- Readiness as nmc_worker: the clock answers for this role and every function the worker's
-- queries call exists and is the worker's to execute (like api_ready, the role cannot read
-- nmc_migratie). `functies` is derived from this file's nmc_worker sections
-- (nmc.queries.worker_functions), not a hand list; by name, as a changed signature gets a
-- new name (docs/migrations.md).
SELECT
    nmc.now() IS NOT NULL
    AND (
        SELECT pg_catalog.count(DISTINCT p.proname)
        FROM pg_catalog.pg_proc AS p
        WHERE
            p.pronamespace = 'nmc'::regnamespace
            AND p.proname = any(%(functies)s::text [])
            AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
    ) = pg_catalog.cardinality(%(functies)s::text []) AS gereed

-- The operator console (`nmc console`, role nmc_console; functions/beheer/console.sql).

-- console_now --
SELECT nmc.now()

-- console_statussen --
SELECT s.dv_id, s.naam, s.status::text AS status, s.uur, s.aantal
FROM nmc.console_statussen(%(uren)s::integer) AS s

-- console_achterstand --
SELECT a.soort::text AS soort, a.dv_id, a.naam, a.open, a.due, a.claimed, a.mislukt,
    a.oudste_due
FROM nmc.console_achterstand() AS a

-- console_verzendweigeringen --
SELECT w.dv_id, w.naam, w.berichttype, w.soort, w.sinds, w.laatst, w.aantal, w.wachtend
FROM nmc.console_verzendweigeringen() AS w

-- console_mislukt --
-- forceerbaar: SQL offers a transition to force from the notification's status.
SELECT m.id, m.soort::text AS soort, m.dv_id, m.naam, m.notificatie_id,
    m.status::text AS status, m.due, m.pogingen, m.uitstellen, m.laatste_fout, m.aangemaakt_op,
    m.status IS NOT NULL
    AND pg_catalog.jsonb_array_length(nmc.console_overgangen(m.status)) > 0 AS forceerbaar
FROM nmc.console_mislukt(%(limiet)s::integer, %(soort)s::nmc.taak_soort) AS m

-- console_taak --
SELECT t.id, t.soort::text AS soort, t.staat::text AS staat, t.dv_id, t.naam,
    t.notificatie_id, t.status::text AS status, t.due, t.pogingen, t.uitstellen,
    t.laatste_fout, t.lease_tot, t.aangemaakt_op, t.afgerond_op
FROM nmc.console_taak(%(taak_id)s::bigint) AS t

-- console_notificatie --
SELECT n.id, n.dv_id, n.naam, n.berichttype, n.regie::text AS regie, n.status::text AS status,
    n.reden::text AS reden, n.versie, n.aangenomen_op, n.geldig_tot, n.terminaal_op,
    n.overgangen
FROM nmc.console_notificatie(%(notificatie_id)s::uuid) AS n

-- console_notificatie_events --
SELECT e.sequence, e.van::text AS van, e.naar::text AS naar, e.reden::text AS reden,
    e.tijdstip
FROM nmc.console_notificatie_events(%(notificatie_id)s::uuid) AS e

-- console_notificatie_taken --
SELECT t.id, t.soort::text AS soort, t.staat::text AS staat, t.due, t.pogingen,
    t.laatste_fout, t.afgerond_op
FROM nmc.console_notificatie_taken(%(notificatie_id)s::uuid) AS t

-- console_webhooks --
SELECT w.dv_id, w.naam, w.webhook_host, w.epoch, w.xid::text AS xid, w.event_id,
    w.geleverd_op, w.mislukt, w.max_mislukt, w.gepauzeerd_tot, w.uitgeschakeld, w.gat_op,
    w.taak_staat::text AS taak_staat, w.taak_due
FROM nmc.console_webhooks_v2() AS w

-- console_onbevestigd --
SELECT o.dv_id, o.naam, o.aantal, o.afgekapt, o.oudste, o.bevestigd_op,
    o.bevestigingstermijn::text AS bevestigingstermijn
FROM nmc.console_onbevestigd() AS o

-- console_budget_dag --
SELECT * FROM nmc.console_budget_dag()

-- console_budget --
SELECT b.notify_service, b.venster_start, b.soort, b.gebruikt, b.plafond
FROM nmc.console_budget(%(minuten)s::integer) AS b

-- console_onderhoud --
SELECT o.huidige_xid::text AS huidige_xid, o.partitie, o.vulgraad, o.partities,
    o.verwijderde_partities, o.default_rijen, o.default_grens
FROM nmc.console_onderhoud() AS o

-- console_event_partities --
SELECT p.naam, p.xid_van::text AS xid_van, p.xid_tot::text AS xid_tot, p.aangemaakt_op,
    p.verwijderd_op
FROM nmc.console_event_partities() AS p

-- console_onderhoud_taken --
SELECT t.id, t.soort::text AS soort, t.werk, t.staat::text AS staat, t.due, t.pogingen,
    t.uitstellen, t.laatste_fout, t.aangemaakt_op, t.afgerond_op
FROM nmc.console_onderhoud_taken() AS t

-- console_beheeracties --
SELECT a.id, a.soort, a.notificatie_id, a.taak_id, a.dv_id, a.van::text AS van,
    a.naar::text AS naar, a.toelichting, a.door, a.tijdstip
FROM nmc.console_beheeracties(%(limiet)s::integer, %(voor)s::bigint) AS a

-- console_reopen_taak --
SELECT nmc.console_reopen_taak_v2(%(taak_id)s::bigint, %(toelichting)s::text, %(sessie)s::bytea)

-- console_force_transition --
SELECT nmc.console_force_transition_v2(
    %(notificatie_id)s::uuid, %(naar)s::nmc.notificatie_status, %(reden)s::nmc.reden,
    %(toelichting)s::text, %(sessie)s::bytea
) AS versie

-- console_resume_webhook --
SELECT nmc.resume_webhook_beheer_v2(%(dv_id)s::integer, %(toelichting)s::text, %(sessie)s::bytea)

-- console_open_sessie --
-- After the console verified the IAM token: the session's CSRF token.
SELECT nmc.console_open_sessie(
    %(sessie)s::bytea, %(subject)s::text, %(mag_handelen)s::boolean, %(duur)s::interval
) AS csrf

-- console_sessie --
SELECT s.subject, s.mag_handelen, s.csrf, s.verloopt_op
FROM nmc.console_sessie(%(sessie)s::bytea) AS s

-- console_sluit_sessie --
SELECT nmc.console_sluit_sessie(%(sessie)s::bytea) AS gesloten
