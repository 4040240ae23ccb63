-- The single writer: every pair of statuses, allowed or refused, through the function.
BEGIN;
SELECT plan(112);
\ir fixtures/setup.sql

-- One fresh notification per (van, naar) pair, walked to van along allowed steps.
CREATE TEMP TABLE paar AS
SELECT
    v AS van,
    n AS naar,
    pg_temp.nieuwe_notificatie() AS id
FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS v,
    unnest(enum_range(NULL::nmc.notificatie_status)) AS n;
SELECT pg_temp.naar_status(id, van) FROM paar;
CREATE TEMP TABLE uitkomst AS
SELECT
    p.*,
    (SELECT n.versie FROM nmc.notificatie AS n WHERE n.id = p.id) AS versie_voor,
    pg_temp.fout(pg_catalog.format(
        'SELECT nmc.transition_notificatie(%L, %L, %L)', p.id, p.naar, pg_temp.reden_voor(p.naar)
    )) AS fout
FROM paar AS p;

-- 100 assertions: each pair either succeeds (allowed) or is refused with NM001.
SELECT
    is(
        u.fout,
        CASE WHEN nmc.transition_allowed(u.van, u.naar) THEN NULL ELSE 'NM001:' || u.van END,
        pg_catalog.format(
            '%s -> %s is %s', u.van, u.naar,
            CASE
                WHEN nmc.transition_allowed(u.van, u.naar) THEN 'allowed' ELSE 'refused (NM001)'
            END
        )
    )
FROM uitkomst AS u
ORDER BY u.van, u.naar;

-- Now perform every allowed pair for real and look at the rows it wrote.
CREATE TEMP TABLE gedaan AS
SELECT
    u.*,
    nmc.transition_notificatie(u.id, u.naar, pg_temp.reden_voor(u.naar)) AS versie_na
FROM uitkomst AS u
WHERE nmc.transition_allowed(u.van, u.naar);

SELECT ok(
    bool_and(g.versie_na = g.versie_voor + 1),
    'the function returns the version raised by exactly one'
) FROM gedaan AS g;

SELECT ok(
    bool_and(
        n.status = g.naar AND n.versie = g.versie_na
        AND n.reden IS NOT DISTINCT FROM pg_temp.reden_voor(g.naar)
    ),
    'the row carries the new status, reason and version'
) FROM gedaan AS g INNER JOIN nmc.notificatie AS n ON g.id = n.id;

SELECT
    ok(
        bool_and(
            e.van = g.van AND e.naar = g.naar AND e.dv_id = n.dv_id
            AND e.reden IS NOT DISTINCT FROM n.reden AND e.tijdstip = nmc.now()
            AND e.xid = pg_current_xact_id()
        ),
        'the event has sequence = the new version, van, naar, reden, NMC time and this xid'
    )
FROM gedaan AS g
INNER JOIN nmc.notificatie AS n ON g.id = n.id
INNER JOIN nmc.event AS e ON g.id = e.notificatie_id AND g.versie_na = e.sequence;

SELECT ok(
    bool_and((n.terminaal_op IS NOT NULL) = nmc.is_terminal(g.naar)),
    'terminaal_op is set on a terminal status and cleared when a late receipt reopens one'
) FROM gedaan AS g INNER JOIN nmc.notificatie AS n ON g.id = n.id;

SELECT is(
    (
        SELECT count(*)::integer FROM nmc.event AS e INNER JOIN paar AS p ON e.notificatie_id = p.id
        WHERE
            e.sequence <> (
                SELECT count(*) FROM nmc.event AS x
                WHERE x.notificatie_id = e.notificatie_id AND x.sequence <= e.sequence
            )
    ),
    0,
    'every event chain is gap-free: sequences 1..versie'
);

-- Refusals that are not about the pair.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'reden') AS id \gset
SELECT pg_temp.naar_status(:'id', 'verzonden');
SELECT is(
    pg_temp.fout(pg_catalog.format(
        'SELECT nmc.transition_notificatie(%L, %L, NULL)', :'id', 'niet-bezorgbaar'
    )),
    'NM013:',
    'a terminal failure without a reason is refused (NM013)'
);
SELECT is(
    pg_temp.fout(pg_catalog.format(
        'SELECT nmc.transition_notificatie(%L, %L, %L)', :'id', 'bezorgd', 'technisch'
    )),
    'NM013:',
    'a reason on a non-failure status is refused (NM013)'
);
SELECT is(
    pg_temp.fout(pg_catalog.format(
        'SELECT nmc.transition_notificatie(%L, %L, %L)', :'id', 'niet-bezorgbaar', 'verlopen'
    )),
    'NM013:',
    'a reason that belongs to another status is refused (NM013)'
);
SELECT throws_ok(
    $$SELECT nmc.transition_notificatie(gen_random_uuid(), 'verzonden')$$,
    'NM005',
    'notificatie not found',
    'an unknown notification is refused (NM005)'
);
SELECT is(
    (SELECT versie FROM nmc.notificatie WHERE id = :'id'),
    3,
    'refused transitions leave the version alone'
);

-- Two resend claims: verzonden -> verzonden writes an event each time.
SELECT nmc.transition_notificatie(:'id', 'verzonden');
SELECT results_eq(
    format('SELECT sequence, van::text, naar::text FROM nmc.event WHERE notificatie_id = %L
            ORDER BY sequence', :'id'),
    $$VALUES (1, NULL, 'aangenomen'), (2, 'aangenomen', 'in-verzending'),
             (3, 'in-verzending', 'verzonden'), (4, 'verzonden', 'verzonden')$$,
    'the resend claim (verzonden -> verzonden) writes an event of its own'
);

-- The clock the event reads is the NMC clock.
SELECT nmc.advance_clock('2 days');
SELECT nmc.transition_notificatie(:'id', 'bezorgd');
SELECT is(
    (SELECT tijdstip FROM nmc.event WHERE notificatie_id = :'id' AND sequence = 5),
    now() + interval '2 days',
    'the event time is nmc.now(), moved clock included'
);

SELECT * FROM finish();
ROLLBACK;
