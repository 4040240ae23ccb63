-- The receipt history and the settlement record (schema 0021): written where receipts are
-- stored and judged (nmc.store_receipts_v2, nmc.process_receipts, nmc.apply_receipt_v2,
-- nmc.finish_navraag) and where delivery is settled (nmc.process_vaststellingen); kept
-- while the notification is, after its receipt tasks are cleaned up; gone with it.
BEGIN;
SELECT plan(24);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

SELECT has_table('nmc', 'receiptgeschiedenis', 'the receipt history exists');
SELECT has_table('nmc', 'vaststelling', 'the settlement record exists');
SELECT ok(
    obj_description('nmc.receiptgeschiedenis'::regclass, 'pg_class') ~ 'Retention: deleted with'
    AND obj_description('nmc.vaststelling'::regclass, 'pg_class') ~ 'Retention: deleted with',
    'both tables state their retention in their COMMENT'
);

-- A delivered receipt from the callback, with its template.
SELECT pg_temp.verzonden() AS id \gset
SELECT nmc.now() - interval '2 minutes' AS completed \gset
SELECT pg_temp.callback(:'id', 'delivered', :'completed', 4) AS r1 \gset
SELECT is(:'r1'::text, 'opgeslagen', 'the callback stores the receipt with its template');
SELECT results_eq(
    $$SELECT h.bron, h.status, h.completed_at, h.template_id, h.template_versie, h.resultaat,
        h.toegepast, h.na_eindstatus, h.notificatie_versie, h.notifynl_id = p.notifynl_id,
        h.poging_id = p.id
      FROM nmc.receiptgeschiedenis AS h, pg_temp.laatste_poging(h.notificatie_id) AS p
      WHERE h.notificatie_id = '$$ || :'id' || $$'$$,
    $$VALUES ('callback', 'delivered', '$$ || :'completed' || $$'::timestamptz,
        'a0a0a0a0-0000-4000-8000-000000000001'::uuid, 4, 'bezorgd', true, false, 4, true, true)$$,
    'the processed receipt is in the history: source, status, completed_at, template, '
    'result, changed the outcome, the version after it'
);
SELECT is(
    (SELECT h.ontvangen_op FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = :'id'),
    (
        SELECT t.aangemaakt_op FROM nmc.taak AS t
        WHERE t.notificatie_id = :'id' AND t.soort = 'receipt'
    ),
    'received at = when the callback stored it'
);

-- The same status again, older: recorded only.
SELECT pg_temp.callback(:'id', 'temporary-failure', nmc.now() - interval '1 hour') AS r2 \gset
SELECT results_eq(
    $$SELECT h.resultaat, h.toegepast, h.na_eindstatus FROM nmc.receiptgeschiedenis AS h
      WHERE h.notificatie_id = '$$ || :'id' || $$' ORDER BY h.id DESC LIMIT 1$$,
    $$VALUES ('ouder', false, false)$$,
    'an older receipt is in the history as judged: ouder, only recorded'
);
-- A status the NMC does not know.
SELECT pg_temp.callback(:'id', 'bounced-maybe', nmc.now()) AS r3 \gset
SELECT results_eq(
    $$SELECT h.status, h.resultaat, h.toegepast FROM nmc.receiptgeschiedenis AS h
      WHERE h.notificatie_id = '$$ || :'id' || $$' ORDER BY h.id DESC LIMIT 1$$,
    $$VALUES ('bounced-maybe', 'onbekende-status', false)$$,
    'an unknown status is in the history, only recorded'
);
-- A non-final status.
SELECT pg_temp.callback(:'id', 'sending', nmc.now()) AS r4 \gset
SELECT results_eq(
    $$SELECT h.resultaat, h.toegepast FROM nmc.receiptgeschiedenis AS h
      WHERE h.notificatie_id = '$$ || :'id' || $$' ORDER BY h.id DESC LIMIT 1$$,
    $$VALUES ('niet-definitief', false)$$,
    'a non-final status is in the history, only recorded'
);

-- Settlement: the record names the attempt, its completed_at, the term and when.
SELECT nmc.advance_clock('8 days') AS vastgesteld \gset
SELECT is(nmc.process_vaststellingen(100), 1, 'the settlement runs');
SELECT results_eq(
    $$SELECT v.poging_id = p.id, v.completed_at, v.termijn, v.callback_venster, v.gepland_op,
        v.vastgesteld_op
      FROM nmc.vaststelling AS v, pg_temp.laatste_poging(v.notificatie_id) AS p
      WHERE v.notificatie_id = '$$ || :'id' || $$'$$,
    $$VALUES (true, '$$ || :'completed' || $$'::timestamptz, interval '7 days',
        interval '30 minutes',
        '$$ || :'completed' || $$'::timestamptz + interval '7 days 30 minutes',
        '$$ || :'vastgesteld' || $$'::timestamptz)$$,
    'the settlement is recorded: attempt, completed_at, term, callback window, due, settled'
);

