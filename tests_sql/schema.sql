-- The schema: SPEC §3's tables, §4's values, and a stated purpose for everything.
BEGIN;
SELECT plan(8);

SELECT tables_are(
    'nmc',
    ARRAY[
        'dienstverlener', 'berichttype', 'notificatie', 'poging', 'taak', 'verzendbudget',
        'quotumgebruik', 'event', 'event_default', 'event_x000000000000', 'event_partitie',
        'bevestiging', 'webhookpositie', 'cluster_epoch', 'klok', 'notify_service',
        'instellingen', 'teller', 'feedaanroep', 'bewijsaanroep',
        'beheeractie', 'receiptgeschiedenis', 'vaststelling', 'beheerrapport',
        'webhookvalidatie', 'onderhoudswerk', 'kek', 'console_sessie', 'verzendtempo',
        'verzendweigering', 'onverwerkbaar', 'kek_melding', 'notifynl_template',
        'verzendaandeel', 'notificatietelling'
    ],
    'nmc holds the tables of SPEC §3 (plus quota, partitions, clock, services, settings)'
);
SELECT enum_has_labels('nmc', 'notificatie_status', ARRAY[
    'aangenomen', 'in-verzending',
    'verzonden', 'bezorgd', 'definitief-bezorgd', 'niet-bezorgbaar', 'technisch-mislukt',
    'bezorgstatus-onbekend', 'verlopen', 'geannuleerd'
], 'notification statuses are SPEC §4''s');
SELECT enum_has_labels('nmc', 'reden', ARRAY[
    'onbereikbaar', 'geen-contactgegevens',
    'verlopen', 'geannuleerd', 'technisch'
], 'reasons are SPEC §4''s');
SELECT enum_has_labels('nmc', 'poging_status', ARRAY[
    'gepland', 'verzonden', 'bezorgd',
    'tijdelijk-mislukt', 'permanent-mislukt', 'technisch-mislukt', 'onbekend'
],
'attempt statuses are SPEC §4''s');
SELECT enum_has_labels('nmc', 'taak_soort', ARRAY[
    'verzenden', 'receipt', 'reconciliëren',
    'vaststellen', 'terugkoppelen', 'ongeldig-melden', 'wissen', 'controle', 'onderhoud',
    'beheerrapport'
],
'task kinds are SPEC §5''s');
SELECT is_empty(
    $$SELECT c.relname FROM pg_catalog.pg_class AS c
      WHERE c.relnamespace IN ('nmc'::regnamespace, 'nmc_migratie'::regnamespace)
          AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND coalesce(pg_catalog.obj_description(c.oid, 'pg_class'), '') !~ 'etention|[Kk]ept'$$,
    'every table has a COMMENT that states its purpose and retention'
);
SELECT is_empty(
    $$SELECT p.oid::regprocedure FROM pg_catalog.pg_proc AS p
      WHERE p.pronamespace = 'nmc'::regnamespace
          AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL$$,
    'every function has a COMMENT'
);
SELECT index_is_unique(
    'nmc', 'notificatie', 'notificatie_dvref', 'dvRef idempotency is a unique index'
);

SELECT * FROM finish();
ROLLBACK;
