-- The webhook task: its own position, batches, 2xx is not an ack, backoff, pause, 410, resume.
BEGIN;
SELECT plan(27);
\ir fixtures/setup.sql

UPDATE nmc.dienstverlener SET
    webhook_url = 'https://dv.example/hook', webhook_max_batch = 2,
    webhook_max_mislukt = 3
WHERE dv_id = 1001;
-- Validated (tests_sql/webhookvalidatie.sql): an unvalidated webhook is claimed without a URL.
INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, gevalideerd_op)
VALUES (1001, 'https://dv.example/hook', 'geldig', nmc.now());
SELECT is(nmc.ensure_terugkoppelen(), 1, 'a DV with a webhook gets its task');
SELECT is(nmc.ensure_terugkoppelen(), 0, 'only one');
SELECT results_eq(
    'SELECT epoch, xid = pg_snapshot_xmin(pg_current_snapshot()), event_id FROM nmc.webhookpositie',
    $$VALUES (1, true, 0::bigint)$$,
    'the delivery position starts at the watermark'
);
-- Events committed "long ago" past the position: xids just above it.
UPDATE nmc.webhookpositie SET xid = '10';
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), (10 + i)::text::xid8
FROM generate_series(1, 3) AS i;

CREATE TEMP TABLE c1 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT webhook_url, json_array_length(pagina -> 'events'), pagina ->> 'xid' FROM c1$$,
    $$VALUES ('https://dv.example/hook', 2, '12')$$,
    'the claim returns the URL and a batch of at most webhook_max_batch from the position'
);
SELECT results_eq(
    $$SELECT (pagina ->> 'epoch')::integer, (pagina ->> 'uitgegevenOp')::timestamptz = nmc.now()
      FROM c1$$,
    $$VALUES (1, true)$$,
    'the batch carries the epoch and the issue time, as a feed page does (for Nmc-Cursor)'
);
SELECT is(
    nmc.finish_terugkoppelen_v2(
        (SELECT taak_id FROM c1), (SELECT claim_epoch FROM c1), 'geleverd',
        '12', ((SELECT pagina FROM c1) ->> 'eventId')::bigint, NULL
    ),
    'geleverd', 'a 2xx moves the delivery position'
);
SELECT is((SELECT xid::text FROM nmc.webhookpositie), '12', 'to the batch''s last event');
SELECT is_empty('SELECT * FROM nmc.bevestiging', 'and is not an acknowledgement');
SELECT results_eq(
    $$SELECT staat::text, due = nmc.now() FROM nmc.taak WHERE soort = 'terugkoppelen'$$,
    $$VALUES ('open', true)$$,
    'events still wait behind a full batch: the next batch is due at once'
);
CREATE TEMP TABLE c1b AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT pagina -> 'events' -> 0 ->> 'xid', json_array_length(pagina -> 'events'),
        (pagina ->> 'xid')::xid8 > '13'
        AND (pagina ->> 'xid')::xid8 <= pg_snapshot_xmin(pg_current_snapshot()),
        (pagina ->> 'eventId')::bigint
      FROM c1b$$,
    $$VALUES ('13', 1, true, 0::bigint)$$,
    'the next batch continues after the delivered one; a short batch ends at the watermark'
);
SELECT nmc.finish_terugkoppelen_v2(
    (SELECT taak_id FROM c1b), (SELECT claim_epoch FROM c1b), 'geleverd',
    ((SELECT pagina FROM c1b) ->> 'xid')::xid8, ((SELECT pagina FROM c1b) ->> 'eventId')::bigint,
    NULL
);
SELECT results_eq(
    $$SELECT staat::text, due = nmc.now() + interval '2 seconds' FROM nmc.taak
      WHERE soort = 'terugkoppelen' AND staat = 'open'$$,
    $$VALUES ('open', true)$$,
    'with nothing waiting the task looks again after webhook_interval'
);
CREATE TEMP TABLE positie AS SELECT xid, event_id FROM nmc.webhookpositie;

-- Failures: backoff, then a pause after webhook_max_mislukt (3).
CREATE FUNCTION pg_temp.faal() RETURNS text LANGUAGE plpgsql AS $$
DECLARE v record;
BEGIN
    UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'terugkoppelen' AND staat = 'open';
    SELECT * INTO v FROM nmc.claim_terugkoppelen_v3('w', 5);
    RETURN nmc.finish_terugkoppelen_v2(v.taak_id, v.claim_epoch, 'mislukt', NULL, NULL, NULL);
