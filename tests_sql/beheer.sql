-- Operator tools: list and reopen mislukt tasks, force a transition; all audited.
BEGIN;
SELECT plan(9);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
INSERT INTO nmc.taak (
    soort, dv_id, notificatie_id, due, staat, pogingen, laatste_fout, aangemaakt_op
)
VALUES ('ongeldig-melden', 1001, :'id', nmc.now(), 'mislukt', 5, 'bug', nmc.now())
RETURNING id AS t \gset

SELECT results_eq(
    'SELECT id, soort::text, pogingen, laatste_fout FROM nmc.list_taken()',
    format($$VALUES (%s::bigint, 'ongeldig-melden', 5, 'bug')$$, :t),
    'list_taken shows the mislukt tasks'
);
SELECT lives_ok(
    format('SELECT nmc.reopen_taak(%s, %L, %L)', :t, 'bug fixed', 'beheerder'),
    'a mislukt task can be reopened'
);
SELECT results_eq(
    format('SELECT staat::text, pogingen, due = nmc.now() FROM nmc.taak WHERE id = %s', :t),
    $$VALUES ('open', 0, true)$$,
    'open again, due now, counters reset'
);
SELECT throws_ok(
    format('SELECT nmc.reopen_taak(%s, %L, %L)', :t, 'x', 'y'), 'NM020', NULL,
    'only a mislukt task can be reopened (NM020)'
);

SELECT is(
    nmc.force_transition(:'id', 'verlopen', 'verlopen', 'ticket 42', 'beheerder'), 2,
    'a forced transition goes through the single writer'
);
SELECT results_eq(
    format('SELECT van::text, naar::text, reden::text FROM nmc.event WHERE notificatie_id = %L
            AND sequence = 2', :'id'),
    $$VALUES ('aangenomen', 'verlopen', 'verlopen')$$,
    'and writes its event'
);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE notificatie_id = :'id' AND soort = 'verzenden'),
    'done', 'the notification''s send task is closed'
);
SELECT throws_ok(
    format($$SELECT nmc.force_transition(%L, 'verzonden', NULL, 'x', 'y')$$, :'id'),
    'NM001', NULL, 'only along allowed pairs (NM001)'
);
SELECT results_eq(
    'SELECT soort, van::text, naar::text, toelichting, door FROM nmc.beheeractie ORDER BY id',
    $$VALUES ('heropen-taak', NULL, NULL, 'bug fixed', 'beheerder'),
             ('forceer-overgang', 'aangenomen', 'verlopen', 'ticket 42', 'beheerder')$$,
    'both actions are audited with who and why'
);

SELECT * FROM finish();
ROLLBACK;
