-- A webhook whose position points into a dropped event partition (audit 2, item 6): no batch
-- after the gap, a pause of its own, told on the metric and the beheer report, and the DV's
-- way back (nmc.set_webhook_positie: a cursor it holds, on the feed's 410 rules, or the oldest
-- event).
BEGIN;
SELECT plan(30);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET
    webhook_url = 'https://dv.example/hook', webhook_max_batch = 2,
    beheerkanaal = 'https://dv.example/beheer'
WHERE dv_id = 1001;
INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, gevalideerd_op)
VALUES (1001, 'https://dv.example/hook', 'geldig', nmc.now());
SELECT nmc.ensure_terugkoppelen();
-- The DV's position at xid 10; events at xids 11-13 and 21.
UPDATE nmc.webhookpositie SET xid = '10', event_id = 0 WHERE dv_id = 1001;
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), x::text::xid8
FROM unnest(ARRAY[11, 12, 13, 21]) AS x;

-- Reopens the webhook task (due now) and claims it with the given form.
CREATE FUNCTION pg_temp.due() RETURNS void LANGUAGE sql AS $$
    UPDATE nmc.taak SET staat = 'open', due = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
    WHERE soort = 'terugkoppelen' AND staat IN ('open', 'claimed')
$$;
CREATE FUNCTION pg_temp.metriek(p_naam text) RETURNS double precision LANGUAGE sql AS $$
    SELECT m.waarde FROM nmc.metrics() AS m
    WHERE m.naam = p_naam AND m.labels = '{"dv": 1001}'::jsonb
$$;

-- Without a dropped partition nothing changes.
CREATE TEMP TABLE c0 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT gat, json_array_length(pagina -> 'events') FROM c0$$,
    $$VALUES (false, 2)$$,
    'no gap: the batch is read from the position'
);

-- The range up to xid 15 is dropped (the register says so; the feed answers 410 below it).
UPDATE nmc.event_partitie SET verwijderd_op = nmc.now() - interval '1 hour', xid_tot = '15';
SELECT throws_ok(
    $$SELECT nmc.check_cursor(d, 1, '10', nmc.now()) FROM nmc.dienstverlener AS d
      WHERE d.dv_id = 1001$$,
    'NM018', NULL, 'the feed refuses this position (410)'
);
SELECT pg_temp.due();
CREATE TEMP TABLE c1 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT gat, pagina IS NULL, webhook_url FROM c1$$,
    $$VALUES (true, true, 'https://dv.example/hook')$$,
    'a gap: the claim returns no batch, and says why'
);
SELECT ok(
    (SELECT gat_op = nmc.now() FROM nmc.webhookpositie WHERE dv_id = 1001),
    'the webhook is paused for the gap'
);
SELECT results_eq(
    'SELECT xid::text, event_id FROM nmc.webhookpositie WHERE dv_id = 1001',
    $$VALUES ('10', 0::bigint)$$,
    'and its position stays'
);
SELECT pg_temp.due();
SELECT results_eq(
    'SELECT webhook_url, pagina IS NULL FROM nmc.claim_terugkoppelen_v2(''w'', 5)',
    $$VALUES (NULL::text, true)$$,
    'the previous release''s claim gets no URL (its worker closes the task, no call)'
);
UPDATE nmc.taak SET staat = 'done', lease_eigenaar = NULL, lease_tot = NULL
WHERE soort = 'terugkoppelen';
SELECT is(nmc.ensure_terugkoppelen(), 0, 'no task is planned while it is paused for the gap');
SELECT is(pg_temp.metriek('nmc_webhook_gat'), 1::double precision, 'the gap metric is 1');
SELECT is(
    pg_temp.metriek('nmc_webhook_gepauzeerd'), 1::double precision, 'the webhook counts as paused'
);
SELECT is(nmc.resume_webhook(1001), 'gat', 'resuming does not skip the gap');
SELECT ok(
    (SELECT gat_op IS NOT NULL FROM nmc.webhookpositie WHERE dv_id = 1001),
    'the gap pause stays after a resume'
);
SELECT is(nmc.ensure_terugkoppelen(), 0, 'and still no task');

-- The beheer report tells of it.
SELECT nmc.ensure_beheerrapporten();
UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'beheerrapport' AND dv_id = 1001;
CREATE TEMP TABLE b1 AS
SELECT r.* FROM nmc.claim_taken('beheerrapport', 'w', 5) AS c,
    LATERAL nmc.begin_beheerrapport_v2(c.taak_id, c.claim_epoch, 0.3) AS r;
