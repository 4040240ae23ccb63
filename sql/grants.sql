-- Grants, re-applied by every `nmc migrate` (idempotent). The shell's roles own nothing:
-- no table rights at all, only EXECUTE on the API functions listed here.

REVOKE ALL ON ALL TABLES IN SCHEMA nmc FROM PUBLIC, nmc_api, nmc_worker, nmc_console;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA nmc FROM PUBLIC, nmc_api, nmc_worker, nmc_console;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA nmc FROM PUBLIC, nmc_api, nmc_worker, nmc_console;
GRANT USAGE ON SCHEMA nmc TO nmc_api, nmc_worker, nmc_console;

-- Every role: the clock.
GRANT EXECUTE ON FUNCTION nmc.now() TO nmc_api, nmc_worker, nmc_console;

-- The DV API (nmc api).
GRANT EXECUTE ON FUNCTION nmc.intake_notificatie_v2(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, bytea[], bytea[], bytea
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.intake_notificaties_v2(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], bytea[], bytea[], bytea[]
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.intake_notificatie_v3(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, text, bytea[], bytea[], bytea
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.intake_notificaties_v3(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], text[], bytea[], bytea[], bytea[]
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.intake_notificatie_v4(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, text, text, bytea[], bytea[], bytea
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.intake_notificaties_v4(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], text[], text[], bytea[], bytea[],
    bytea[]
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.cancel_notificatie(integer, uuid) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.find_dienstverlener(text) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.get_notificatie(integer, uuid) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.find_notificaties(
    integer, bytea[], integer, timestamptz, uuid
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.store_receipt(text, uuid, text, timestamptz, timestamptz)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.store_receipts_v2(
    text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], integer[]
) TO nmc_api;
-- The delivery proof and the history (functions/bewijs/afleverbewijs.sql).
GRANT EXECUTE ON FUNCTION nmc.get_afleverbewijs(integer, uuid) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.get_geschiedenis(integer, uuid, integer, bigint, integer)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.get_geschiedenis_v2(integer, uuid, integer, integer, integer)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.page_events(integer, integer, xid8, bigint, timestamptz, integer)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.acknowledge_cursor(integer, integer, xid8, bigint, timestamptz)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.snapshot_notificaties(integer, uuid, integer) TO nmc_api;
-- The feed from a standby (functions/feed/feed_replica.sql): the call count on the primary,
-- the page on the standby.
GRANT EXECUTE ON FUNCTION nmc.take_feed_aanroep_api(integer, integer, xid8, timestamptz)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.read_feed_pagina(integer, integer, xid8, bigint, timestamptz, integer)
TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.read_snapshot_pagina(integer, uuid, integer) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.read_feed_pagina_v2(
    integer, integer, xid8, bigint, timestamptz, integer, double precision
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.read_snapshot_pagina_v2(
    integer, uuid, integer, xid8, double precision
) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.metrics_replica(double precision) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.meld_werk() TO nmc_api;

-- The workers (nmc worker).
GRANT EXECUTE ON FUNCTION nmc.claim_taken(nmc.taak_soort, text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.soorten_met_werk(nmc.taak_soort[]) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.luister_naar_werk() TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.claim_verzenden(text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.extend_lease(bigint, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.extend_leases(bigint[], integer[]) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_taak(bigint, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_taken(bigint[], integer[]) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.defer_taak(bigint, integer, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.defer_limiet_taak(bigint, integer, text, text, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.fail_taak(bigint, integer, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_verzenden(bigint, integer, text, uuid, uuid) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_verzenden_batch(
    bigint[], integer[], text[], uuid[], uuid[]
) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_verzenden_batch_v2(
    bigint[], integer[], text[], uuid[], uuid[], integer[]
) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.record_contactgegevens(bigint[], integer[], uuid[]) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.defer_verzenden(bigint, integer, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.process_receipts(integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.process_receipts_v2(integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.claim_navraag_v2(text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_navraag(
    bigint, integer, boolean, text, timestamptz, timestamptz
) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_navraag_v2(
    bigint, integer, boolean, text, timestamptz, timestamptz, uuid, uuid, integer
) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.process_vaststellingen(integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.process_vaststellingen_v2(integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.intake_sporen(uuid[]) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.run_controle(bigint, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.ensure_controle() TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.claim_ongeldig_melden(text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.count_malformed_receipt() TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.count_refused_callback(integer) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.process_wissen(integer) TO nmc_worker;
-- The previous release's worker calls these three itself (this release's runs maintenance as
-- tasks, nmc.run_onderhoud): kept for it until the release after (docs/migrations.md).
GRANT EXECUTE ON FUNCTION nmc.maintain_event_partities(bigint, xid8) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.drop_event_partities(xid8) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.delete_expired(integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.store_rewrap(uuid[], text[], bytea[], text) TO nmc_worker;
-- Maintenance as tasks (functions/onderhoud/onderhoud.sql): every worker runs it.
GRANT EXECUTE ON FUNCTION nmc.ensure_onderhoud_v2(text, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.kek_melding_afmelden(text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.kek_ids_levend() TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.run_onderhoud(bigint, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.list_herwrap(bigint, integer, text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_herwrap(
    bigint, integer, uuid[], text[], bytea[], text, text, uuid
) TO nmc_worker;
-- The berichttypen's NotifyNL templates (functions/register/templates.sql): the job templates.
GRANT EXECUTE ON FUNCTION nmc.claim_template_verversen(bigint, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.record_template(text, uuid, text, integer, text[], text[], text)
TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_template_verversen(bigint, integer, boolean) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.markeer_template_verouderd(integer, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.metrics() TO nmc_api, nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.ensure_terugkoppelen() TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.claim_terugkoppelen_v2(text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.claim_terugkoppelen_v3(text, integer) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.record_webhookvalidatie(integer, text, text, text) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_terugkoppelen_v2(
    bigint, integer, text, xid8, bigint, integer
) TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.resume_webhook(integer) TO nmc_api;
GRANT EXECUTE ON FUNCTION nmc.set_webhook_positie(integer, integer, xid8, bigint, timestamptz)
TO nmc_api;
-- The daily beheer report (functions/beheer/rapportage.sql).
GRANT EXECUTE ON FUNCTION nmc.ensure_beheerrapporten() TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.begin_beheerrapport(bigint, integer, double precision)
TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.begin_beheerrapport_v2(bigint, integer, double precision)
TO nmc_worker;
GRANT EXECUTE ON FUNCTION nmc.finish_beheerrapport(bigint, integer, uuid, text, uuid)
TO nmc_worker;

-- The operator console (nmc console): its reads and the beheer actions
-- (functions/beheer/console.sql); nothing else.
GRANT EXECUTE ON FUNCTION nmc.console_statussen(integer) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_achterstand() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_verzendweigeringen() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_mislukt(integer, nmc.taak_soort) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_taak(bigint) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_notificatie(uuid) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_notificatie_events(uuid) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_notificatie_taken(uuid) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_webhooks() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_webhooks_v2() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_onbevestigd() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_budget(integer) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_budget_dag() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_onderhoud() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_event_partities() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_onderhoud_taken() TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_beheeracties(integer, bigint) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_reopen_taak(bigint, text, text) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_force_transition(
    uuid, nmc.notificatie_status, nmc.reden, text, text
) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.resume_webhook_beheer(integer, text, text) TO nmc_console;
-- The console's sessions and the actions that name one (functions/beheer/console_sessie.sql).
GRANT EXECUTE ON FUNCTION nmc.console_open_sessie(bytea, text, boolean, interval) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_sessie(bytea) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_sluit_sessie(bytea) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_reopen_taak_v2(bigint, text, bytea) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_force_transition_v2(
    uuid, nmc.notificatie_status, nmc.reden, text, bytea
) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.resume_webhook_beheer_v2(integer, text, bytea) TO nmc_console;
GRANT EXECUTE ON FUNCTION nmc.console_overgangen(nmc.notificatie_status) TO nmc_console;
