-- The single writer for a set: every rule of nmc.transition_notificatie, all or nothing.
BEGIN;
SELECT plan(22);
\ir fixtures/setup.sql

-- Every (van, naar) pair alone through the set function: the same verdict as the single one.
CREATE TEMP TABLE paar AS
SELECT
    v AS van,
    n AS naar,
    pg_temp.nieuwe_notificatie() AS id
FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS v,
    unnest(enum_range(NULL::nmc.notificatie_status)) AS n;
SELECT pg_temp.naar_status(id, van) FROM paar;
SELECT is_empty(
    $$SELECT p.van, p.naar, f.fout
      FROM paar AS p,
          LATERAL (SELECT pg_temp.fout(format(
              'SELECT nmc.transition_notificaties(ARRAY[%L]::uuid[], ARRAY[%L]::nmc.notificatie_status[],
                   ARRAY[%L]::nmc.reden[])', p.id, p.naar, pg_temp.reden_voor(p.naar)
          )) AS fout) AS f
      WHERE f.fout IS DISTINCT FROM
          CASE WHEN nmc.transition_allowed(p.van, p.naar) THEN NULL ELSE 'NM001:' || p.van END$$,
    'each of the 100 pairs alone: allowed ones pass, the others are refused (NM001:van)'
);

-- Every allowed pair at once, in one call.
CREATE TEMP TABLE voor AS
SELECT p.*, n.versie AS versie_voor
FROM paar AS p INNER JOIN nmc.notificatie AS n ON p.id = n.id
WHERE nmc.transition_allowed(p.van, p.naar);
SELECT nmc.advance_clock('1 hour');
CREATE TEMP TABLE gedaan AS
SELECT t.notificatie_id AS id, t.versie AS versie_na
FROM nmc.transition_notificaties(
    (SELECT array_agg(v.id ORDER BY v.naar DESC, v.van ASC) FROM voor AS v),
    (SELECT array_agg(v.naar ORDER BY v.naar DESC, v.van ASC) FROM voor AS v),
    (SELECT array_agg(pg_temp.reden_voor(v.naar) ORDER BY v.naar DESC, v.van ASC) FROM voor AS v)
) AS t;

SELECT is(
    (SELECT count(*)::integer FROM gedaan),
    (SELECT count(*)::integer FROM voor),
    'one row back for each notification'
);
SELECT ok(
    bool_and(g.versie_na = v.versie_voor + 1),
    'each returned version is the old one plus one'
) FROM voor AS v INNER JOIN gedaan AS g ON v.id = g.id;
SELECT ok(
    bool_and(
        n.status = v.naar AND n.versie = v.versie_voor + 1
        AND n.reden IS NOT DISTINCT FROM pg_temp.reden_voor(v.naar) AND n.bijgewerkt_op = nmc.now()
        AND (n.terminaal_op IS NOT NULL) = nmc.is_terminal(v.naar)
    ),
    'each row carries its new status, reason, version, time and terminaal_op'
) FROM voor AS v INNER JOIN nmc.notificatie AS n ON v.id = n.id;
SELECT
    ok(
        bool_and(
            e.van = v.van AND e.naar = v.naar AND e.dv_id = 1001
            AND e.reden IS NOT DISTINCT FROM pg_temp.reden_voor(v.naar)
            AND e.tijdstip = nmc.now() AND e.xid = pg_current_xact_id()
        ) AND count(*) = (SELECT count(*) FROM voor),
        'each has its event: sequence = new version, van, naar, reden, NMC time, this xid'
    )
FROM voor AS v
INNER JOIN nmc.event AS e ON v.id = e.notificatie_id AND e.sequence = v.versie_voor + 1;
SELECT is(
    (
        SELECT count(DISTINCT e.cmin::text)::integer FROM nmc.event AS e
        INNER JOIN voor AS v ON e.notificatie_id = v.id AND e.sequence = v.versie_voor + 1
    ),
    1,
    'the events of the set are written by one statement'
);
SELECT is(
    (
        SELECT count(DISTINCT n.cmin::text)::integer FROM nmc.notificatie AS n
        INNER JOIN voor AS v ON n.id = v.id
    ),
    1,
    'and the rows are updated by one statement (the statement guard judges them together)'
);
SELECT set_eq(
    $$SELECT t.notificatie_id FROM nmc.taak AS t INNER JOIN voor AS v
      ON v.id = t.notificatie_id WHERE t.soort = 'wissen' AND t.due = nmc.now() + interval '7 days'$$,
    $$SELECT v.id FROM voor AS v WHERE nmc.is_terminal(v.naar)$$,
    'exactly the terminal ones get their wissen task, due after the erase term'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.event AS e INNER JOIN paar AS p ON e.notificatie_id = p.id
        WHERE e.sequence <> (
            SELECT count(*) FROM nmc.event AS x
            WHERE x.notificatie_id = e.notificatie_id AND x.sequence <= e.sequence
        )
    ),
    0,
    'every event chain is gap-free: sequences 1..versie'
);