SELECT results_eq(
    'SELECT webhook_gat, te_melden, onbevestigd FROM b1',
    $$VALUES (true, true, 0)$$,
    'the daily beheer report has something to tell: the webhook''s gap'
);
SELECT ok(
    (SELECT webhook_gat FROM nmc.beheerrapport WHERE dv_id = 1001),
    'and records that it told it'
);
SELECT results_eq(
    $$SELECT r.te_melden FROM nmc.taak AS t,
        LATERAL nmc.begin_beheerrapport(t.id, t.claim_epoch, 0.3) AS r
      WHERE t.soort = 'beheerrapport' AND t.dv_id = 1001$$,
    $$VALUES (false)$$,
    'the previous release''s form, which cannot show the gap, has nothing to tell'
);

-- The way back: a cursor the feed refuses is refused the same way.
SELECT throws_ok(
    $$SELECT nmc.set_webhook_positie(1001, 1, '12', 3, nmc.now())$$,
    'NM018', NULL, 'a cursor into the dropped range is refused (410)'
);
SELECT throws_ok(
    $$SELECT nmc.set_webhook_positie(1001, 7, '15', 0, nmc.now())$$,
    'NM018', NULL, 'a cursor of another epoch is refused (410)'
);
SELECT throws_ok(
    $$SELECT nmc.set_webhook_positie(1001, 1, '15', 0, nmc.now() - interval '400 days')$$,
    'NM018', NULL, 'a cursor older than the max cursor age is refused (410)'
);
SELECT throws_ok(
    $$SELECT nmc.set_webhook_positie(1002, 1, '15', 0, nmc.now())$$,
    'NM005', NULL, 'a DV without a webhook has no position to set'
);
SELECT ok(
    (SELECT gat_op IS NOT NULL FROM nmc.webhookpositie WHERE dv_id = 1001),
    'a refused call leaves the pause'
);
-- To the oldest available event: just past the dropped range.
SELECT is(
    nmc.set_webhook_positie(1001, NULL, NULL, NULL, NULL), 'gezet', 'set to the oldest event'
);
SELECT results_eq(
    $$SELECT xid::text, event_id, gat_op IS NULL, geleverd_op = nmc.now()
      FROM nmc.webhookpositie WHERE dv_id = 1001$$,
    $$VALUES ('15', 0::bigint, true, true)$$,
    'the position is the end of the dropped range, the pause is over, its age restarts'
);
SELECT results_eq(
    $$SELECT staat::text, due = nmc.now() FROM nmc.taak WHERE soort = 'terugkoppelen'
      AND staat <> 'done'$$,
    $$VALUES ('open', true)$$,
    'the webhook task is planned, due now'
);
CREATE TEMP TABLE c2 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT gat, pagina -> 'events' -> 0 ->> 'xid' FROM c2$$,
    $$VALUES (false, '21')$$,
    'delivery goes on from the oldest available event'
);
SELECT is(pg_temp.metriek('nmc_webhook_gat'), 0::double precision, 'the gap metric is 0 again');

-- A batch out while the DV sets its position does not move the new position.
SELECT is(
    nmc.set_webhook_positie(1001, 1, '15', 0, nmc.now()), 'gezet', 'set to a cursor it holds'
);
SELECT throws_ok(
    format(
        $$SELECT nmc.finish_terugkoppelen_v2(%s, %s, 'geleverd', '22', 0, 1)$$,
        (SELECT taak_id FROM c2), (SELECT claim_epoch FROM c2)
    ),
    'NM011', NULL, 'the finish of the batch that was out is stale'
);
SELECT results_eq(
    'SELECT xid::text, event_id FROM nmc.webhookpositie WHERE dv_id = 1001',
    $$VALUES ('15', 0::bigint)$$,
    'the position is the one the DV set'
);

-- The position (0, 0) of an epoch raise means the oldest available event: a range dropped
-- before it was set is no gap; one dropped after it (while it failed past the max cursor
-- age) is.
UPDATE nmc.webhookpositie SET xid = '0', event_id = 0, geleverd_op = nmc.now()
WHERE dv_id = 1001;
SELECT ok(
    NOT (SELECT nmc.webhook_gat(w) FROM nmc.webhookpositie AS w WHERE w.dv_id = 1001),
    'a restart at the oldest event after the drop is no gap'
);
UPDATE nmc.webhookpositie SET geleverd_op = nmc.now() - interval '2 hours' WHERE dv_id = 1001;
SELECT ok(
    (SELECT nmc.webhook_gat(w) FROM nmc.webhookpositie AS w WHERE w.dv_id = 1001),
    'a drop after the restart is'
);

SELECT * FROM finish();
ROLLBACK;