-- A late bounce after the settlement: recorded after the final status, nothing changed.
SELECT pg_temp.callback(:'id', 'permanent-failure', nmc.now() - interval '1 hour') AS r5 \gset
SELECT results_eq(
    $$SELECT h.status, h.resultaat, h.toegepast, h.na_eindstatus, h.notificatie_versie
      FROM nmc.receiptgeschiedenis AS h
      WHERE h.notificatie_id = '$$ || :'id' || $$' ORDER BY h.id DESC LIMIT 1$$,
    $$VALUES ('permanent-failure', 'vastgelegd', false, true, 5)$$,
    'a receipt after the final status is recorded as such (na_eindstatus)'
);
SELECT is(
    (SELECT n.status FROM nmc.notificatie AS n WHERE n.id = :'id'), 'definitief-bezorgd',
    'and it changed nothing'
);

-- A receipt that moves the notification: toegepast, and the version moves.
SELECT pg_temp.verzonden() AS id2 \gset
SELECT pg_temp.callback(:'id2', 'permanent-failure', nmc.now()) AS r6 \gset
SELECT results_eq(
    $$SELECT h.resultaat, h.toegepast, h.na_eindstatus, h.notificatie_versie
      FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = '$$ || :'id2' || $$'$$,
    $$VALUES ('niet-bezorgbaar', true, false, 4)$$,
    'a permanent failure that ends the notification changed the outcome'
);

-- A reconciliation answer is judged like a receipt and written with bron navraag.
SELECT pg_temp.verzonden() AS id3 \gset
SELECT nmc.advance_clock('61 minutes');
SELECT c.taak_id, c.claim_epoch
FROM nmc.claim_navraag_v2('w', 1000) AS c WHERE c.notificatie_id = :'id3' \gset
SELECT is(
    nmc.finish_navraag(
        :taak_id, :claim_epoch, true, 'delivered', nmc.now() - interval '5 minutes',
        null
    ),
    'bezorgd', 'the reconciliation answer delivered the notification'
);
SELECT results_eq(
    $$SELECT h.bron, h.status, h.resultaat, h.toegepast, h.ontvangen_op = nmc.now(),
        h.template_versie IS NULL
      FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = '$$ || :'id3' || $$'$$,
    $$VALUES ('navraag', 'delivered', 'bezorgd', true, true, true)$$,
    'the reconciliation answer is in the history (bron navraag, received when it was asked)'
);

-- A reconciliation answer with a status the NMC does not know: recorded in the history too.
SELECT pg_temp.verzonden() AS id4 \gset
SELECT nmc.advance_clock('61 minutes');
SELECT c.taak_id AS taak4, c.claim_epoch AS epoch4
FROM nmc.claim_navraag_v2('w', 1000) AS c WHERE c.notificatie_id = :'id4' \gset
SELECT is(
    nmc.finish_navraag(:taak4, :epoch4, true, 'vreemd', null, null), 'opnieuw',
    'an unknown status in a reconciliation answer: asked again later'
);
SELECT results_eq(
    $$SELECT h.bron, h.status, h.resultaat, h.toegepast
      FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = '$$ || :'id4' || $$'$$,
    $$VALUES ('navraag', 'vreemd', 'onbekende-status', false)$$,
    'and recorded in the history, only recorded'
);

-- The old signatures keep working (an API or worker of the previous release).
SELECT pg_temp.verzonden() AS id5 \gset
SELECT is(
    nmc.store_receipt(
        (pg_temp.laatste_poging(:'id5')).id::text,
        (pg_temp.laatste_poging(:'id5')).notifynl_id, 'delivered', nmc.now(), null
    ),
    'opgeslagen', 'the old single store still stores'
);
SELECT is(nmc.process_receipts(1000) >= 1, true, 'and it is processed');
SELECT results_eq(
    $$SELECT h.bron, h.template_id IS NULL, h.toegepast
      FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = '$$ || :'id5' || $$'$$,
    $$VALUES ('callback', true, true)$$,
    'a receipt stored without a template is in the history without one'
);

-- Retention: the receipt tasks go after their short term, the history stays...
SELECT nmc.advance_clock('8 days');
SELECT nmc.delete_expired(1000);
SELECT ok(
    NOT EXISTS (SELECT 1 FROM nmc.taak AS t WHERE t.notificatie_id = :'id' AND t.soort = 'receipt')
    AND (SELECT count(*) FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = :'id') = 5,
    'processed receipt tasks are cleaned up, the history of the notification stays'
);
-- ... and goes with the notification after the delivery-proof retention.
SELECT nmc.advance_clock('1 year');
SELECT nmc.delete_expired(1000);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.receiptgeschiedenis AS h
        WHERE h.notificatie_id IN (:'id', :'id2')
    ),
    0,
    'the history goes with its notification after the delivery-proof retention'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.vaststelling AS v WHERE v.notificatie_id = :'id'), 0,
    'so does the settlement record'
);

SELECT * FROM finish();
ROLLBACK;
