-- A task's notification: kept per statement instead of by a foreign key (schema/0014).
BEGIN;
SELECT plan(11);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset

SELECT col_isnt_fk('nmc', 'taak', 'notificatie_id', 'taak.notificatie_id is no foreign key');
SELECT trigger_is(
    'nmc', 'taak', 'taak_notificatie_bestaat', 'nmc', 'check_taak_notificatie',
    'nmc.check_taak_notificatie judges inserted tasks'
);
SELECT trigger_is(
    'nmc', 'taak', 'taak_notificatie_vast', 'nmc', 'refuse_taak_notificatie_change',
    'nmc.refuse_taak_notificatie_change keeps a task with its notification'
);
SELECT trigger_is(
    'nmc', 'notificatie', 'notificatie_taken_weg', 'nmc', 'delete_taken_van_notificaties',
    'nmc.delete_taken_van_notificaties deletes the tasks of deleted notifications'
);
SELECT throws_ok(
    $$INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
      VALUES ('wissen', 1001, gen_random_uuid(), nmc.now(), nmc.now())$$,
    '23503', 'a task must name an existing notificatie',
    'a task for a notification that does not exist is refused (23503)'
);
SELECT throws_ok(
    format($$INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
      VALUES ('wissen', 1001, %L, nmc.now(), nmc.now()),
             ('wissen', 1001, gen_random_uuid(), nmc.now(), nmc.now())$$, :'id'),
    '23503', 'a task must name an existing notificatie',
    'one unknown notification among known ones refuses the whole statement'
);
SELECT lives_ok(
    format($$INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
      VALUES ('wissen', 1001, %L, nmc.now(), nmc.now()),
             ('terugkoppelen', 1001, NULL, nmc.now(), nmc.now())$$, :'id'),
    'tasks for an existing notification, or for none, are stored'
);
SELECT throws_ok(
    format($$UPDATE nmc.taak SET notificatie_id = %L WHERE notificatie_id IS NULL$$, :'id'),
    'NM015', 'a task''s notificatie never changes',
    'a task never moves to another notification (NM015)'
);
SELECT lives_ok(
    format($$UPDATE nmc.taak SET due = due WHERE notificatie_id = %L$$, :'id'),
    'updates that leave the notification alone pass'
);

SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE notificatie_id = :'id'),
    2,
    'the notification has its send task and the wissen task'
);
-- The event log is append only; its rows are kept for the proof, so only the notification
-- and what hangs off it go.
DELETE FROM nmc.notificatie WHERE id = :'id';
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE notificatie_id = :'id'),
    0,
    'deleting a notification deletes its tasks (what ON DELETE CASCADE did)'
);

SELECT * FROM finish();
ROLLBACK;