-- Refusals: the whole call, so nothing of the set is written.
SELECT
    pg_temp.nieuwe_notificatie(p_dvref => 'r1') AS r1,
    pg_temp.nieuwe_notificatie(p_dvref => 'r2') AS r2,
    pg_temp.nieuwe_notificatie(p_dvref => 'r3') AS r3
\gset
SELECT pg_temp.naar_status(:'r3', 'verzonden');
CREATE TEMP TABLE stand AS
SELECT n.id, n.versie FROM nmc.notificatie AS n WHERE n.id IN (:'r1', :'r2', :'r3');

SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, %L, %L]::uuid[],
            '{in-verzending,in-verzending,in-verzending}')$$, :'r1', :'r2', :'r3'
    )),
    'NM001:verzonden',
    'one pair not allowed refuses the set (NM001, DETAIL = its current status)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, %L]::uuid[],
            '{verlopen,geannuleerd}', '{verlopen,verlopen}')$$, :'r1', :'r2'
    )),
    'NM013:',
    'one reason that does not fit refuses the set (NM013)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, %L]::uuid[], '{verlopen,verlopen}')$$,
        :'r1', :'r2'
    )),
    'NM013:',
    'without reasons a terminal failure is refused (NM013)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, gen_random_uuid()]::uuid[],
            '{in-verzending,in-verzending}')$$, :'r1'
    )),
    'NM005:',
    'an unknown notification refuses the set (NM005)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, %L]::uuid[],
            '{in-verzending,in-verzending}')$$, :'r1', :'r1'
    )),
    '21000:',
    'the same notification twice is refused (21000): both would read one version'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, NULL]::uuid[],
            '{in-verzending,in-verzending}')$$, :'r1'
    )),
    '21000:',
    'a NULL id is refused (21000)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L, %L]::uuid[], '{in-verzending}')$$,
        :'r1', :'r2'
    )),
    '22023:',
    'arrays of different length are refused (22023)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.transition_notificaties(ARRAY[%L]::uuid[], '{in-verzending}',
            '{NULL,NULL}')$$,
        :'r1'
    )),
    '22023:',
    'reasons of another length are refused (22023)'
);
SELECT set_eq(
    $$SELECT n.id, n.versie FROM nmc.notificatie AS n INNER JOIN stand AS s ON n.id = s.id$$,
    'SELECT id, versie FROM stand',
    'refused calls leave every version alone'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.event WHERE notificatie_id IN (:'r1', :'r2', :'r3')),
    5,
    'and write no event (1 + 1 + 3 from before)'
);

SELECT is_empty(
    $$SELECT * FROM nmc.transition_notificaties('{}', '{}')$$,
    'an empty set is no transition'
);

-- Mixed targets in one call, reasons only where they belong.
SELECT results_eq(
    format(
        $$SELECT t.notificatie_id, t.versie FROM nmc.transition_notificaties(
            ARRAY[%L, %L, %L]::uuid[], '{in-verzending,geannuleerd,verzonden}',
            '{NULL,geannuleerd,NULL}') AS t ORDER BY t.versie, t.notificatie_id$$,
        :'r1', :'r2', :'r3'
    ),
    format(
        $$SELECT * FROM (VALUES (%L::uuid, 2), (%L::uuid, 2), (%L::uuid, 4)) AS v (i, w)
          ORDER BY w, i$$,
        :'r1', :'r2', :'r3'
    ),
    'mixed targets in one call: each notification its own transition and version'
);
SELECT results_eq(
    format(
        $$SELECT status::text, reden::text FROM nmc.notificatie WHERE id IN (%L, %L, %L)
          ORDER BY versie, status::text$$,
        :'r1', :'r2', :'r3'
    ),
    $$VALUES ('geannuleerd', 'geannuleerd'), ('in-verzending', NULL), ('verzonden', NULL)$$,
    'with the statuses and reasons asked for'
);

SELECT * FROM finish();
ROLLBACK;
