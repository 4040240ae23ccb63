-- The shell's roles own nothing and may only EXECUTE the API functions granted to them.
BEGIN;
SELECT plan(20);
\ir fixtures/setup.sql

SELECT is_empty(
    $$SELECT c.relname, a.privilege_type
      FROM pg_catalog.pg_class AS c, LATERAL pg_catalog.aclexplode(c.relacl) AS a
      WHERE c.relnamespace IN ('nmc'::regnamespace, 'nmc_migratie'::regnamespace)
          AND a.grantee IN (
              0, 'nmc_api'::regrole, 'nmc_worker'::regrole, 'nmc_console'::regrole
          )$$,
    'no table, view or sequence grants anything to PUBLIC, nmc_api, nmc_worker or nmc_console'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND (p.proacl IS NULL
               OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) AS a
                          WHERE a.grantee = 0))$$,
    'no nmc function is executable by PUBLIC (not even by default ACL)'
);
SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND pg_catalog.has_function_privilege('nmc_api', p.oid, 'EXECUTE')$$,
    $$VALUES ('nmc.now()'), ('nmc.metrics()'),
        ('nmc.intake_notificatie_v2(uuid,integer,text,nmc.regie,bytea,smallint,bytea,smallint,bytea,bytea,bytea,text,timestamp with time zone,uuid,text,text,bytea[],bytea[],bytea)'),
        ('nmc.intake_notificaties_v2(integer,nmc.regie,smallint,smallint,text,uuid,uuid[],text[],bytea[],bytea[],bytea[],bytea[],bytea[],timestamp with time zone[],text[],text[],bytea[],bytea[],bytea[])'),
        ('nmc.intake_notificatie_v3(uuid,integer,text,nmc.regie,bytea,smallint,bytea,smallint,bytea,bytea,bytea,text,timestamp with time zone,uuid,text,text,text,bytea[],bytea[],bytea)'),
        ('nmc.intake_notificaties_v3(integer,nmc.regie,smallint,smallint,text,uuid,uuid[],text[],bytea[],bytea[],bytea[],bytea[],bytea[],timestamp with time zone[],text[],text[],text[],bytea[],bytea[],bytea[])'),
        ('nmc.intake_notificatie_v4(uuid,integer,text,nmc.regie,bytea,smallint,bytea,smallint,bytea,bytea,bytea,text,timestamp with time zone,uuid,text,text,text,text,bytea[],bytea[],bytea)'),
        ('nmc.intake_notificaties_v4(integer,nmc.regie,smallint,smallint,text,uuid,uuid[],text[],bytea[],bytea[],bytea[],bytea[],bytea[],timestamp with time zone[],text[],text[],text[],text[],bytea[],bytea[],bytea[])'),
        ('nmc.cancel_notificatie(integer,uuid)'),
        ('nmc.find_dienstverlener(text)'),
        ('nmc.get_notificatie(integer,uuid)'),
        ('nmc.find_notificaties(integer,bytea[],integer,timestamp with time zone,uuid)'),
        ('nmc.store_receipt(text,uuid,text,timestamp with time zone,timestamp with time zone)'),
        ('nmc.store_receipts_v2(text[],uuid[],text[],timestamp with time zone[],timestamp with time zone[],uuid[],integer[])'),
        ('nmc.get_afleverbewijs(integer,uuid)'),
        ('nmc.get_geschiedenis(integer,uuid,integer,bigint,integer)'),
        ('nmc.get_geschiedenis_v2(integer,uuid,integer,integer,integer)'),
        ('nmc.count_malformed_receipt()'),
        ('nmc.count_refused_callback(integer)'),
        ('nmc.page_events(integer,integer,xid8,bigint,timestamp with time zone,integer)'),
        ('nmc.acknowledge_cursor(integer,integer,xid8,bigint,timestamp with time zone)'),
        ('nmc.snapshot_notificaties(integer,uuid,integer)'),
        ('nmc.take_feed_aanroep_api(integer,integer,xid8,timestamp with time zone)'),
        ('nmc.read_feed_pagina(integer,integer,xid8,bigint,timestamp with time zone,integer)'),
        ('nmc.read_snapshot_pagina(integer,uuid,integer)'),
        ('nmc.read_feed_pagina_v2(integer,integer,xid8,bigint,timestamp with time zone,integer,double precision)'),
        ('nmc.read_snapshot_pagina_v2(integer,uuid,integer,xid8,double precision)'),
        ('nmc.metrics_replica(double precision)'),
        ('nmc.meld_werk()'),
        ('nmc.resume_webhook(integer)'),
        ('nmc.set_webhook_positie(integer,integer,xid8,bigint,timestamp with time zone)')$$,
    'nmc_api may execute exactly the API functions'
);
SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND pg_catalog.has_function_privilege('nmc_worker', p.oid, 'EXECUTE')$$,
    $$VALUES ('nmc.now()'), ('nmc.metrics()'),
        ('nmc.claim_taken(nmc.taak_soort,text,integer)'),
        ('nmc.soorten_met_werk(nmc.taak_soort[])'),
        ('nmc.luister_naar_werk()'),
        ('nmc.claim_verzenden(text,integer)'),
        ('nmc.extend_lease(bigint,integer)'),
        ('nmc.extend_leases(bigint[],integer[])'),
        ('nmc.finish_taak(bigint,integer)'),
        ('nmc.finish_taken(bigint[],integer[])'),
        ('nmc.defer_taak(bigint,integer,text)'),
        ('nmc.defer_limiet_taak(bigint,integer,text,text,text)'),
        ('nmc.fail_taak(bigint,integer,text)'),
        ('nmc.finish_verzenden(bigint,integer,text,uuid,uuid)'),
        ('nmc.finish_verzenden_batch(bigint[],integer[],text[],uuid[],uuid[])'),
        ('nmc.finish_verzenden_batch_v2(bigint[],integer[],text[],uuid[],uuid[],integer[])'),
        ('nmc.record_contactgegevens(bigint[],integer[],uuid[])'),
        ('nmc.defer_verzenden(bigint,integer,text)'),
        ('nmc.process_receipts(integer)'),
        ('nmc.process_receipts_v2(integer)'),
        ('nmc.claim_navraag_v2(text,integer)'),
        ('nmc.finish_navraag(bigint,integer,boolean,text,timestamp with time zone,timestamp with time zone)'),
        ('nmc.finish_navraag_v2(bigint,integer,boolean,text,timestamp with time zone,timestamp with time zone,uuid,uuid,integer)'),
        ('nmc.process_vaststellingen(integer)'),
        ('nmc.process_vaststellingen_v2(integer)'),
        ('nmc.intake_sporen(uuid[])'),
        ('nmc.run_controle(bigint,integer)'),
        ('nmc.ensure_controle()'),
        ('nmc.claim_ongeldig_melden(text,integer)'),
        ('nmc.maintain_event_partities(bigint,xid8)'),
        ('nmc.drop_event_partities(xid8)'),
        ('nmc.process_wissen(integer)'),
        ('nmc.delete_expired(integer)'),
        ('nmc.store_rewrap(uuid[],text[],bytea[],text)'),
        ('nmc.ensure_onderhoud_v2(text,text)'),
        ('nmc.kek_melding_afmelden(text)'),
        ('nmc.kek_ids_levend()'),
        ('nmc.run_onderhoud(bigint,integer)'),
        ('nmc.list_herwrap(bigint,integer,text,integer)'),
        ('nmc.finish_herwrap(bigint,integer,uuid[],text[],bytea[],text,text,uuid)'),
        ('nmc.claim_template_verversen(bigint,integer)'),
        ('nmc.record_template(text,uuid,text,integer,text[],text[],text)'),
        ('nmc.finish_template_verversen(bigint,integer,boolean)'),
        ('nmc.markeer_template_verouderd(integer,text)'),
        ('nmc.ensure_terugkoppelen()'),
        ('nmc.finish_terugkoppelen_v2(bigint,integer,text,xid8,bigint,integer)'),
        ('nmc.claim_terugkoppelen_v2(text,integer)'),
        ('nmc.claim_terugkoppelen_v3(text,integer)'),
        ('nmc.record_webhookvalidatie(integer,text,text,text)'),
        ('nmc.ensure_beheerrapporten()'),
        ('nmc.begin_beheerrapport(bigint,integer,double precision)'),
        ('nmc.begin_beheerrapport_v2(bigint,integer,double precision)'),
        ('nmc.finish_beheerrapport(bigint,integer,uuid,text,uuid)')$$,
    'nmc_worker may execute exactly the worker functions'
);
SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND pg_catalog.has_function_privilege('nmc_console', p.oid, 'EXECUTE')$$,
    $$VALUES ('nmc.now()'),
        ('nmc.console_statussen(integer)'),
        ('nmc.console_achterstand()'),
        ('nmc.console_verzendweigeringen()'),
        ('nmc.console_mislukt(integer,nmc.taak_soort)'),
        ('nmc.console_taak(bigint)'),
        ('nmc.console_notificatie(uuid)'),
        ('nmc.console_notificatie_events(uuid)'),
        ('nmc.console_notificatie_taken(uuid)'),
        ('nmc.console_webhooks()'),
        ('nmc.console_webhooks_v2()'),
        ('nmc.console_onbevestigd()'),
        ('nmc.console_budget(integer)'),
        ('nmc.console_budget_dag()'),
        ('nmc.console_onderhoud()'),
        ('nmc.console_event_partities()'),
        ('nmc.console_onderhoud_taken()'),
        ('nmc.console_beheeracties(integer,bigint)'),
        ('nmc.console_reopen_taak(bigint,text,text)'),
        ('nmc.console_force_transition(uuid,nmc.notificatie_status,nmc.reden,text,text)'),
        ('nmc.resume_webhook_beheer(integer,text,text)'),
        ('nmc.console_open_sessie(bytea,text,boolean,interval)'),
        ('nmc.console_sessie(bytea)'),
        ('nmc.console_sluit_sessie(bytea)'),
        ('nmc.console_reopen_taak_v2(bigint,text,bytea)'),
        ('nmc.console_force_transition_v2(uuid,nmc.notificatie_status,nmc.reden,text,bytea)'),
        ('nmc.resume_webhook_beheer_v2(integer,text,bytea)'),
        ('nmc.console_overgangen(nmc.notificatie_status)')$$,
    'nmc_console may execute exactly the console''s reads and the beheer actions'
);
SELECT is_empty(
    $$SELECT c.relname FROM pg_catalog.pg_class AS c
      WHERE c.relnamespace = 'nmc'::regnamespace
          AND c.relowner <> 'nmc_owner'::regrole
      UNION ALL
      SELECT p.proname FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace AND p.proowner <> 'nmc_owner'::regrole
      UNION ALL
      SELECT t.typname FROM pg_catalog.pg_type AS t
      WHERE t.typnamespace = 'nmc'::regnamespace AND t.typowner <> 'nmc_owner'::regrole$$,
    'nmc_owner owns every table, function and type'
);
SELECT set_eq(
    $$SELECT p.proname::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY(p.proconfig), false)$$,
    $$VALUES ('allowed_transitions'), ('transition_allowed'), ('is_terminal'), ('reden_fits'),
        ('verzendtempo_instelling'), ('verzendtempo_kind'), ('verzenddag'), ('taak_claimbaar'),
        ('verzendtempo_interval'), ('verzendtempo_dag_rest'), ('verzendaandeel_reserve'),
        ('poging_status_voor')$$,
    'every nmc function pins search_path, except the inlinable helpers (schema-qualified)'
);
SELECT set_eq(
    $$SELECT p.proname::text FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace AND p.prosecdef$$,
    $$VALUES ('now'),
             ('intake_notificatie_v2'), ('intake_notificaties_v2'), ('intake_notificatie_v3'),
             ('intake_notificaties_v3'), ('intake_notificatie_v4'), ('intake_notificaties_v4'),
             ('cancel_notificatie'),
             ('find_dienstverlener'), ('get_notificatie'), ('find_notificaties'),
             ('claim_taken'), ('soorten_met_werk'), ('claim_verzenden'), ('extend_lease'),
             ('extend_leases'),
             ('finish_taak'), ('finish_taken'), ('defer_taak'), ('defer_limiet_taak'), ('fail_taak'),
             ('finish_verzenden'), ('finish_verzenden_batch'), ('record_contactgegevens'),
             ('defer_verzenden'),
             ('store_receipt'), ('process_receipts'), ('process_receipts_v2'),
             ('claim_navraag_v2'),
             ('finish_navraag'), ('finish_navraag_v2'),
             ('process_vaststellingen'), ('process_vaststellingen_v2'), ('intake_sporen'),
             ('run_controle'), ('ensure_controle'),
             ('claim_ongeldig_melden'), ('count_malformed_receipt'), ('page_events'),
             ('acknowledge_cursor'), ('snapshot_notificaties'),
             ('maintain_event_partities'), ('drop_event_partities'), ('raise_epoch'),
             ('process_wissen'), ('kek_status'), ('store_rewrap'),
             ('delete_expired'), ('metrics'), ('ensure_terugkoppelen'),
             ('resume_webhook'),
             ('count_refused_callback'), ('report_onbevestigd_v2'),
             ('finish_terugkoppelen_v2'), ('take_feed_aanroep_api'), ('read_feed_pagina'),
             ('read_snapshot_pagina'), ('store_receipts_v2'), ('get_afleverbewijs'),
             ('get_geschiedenis'), ('get_geschiedenis_v2'), ('console_statussen'),
             ('console_achterstand'), ('console_verzendweigeringen'),
             ('console_mislukt'), ('console_taak'), ('console_notificatie'),
             ('console_notificatie_events'), ('console_notificatie_taken'),
             ('console_webhooks'), ('console_webhooks_v2'), ('console_onbevestigd'),
             ('console_budget'), ('console_budget_dag'),
             ('console_onderhoud'), ('console_event_partities'), ('console_onderhoud_taken'),
             ('console_beheeracties'), ('console_reopen_taak'), ('console_force_transition'),
             ('resume_webhook_beheer'), ('ensure_beheerrapporten'), ('begin_beheerrapport'),
             ('begin_beheerrapport_v2'),
             ('finish_beheerrapport'), ('claim_terugkoppelen_v2'), ('record_webhookvalidatie'),
             ('run_onderhoud'), ('list_herwrap'), ('finish_herwrap'),
             ('set_event_partitie_breedte'), ('read_feed_pagina_v2'),
             ('read_snapshot_pagina_v2'), ('metrics_replica'), ('console_open_sessie'),
             ('console_sessie'), ('console_sluit_sessie'), ('console_reopen_taak_v2'),
             ('console_force_transition_v2'), ('resume_webhook_beheer_v2'),
             ('console_overgangen'), ('claim_terugkoppelen_v3'),
             ('set_webhook_positie'), ('begin_beheerrapport_v2'),
             ('ensure_onderhoud_v2'), ('kek_ids_levend'), ('kek_melding_afmelden'),
             ('record_template'), ('claim_template_verversen'),
             ('finish_template_verversen'), ('markeer_template_verouderd'),
             ('finish_verzenden_batch_v2')$$,
    'exactly the API functions run as SECURITY DEFINER'
);
SELECT ok(
    NOT (SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = 'nmc_owner'),
    'the owner role cannot log in'
);
SELECT set_eq(
    $$SELECT r.rolname::text, s.cfg
      FROM pg_catalog.pg_db_role_setting AS d
      INNER JOIN pg_catalog.pg_roles AS r ON r.oid = d.setrole,
      LATERAL unnest(d.setconfig) AS s (cfg)
      WHERE d.setdatabase = 0 AND r.rolname IN ('nmc_api', 'nmc_worker', 'nmc_console')
          AND s.cfg ~ '^(statement_timeout|idle_in_transaction_session_timeout)='$$,
    $$VALUES ('nmc_api', 'statement_timeout=5s'),
             ('nmc_api', 'idle_in_transaction_session_timeout=10s'),
             ('nmc_worker', 'statement_timeout=30s'),
             ('nmc_worker', 'idle_in_transaction_session_timeout=60s'),
             ('nmc_console', 'statement_timeout=15s'),
             ('nmc_console', 'idle_in_transaction_session_timeout=10s')$$,
    'every shell role has a statement and an idle-in-transaction timeout'
);

