-- The development tools' SQL (nmc_dev: the embedded cluster, pgTAP, the test clock, the
-- soak, the drills and the year run), one named query per `-- name --` header as in
-- pyshell/nmc/queries.sql; nmc_dev.queries offers these together with the product's.

-- ------------------------------------------------------------------------------------
-- The embedded cluster's databases, the pgTAP runner and the test clock (admin connection).

-- advance_clock --
SELECT nmc.advance_clock(%(duration)s::interval)

-- soak_bewijs_aanroeplimiet --
-- The verdict fetches every notification's proof at once, far beyond what a DV asks in a
-- minute: the proof call rate is lifted for it (a DV would fetch them over time).
UPDATE nmc.instellingen SET bewijs_aanroepen_per_minuut = %(per_minuut)s::integer

-- server_version --
SHOW server_version

-- database_exists --
SELECT 1 FROM pg_catalog.pg_database WHERE datname = %(name)s

-- create_database --
CREATE DATABASE {database}

-- drop_database --
DROP DATABASE IF EXISTS {database} WITH (FORCE)

-- create_pgtap --
CREATE EXTENSION IF NOT EXISTS pgtap

-- ------------------------------------------------------------------------------------
-- The chaos soak's audit after the run (`nmc soak`, nmc_dev.soak.evidence; admin connection,
-- read only). It reads the tables themselves on purpose: it checks what the functions did.

-- soak_notificaties --
SELECT n.id::text AS id, n.dv_id, n.status::text AS status, n.reden::text AS reden, n.versie
FROM nmc.notificatie AS n

-- soak_events --
SELECT e.notificatie_id::text AS notificatie_id, e.sequence, e.van::text AS van,
    e.naar::text AS naar
FROM nmc.event AS e
ORDER BY e.notificatie_id, e.sequence, e.event_id

-- soak_allowed_transitions --
SELECT a.van::text AS van, a.naar::text AS naar FROM nmc.allowed_transitions() AS a

-- soak_send_claims --
-- The claim epoch each send task ended with: higher than an epoch the worker log shows a
-- call under means the task was claimed again after that claim.
SELECT t.id AS taak_id, t.claim_epoch FROM nmc.taak AS t WHERE t.soort = 'verzenden'

-- soak_tasks --
SELECT t.soort::text AS soort, t.staat::text AS staat, pg_catalog.count(*) AS aantal
FROM nmc.taak AS t GROUP BY t.soort, t.staat

-- soak_task_errors --
SELECT DISTINCT t.laatste_fout FROM nmc.taak AS t WHERE t.laatste_fout IS NOT NULL

-- soak_bezig --
-- What keeps the pipeline busy when a phase waits too long: every task of the given kinds
-- that is claimed or due, and every open send (a deferred one holds the phase too), earliest
-- due first (at most `limit`; `totaal` counts them all). Times are seconds from nmc.now();
-- `claimbaar` is what the claims would take now (nmc.taak_claimbaar), `met_werk` whether the
-- worker's lookout sees work of its kind (nmc.soorten_met_werk), `dicht` a send whose (DV,
-- berichttype) gets no token now (nmc.verzenden_dicht). No personal data: ids, kinds,
-- counters and error classes only.
WITH nu AS (SELECT nmc.now() AS nu),

werk AS (SELECT nmc.soorten_met_werk(%(soorten)s::nmc.taak_soort []) AS soorten)

SELECT
    t.id AS taak_id, t.soort::text AS soort, t.staat::text AS staat,
    pg_catalog.date_part('epoch', t.due - nu.nu) AS due_s,
    pg_catalog.date_part('epoch', t.lease_tot - nu.nu) AS lease_s,
    t.claim_epoch, t.pogingen, t.uitstellen, t.laatste_fout,
    n.status::text AS notificatie_status,
    nmc.taak_claimbaar(t.staat, t.due, t.lease_tot, nu.nu) AS claimbaar,
    t.soort::text = ANY(werk.soorten) AS met_werk,
    t.soort = 'verzenden' AND EXISTS (
        SELECT 1 FROM nmc.verzenden_dicht(ARRAY[t.dv_id]) AS d
        WHERE d.dv_id = t.dv_id AND d.berichttype = t.berichttype
    ) AS dicht,
    pg_catalog.count(*) OVER () AS totaal
