-- The beheer report's share of geen-contactgegevens is taken over a recent window
-- (settings.beheerrapport_venster, audit 2 item 17): an early failure stops flagging a small
-- DV once it is out of the window, and a new spike shows at once, however long the year.
BEGIN;
SELECT plan(8);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET beheerkanaal = 'https://dv.example/beheer' WHERE dv_id = 1001;

-- A centraal notification of DV 1001, made terminal now: without contact details, or
-- cancelled (another terminal status).
CREATE FUNCTION pg_temp.centraal(p_geen_contactgegevens boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
BEGIN
    SELECT r.notificatie_id INTO v_id FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32(gen_random_uuid()::text),
        1::smallint, pg_temp.b32('p'), 0::smallint, '\x01', NULL, '\x02', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')) AS r;
    IF p_geen_contactgegevens THEN
        PERFORM nmc.transition_notificatie(v_id, 'in-verzending', NULL);
        PERFORM nmc.transition_notificatie(v_id, 'niet-bezorgbaar', 'geen-contactgegevens');
    ELSE
        PERFORM pg_temp.naar_status(v_id, 'geannuleerd');
    END IF;
END $$;
-- Begins today's report of DV 1001 (threshold 0.3) and returns its share and flag.
CREATE FUNCTION pg_temp.rapport() RETURNS TABLE (aandeel double precision, boven boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_claim record;
BEGIN
    PERFORM nmc.ensure_beheerrapporten();
    UPDATE nmc.taak AS t SET due = nmc.now(), staat = 'open', lease_eigenaar = NULL,
        lease_tot = NULL
    WHERE t.soort = 'beheerrapport' AND t.dv_id = 1001 AND t.staat <> 'done';
    SELECT c.* INTO v_claim FROM nmc.claim_taken('beheerrapport', 'w', 10) AS c
    WHERE c.dv_id = 1001;
    RETURN QUERY SELECT b.aandeel, b.boven_drempel
    FROM nmc.begin_beheerrapport_v2(v_claim.taak_id, v_claim.claim_epoch, 0.3) AS b;
END $$;

SELECT is(
    (SELECT i.beheerrapport_venster FROM nmc.instellingen AS i), interval '7 days',
    'the window is a week by default'
);

-- An early failure of a small DV: its first notification had no contact details.
SELECT pg_temp.centraal(true);
SELECT results_eq(
    'SELECT aandeel, boven FROM pg_temp.rapport()', $$VALUES (1::double precision, true)$$,
    'within the window it is reported'
);
SELECT nmc.advance_clock('8 days');
SELECT results_eq(
    'SELECT aandeel, boven FROM pg_temp.rapport()', $$VALUES (NULL::double precision, false)$$,
    'out of the window it no longer flags the DV'
);

-- A long quiet year (nine fine ones), then a spike: two of three without contact details.
-- Over everything kept that is 3 of 13 (below 0.3); over the window 2 of 3.
SELECT pg_temp.centraal(false) FROM generate_series(1, 9);
SELECT nmc.advance_clock('30 days');
SELECT pg_temp.centraal(true);
SELECT pg_temp.centraal(true);
SELECT pg_temp.centraal(false);
SELECT results_eq(
    'SELECT round(aandeel::numeric, 3), boven FROM pg_temp.rapport()',
    $$VALUES (0.667, true)$$,
    'a new spike shows at once'
);
SELECT ok(
    (
        SELECT b.geen_contactgegevens_aandeel > 0.6 FROM nmc.beheerrapport AS b
        WHERE b.dv_id = 1001 AND b.dag = (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date
    ),
    'and is recorded on the day''s report'
);

-- Configured like the report's other settings.
SELECT nmc.configure_beheerrapport('{"venster": "60 days"}');
SELECT is(
    (SELECT i.beheerrapport_venster FROM nmc.instellingen AS i), interval '60 days',
    'the window is configurable'
);
SELECT results_eq(
    'SELECT round(aandeel::numeric, 3), boven FROM pg_temp.rapport()',
    $$VALUES (0.231, false)$$,
    'a window over the whole quiet stretch dilutes the spike again'
);
SELECT throws_ok(
    $$SELECT nmc.configure_beheerrapport('{"venster": "0 days"}')$$,
    '23514', null, 'a window of less than a day is refused'
);

SELECT * FROM finish();
ROLLBACK;