-- Acting as the API role.
SELECT pg_temp.nieuwe_notificatie() AS id \gset
GRANT EXECUTE ON FUNCTION pg_temp.fout(text) TO nmc_api, nmc_worker;
SET LOCAL ROLE nmc_api;
SELECT is(
    pg_temp.fout('SELECT * FROM nmc.notificatie'), '42501:',
    'nmc_api cannot read notificatie'
);
SELECT is(pg_temp.fout('SELECT * FROM nmc.event'), '42501:', 'nmc_api cannot read the event log');
SELECT is(
    pg_temp.fout(format($$UPDATE nmc.notificatie SET status = 'bezorgd' WHERE id = %L$$, :'id')),
    '42501:', 'nmc_api cannot update notificatie'
);
SELECT is(
    pg_temp.fout(
        'INSERT INTO nmc.taak (soort, due, aangemaakt_op) VALUES (''controle'', now(), now())'
    ),
    '42501:', 'nmc_api cannot plan tasks directly'
);
SELECT is(
    pg_temp.fout(format($$SELECT nmc.transition_notificatie(%L, 'in-verzending')$$, :'id')),
    '42501:', 'nmc_api cannot call the transition function directly'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.advance_clock('1 day')$$), '42501:',
    'nmc_api cannot move the clock'
);
SELECT is(
    pg_temp.fout(format('SELECT nmc.cancel_notificatie(1001, %L)', :'id')),
    NULL,
    'nmc_api can cancel through the API function'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.intake_notificatie_v3(gen_random_uuid(), 1001, 'aanslag',
        'decentraal', '\x0000000000000000000000000000000000000000000000000000000000000000',
        1::smallint, '\x0000000000000000000000000000000000000000000000000000000000000000',
        0::smallint, '\x01', NULL, '\x02', 'kek-1', NULL, NULL, '0123456789abcdef0123456789abcdef',
        NULL, NULL)$$),
    NULL,
    'nmc_api can accept a notification through the API function'
);
RESET ROLE;
SET LOCAL ROLE nmc_worker;
SELECT
    is(pg_temp.fout('SELECT * FROM nmc.taak'), '42501:', 'nmc_worker cannot read tasks directly');
SELECT is(
    pg_temp.fout($$SELECT nmc.advance_clock('1 day')$$), '42501:',
    'nmc_worker cannot move the clock'
);
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