FROM nmc.taak AS t
CROSS JOIN nu
CROSS JOIN werk
LEFT JOIN nmc.notificatie AS n ON t.notificatie_id = n.id
WHERE t.soort = ANY(%(soorten)s::nmc.taak_soort [])
    AND (
        t.staat = 'claimed'
        OR nmc.taak_claimbaar(t.staat, t.due, t.lease_tot, nu.nu)
        OR (t.staat = 'open' AND t.soort = 'verzenden')
    )
ORDER BY t.due, t.id
LIMIT %(limit)s

-- drill_event_ids --
-- `nmc drill`: every event of every DV, to check that each feed consumer read them all.
SELECT e.dv_id, e.event_id FROM nmc.event AS e

-- drill_events_of --
SELECT e.notificatie_id, e.event_id FROM nmc.event AS e
WHERE e.notificatie_id = ANY(%(ids)s::uuid[])

-- drill_bevestiging --
-- The acknowledged feed position per DV (its xid as a number).
SELECT b.dv_id, b.xid::text::bigint AS xid FROM nmc.bevestiging AS b

-- drill_next_xid --
-- The next xid the cluster hands out (reading it takes none).
SELECT pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint

-- drill_switch_wal --
SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())

-- drill_last_archived --
SELECT a.last_archived_wal FROM pg_catalog.pg_stat_archiver AS a

-- soak_attempts --
SELECT p.id::text AS poging_id, p.notificatie_id::text AS notificatie_id,
    pg_catalog.cardinality(p.duplicaat_ids) AS duplicaten
FROM nmc.poging AS p

-- The year run's measurements (`nmc soak --year`, nmc_dev.soak.year; admin connection): the
-- tables themselves, to check what maintenance did, and the settings it runs with.

-- year_settings --
-- The delivery-proof retention of the run (an interval), and the width of new partitions.
UPDATE nmc.instellingen SET bewijs_bewaartermijn = %(termijn)s::interval
RETURNING bewijs_bewaartermijn::text AS termijn,
    pg_catalog.date_part('epoch', bewijs_bewaartermijn) / 86400 AS termijn_dagen

-- year_partition_width --
SELECT nmc.set_event_partitie_breedte(%(breedte)s::bigint) AS herschikt

-- year_partition_job --
-- How often the partition job looks (a simulated day takes seconds of the NMC clock).
UPDATE nmc.onderhoudswerk SET herhaal_na = %(herhaal_na)s::interval WHERE werk = 'partities'
RETURNING herhaal_na::text AS herhaal_na

-- year_backend_pid --
SELECT pg_catalog.pg_backend_pid() AS pid

-- year_now --
SELECT nmc.now() AS nu

-- year_advance_clock --
SELECT nmc.advance_clock(%(duur)s::interval) AS nu

-- year_quiet --
-- Nothing of the lifecycle due or claimed (the periodic kinds, webhook, watchdog and
-- maintenance, come due on their own), nothing still to send or claim.
SELECT NOT EXISTS (
    SELECT 1 FROM nmc.taak AS t
    WHERE t.staat = 'open' AND t.due <= nmc.now()
        AND t.soort IN ('verzenden', 'receipt', 'reconciliëren', 'vaststellen',
            'ongeldig-melden', 'wissen', 'onderhoud')
) AND NOT EXISTS (
    SELECT 1 FROM nmc.taak AS t
    WHERE t.staat = 'claimed'
        AND t.soort IN ('verzenden', 'receipt', 'reconciliëren', 'vaststellen',
            'ongeldig-melden', 'wissen')
) AND NOT EXISTS (
    SELECT 1 FROM nmc.notificatie AS n
    WHERE n.terminaal_op IS NULL AND n.status IN ('aangenomen', 'in-verzending')
) AS stil

-- year_truth --
-- Every notification that changed since `sinds` (a terminal one does not change again,
-- but for a late receipt, which clears terminaal_op first).
SELECT n.id::text AS id, n.dv_id, n.status::text AS status, n.reden::text AS reden, n.versie,
    n.terminaal_op
FROM nmc.notificatie AS n
WHERE n.terminaal_op IS NULL OR n.terminaal_op >= %(sinds)s::timestamptz

