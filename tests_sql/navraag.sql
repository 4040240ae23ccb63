-- Reconciliation: the 1 h / 6 h / 24 h / daily schedule and its two dead ends.
BEGIN;
SELECT plan(23);
\ir fixtures/setup.sql
-- Many sends at one instant of the test clock: a pace far above what these tests take.
INSERT INTO nmc.notify_service (code, budget_per_minuut, burst) VALUES ('standaard', 1000000, 1000);

-- A known instant far ahead (the test clock only moves forward: it must lie after today).
UPDATE nmc.klok SET verschuiving = '2099-12-01 12:00:00+00'::timestamptz - now();
-- Accepts, claims and commits a send; returns the attempt id.
CREATE FUNCTION pg_temp.verzonden(p_ref text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE v_id uuid := pg_temp.nieuwe_notificatie(p_dvref => p_ref); v_c record;
BEGIN
    SELECT * INTO v_c FROM nmc.claim_verzenden('w', 100) AS c WHERE c.notificatie_id = v_id;
    PERFORM nmc.finish_verzenden(v_c.taak_id, v_c.claim_epoch, 'verzonden', gen_random_uuid());
    RETURN v_c.poging_id;
END $$;
-- Claims the reconciliation of one attempt and answers it.
CREATE FUNCTION pg_temp.antwoord(p_poging uuid, p_gevonden boolean, p_status text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_c record;
BEGIN
    SELECT * INTO v_c FROM nmc.claim_navraag_v2('w', 100) AS c WHERE c.poging_id = p_poging;
    IF NOT FOUND THEN RETURN 'niet geclaimd'; END IF;
    RETURN nmc.finish_navraag(v_c.taak_id, v_c.claim_epoch, p_gevonden, p_status,
        CASE WHEN p_status = 'delivered' THEN nmc.now() - interval '1 minute' END, NULL);
END $$;
CREATE FUNCTION pg_temp.due(p_poging uuid) RETURNS interval LANGUAGE sql AS $$
    SELECT t.due - p.verzonden_op FROM nmc.taak AS t JOIN nmc.poging AS p ON p.id = t.poging_id
    WHERE t.poging_id = p_poging AND t.soort = 'reconciliëren' AND t.staat = 'open'
$$;

SELECT pg_temp.verzonden('a') AS a \gset
SELECT is(pg_temp.due(:'a'), interval '1 hour', 'the send commit plans reconciliation at +1 h');
SELECT is(pg_temp.antwoord(:'a', true, 'sending'), 'niet geclaimd', 'not claimed before it is due');
SELECT nmc.advance_clock('1 hour');
SELECT
    is(
        pg_temp.antwoord(:'a', true, 'sending'),
        'opnieuw',
        'at +1 h NotifyNL says sending: ask again'
    );
SELECT is(pg_temp.due(:'a'), interval '6 hours', 'next at +6 h');
SELECT nmc.advance_clock('5 hours');
SELECT is(pg_temp.antwoord(:'a', true, 'created'), 'opnieuw', 'at +6 h still nothing');
SELECT is(pg_temp.due(:'a'), interval '24 hours', 'next at +24 h');
SELECT nmc.advance_clock('18 hours');
SELECT pg_temp.antwoord(:'a', true, 'sending');
SELECT is(pg_temp.due(:'a'), interval '2 days', 'then daily');
SELECT nmc.advance_clock('1 day');
SELECT pg_temp.antwoord(:'a', true, 'sending');
SELECT is(pg_temp.due(:'a'), interval '3 days', 'daily');
SELECT nmc.advance_clock('5 days');
SELECT pg_temp.antwoord(:'a', true, 'sending');
SELECT is(
    (
        SELECT n.status::text
        FROM nmc.notificatie AS n
        WHERE n.id = (SELECT p.notificatie_id FROM nmc.poging AS p WHERE p.id = :'a')
    ),
    'bezorgstatus-onbekend',
    'when NotifyNL''s retention (7 days) ends without an outcome: bezorgstatus-onbekend'
);
SELECT
    is(
        (SELECT status::text FROM nmc.poging WHERE id = :'a'), 'onbekend', 'the attempt is onbekend'
    );

SELECT pg_temp.verzonden('b') AS b \gset
SELECT nmc.advance_clock('1 hour');
SELECT is(
    pg_temp.antwoord(:'b', false, null), 'bezorgstatus-onbekend',
    'a 404 ends reconciliation in bezorgstatus-onbekend'
);

SELECT pg_temp.verzonden('c') AS c \gset
SELECT nmc.advance_clock('1 hour');
SELECT is(
    pg_temp.antwoord(:'c', true, 'delivered'), 'bezorgd',
    'a final answer is judged exactly like a receipt'
);
SELECT is(
    (
        SELECT string_agg(t.soort::text || ':' || t.staat::text, ',' ORDER BY t.id)
        FROM nmc.taak AS t
        WHERE t.notificatie_id = (SELECT p.notificatie_id FROM nmc.poging AS p WHERE p.id = :'c')
    ),
    'verzenden:done,reconciliëren:done,vaststellen:open',
    'reconciliation is done and settlement planned'
);

SELECT pg_temp.verzonden('d') AS d \gset
SELECT nmc.store_receipt(
    :'d', (SELECT notifynl_id FROM nmc.poging WHERE id = :'d'), 'delivered',
    nmc.now(), null
);
SELECT nmc.process_receipts(10);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE poging_id = :'d' AND soort = 'reconciliëren'),
    'done',
    'a processed receipt closes the reconciliation'
);

