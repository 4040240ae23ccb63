-- The payload HMAC: stored with its pepper version, compared under every live version,
-- rows from before the payload pepper (version 0, an unkeyed SHA-256) judged with the
-- SHA-256 the shell sends only when asked (NMP01), and that unkeyed hash gone at erasure.
-- ('hmacN-x' stands for the HMAC of payload x under payload pepper version N.)
BEGIN;
SELECT plan(21);
\ir fixtures/setup.sql

SELECT nmc.advance_clock('1 hour');

-- One item through intake_notificaties_v2; p_sha: the unkeyed hash (NULL: not sent).
CREATE FUNCTION pg_temp.v2(
    p_dvrefs text[], p_payloads text[], p_versie smallint DEFAULT 3,
    p_vorige text[] DEFAULT NULL, p_sha text[] DEFAULT NULL
) RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql AS $$
    SELECT * FROM nmc.intake_notificaties_v2(
        1001, 'decentraal', 1::smallint, p_versie, 'kek-1', NULL,
        ARRAY(SELECT gen_random_uuid() FROM unnest(p_dvrefs)),
        ARRAY(SELECT 'aanslag' FROM unnest(p_dvrefs)),
        ARRAY(SELECT pg_temp.b32(r) FROM unnest(p_dvrefs) AS r),
        ARRAY(SELECT pg_temp.b32(p) FROM unnest(p_payloads) AS p),
        ARRAY(SELECT '\x0a'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0b'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT '\x0c'::bytea FROM unnest(p_dvrefs)),
        ARRAY(SELECT NULL::timestamptz FROM unnest(p_dvrefs)),
        ARRAY(SELECT '0123456789abcdef0123456789abcdef' FROM unnest(p_dvrefs)),
        ARRAY(SELECT NULL::text FROM unnest(p_dvrefs)),
        NULL,
        CASE WHEN p_vorige IS NOT NULL THEN ARRAY(SELECT pg_temp.b32(v) FROM unnest(p_vorige) AS v) END,
        CASE WHEN p_sha IS NOT NULL THEN ARRAY(SELECT pg_temp.b32(h) FROM unnest(p_sha) AS h) END
    )
$$;

-- Stored under the current payload pepper.
SELECT notificatie_id AS id FROM pg_temp.v2('{ref-a}', '{hmac3-a}') \gset
SELECT results_eq(
    format('SELECT payload_hash, payload_pepper_versie FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES (pg_temp.b32('hmac3-a'), 3::smallint)$$,
    'the payload HMAC is stored with its payload pepper version'
);
SELECT results_eq(
    $$SELECT notificatie_id, nieuw FROM pg_temp.v2('{ref-a}', '{hmac3-a}')$$,
    format('VALUES (%L::uuid, false)', :'id'),
    'the same dvRef and payload HMAC is a replay'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-a}', '{hmac3-b}')$$),
    'NM007:0',
    'the same dvRef with another payload HMAC is refused (NM007)'
);

-- The payload pepper rotates (version 4 current, 3 still live).
SELECT results_eq(
    $$SELECT notificatie_id, nieuw FROM pg_temp.v2('{ref-a}', '{hmac4-a}', 4::smallint,
        '{hmac3-a}')$$,
    format('VALUES (%L::uuid, false)', :'id'),
    'a row stored under an earlier live payload pepper is a replay when its HMAC is passed'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-a}', '{hmac4-b}', 4::smallint, '{hmac3-b}')$$),
    'NM007:0',
    'and another payload for it is still refused'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-a}', '{hmac4-a}', 4::smallint)$$),
    'NM007:0',
    'without the earlier-version HMAC the stored row cannot match (the shell always sends them)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{x,y}', '{p,p}', 4::smallint, '{q}')$$),
    'NM016:',
    'earlier payload HMACs that do not divide over the items are refused (NM016)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{x}', '{p}', (-1)::smallint)$$),
    'NM016:',
    'a negative payload pepper version is refused (NM016)'
);

-- A row from before the payload pepper, as an older release stored it: version 0, its
-- payload hash an unkeyed SHA-256.
SELECT r.notificatie_id AS oud FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('ref-oud'), 1::smallint,
    pg_temp.b32('sha-o'), 0::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
    '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('sha-o')
) AS r \gset
SELECT results_eq(
    format('SELECT payload_hash, payload_pepper_versie FROM nmc.notificatie WHERE id = %L', :'oud'),
    $$VALUES (pg_temp.b32('sha-o'), 0::smallint)$$,
    'a version-0 row keeps the unkeyed SHA-256'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-oud}', '{hmac3-o}')$$),
    'NMP01:',
    'a replay of a version-0 row without the unkeyed hashes asks for them (NMP01)'
);
SELECT results_eq(
    $$SELECT notificatie_id, nieuw FROM pg_temp.v2('{ref-oud}', '{hmac3-o}', 3::smallint,
        NULL, '{sha-o}')$$,
    format('VALUES (%L::uuid, false)', :'oud'),
    'with them it is a replay'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-oud}', '{hmac3-x}', 3::smallint, NULL, '{sha-x}')$$),
    'NM007:0',
    'and another payload for it is refused'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{nieuw-1,ref-a,ref-oud}', '{p,hmac3-b,hmac3-o}')$$),
    'NMP01:',
    'in a batch the unkeyed hashes are asked for before any item is refused'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie WHERE dvref_hmac = pg_temp.b32('nieuw-1')),
    0,
    'and nothing of that batch is stored'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-oud,x}', '{hmac3-o,p}', 3::smallint, NULL, '{sha-o}')$$),
    'NM016:',
    'unkeyed hashes must come one per item (NM016)'
);

-- Erasure: the payload hash goes with the data key, unkeyed or keyed: the payload pepper is on
-- every pod, so a kept HMAC would let anyone with it and the database confirm a guessed
-- recipient for as long as the row is kept.
SELECT pg_temp.naar_status(:'oud', 'niet-bezorgbaar');
SELECT pg_temp.naar_status(:'id', 'niet-bezorgbaar');
SELECT nmc.advance_clock('7 days');
SELECT is(nmc.process_wissen(), 2, 'both are erased after the term');
SELECT results_eq(
    format(
        'SELECT id = %L, payload_hash, payload_pepper_versie FROM nmc.notificatie
         WHERE id IN (%L, %L) ORDER BY id = %L',
        :'id', :'oud', :'id', :'id'
    ),
    $$VALUES (false, NULL::bytea, 0::smallint), (true, NULL::bytea, 3::smallint)$$,
    'erasure clears the unkeyed SHA-256 and the keyed HMAC'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-a}', '{hmac3-a}')$$),
    'NM007:0',
    'a re-submit of an erased notification''s dvRef cannot be judged: another payload (409)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-oud}', '{hmac3-o}')$$),
    'NM007:0',
    'an erased version-0 row cannot be judged any more: another payload (no NMP01 loop)'
);
SELECT is(
    pg_temp.fout($$SELECT pg_temp.v2('{ref-oud}', '{hmac3-o}', 3::smallint, NULL, '{sha-o}')$$),
    'NM007:0',
    'not even with the unkeyed hash'
);
SELECT throws_ok(
    format(
        'UPDATE nmc.notificatie SET payload_hash = NULL WHERE id = %L',
        (SELECT v.notificatie_id FROM pg_temp.v2('{ref-c}', '{hmac3-c}') AS v)
    ),
    '23514',
    NULL,
    'only an erased row may be without its payload hash'
);

SELECT * FROM finish();
ROLLBACK;