-- year_step --
-- After each simulated day: the event log's headroom, and what is past its term.
SELECT
    nmc.now() AS nu,
    nmc.now() - i.bewijs_bewaartermijn AS bewijs_grens,
    pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint AS xid,
    (SELECT pg_catalog.count(*) FROM nmc.event_default) AS default_rijen,
    (
        SELECT pg_catalog.max(p.xid_tot::text::bigint) FROM nmc.event_partitie AS p
        WHERE p.verwijderd_op IS NULL
    ) - pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint
    AS xid_ruimte,
    (
        SELECT pg_catalog.count(*) FROM nmc.notificatie AS n
        WHERE n.terminaal_op < nmc.now() - i.bewijs_bewaartermijn - interval '1 day'
    ) AS notificaties_over_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.notificatie AS n
        WHERE n.terminaal_op IS NULL OR n.terminaal_op > nmc.now() - i.bewijs_bewaartermijn
    ) AS notificaties_binnen_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.notificatie AS n
        WHERE n.sleutel_gewrapt IS NOT NULL
            AND n.terminaal_op < nmc.now() - i.wistermijn - interval '1 day'
    ) AS sleutels_te_laat,
    (
        SELECT pg_catalog.count(*) FROM nmc.taak AS t
        WHERE t.staat = 'done' AND t.afgerond_op < nmc.now() - interval '8 days'
    ) AS taken_over_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.verzendbudget AS b
        WHERE b.venster_start < nmc.now() - interval '2 days'
    ) AS budget_over_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.quotumgebruik AS q
        WHERE q.venster_start < nmc.now() - interval '3 days'
    ) AS quotum_over_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.feedaanroep AS f
        WHERE f.venster_start < nmc.now() - interval '1 day 1 hour'
    ) AS feedaanroep_over_termijn,
    (
        SELECT pg_catalog.count(*) FROM nmc.bewijsaanroep AS f
        WHERE f.venster_start < nmc.now() - interval '1 day 1 hour'
    ) AS bewijsaanroep_over_termijn,
    (SELECT pg_catalog.count(*) FROM nmc.taak AS t WHERE t.staat = 'mislukt') AS mislukt
FROM nmc.instellingen AS i

-- year_held --
-- The live partitions a live cursor still needs (SPEC §8: an acknowledgement or a webhook
-- position younger than its DV's max cursor age below the range's end): held, not dropped.
SELECT p.naam FROM nmc.event_partitie AS p
WHERE p.verwijderd_op IS NULL AND (
    EXISTS (
        SELECT 1 FROM nmc.bevestiging AS b
        INNER JOIN nmc.dienstverlener AS d ON d.dv_id = b.dv_id
        WHERE b.xid < p.xid_tot AND b.bevestigd_op > nmc.now() - d.max_cursorleeftijd
    ) OR EXISTS (
        SELECT 1 FROM nmc.webhookpositie AS w
        INNER JOIN nmc.dienstverlener AS d ON d.dv_id = w.dv_id
        WHERE w.xid < p.xid_tot AND w.geleverd_op > nmc.now() - d.max_cursorleeftijd
    )
)

-- year_kept_partitions --
-- The live partitions holding an event of a notification still kept (SPEC §7: its proof is
-- its whole chain, from sequence 1, as long as it is kept): held, not dropped. Read from
-- the events themselves, not by the drop rule's own bound.
SELECT p.naam FROM nmc.event_partitie AS p
WHERE p.verwijderd_op IS NULL AND EXISTS (
    SELECT 1 FROM nmc.event AS e
    INNER JOIN nmc.notificatie AS n ON n.id = e.notificatie_id
    WHERE e.xid >= p.xid_van AND e.xid < p.xid_tot
)

-- year_last_day --
-- The kept notifications whose term ends before the next day's step: their last day.
SELECT n.id::text AS id, n.dv_id
FROM nmc.notificatie AS n
CROSS JOIN nmc.instellingen AS i
WHERE n.terminaal_op <= nmc.now() + interval '1 day' - i.bewijs_bewaartermijn

-- year_kept --
-- Every notification still kept.
SELECT n.id::text AS id, n.dv_id FROM nmc.notificatie AS n

-- year_still_kept --
-- Of the given ids, the ones still kept.
SELECT n.id::text AS id FROM nmc.notificatie AS n WHERE n.id = ANY(%(ids)s::uuid[])