-- NotifyNL keeps a message 7 days: reconciliation asks on day 6 and again when the
-- retention ends, and only then gives up.
SELECT pg_temp.verzonden('e') AS e \gset
SELECT nmc.advance_clock('1 hour');
SELECT pg_temp.antwoord(:'e', true, 'sending');
SELECT nmc.advance_clock('5 hours');
SELECT pg_temp.antwoord(:'e', true, 'sending');
SELECT nmc.advance_clock('18 hours');
SELECT pg_temp.antwoord(:'e', true, 'sending') FROM generate_series(1, 1);
SELECT nmc.advance_clock('1 day'), pg_temp.antwoord(:'e', true, 'sending')
FROM generate_series(2, 5);
SELECT is(pg_temp.due(:'e'), interval '6 days', 'asked daily up to day 6');
SELECT nmc.advance_clock('1 day');
SELECT is(
    pg_temp.antwoord(:'e', true, 'sending'), 'opnieuw',
    'on day 6 of a 7-day retention: no outcome yet, ask again'
);
SELECT is(pg_temp.due(:'e'), interval '7 days', 'next when the retention ends');
SELECT nmc.advance_clock('1 day');
SELECT is(
    pg_temp.antwoord(:'e', true, 'sending'), 'bezorgstatus-onbekend',
    'the retention has passed without an outcome: bezorgstatus-onbekend'
);

-- A status the NMC does not know, in an answer: recorded beside, reconciliation goes on.
SELECT pg_temp.verzonden('f') AS f \gset
SELECT nmc.advance_clock('1 hour');
SELECT is(pg_temp.antwoord(:'f', true, 'bounced-maybe'), 'opnieuw', 'an unknown status: ask again');
SELECT is(
    (SELECT laatste_receipt_status FROM nmc.poging WHERE id = :'f'), null,
    'an unknown status is not taken as the attempt''s last known receipt status'
);

-- The budget share: 10% of 1400 = 140 a minute for reconciliation, at most 3 at once.
SELECT pg_temp.verzonden('v' || i) FROM generate_series(1, 150) AS i;
UPDATE nmc.notify_service SET budget_per_minuut = 1400 WHERE code = 'standaard';
SELECT nmc.advance_clock('1 hour');
SELECT is(
    (SELECT count(*)::integer FROM nmc.claim_navraag_v2('w', 1000)), 3,
    'reconciliation takes at most its burst at once (one second of its share)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.claim_navraag_v2('w', 1000)), 0,
    'and nothing more at that instant'
);
SELECT is(
    (
        SELECT gebruikt FROM nmc.verzendbudget WHERE soort = 'navraag'
        ORDER BY venster_start DESC LIMIT 1
    ),
    3,
    'the share is booked in the window'
);

SELECT * FROM finish();
ROLLBACK;
