-- The call rate of the delivery proof and the history: per DV and minute,
-- counted in nmc.bewijsaanroep by nmc.take_bewijs_aanroep, which get_afleverbewijs and
-- get_geschiedenis call first; beyond instellingen.bewijs_aanroepen_per_minuut NM019 with
-- the seconds to the window's end (the API's 429 and Retry-After), as for the feed.
BEGIN;
SELECT plan(14);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

SELECT isnt_definer(
    'nmc', 'take_bewijs_aanroep', ARRAY['integer'], 'the counter runs as its caller'
);
-- Ten seconds into a minute (nmc.now() holds still within the transaction).
SELECT nmc.advance_clock(
    pg_catalog.date_trunc('minute', nmc.now()) + interval '1 minute 10 seconds' - nmc.now()
);
UPDATE nmc.instellingen SET bewijs_aanroepen_per_minuut = 3;
SELECT pg_temp.verzonden() AS id \gset

SELECT lives_ok(
    format('SELECT nmc.get_afleverbewijs(1001, %L)', :'id'), 'the first proof is answered'
);
SELECT lives_ok(
    format('SELECT nmc.get_geschiedenis(1001, %L, 0, 0, 10)', :'id'), 'a history page too'
);
SELECT throws_ok(
    format('SELECT nmc.get_afleverbewijs(1001, %L)', gen_random_uuid()), 'NM005', NULL,
    'an unknown notification is 404 (its count rolls back with it)'
);
SELECT lives_ok(
    format('SELECT nmc.get_afleverbewijs(1001, %L)', :'id'), 'so the third call is answered'
);
SELECT throws_ok(
    format('SELECT nmc.get_geschiedenis(1001, %L, 0, 0, 10)', :'id'), 'NM019', NULL,
    'the fourth call in the minute is refused'
);
CREATE FUNCTION pg_temp.detail(p_sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_detail text;
BEGIN
    EXECUTE p_sql;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ':' || v_detail;
END
$$;
SELECT is(
    pg_temp.detail(format('SELECT nmc.get_afleverbewijs(1001, %L)', :'id')),
    'NM019:50',
    'with the seconds to the end of the window (the Retry-After)'
);
SELECT throws_ok(
    'SELECT nmc.take_bewijs_aanroep(1001)', 'NM019', NULL, 'as does the counter on its own'
);
SELECT throws_ok(
    format('SELECT nmc.get_afleverbewijs(1002, %L)', :'id'), 'NM005', NULL,
    'another DV has a count of its own (and the notification is not its)'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM nmc.bewijsaanroep WHERE dv_id = 1001),
    1,
    'one window row per DV, minute and connection'
);

-- Another connection counts in a row of its own (no wait for this one's row lock); the
-- DV's rate is the sum of its rows of the minute.
SELECT nmc.advance_clock('1 minute');
SELECT lives_ok('SELECT nmc.take_bewijs_aanroep(1001)', 'a new minute: this connection counts 1');
INSERT INTO nmc.bewijsaanroep (dv_id, venster_start, deel, aantal)
VALUES (1001, date_trunc('minute', nmc.now()), pg_backend_pid() + 1, 2);
SELECT throws_ok(
    'SELECT nmc.take_bewijs_aanroep(1001)', 'NM019', NULL,
    'with 2 counted by another connection, this connection''s second call is the fourth'
);

SELECT nmc.advance_clock('1 minute');
SELECT lives_ok(
    format('SELECT nmc.get_afleverbewijs(1001, %L)', :'id'), 'the next minute answers again'
);
SELECT nmc.advance_clock('2 hours');
SELECT nmc.delete_expired(100);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM nmc.bewijsaanroep), 0,
    'maintenance removes windows older than an hour'
);

SELECT * FROM finish();
ROLLBACK;