-- year_late_keys --
-- A few live keys past their erase term by more than a day, with their wissen task.
SELECT n.id::text AS id, n.status::text AS status, n.terminaal_op, t.due, t.staat::text AS staat
FROM nmc.notificatie AS n
CROSS JOIN nmc.instellingen AS i
LEFT JOIN nmc.taak AS t ON t.notificatie_id = n.id AND t.soort = 'wissen'
WHERE n.sleutel_gewrapt IS NOT NULL
    AND n.terminaal_op < nmc.now() - i.wistermijn - interval '1 day'
LIMIT 5

-- year_erased_early --
-- Data keys destroyed before their term (the erase term after the terminal status).
SELECT pg_catalog.count(*) AS te_vroeg
FROM nmc.notificatie AS n, nmc.instellingen AS i
WHERE n.gewist_op < n.terminaal_op + i.wistermijn

-- year_partitions --
SELECT p.naam, p.xid_van::text::bigint AS xid_van, p.xid_tot::text::bigint AS xid_tot,
    p.verwijderd_op,
    p.xid_tot <= pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) AS gesloten
FROM nmc.event_partitie AS p
ORDER BY p.xid_van

-- year_partition_youngest --
SELECT pg_catalog.max(e.tijdstip) AS jongste FROM nmc.{partitie} AS e

-- year_sizes --
-- Per table (the event partitions as one): bytes with indexes and TOAST, and the
-- statistics autovacuum works from.
SELECT
    coalesce(parent.relname, c.relname) AS tabel,
    pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid))::bigint AS bytes,
    pg_catalog.sum(coalesce(s.n_live_tup, 0))::bigint AS levend,
    pg_catalog.sum(coalesce(s.n_dead_tup, 0))::bigint AS dood,
    pg_catalog.sum(coalesce(s.autovacuum_count, 0))::bigint AS autovacuums,
    pg_catalog.sum(coalesce(s.n_tup_del, 0))::bigint AS verwijderd
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS ns ON ns.oid = c.relnamespace AND ns.nspname = 'nmc'
LEFT JOIN pg_catalog.pg_inherits AS inh ON inh.inhrelid = c.oid
LEFT JOIN pg_catalog.pg_class AS parent ON parent.oid = inh.inhparent
LEFT JOIN pg_catalog.pg_stat_user_tables AS s ON s.relid = c.oid
WHERE c.relkind = 'r'
GROUP BY 1

-- year_rows --
SELECT 'notificatie' AS tabel, pg_catalog.count(*) AS rijen FROM nmc.notificatie
UNION ALL SELECT 'poging', pg_catalog.count(*) FROM nmc.poging
UNION ALL SELECT 'taak', pg_catalog.count(*) FROM nmc.taak
UNION ALL SELECT 'event', pg_catalog.count(*) FROM nmc.event
UNION ALL SELECT 'receiptgeschiedenis', pg_catalog.count(*) FROM nmc.receiptgeschiedenis
UNION ALL SELECT 'vaststelling', pg_catalog.count(*) FROM nmc.vaststelling
UNION ALL SELECT 'verzendbudget', pg_catalog.count(*) FROM nmc.verzendbudget
UNION ALL SELECT 'quotumgebruik', pg_catalog.count(*) FROM nmc.quotumgebruik
UNION ALL SELECT 'feedaanroep', pg_catalog.count(*) FROM nmc.feedaanroep

-- year_autovacuum --
-- Autovacuum workers busy now (a probe waits for them: the day's retention just churned the
-- tables, and their work is the month's cost, not the probe's).
SELECT pg_catalog.count(*) AS bezig FROM pg_catalog.pg_stat_activity AS a
WHERE a.backend_type = 'autovacuum worker'

-- year_probe_sent --
-- The probe's notifications NotifyNL accepted (or that ended otherwise) so far.
SELECT pg_catalog.count(*) AS verzonden FROM nmc.notificatie AS n
WHERE n.dv_id = %(dv_id)s::integer AND n.batch_id = ANY(%(batches)s::uuid[])
    AND n.status NOT IN ('aangenomen', 'in-verzending')

-- year_dv_ids --
SELECT d.oin, d.dv_id FROM nmc.dienstverlener AS d

-- year_statements_extension --
-- The year's own cluster preloads pg_stat_statements (nmc_dev.soak.yearstatements).
CREATE EXTENSION IF NOT EXISTS pg_stat_statements WITH SCHEMA public

