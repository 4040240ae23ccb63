-- Internal helpers, tested directly (their callers' tests cover them in context too).
BEGIN;
SELECT plan(20);
\ir fixtures/setup.sql

SELECT results_eq(
    $$SELECT s, nmc.poging_status_voor(s)::text FROM unnest(ARRAY['delivered',
      'permanent-failure', 'temporary-failure', 'technical-failure', 'sending', 'bogus']) AS s$$,
    $$VALUES ('delivered', 'bezorgd'), ('permanent-failure', 'permanent-mislukt'),
             ('temporary-failure', 'tijdelijk-mislukt'), ('technical-failure', 'technisch-mislukt'),
             ('sending', NULL), ('bogus', NULL)$$,
    'poging_status_voor maps the four final NotifyNL statuses and nothing else'
);
SELECT is(
    nmc.next_navraag('2026-12-01 00:00+00', '2026-12-01 00:00+00'),
    '2026-12-01 01:00+00'::timestamptz, 'next_navraag: first after 1 h'
);
SELECT is(
    nmc.next_navraag('2026-12-01 00:00+00', '2026-12-01 01:00+00'),
    '2026-12-01 06:00+00'::timestamptz, 'then at 6 h'
);
SELECT is(
    nmc.next_navraag('2026-12-01 00:00+00', '2026-12-02 00:00+00'),
    '2026-12-03 00:00+00'::timestamptz, 'then daily'
);
SELECT is(
    nmc.next_navraag('2026-12-01 00:00+00', '2026-12-07 00:00+00'),
    '2026-12-08 00:00+00'::timestamptz, 'last when NotifyNL''s retention (7 days) ends'
);
SELECT is(
    nmc.next_navraag('2026-12-01 00:00+00', '2026-12-08 00:00+00'), NULL,
    'and nothing after the end of NotifyNL''s retention'
);

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT ok(
    (
        SELECT nmc.notificatie_json(n) ?& ARRAY['notificatieId', 'status', 'versie', 'pogingen']
        FROM nmc.notificatie AS n WHERE n.id = :'id'
    ),
    'notificatie_json carries id, status, version and attempts'
);
SELECT is(
    (SELECT nmc.event_json(e) ->> 'naar' FROM nmc.event AS e WHERE e.notificatie_id = :'id'),
    'aangenomen',
    'event_json carries the transition'
);
SELECT is(
    (nmc.read_events(1001, '0', 0, 1000, 1, nmc.now()) -> 'events')::jsonb,
    '[]'::jsonb,
    'read_events does not serve this open transaction''s own event'
);
SELECT throws_ok(
    $$SELECT nmc.check_cursor(d, 7, '1', now()) FROM nmc.dienstverlener AS d
      WHERE d.dv_id = 1001$$,
    'NM018', NULL, 'check_cursor refuses another epoch'
);
UPDATE nmc.dienstverlener SET feed_aanroepen_per_minuut = 1 WHERE dv_id = 1002;
SELECT lives_ok(
    'SELECT nmc.take_feed_aanroep(d) FROM nmc.dienstverlener AS d WHERE d.dv_id = 1002',
    'take_feed_aanroep counts a call'
);
SELECT throws_ok(
    'SELECT nmc.take_feed_aanroep(d) FROM nmc.dienstverlener AS d WHERE d.dv_id = 1002',
    'NM019', NULL, 'and refuses the call over the rate'
);
SELECT throws_ok(
    $$SELECT nmc.take_intake_quotum(d, 6, nmc.now()) FROM nmc.dienstverlener AS d
      WHERE d.dv_id = 1002$$,
    'NM009', NULL, 'take_intake_quotum refuses more than the quota per minute'
);
SELECT throws_ok(
    format('SELECT nmc.lock_claimed_taak(id, 1) FROM nmc.taak WHERE notificatie_id = %L', :'id'),
    'NM011', NULL, 'lock_claimed_taak refuses a task that is not claimed with that epoch'
);
DELETE FROM nmc.taak WHERE notificatie_id = :'id';
SELECT
    is(nmc.plan_missing_taken(), 1, 'plan_missing_taken gives the task-less notification a task');
SELECT ok(
    EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgfoid = 'nmc.guard_notificatie_row'::regproc)
    AND EXISTS (
        SELECT 1 FROM pg_catalog.pg_trigger
        WHERE tgfoid = 'nmc.guard_notificatie_event'::regproc
    ),
    'guard_notificatie_row and guard_notificatie_event guard notificatie'
);
SELECT ok(
    EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgfoid = 'nmc.refuse_event_change'::regproc)
    AND (SELECT nmc.create_event_partitie('900000000', '900001000')) = 'event_x000900000000',
    'refuse_event_change guards the log; create_event_partitie adds a range'
);

SELECT nmc.plan_vaststellen(n, NULL, '2026-12-01 00:00+00') FROM nmc.notificatie AS n
WHERE n.id = :'id';
SELECT is(
    (SELECT due FROM nmc.taak WHERE notificatie_id = :'id' AND soort = 'vaststellen'),
    '2026-12-08 00:30+00'::timestamptz,
    'plan_vaststellen: due at completed_at + 7 days + the 30-minute callback window'
);

-- close_taken: every listed task done, its lease gone; an empty list changes nothing.
UPDATE nmc.taak
SET staat = 'claimed', lease_eigenaar = 'w', lease_tot = nmc.now() + interval '2 minutes'
WHERE notificatie_id = :'id' AND soort = 'vaststellen';
SELECT nmc.close_taken(array(
    SELECT t.id FROM nmc.taak AS t WHERE t.notificatie_id = :'id' AND t.soort = 'vaststellen'
));
SELECT results_eq(
    format($$SELECT staat::text, lease_eigenaar, lease_tot, afgerond_op = nmc.now()
             FROM nmc.taak WHERE notificatie_id = %L AND soort = 'vaststellen'$$, :'id'),
    $$VALUES ('done', NULL::text, NULL::timestamptz, true)$$,
    'close_taken: the tasks are done, their leases dropped, afgerond_op now'
);
SELECT lives_ok(
    'SELECT nmc.close_taken(ARRAY[]::bigint[])',
    'close_taken: an empty list is a no-op'
);

SELECT * FROM finish();
ROLLBACK;
