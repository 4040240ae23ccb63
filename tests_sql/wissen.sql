-- Erasure by key, KEK rotation bookkeeping and retention.
BEGIN;
SELECT plan(17);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT pg_temp.naar_status(:'id', 'niet-bezorgbaar');
SELECT results_eq(
    format('SELECT staat::text, due = nmc.now() + interval ''7 days'' FROM nmc.taak
            WHERE notificatie_id = %L AND soort = ''wissen''', :'id'),
    $$VALUES ('open', true)$$,
    'a terminal status plans the wissen task, due after the erase term'
);
SELECT is(nmc.process_wissen(), 0, 'nothing is erased before the term');
SELECT nmc.advance_clock('7 days');
SELECT is(nmc.process_wissen(), 1, 'after the term the key is destroyed');
SELECT results_eq(
    format('SELECT sleutel_gewrapt, ontvanger_versleuteld, gegevens_versleuteld,
            gewist_op = nmc.now(), status::text, versie FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES (NULL::bytea, '\x'::bytea, NULL::bytea, true, 'niet-bezorgbaar', 3)$$,
    'wrapped key and ciphertext are gone; status and version stay'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.event WHERE notificatie_id = :'id'), 3,
    'the events (the delivery proof) stay'
);
SELECT lives_ok(
    format('SELECT nmc.get_notificatie(1001, %L)', :'id'),
    'the status endpoint still answers'
);

-- A late receipt reopened the notification: the old wissen task leaves it alone.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'heropend') AS h \gset
SELECT pg_temp.naar_status(:'h', 'bezorgstatus-onbekend');
SELECT nmc.transition_notificatie(:'h', 'bezorgd');
SELECT nmc.advance_clock('8 days');
SELECT is(nmc.process_wissen(), 0, 'a notification no longer terminal is not erased');
SELECT isnt(
    (SELECT sleutel_gewrapt FROM nmc.notificatie WHERE id = :'h'), NULL, 'its key is still there'
);
SELECT nmc.transition_notificatie(:'h', 'niet-bezorgbaar', 'onbereikbaar');
SELECT is(
    (
        SELECT
            count(*)::integer FROM nmc.taak WHERE
            notificatie_id = :'h' AND soort = 'wissen'
            AND staat = 'open'
    ),
    1,
    'its next terminal status plans a new wissen task'
);

-- A task due before its notification's term (the clock moved while the round ran: the
-- claim read the later time) stays open, and erases once the term has passed.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'vroeg') AS v \gset
SELECT pg_temp.naar_status(:'v', 'geannuleerd');
UPDATE nmc.taak SET due = nmc.now() - interval '1 second'
WHERE notificatie_id = :'v' AND soort = 'wissen';
SELECT is(nmc.process_wissen(), 0, 'a notification within its erase term is not erased');
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE notificatie_id = :'v' AND soort = 'wissen'),
    'open', 'its wissen task is not closed: the key would never go'
);
SELECT nmc.advance_clock('7 days');
SELECT nmc.process_wissen();
SELECT is(
    (SELECT sleutel_gewrapt FROM nmc.notificatie WHERE id = :'v'), NULL,
    'after the term the same task erases it'
);

-- KEK rotation: list, rewrap, store; only rows unchanged meanwhile.
SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 3);
SELECT results_eq(
    'SELECT kek_id, sleutels FROM nmc.kek_status()', $$VALUES ('kek-1', 3::bigint)$$,
    'kek_status counts live keys per KEK (erased ones not)'
);
CREATE TEMP TABLE te_doen AS
SELECT r.* FROM nmc.list_rewrap_v2('kek-2', NULL, 5000) AS r
WHERE r.sleutel_gewrapt IS NOT NULL
ORDER BY r.notificatie_id LIMIT 2;
SELECT is((SELECT count(*)::integer FROM te_doen), 2, 'list_rewrap gives a batch');
UPDATE nmc.notificatie SET sleutel_gewrapt = NULL
WHERE id = (SELECT min(notificatie_id::text)::uuid FROM te_doen);
SELECT is(
    nmc.store_rewrap(
        array(SELECT notificatie_id FROM te_doen), array(SELECT kek_id FROM te_doen),
        array(SELECT '\xaa'::bytea FROM te_doen), 'kek-2'
    ),
    1,
    'store_rewrap skips a row erased meanwhile'
);
SELECT results_eq(
    'SELECT kek_id, sleutels FROM nmc.kek_status()',
    $$VALUES ('kek-1', 1::bigint), ('kek-2', 1::bigint)$$,
    'the rewrapped key now counts under the new KEK'
);

-- Retention: a year after the terminal status the notification goes, events stay.
SELECT nmc.advance_clock('366 days');
SELECT is(
    (nmc.delete_expired(1000) ->> 'notificaties')::integer,
    3,
    'notifications terminal for over a year are deleted (with attempts and tasks)'
);

SELECT * FROM finish();
ROLLBACK;
