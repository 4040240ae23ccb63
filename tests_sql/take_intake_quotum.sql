-- Intake quota per DV per minute and per day (DV 1002: 5 a minute, 8 a day).
BEGIN;
SELECT plan(10);
\ir fixtures/setup.sql

-- Start at a known instant: 12:00:10 Amsterdam time (winter: UTC+1), 50 s before the minute ends.
-- (A day far ahead: the test clock only moves forward, so the instant must lie after today.)
UPDATE nmc.klok SET verschuiving = '2099-12-01 12:00:10+01'::timestamptz - now();

CREATE FUNCTION pg_temp.zend(p_ref text, p_payload text DEFAULT 'p') RETURNS uuid
LANGUAGE sql AS $$ SELECT pg_temp.nieuwe_notificatie(1002, p_ref, 'herinnering', p_payload) $$;
-- DV 1002 only allows decentraal 'herinnering'; the fixture helper sends decentraal.

SELECT lives_ok(
    $$SELECT pg_temp.zend('q-' || i) FROM generate_series(1, 5) AS i$$,
    'five notifications fit the minute quota of five'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.zend('q-6')$$),
    'NM009:50',
    'the sixth in the same minute is refused (NM009), Retry-After = seconds to the next minute'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie WHERE dv_id = 1002),
    5,
    'the refused intake stored nothing'
);
SELECT is(
    (SELECT sum(aantal)::integer FROM nmc.quotumgebruik WHERE dv_id = 1002 AND venster = 'minuut'),
    5,
    'and did not count'
);
SELECT lives_ok(
    $$SELECT pg_temp.zend('q-1')$$,
    'an idempotent replay is free: it passes while the quota is used up'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.nieuwe_notificatie(1001)$$),
    NULL,
    'another DV has its own quota'
);

SELECT nmc.advance_clock('1 minute');
SELECT lives_ok(
    $$SELECT pg_temp.zend('q-' || i) FROM generate_series(6, 8) AS i$$,
    'the next minute accepts again, up to the day quota of eight'
);
SELECT nmc.advance_clock('1 minute');
SELECT is(
    pg_temp.fout($$SELECT pg_temp.zend('q-9')$$),
    'NM009:' || (11 * 3600 + 57 * 60 + 50)::text,
    'the ninth of the day is refused, Retry-After = seconds to midnight in Amsterdam'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.intake_notificaties_v3(1002, 'decentraal', 1::smallint, 0::smallint,
        'k', NULL, ARRAY[gen_random_uuid(), gen_random_uuid()], '{herinnering,herinnering}',
        ARRAY[pg_temp.b32('q-1'), pg_temp.b32('q-10')], ARRAY[pg_temp.b32('p'), pg_temp.b32('p')],
        '{"\\x01","\\x01"}', '{"\\x01","\\x01"}', '{"\\x01","\\x01"}', '{NULL,NULL}',
        '{0123456789abcdef0123456789abcdef,0123456789abcdef0123456789abcdef}', '{NULL,NULL}', NULL,
        NULL, NULL, ARRAY[pg_temp.b32('p'), pg_temp.b32('p')])$$),
    'NM009:' || (11 * 3600 + 57 * 60 + 50)::text,
    'a batch counts its new items only: one replay plus one new is still over'
);
SELECT nmc.advance_clock('12 hours');
SELECT lives_ok(
    $$SELECT pg_temp.zend('q-9')$$,
    'a new day accepts again'
);

SELECT * FROM finish();
ROLLBACK;
