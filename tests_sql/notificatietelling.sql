-- The count of notifications per key (nmc.notificatietelling): its triggers follow every
-- insert, transition, changed key, deletion and truncation; folding keeps the sums; the
-- metrics read it.
BEGIN;
SELECT plan(16);
\ir fixtures/setup.sql

-- The count per key as the deltas say, and as the table is.
CREATE FUNCTION pg_temp.geteld() RETURNS TABLE (
    dv_id integer, regie nmc.regie, status nmc.notificatie_status, reden nmc.reden, aantal bigint
)
LANGUAGE sql AS $$
    SELECT t.dv_id, t.regie, t.status, t.reden, sum(t.aantal)::bigint
    FROM nmc.notificatietelling AS t
    GROUP BY 1, 2, 3, 4 HAVING sum(t.aantal) <> 0
    ORDER BY 1, 2, 3, 4
$$;
CREATE FUNCTION pg_temp.echt() RETURNS TABLE (
    dv_id integer, regie nmc.regie, status nmc.notificatie_status, reden nmc.reden, aantal bigint
)
LANGUAGE sql AS $$
    SELECT n.dv_id, n.regie, n.status, n.reden, count(*)
    FROM nmc.notificatie AS n
    GROUP BY 1, 2, 3, 4
    ORDER BY 1, 2, 3, 4
$$;

SELECT bag_eq(
    $$SELECT t.tgname::text, p.proname::text FROM pg_trigger AS t
      INNER JOIN pg_proc AS p ON p.oid = t.tgfoid
      WHERE t.tgrelid = 'nmc.notificatie'::regclass AND p.proname = 'tel_notificaties'$$,
    $$VALUES ('notificatie_telling_insert', 'tel_notificaties'),
        ('notificatie_telling_update', 'tel_notificaties'),
        ('notificatie_telling_delete', 'tel_notificaties'),
        ('notificatie_telling_truncate', 'tel_notificaties')$$,
    'nmc.tel_notificaties counts after every insert, update, delete and truncate'
);
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM pg_temp.echt()',
    'before this test: the count is the table''s'
);

CREATE TEMP TABLE ids AS
SELECT
    g,
    CASE
        WHEN g % 3 = 0 THEN pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering')
        ELSE pg_temp.nieuwe_notificatie(1001)
    END AS id
FROM generate_series(1, 12) AS g;
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM pg_temp.echt()',
    'intake: every new notification is counted under its DV, regie and status'
);

SELECT
    pg_temp.naar_status(
        i.id,
        CASE i.g % 6
            WHEN 0 THEN 'definitief-bezorgd' WHEN 1 THEN 'niet-bezorgbaar'
            WHEN 2 THEN 'geannuleerd' WHEN 3 THEN 'verzonden'
            WHEN 4 THEN 'bezorgstatus-onbekend' ELSE 'aangenomen'
        END::nmc.notificatie_status
    )
FROM ids AS i;
-- A batch transition too (nmc.transition_notificaties, the workers' single writer).
CREATE TEMP TABLE verloopt AS
SELECT n.id FROM nmc.notificatie AS n WHERE n.status = 'aangenomen' ORDER BY n.id;
SELECT nmc.transition_notificaties(
    (SELECT array_agg(v.id ORDER BY v.id) FROM verloopt AS v),
    (SELECT array_agg('verlopen'::nmc.notificatie_status) FROM verloopt AS v),
    (SELECT array_agg('verlopen'::nmc.reden) FROM verloopt AS v)
);
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM pg_temp.echt()',
    'transitions one by one and as a batch: each moves its notification from one key to the next'
);

SELECT is(
    (SELECT count(*) FROM nmc.notificatie AS n WHERE n.status = 'aangenomen'), 0::bigint,
    'the batch took every aangenomen one'
);

-- An update that changes no key adds no row.
CREATE TEMP TABLE voor AS SELECT count(*) AS rijen FROM nmc.notificatietelling;
UPDATE nmc.notificatie SET bijgewerkt_op = bijgewerkt_op + interval '1 second';
SELECT is(
    (SELECT count(*) FROM nmc.notificatietelling), (SELECT v.rijen FROM voor AS v),
    'an update that changes no key adds no delta row'
);

-- Changed regie and reason (the share of geen-contactgegevens counts centraal ones).
UPDATE nmc.notificatie AS n SET regie = 'centraal'
WHERE n.id IN (SELECT i.id FROM ids AS i WHERE i.g IN (1, 7, 2));
SELECT nmc.transition_notificatie(n.id, 'niet-bezorgbaar', 'geen-contactgegevens')
FROM nmc.notificatie AS n
WHERE n.status = 'verzonden' AND n.id = (SELECT i.id FROM ids AS i WHERE i.g = 3);
UPDATE nmc.notificatie AS n SET regie = 'centraal'
WHERE n.id = (SELECT i.id FROM ids AS i WHERE i.g = 3);
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM pg_temp.echt()',
    'a changed regie moves its notification to the other key'
);

-- The metrics read the count: per status, and the share per DV.
SELECT results_eq(
    $$SELECT m.labels ->> 'status', m.waarde FROM nmc.metrics() AS m
      WHERE m.naam = 'nmc_notificaties' ORDER BY 1$$,
    $$SELECT n.status::text, count(*)::double precision FROM nmc.notificatie AS n
      GROUP BY n.status ORDER BY 1$$,
    'nmc_notificaties: every status held, as many as the table holds'
);
SELECT results_eq(
    $$SELECT (m.labels ->> 'dv')::integer, m.waarde FROM nmc.metrics() AS m
      WHERE m.naam = 'nmc_geen_contactgegevens_aandeel' ORDER BY 1$$,
    $$SELECT n.dv_id,
          (count(*) FILTER (WHERE n.reden = 'geen-contactgegevens'))::double precision / count(*)
      FROM nmc.notificatie AS n WHERE n.regie = 'centraal' AND n.terminaal_op IS NOT NULL
      GROUP BY n.dv_id ORDER BY 1$$,
    'nmc_geen_contactgegevens_aandeel: the share among the finished centraal ones of each DV'
);

-- Folding: one row per key, the sums unchanged; a second fold finds nothing to fold.
CREATE TEMP TABLE voor_vouwen AS SELECT * FROM pg_temp.geteld();
SELECT cmp_ok(nmc.voeg_tellingen_samen(), '>', 0, 'a fold removes rows');
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM voor_vouwen ORDER BY 1, 2, 3, 4',
    'the sums are what they were before the fold'
);
SELECT is(
    (SELECT count(*) FROM nmc.notificatietelling),
    (SELECT count(*) FROM pg_temp.geteld()),
    'after the fold: one row per key'
);
SELECT is(nmc.voeg_tellingen_samen(), 0, 'a second fold has nothing to fold');

-- Deletion after the retention (nmc.delete_expired, which also folds).
SELECT nmc.advance_clock(
    (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i) + interval '1 day'
);
SELECT cmp_ok(
    (nmc.delete_expired(1000) ->> 'notificaties')::integer, '>', 0,
    'the retention deletes the old terminal notifications'
);
SELECT results_eq(
    'SELECT * FROM pg_temp.geteld()', 'SELECT * FROM pg_temp.echt()',
    'deleted notifications leave the count; delete_expired folded the deltas'
);

SET LOCAL client_min_messages = warning;
TRUNCATE nmc.notificatie CASCADE;
SELECT is_empty(
    'SELECT 1 FROM nmc.notificatietelling', 'a truncated notificatie leaves no count'
);

SELECT * FROM finish();
ROLLBACK;
