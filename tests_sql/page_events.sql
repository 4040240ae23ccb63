-- The feed page: one DV's events after the cursor, below the watermark, with the next cursor.
-- Events written by this test's own (open) transaction lie above the watermark, so the
-- fixture writes events with small xids, as committed long ago (pytest covers real
-- concurrency).
BEGIN;
SELECT plan(17);
\ir fixtures/setup.sql

INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
SELECT
    gen_random_uuid(), CASE WHEN i % 3 = 0 THEN 1002 ELSE 1001 END, 1, NULL, 'aangenomen',
    nmc.now(), (10 + i / 2)::text::xid8
FROM generate_series(1, 30) AS i;

CREATE FUNCTION pg_temp.pagina(p_dv integer, p_xid xid8, p_event bigint, p_limiet integer)
RETURNS jsonb LANGUAGE sql AS $$
    SELECT nmc.page_events(p_dv, 1, p_xid, p_event, nmc.now(), p_limiet)::jsonb
$$;

SELECT pg_temp.pagina(1001, NULL, NULL, 5) AS p1 \gset
SELECT is(jsonb_array_length((:'p1'::jsonb) -> 'events'), 5, 'a full page holds the limit');
SELECT is(
    (
        SELECT array_agg((e ->> 'xid')::bigint ORDER BY o)
        FROM jsonb_array_elements((:'p1'::jsonb) -> 'events') WITH ORDINALITY AS x (e, o)
    ),
    ARRAY[10, 11, 12, 12, 13]::bigint[],
    'events come in (xid, event_id) order from the oldest'
);
SELECT ok(
    (SELECT
        bool_and(
            (e ->> 'notificatieId') IS NOT NULL AND e ->> 'naar' = 'aangenomen'
            AND (e ->> 'sequence')::integer = 1
        )
    FROM jsonb_array_elements((:'p1'::jsonb) -> 'events') AS e),
    'each event carries notification id, sequence and naar'
);
SELECT is(
    ((:'p1'::jsonb) ->> 'xid') || '/' || ((:'p1'::jsonb) ->> 'eventId'),
    '13/' || ((:'p1'::jsonb) -> 'events' -> 4 ->> 'eventId'),
    'a full page''s cursor is its last event'
);
SELECT is(((:'p1'::jsonb) ->> 'epoch')::integer, 1, 'the page names the cluster epoch');
SELECT is(
    (:'p1'::jsonb) -> 'events' -> 2,
    (
        SELECT nmc.event_json(e) FROM nmc.event AS e
        WHERE e.event_id = ((:'p1'::jsonb) -> 'events' -> 2 ->> 'eventId')::bigint
    ),
    'each event has exactly the shape of nmc.event_json (read_events builds it inline)'
);

SELECT
    pg_temp.pagina(
        1001, ((:'p1'::jsonb) ->> 'xid')::xid8, ((:'p1'::jsonb) ->> 'eventId')::bigint, 100
    ) AS p2
\gset
SELECT
    is(
        jsonb_array_length((:'p2'::jsonb) -> 'events'),
        15,
        'the next page starts after the cursor: the other 15'
    );
SELECT is(
    (SELECT count(DISTINCT e ->> 'eventId')::integer FROM jsonb_array_elements(
        ((:'p1'::jsonb) -> 'events') || ((:'p2'::jsonb) -> 'events')
    ) AS e),
    20,
    'no event twice, none skipped (20 of DV 1001)'
);
SELECT is(
    ((:'p2'::jsonb) ->> 'xid')::xid8,
    pg_snapshot_xmin(pg_current_snapshot()),
    'a short page moves the cursor up to the watermark'
);
SELECT is(((:'p2'::jsonb) ->> 'eventId')::bigint, 0::bigint, 'with event id 0');
SELECT is(
    jsonb_array_length(pg_temp.pagina(1001, ((:'p2'::jsonb) ->> 'xid')::xid8, 0, 100) -> 'events'),
    0,
    'from there nothing is left below the watermark'
);
SELECT pg_temp.nieuwe_notificatie(1001);
SELECT is(
    jsonb_array_length(pg_temp.pagina(1001, ((:'p2'::jsonb) ->> 'xid')::xid8, 0, 100) -> 'events'),
    0,
    'an event of a still-open transaction (this one) is not served'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM jsonb_array_elements(pg_temp.pagina(1002, NULL, NULL, 100) -> 'events')
    ),
    10,
    'another DV sees only its own events'
);

UPDATE nmc.dienstverlener SET feed_max_pagina = 3 WHERE dv_id = 1001;
SELECT is(
    jsonb_array_length(pg_temp.pagina(1001, NULL, NULL, 100) -> 'events'), 3,
    'the page size is capped at the DV''s maximum'
);

UPDATE nmc.dienstverlener SET feed_aanroepen_per_minuut = 8 WHERE dv_id = 1002;
SELECT
    is(
        pg_temp.fout('SELECT pg_temp.pagina(1002, NULL, NULL, 1)'),
        NULL,
        'call 2 of 8 passes (and is not counted: fout rolls back)'
    );
SELECT pg_temp.pagina(1002, NULL, NULL, 1) FROM generate_series(1, 7);
SELECT ok(
    pg_temp.fout('SELECT pg_temp.pagina(1002, NULL, NULL, 1)') ~ '^NM019:[0-9]+$',
    'the ninth call in a minute is refused (NM019) with a Retry-After'
);
SELECT throws_ok(
    $$SELECT nmc.page_events(999, 1, NULL, NULL, now(), 10)$$, 'NM010', NULL,
    'an unknown DV is refused'
);

SELECT * FROM finish();
ROLLBACK;