-- year_statements_untracked --
-- The harness's measuring connection: its own statements are not the NMC's cost.
SET pg_stat_statements.track = 'none'

-- year_statements_no_plans --
SET auto_explain.log_min_duration = -1

-- year_statements_reset --
SELECT public.pg_stat_statements_reset()

-- year_statements --
-- Every statement's counters so far in this database (the ones inside functions too).
SELECT s.queryid, s.toplevel, s.query, s.calls, s.plans, s.total_exec_time AS exec_ms,
    s.total_plan_time AS plan_ms, s.rows, s.shared_blks_hit AS hit,
    s.shared_blks_read AS read
FROM public.pg_stat_statements AS s
INNER JOIN pg_catalog.pg_database AS d ON d.oid = s.dbid
WHERE d.datname = pg_catalog.current_database()

-- year_statements_evicted --
-- Entries pg_stat_statements dropped for room (a window's differences miss them).
SELECT i.dealloc FROM public.pg_stat_statements_info AS i

-- ------------------------------------------------------------------------------------
-- The peak day of one NotifyNL service (nmc_dev.peakday; admin connection): the claim
-- functions driven directly on the NMC clock, each step one transaction.

-- peakday_service --
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, dag_limiet)
VALUES (%(code)s::text, %(per_minuut)s::integer, 0, %(dag_limiet)s::integer)
ON CONFLICT (code) DO UPDATE
SET budget_per_minuut = excluded.budget_per_minuut, navraag_aandeel = 0,
    dag_limiet = excluded.dag_limiet

-- peakday_at --
-- The NMC clock to an instant for the rest of the transaction (now() is the transaction's).
UPDATE nmc.klok SET verschuiving = %(op)s::timestamptz - pg_catalog.now()

-- peakday_intake --
-- Send tasks with their notificaties as the intake writes them (dummy ciphertext, as
-- benchmarks/bench_send.py bulk_sends): the guard triggers accept the rows as written.
WITH bulk AS MATERIALIZED (
    SELECT pg_catalog.gen_random_uuid() AS id, d.dv
    FROM unnest(%(dvs)s::integer []) AS d (dv)
),

event AS (
    INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
    SELECT b.id, b.dv, 1, NULL, 'aangenomen', NULL, nmc.now() FROM bulk AS b
),

notificatie AS (
    INSERT INTO nmc.notificatie (
        id, dv_id, berichttype, regie, status, reden, versie, geldig_tot, dvref_hmac,
        pepper_versie, payload_hash, trace_id, ontvanger_versleuteld, gegevens_versleuteld,
        sleutel_gewrapt, kek_id, aangenomen_op, bijgewerkt_op
    )
    SELECT b.id, b.dv, 'aanslag', 'decentraal', 'aangenomen', NULL, 1,
        nmc.now() + INTERVAL '3 days', pg_catalog.sha256(b.id::text::bytea), 1,
        pg_catalog.sha256('p'::bytea), '0123456789abcdef0123456789abcdef', '\x01', '\x02',
        '\x03', 'kek-1', nmc.now(), nmc.now()
    FROM bulk AS b
)

INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, trace_id, aangemaakt_op)
SELECT 'verzenden', b.dv, b.id, nmc.now(), '0123456789abcdef0123456789abcdef', nmc.now()
FROM bulk AS b

-- peakday_claim --
SELECT c.taak_id, c.claim_epoch, c.dv_id
FROM nmc.claim_verzenden('piekdag', %(batch)s::integer) AS c

-- peakday_finish --
SELECT pg_catalog.count(*) AS afgerond
FROM nmc.finish_verzenden_batch(
    %(taak_ids)s::bigint [], %(claim_epochs)s::integer [],
    ARRAY(SELECT 'verzonden'::text FROM unnest(%(taak_ids)s::bigint [])),
    ARRAY(SELECT pg_catalog.gen_random_uuid() FROM unnest(%(taak_ids)s::bigint [])),
    NULL
) AS r

-- peakday_tat --
-- The pace's theoretical arrival time of the next send (GCRA), NULL before any take.
SELECT v.tat FROM nmc.verzendtempo AS v
WHERE v.notify_service = %(code)s::text AND v.soort = 'verzenden'
