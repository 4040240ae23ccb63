-- The look for work before a claim: a kind has work exactly when its claim would find some.
BEGIN;
SELECT plan(20);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
CREATE FUNCTION pg_temp.taak(p_soort nmc.taak_soort, p_due interval, p_dv integer DEFAULT 1001)
RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
    VALUES (p_soort, p_dv, nmc.now() + p_due, nmc.now())
    RETURNING id
$$;
CREATE FUNCTION pg_temp.werk(VARIADIC p_soorten nmc.taak_soort[]) RETURNS text[]
LANGUAGE sql AS $$ SELECT nmc.soorten_met_werk(p_soorten) $$;

SELECT is(
    pg_temp.werk('verzenden', 'receipt', 'vaststellen'), '{}'::text[],
    'no tasks: no kind has work'
);

-- A backlog that is not due yet (a settlement a week ahead) is no work.
SELECT pg_temp.taak('vaststellen', '7 days') FROM generate_series(1, 50);
SELECT is(pg_temp.werk('vaststellen'), '{}'::text[], 'only tasks due later: no work yet');

SELECT pg_temp.taak('vaststellen', '-1 second', 1002) AS due_taak \gset
SELECT is(
    pg_temp.werk('verzenden', 'vaststellen'), '{vaststellen}'::text[],
    'a task due now (of any DV) is work for its kind only'
);
SELECT is(pg_temp.werk('verzenden'), '{}'::text[], 'a kind not asked for is not answered');
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('vaststellen', 20)), 1,
    'and the claim finds that same task'
);

-- The clock moves on: what was due later is due now.
SELECT nmc.advance_clock('7 days 1 minute');
SELECT is(
    pg_temp.werk('receipt', 'vaststellen'), '{vaststellen}'::text[],
    'once the clock passes their due time, the later tasks are work'
);

-- A claimed task is work again once its lease ran out (a worker died), not before.
DELETE FROM nmc.taak;
SELECT pg_temp.taak('ongeldig-melden', '-1 second') AS t \gset
SELECT count(*) FROM nmc.claim_taken('ongeldig-melden', 'worker-a', 20);
SELECT is(pg_temp.werk('ongeldig-melden'), '{}'::text[], 'a task under a live lease: no work');
SELECT nmc.advance_clock('3 minutes');
SELECT is(
    pg_temp.werk('ongeldig-melden', 'wissen'), '{ongeldig-melden}'::text[],
    'a lease that ran out: work (the claim re-claims it)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('ongeldig-melden', 20)), 1,
    'and the claim finds it'
);

-- A webhook's task is work only when it has something to do: events after its delivery
-- position below the watermark, or upkeep (its position untouched for a minute: moved up
-- to the watermark, its gap and its validation checked again). An idle webhook's task is
-- due every webhook_interval, and its claim and finish were most of an idle stack's CPU.
DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook' WHERE dv_id = 1001;
SELECT nmc.ensure_terugkoppelen();
UPDATE nmc.webhookpositie SET xid = '10', event_id = 0, bijgewerkt_op = nmc.now();
SELECT is(
    pg_temp.werk('terugkoppelen', 'wissen'), '{}'::text[],
    'a due webhook task with nothing after its position and a fresh position: no work'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.lock_due_taken('terugkoppelen', 5)), 1,
    'though the claim would take it (the look is the stricter: the claim still can)'
);
-- Events committed "long ago" past the position: xids just above it.
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1002, 1, NULL, 'aangenomen', nmc.now(), '11');
SELECT is(
    pg_temp.werk('terugkoppelen'), '{}'::text[], 'another DV''s event is no work for it'
);
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), '12');
SELECT is(
    pg_temp.werk('terugkoppelen'), '{terugkoppelen}'::text[],
    'its own event after the position: work'
);
UPDATE nmc.webhookpositie SET xid = '12', event_id = (SELECT max(event_id) FROM nmc.event);
SELECT is(
    pg_temp.werk('terugkoppelen'), '{}'::text[], 'delivered up to that event: no work again'
);
SELECT nmc.advance_clock('1 minute');
SELECT is(
    pg_temp.werk('terugkoppelen'), '{terugkoppelen}'::text[],
    'a position untouched for a minute: work (upkeep)'
);
UPDATE nmc.webhookpositie SET bijgewerkt_op = nmc.now();
UPDATE nmc.taak SET due = nmc.now() + interval '2 seconds' WHERE soort = 'terugkoppelen';
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), '13');
SELECT is(
    pg_temp.werk('terugkoppelen'), '{}'::text[],
    'events waiting, but the task is not due yet (webhook_interval, backoff): no work'
);

-- The rule under both the look and the webhook's finish, called directly.
SELECT ok(
    nmc.webhook_events_wachten(1001, '12', 0),
    'webhook_events_wachten: an own event after the position below the watermark waits'
);
SELECT ok(
    NOT nmc.webhook_events_wachten(1001, '13', (SELECT max(event_id) FROM nmc.event)),
    'webhook_events_wachten: nothing after the last event'
);
SELECT ok(
    NOT nmc.webhook_events_wachten(1003, '1', 0),
    'webhook_events_wachten: a DV without events has nothing waiting'
);
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), pg_current_xact_id());
SELECT ok(
    NOT nmc.webhook_events_wachten(1001, '13', (SELECT event_id FROM nmc.event WHERE xid = '13')),
    'webhook_events_wachten: an event of a transaction still open (above the watermark) '
    || 'does not wait yet'
);

SELECT * FROM finish();
ROLLBACK;
