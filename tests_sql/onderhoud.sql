-- Maintenance as tasks: one open task per job, claimed like any task, each run one short
-- transaction that plans the next; the re-wrap job follows the newest active KEK.
BEGIN;
SELECT plan(40);
\ir fixtures/setup.sql

-- A fresh log: its one range is cut to the width the setting gives.
SELECT is(
    nmc.set_event_partitie_breedte(1000), 'event_x000000000000',
    'on an empty event log the one range is cut again to the new width'
);
SELECT
    xid_tot::text::bigint AS eerste_eind,
    xid_tot::text::bigint - pg_current_xact_id()::text::bigint AS boven
FROM nmc.event_partitie \gset
SELECT is(:boven, 1000, 'it now ends one width above the current xid');
SELECT is(
    (
        SELECT c.relowner::regrole::text FROM pg_catalog.pg_class AS c
        WHERE c.oid = 'nmc.event_x000000000000'::regclass
    ),
    'nmc_owner', 'the range cut again belongs to nmc_owner, whoever called it'
);

DELETE FROM nmc.taak WHERE soort = 'onderhoud';
SELECT is(
    nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1'), 4, 'ensure plans one task per maintenance job'
);
SELECT is(nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1'), 0, 'and nothing more the second time');
SELECT results_eq(
    $$SELECT payload ->> 'werk', staat::text FROM nmc.taak WHERE soort = 'onderhoud'
      ORDER BY 1$$,
    $$VALUES ('herwrappen', 'open'), ('partities', 'open'), ('retentie', 'open'),
             ('templates', 'open')$$,
    'each job has exactly one open task'
);
SELECT is(nmc.herwrap_doel(), 'kek-1', 'the first KEK reported active is the re-wrap target');

-- Claimed like any other kind.
CREATE TEMP TABLE geclaimd AS
SELECT
    c.taak_id,
    c.claim_epoch,
    c.payload ->> 'werk' AS werk
FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c;
SELECT is((SELECT count(*)::integer FROM geclaimd), 4, 'a worker claims the four jobs');
SELECT
    g.taak_id AS partities_taak,
    g.claim_epoch AS partities_epoch
FROM geclaimd AS g WHERE g.werk = 'partities' \gset
SELECT
    g.taak_id AS herwrap_taak,
    g.claim_epoch AS herwrap_epoch
FROM geclaimd AS g WHERE g.werk = 'herwrappen' \gset
SELECT is(
    pg_temp.fout(format('SELECT nmc.run_onderhoud(%s, %s)', :partities_taak, :partities_epoch - 1)),
    'NM011:', 'a run with a stale epoch is refused'
);

-- partities: the log's one range made nearly used up (two xids above the current one;
-- the cut range is 80% used only on a cluster that handed out four widths of xids before,
-- so the test does not leave it to the cluster's age): the next range is made.
SELECT pg_current_xact_id()::text::bigint + 2 AS eerste_eind \gset
DROP TABLE nmc.event_x000000000000;
CREATE TABLE nmc.event_x000000000000 PARTITION OF nmc.event
FOR VALUES FROM ('0') TO (:'eerste_eind');
UPDATE nmc.event_partitie SET xid_tot = :'eerste_eind'::xid8
WHERE naam = 'event_x000000000000';
SELECT is(
    nmc.run_onderhoud(:partities_taak, :partities_epoch) ->> 'aangemaakt',
    'event_x' || lpad(:eerste_eind::text, 12, '0'),
    'the partities job creates the next range'
);
SELECT (p.xid_tot::text::bigint - p.xid_van::text::bigint)::integer AS breedte
FROM nmc.event_partitie AS p WHERE p.xid_van = :eerste_eind::text::xid8 \gset
SELECT is(:breedte, 1000, 'as wide as the setting says');
SELECT results_eq(
    $$SELECT staat::text, due - nmc.now(), lease_eigenaar FROM nmc.taak
      WHERE soort = 'onderhoud' AND payload ->> 'werk' = 'partities'$$,
    $$VALUES ('open', interval '5 minutes', NULL::text)$$,
    'the run reopens its own task for the next round, after the job''s pause'
);
SELECT is(
    pg_temp.fout(format('SELECT nmc.run_onderhoud(%s, %s)', :herwrap_taak, :herwrap_epoch)),
    '22023:', 'herwrappen is not an SQL-only run (it needs the KEK ring)'
);

-- retentie: one batch per run, due again at once while a batch comes back full.
UPDATE nmc.onderhoudswerk SET batch = 1 WHERE werk = 'retentie';
INSERT INTO nmc.taak (soort, dv_id, due, staat, aangemaakt_op, afgerond_op)
SELECT
    'terugkoppelen',
    1001,
    nmc.now(),
    'done',
    nmc.now() - interval '9 days',
    nmc.now() - interval '8 days'
FROM generate_series(1, 2);
CREATE FUNCTION pg_temp.retentie(p_veld text) RETURNS text LANGUAGE sql AS $$
    SELECT nmc.run_onderhoud(c.taak_id, c.claim_epoch) ->> p_veld
    FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c
$$;
SELECT
    g.taak_id AS retentie_taak,
    g.claim_epoch AS retentie_epoch
FROM geclaimd AS g WHERE g.werk = 'retentie' \gset
SELECT is(
    nmc.run_onderhoud(:retentie_taak, :retentie_epoch) ->> 'taken', '1',
    'the retentie job deletes one batch'
);
SELECT is(
    (SELECT t.due = nmc.now() FROM nmc.taak AS t WHERE t.payload ->> 'werk' = 'retentie'),
    TRUE, 'a full batch: the next run is due at once'
);
SELECT is(pg_temp.retentie('taken'), '1', 'the next run takes the next batch');
SELECT is(pg_temp.retentie('meer'), 'false', 'nothing left');
SELECT is(
    (SELECT t.due - nmc.now() FROM nmc.taak AS t WHERE t.payload ->> 'werk' = 'retentie'),
    interval '1 minute', 'then it waits the job''s pause'
);

-- herwrappen: three live keys under kek-1 (the fixture intake's KEK), one erased.
SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 4);
CREATE TEMP TABLE sleutels AS
SELECT
    n.id,
    row_number() OVER (ORDER BY n.id) AS r
FROM nmc.notificatie AS n;
UPDATE nmc.notificatie AS n SET sleutel_gewrapt = NULL
FROM sleutels AS s WHERE s.id = n.id AND s.r = 1;
SELECT nmc.advance_clock('1 second');
-- The workers of the kek-1 ring were rolled: none of them reports any more.
DELETE FROM nmc.kek_melding;
SELECT nmc.ensure_onderhoud_v2('kek-2', 'w-kek-2');
SELECT is(
    nmc.herwrap_doel(), 'kek-2', 'a newer KEK every live worker reports active is the target'
);
SELECT nmc.advance_clock('1 second');
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1');
SELECT is(
    nmc.herwrap_doel(), 'kek-2',
    'a worker of the older ring reporting its KEK again does not turn the target back'
);
-- The herwrappen task claimed above is still held (its lease runs two minutes).
SELECT is_empty(
    format(
        'SELECT 1 FROM nmc.list_herwrap(%s, %s, %L, 10)', :herwrap_taak, :herwrap_epoch, 'kek-1'
    ),
    'a worker whose active KEK is not the target gets nothing to re-wrap'
);
SELECT results_eq(
    format(
        'SELECT notificatie_id, kek_id FROM nmc.list_herwrap(%s, %s, %L, 2)',
        :herwrap_taak, :herwrap_epoch, 'kek-2'
    ),
    $$SELECT s.id, 'kek-1'::text FROM sleutels AS s WHERE s.r IN (2, 3) ORDER BY s.r$$,
    'the target''s worker gets a batch of the live keys under other KEKs, in (kek, id) order'
);
SELECT s.id AS cursor_id FROM sleutels AS s WHERE s.r = 3 \gset
SELECT is(
    nmc.finish_herwrap(
        :herwrap_taak, :herwrap_epoch,
        (SELECT array_agg(s.id ORDER BY s.r) FROM sleutels AS s WHERE s.r IN (2, 3)),
        '{kek-1,kek-1}', '{"\\xa1","\\xa2"}', 'kek-2', 'kek-1', :'cursor_id'
    ),
    2, 'finish stores the re-wrapped keys'
);
SELECT results_eq(
    $$SELECT staat::text, due = nmc.now(), payload ->> 'na_id' FROM nmc.taak
      WHERE payload ->> 'werk' = 'herwrappen'$$,
    format('VALUES (%L, TRUE, %L)', 'open', :'cursor_id'),
    'a full batch: the sweep goes on at once from its cursor'
);
SELECT
    c.taak_id AS herwrap_taak,
    c.claim_epoch AS herwrap_epoch
FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c \gset
SELECT results_eq(
    format(
        'SELECT notificatie_id FROM nmc.list_herwrap(%s, %s, %L, 2)',
        :herwrap_taak, :herwrap_epoch, 'kek-2'
    ),
    $$SELECT s.id FROM sleutels AS s WHERE s.r = 4$$,
    'the next run starts after the cursor: the last key still under the old KEK'
);
SELECT nmc.finish_herwrap(
    :herwrap_taak, :herwrap_epoch,
    (SELECT array_agg(s.id) FROM sleutels AS s WHERE s.r = 4),
    '{kek-1}', '{"\\xa3"}', 'kek-2', NULL, NULL
);
SELECT results_eq(
    $$SELECT kek_id, sleutels, doel FROM nmc.kek_status_v2()$$,
    $$VALUES ('kek-1', 0::bigint, FALSE), ('kek-2', 3::bigint, TRUE)$$,
    'kek status: no live key is left under the old KEK, three are under the target'
);
SELECT results_eq(
    $$SELECT kek_id, sleutels FROM nmc.kek_status()$$,
    $$SELECT kek_id, sleutels FROM nmc.kek_status_v2() WHERE sleutels > 0$$,
    'the previous release''s kek_status gives what kek_status_v2 gives for KEKs with keys'
);
SELECT results_eq(
    $$SELECT kek_id, sleutels FROM nmc.kek_status()$$,
    $$VALUES ('kek-2', 3::bigint)$$,
    'the previous release''s kek_status leaves out a KEK without live keys, as it always did'
);
SELECT results_eq(
    $$SELECT due - nmc.now(), payload FROM nmc.taak WHERE payload ->> 'werk' = 'herwrappen'$$,
    $$VALUES (interval '5 minutes', '{"werk": "herwrappen"}'::jsonb)$$,
    'a sweep that ran out of keys drops its cursor and waits the job''s pause'
);

-- A job whose task is exhausted waits for an operator: no second task beside it.
UPDATE nmc.taak SET staat = 'mislukt' WHERE payload ->> 'werk' = 'retentie';
SELECT is(nmc.ensure_onderhoud_v2('kek-2', 'w-kek-2'), 0, 'a mislukt job is not planned again');

-- nmc.plan_onderhoud: the same row opens again, clean, due now or after its job's pause.
SELECT t.id AS plan_taak FROM nmc.taak AS t WHERE t.payload ->> 'werk' = 'partities' \gset
CREATE FUNCTION pg_temp.als_geclaimd(p_taak bigint) RETURNS void
LANGUAGE sql AS $$
    UPDATE nmc.taak
    SET staat = 'claimed', lease_eigenaar = 'w1', lease_tot = nmc.now() + interval '2 minutes',
        pogingen = 3, uitstellen = 2, laatste_fout = 'time-out'
    WHERE id = p_taak
$$;
SELECT pg_temp.als_geclaimd(:plan_taak);
SELECT is(
    nmc.plan_onderhoud(:plan_taak, FALSE),
    nmc.now() + (SELECT w.herhaal_na FROM nmc.onderhoudswerk AS w WHERE w.werk = 'partities'),
    'nothing more to do: due after the job''s pause, which it returns'
);
SELECT results_eq(
    format(
        $$SELECT staat::text, lease_eigenaar, lease_tot, pogingen, uitstellen, laatste_fout, payload
          FROM nmc.taak WHERE id = %s$$,
        :plan_taak
    ),
    $$VALUES (
        'open', NULL::text, NULL::timestamptz, 0, 0, NULL::text, '{"werk": "partities"}'::jsonb
    )$$,
    'the task is open again without lease, tries or last error, its payload kept'
);
SELECT pg_temp.als_geclaimd(:plan_taak);
SELECT is(
    nmc.plan_onderhoud(:plan_taak, TRUE, '{"werk": "partities", "na": 7}'), nmc.now(),
    'more to do: due at once'
);
SELECT is(
    (SELECT payload FROM nmc.taak WHERE id = :plan_taak), '{"werk": "partities", "na": 7}'::jsonb,
    'with the payload given (a job''s cursor)'
);
INSERT INTO nmc.taak (soort, dv_id, due, staat, aangemaakt_op, afgerond_op)
VALUES ('terugkoppelen', 1001, nmc.now(), 'done', nmc.now(), nmc.now())
RETURNING id AS geen_onderhoud \gset
SELECT is(
    ARRAY[
        nmc.plan_onderhoud(:geen_onderhoud, TRUE),
        nmc.plan_onderhoud(-1, TRUE)
    ],
    ARRAY[NULL, NULL]::timestamptz[],
    'a task that is no maintenance job, or no task: NULL'
);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE id = :geen_onderhoud), 'done',
    'and nothing is reopened'
);