END $$;
SELECT is(pg_temp.faal(), 'uitgesteld', 'a failed call backs off');
SELECT results_eq(
    'SELECT xid, event_id FROM nmc.webhookpositie', 'SELECT xid, event_id FROM positie',
    'without moving the position'
);
SELECT is(pg_temp.faal(), 'uitgesteld', 'a second failure backs off more');
SELECT is(pg_temp.faal(), 'gepauzeerd', 'the third failure pauses the webhook');
SELECT ok(
    (SELECT gepauzeerd_tot = nmc.now() + interval '1 minute' FROM nmc.webhookpositie),
    'the first pause is short, and grows'
);
SELECT is(nmc.resume_webhook(1001), 'hervat', 'the DV can resume at once');
SELECT results_eq(
    $$SELECT w.mislukt, w.gepauzeerd_tot, t.due = nmc.now() FROM nmc.webhookpositie AS w
      JOIN nmc.taak AS t ON t.dv_id = w.dv_id AND t.soort = 'terugkoppelen' AND t.staat = 'open'$$,
    $$VALUES (0, NULL::timestamptz, true)$$,
    'resuming clears the failures and the pause and plans delivery now'
);

-- A 410 from the DV disables the webhook until it resumes.
CREATE TEMP TABLE c2 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT is(
    nmc.finish_terugkoppelen_v2(
        (SELECT taak_id FROM c2), (SELECT claim_epoch FROM c2), 'weg', NULL, NULL, NULL
    ),
    'uitgeschakeld', 'a 410 from the DV disables the webhook'
);
SELECT nmc.ensure_terugkoppelen();
SELECT is_empty(
    $$SELECT 1 FROM nmc.taak WHERE soort = 'terugkoppelen' AND staat = 'open'$$,
    'no task is planned while it is disabled'
);

-- A webhook task of a DV that is no longer active (or lost its webhook) comes without a URL:
-- the worker closes it instead of calling.
SELECT nmc.resume_webhook(1001);
UPDATE nmc.dienstverlener SET actief = FALSE WHERE dv_id = 1001;
SELECT results_eq(
    'SELECT webhook_url FROM nmc.claim_terugkoppelen_v3(''w'', 5)',
    $$VALUES (NULL::text)$$,
    'an inactive DV''s task is claimed without its URL'
);

-- An epoch raise (after a restore or a broken xid series) moves every webhook position to
-- the new epoch in the same transaction, back to the oldest available event: where a feed
-- consumer of the old epoch restarts after its 410 (ADR 0024), so nothing is skipped.
UPDATE nmc.dienstverlener SET actief = TRUE WHERE dv_id = 1001;
UPDATE nmc.taak SET staat = 'open', due = nmc.now(), lease_eigenaar = NULL, lease_tot = NULL
WHERE soort = 'terugkoppelen' AND staat IN ('open', 'claimed');
CREATE TEMP TABLE c3 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT is(nmc.raise_epoch(), 2, 'the epoch is raised');
SELECT results_eq(
    'SELECT epoch, xid::text, event_id FROM nmc.webhookpositie WHERE dv_id = 1001',
    $$VALUES (2, '0', 0::bigint)$$,
    'in the same transaction the delivery position moves to the new epoch, at the oldest event'
);
SELECT is(
    nmc.finish_terugkoppelen_v2(
        (SELECT taak_id FROM c3), (SELECT claim_epoch FROM c3), 'geleverd',
        ((SELECT pagina FROM c3) ->> 'xid')::xid8, ((SELECT pagina FROM c3) ->> 'eventId')::bigint,
        (SELECT epoch FROM c3)
    ),
    'geleverd', 'a call claimed before the raise still finishes'
);
SELECT results_eq(
    'SELECT epoch, xid::text, event_id FROM nmc.webhookpositie WHERE dv_id = 1001',
    $$VALUES (2, '0', 0::bigint)$$,
    'but its position of the old epoch does not overwrite the new one'
);
CREATE TEMP TABLE c4 AS SELECT * FROM nmc.claim_terugkoppelen_v3('w', 5);
SELECT results_eq(
    $$SELECT epoch, (pagina ->> 'epoch')::integer, pagina -> 'events' -> 0 ->> 'xid' FROM c4$$,
    $$VALUES (2, 2, '11')$$,
    'the next call carries the new epoch and starts at the DV''s oldest event'
);
SELECT is(
    nmc.acknowledge_cursor(
        1001, ((SELECT pagina FROM c4) ->> 'epoch')::integer,
        ((SELECT pagina FROM c4) ->> 'xid')::xid8, ((SELECT pagina FROM c4) ->> 'eventId')::bigint,
        ((SELECT pagina FROM c4) ->> 'uitgegevenOp')::timestamptz
    ),
    'bevestigd', 'a DV that acknowledges with the cursor of that call is not refused (no 410)'
);

SELECT * FROM finish();
ROLLBACK;
