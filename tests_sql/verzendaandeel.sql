-- A fair share of a NotifyNL service's day: the heavy consumer stops at the day less the
-- reserve for the other DVs, the others go on up to the limit, and no token is taken that
-- is not used.
BEGIN;
SELECT plan(16);
\ir fixtures/setup.sql

UPDATE nmc.dienstverlener SET quotum_per_minuut = 10000, quotum_per_dag = 100000;
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst, dag_limiet)
VALUES ('gedeeld', 100000, 0.0, 1000, 400);
UPDATE nmc.berichttype SET notify_service = 'gedeeld';
-- 12:00 UTC: twelve hours left of the day.
UPDATE nmc.klok SET verschuiving = (
    date_trunc('day', now() AT TIME ZONE 'UTC') + INTERVAL '2 days 12 hours'
) AT TIME ZONE 'UTC' - now();

-- The reserve: the larger of 10% of the day times the part of it left and the others'
-- last hour times the hours left times 1.25; at most the limit.
SELECT is(nmc.verzendaandeel_reserve(400, 43200, 0), 20, 'the base share: 10% of half a day');
SELECT is(nmc.verzendaandeel_reserve(400, 43200, 8), 120, 'the others'' pace: 8 x 12 h x 1.25');
SELECT is(nmc.verzendaandeel_reserve(400, 0, 8), 0, 'nothing at 00:00 UTC');
SELECT is(nmc.verzendaandeel_reserve(400, 86400, 100), 400, 'never more than the limit');

-- The hour before: DV 1001 sent 100, DV 1002 8.
INSERT INTO nmc.verzendaandeel (notify_service, uur, dv_id, gebruikt)
VALUES ('gedeeld', nmc.now() - INTERVAL '1 hour', 1001, 100),
('gedeeld', nmc.now() - INTERVAL '1 hour', 1002, 8);
SELECT results_eq(
    $$SELECT * FROM nmc.verzendaandeel_ruimte('gedeeld')$$,
    $$VALUES ('{1001}'::integer [], 400 - 120 - 108)$$,
    'the largest consumer may take the day less the reserve (8 x 12 x 1.25) less today''s 108'
);

SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 180);
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering')
FROM generate_series(1, 5);
CREATE TEMP TABLE eerste AS SELECT * FROM nmc.claim_verzenden('w', 200);
SELECT results_eq(
    $$SELECT dv_id, count(*)::integer FROM eerste GROUP BY dv_id ORDER BY dv_id$$,
    $$VALUES (1001, 172), (1002, 5)$$,
    'the claim sends the largest consumer up to its headroom, the other DV all it has'
);
SELECT is(
    (SELECT dag_gebruikt FROM nmc.verzendtempo WHERE notify_service = 'gedeeld'), 177,
    'only the claimed sends took tokens'
);
SELECT results_eq(
    $$SELECT dv_id, gebruikt FROM nmc.verzendaandeel
      WHERE notify_service = 'gedeeld' AND uur = date_trunc('hour', nmc.now()) ORDER BY dv_id$$,
    $$VALUES (1001, 172), (1002, 5)$$,
    'and are counted per DV in the hour'
);

-- The headroom is gone: the other DV still sends, the largest consumer waits.
SELECT nmc.close_taken(array_agg(taak_id)) FROM eerste;
SELECT nmc.advance_clock('1 minute');
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering')
FROM generate_series(1, 3);
SELECT results_eq(
    $$SELECT dv_id, count(*)::integer FROM nmc.claim_verzenden('w', 200) GROUP BY dv_id$$,
    $$VALUES (1002, 3)$$,
    'once its headroom is used the largest consumer waits; the other DV goes on'
);
SELECT is(
    (
        SELECT count(*)::INTEGER FROM nmc.taak AS t INNER JOIN nmc.notificatie AS n
            ON t.notificatie_id = n.id
        WHERE t.soort = 'verzenden' AND t.staat = 'open' AND n.dv_id = 1001
    ),
    8,
    'its other tasks stay open, unclaimed'
);
SELECT nmc.close_taken(array_agg(t.id)) FROM nmc.taak AS t
WHERE t.soort = 'verzenden' AND t.staat = 'claimed';

-- 23:00 UTC: the others were quiet for hours, the reserve is the base share (2).
SELECT nmc.advance_clock('10 hours 59 minutes');
SELECT results_eq(
    $$SELECT * FROM nmc.verzendaandeel_ruimte('gedeeld')$$,
    $$VALUES ('{1001}'::integer [], 400 - 2 - 288)$$,
    'in the evening the reserve has shrunk'
);
SELECT results_eq(
    $$SELECT dv_id, count(*)::integer FROM nmc.claim_verzenden('w', 200) GROUP BY dv_id$$,
    $$VALUES (1001, 8)$$,
    'and the largest consumer sends again'
);

-- A DV above the base share is heavy too: both are bounded together.
SELECT nmc.advance_clock('2 hours');
INSERT INTO nmc.verzendaandeel (notify_service, uur, dv_id, gebruikt)
VALUES ('gedeeld', date_trunc('hour', nmc.now()), 1001, 50),
('gedeeld', date_trunc('hour', nmc.now()), 1002, 41);
SELECT results_eq(
    $$SELECT * FROM nmc.verzendaandeel_ruimte('gedeeld')$$,
    $$SELECT '{1001,1002}'::integer [], 400 - 39 - 91$$,
    'a new day: every DV above 10% of it is heavy, the reserve the base share'
);

-- Fewer tokens than DVs: within a rank the heavy consumer's task goes last, even older.
SELECT nmc.close_taken(array_agg(t.id)) FROM nmc.taak AS t
WHERE t.soort = 'verzenden' AND t.staat = 'claimed';
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst)
VALUES ('smal', 60, 0.0, 1);
UPDATE nmc.berichttype SET notify_service = 'smal';
INSERT INTO nmc.verzendaandeel (notify_service, uur, dv_id, gebruikt)
VALUES ('smal', date_trunc('hour', nmc.now()), 1001, 10);
SELECT pg_temp.nieuwe_notificatie(1001);
SELECT nmc.advance_clock('1 second');
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering');
SELECT results_eq(
    $$SELECT dv_id FROM nmc.claim_verzenden('w', 20)$$,
    $$VALUES (1002)$$,
    'one token, two DVs: the one that is not the heavy consumer goes first'
);

SELECT nmc.boek_verzendaandeel('smal', ARRAY[1002, 1001, 1002]);
SELECT results_eq(
    $$SELECT dv_id, gebruikt FROM nmc.verzendaandeel WHERE notify_service = 'smal'
      ORDER BY dv_id$$,
    $$VALUES (1001, 11), (1002, 3)$$,
    'nmc.boek_verzendaandeel counts one send per element, per DV in the hour'
);

SELECT nmc.advance_clock('3 days');
SELECT nmc.delete_expired();
SELECT is(
    (SELECT count(*)::INTEGER FROM nmc.verzendaandeel), 0,
    'retention removes the shares after two days'
);

SELECT * FROM finish();
ROLLBACK;