-- nmc.heropen_onderhoud: the one reopening under plan_onderhoud and stel_onderhoud_uit.
SELECT pg_temp.als_geclaimd(:plan_taak);
SELECT is(
    nmc.heropen_onderhoud(:plan_taak, NULL, TRUE, FALSE) - nmc.now(),
    (
        SELECT least(nmc.uitstel(2), w.herhaal_na)
        FROM nmc.onderhoudswerk AS w WHERE w.werk = 'partities'
    ),
    'a deferral: due after the backoff of its deferrals, at most the job''s pause'
);
SELECT results_eq(
    format(
        $$SELECT staat::text, lease_eigenaar, pogingen, uitstellen, laatste_fout, payload
          FROM nmc.taak WHERE id = %s$$,
        :plan_taak
    ),
    $$VALUES ('open', NULL::text, 3, 3, 'uitgesteld: het eventlog was bezet (lock_timeout)',
        '{"werk": "partities", "na": 7}'::jsonb)$$,
    'its tries kept, one deferral more, its payload kept'
);
SELECT pg_temp.als_geclaimd(:plan_taak);
SELECT is(
    nmc.heropen_onderhoud(:plan_taak, '{"werk": "partities"}', FALSE, TRUE), nmc.now(),
    'a plan with more to do: due at once'
);
SELECT results_eq(
    format(
        $$SELECT staat::text, pogingen, uitstellen, laatste_fout, payload
          FROM nmc.taak WHERE id = %s$$,
        :plan_taak
    ),
    $$VALUES ('open', 0, 0, NULL::text, '{"werk": "partities"}'::jsonb)$$,
    'clean, with the payload given'
);

SELECT * FROM finish();
ROLLBACK;
