-- Receipt processing takes the plain delivered receipts as one set
-- (nmc.apply_receipts_bezorgd), the plain failures as another (nmc.apply_receipts_mislukt)
-- and the rest one by one: the outcome is what the one-by-one path alone
-- (nmc.apply_receipt_v2 per task, oldest completed_at first) makes of the same batch, row
-- for row.
BEGIN;
SELECT plan(14);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

-- Stores one receipt for the latest attempt of p_id (its own NotifyNL id unless given).
CREATE FUNCTION pg_temp.bewaar(
    p_id uuid, p_status text, p_completed_at timestamptz, p_notifynl_id uuid DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_p nmc.poging := pg_temp.laatste_poging(p_id);
BEGIN
    PERFORM nmc.store_receipts_v2(
        ARRAY[v_p.id::text], ARRAY[coalesce(p_notifynl_id, v_p.notifynl_id)], ARRAY[p_status],
        ARRAY[p_completed_at], ARRAY[p_completed_at - interval '1 minute'],
        ARRAY['a0a0a0a0-0000-4000-8000-000000000001'::uuid], ARRAY[2]
    );
END $$;

-- Everything the receipts write, without generated ids, as one value.
CREATE FUNCTION pg_temp.stand(p_ids uuid[]) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'notificatie', (
            SELECT jsonb_agg(jsonb_build_array(n.id, n.status, n.reden, n.versie) ORDER BY n.id)
            FROM nmc.notificatie AS n WHERE n.id = ANY(p_ids)
        ),
        'poging', (
            SELECT jsonb_agg(jsonb_build_array(
                p.id, p.status, p.afgerond_op, p.laatste_receipt_op, p.laatste_receipt_status,
                p.verzonden_op, p.notifynl_id, p.duplicaat_ids, p.vastgelegde_receipt_status
            ) ORDER BY p.id)
            FROM nmc.poging AS p WHERE p.notificatie_id = ANY(p_ids)
        ),
        'taak', (
            SELECT jsonb_agg(jsonb_build_array(
                t.notificatie_id, t.soort, t.staat, t.due, t.poging_id, t.afgerond_op
            ) ORDER BY t.notificatie_id, t.soort, t.due, t.staat, t.poging_id, t.afgerond_op)
            FROM nmc.taak AS t WHERE t.notificatie_id = ANY(p_ids)
        ),
        'geschiedenis', (
            SELECT jsonb_agg(jsonb_build_array(
                h.notificatie_id, h.poging_id, h.bron, h.notifynl_id, h.status, h.completed_at,
                h.sent_at, h.template_id, h.template_versie, h.ontvangen_op, h.verwerkt_op,
                h.resultaat, h.toegepast, h.na_eindstatus, h.notificatie_versie
            ) ORDER BY h.notificatie_id, h.completed_at, h.status)
            FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = ANY(p_ids)
        ),
        'event', (
            SELECT jsonb_agg(jsonb_build_array(
                e.notificatie_id, e.sequence, e.van, e.naar, e.reden
            ) ORDER BY e.notificatie_id, e.sequence)
            FROM nmc.event AS e WHERE e.notificatie_id = ANY(p_ids)
        )
    )
$$;

-- The batch: two plain delivered (a, b); a permanent failure (c); an attempt with two
-- receipts in the batch, a temporary failure and a later delivered (d); a delivered under
-- another NotifyNL id, a duplicate (e); a late delivered on an attempt that already failed
-- temporarily, its resend planned (f). The plain failures: a permanent one under centraal
-- regie (i: reported to the Profielservice), a temporary one on attempt 1 (j: a resend), a
-- technical one on attempt 1 past geldig_tot (k: verlopen), a temporary and a technical one
-- on attempt 2 (l, m).
SELECT pg_temp.verzonden() AS a \gset
SELECT pg_temp.verzonden() AS b \gset
SELECT pg_temp.verzonden() AS c \gset
SELECT pg_temp.verzonden() AS d \gset
SELECT pg_temp.verzonden() AS e \gset
SELECT pg_temp.verzonden() AS f \gset
SELECT pg_temp.callback(:'f', 'temporary-failure', nmc.now() - interval '1 minute');
SELECT pg_temp.verzonden('centraal', gen_random_uuid()) AS i \gset
SELECT pg_temp.verzonden() AS j \gset
SELECT pg_temp.verzonden(p_geldig_tot => nmc.now() + interval '1 minute') AS k \gset
SELECT pg_temp.verzonden() AS l \gset
SELECT pg_temp.verzonden() AS m \gset
-- (one resend at a time: a claim takes every due send task)
SELECT pg_temp.callback(:'l', 'temporary-failure', nmc.now() - interval '1 minute');
SELECT pg_temp.verstuur(:'l');
SELECT pg_temp.callback(:'m', 'temporary-failure', nmc.now() - interval '1 minute');
SELECT pg_temp.verstuur(:'m');
SELECT nmc.advance_clock(interval '2 minutes');  -- past k's geldig_tot
SELECT nmc.now() - interval '10 minutes' AS t0 \gset
SELECT pg_temp.bewaar(:'a', 'delivered', :'t0');
SELECT pg_temp.bewaar(:'b', 'delivered', :'t0'::timestamptz + interval '1 second');
SELECT pg_temp.bewaar(:'c', 'permanent-failure', :'t0');
SELECT pg_temp.bewaar(:'d', 'temporary-failure', :'t0');
SELECT pg_temp.bewaar(:'d', 'delivered', :'t0'::timestamptz + interval '2 minutes');
SELECT pg_temp.bewaar(:'e', 'delivered', :'t0', gen_random_uuid());
SELECT pg_temp.bewaar(:'f', 'delivered', :'t0');
SELECT pg_temp.bewaar(:'i', 'permanent-failure', :'t0');
SELECT pg_temp.bewaar(:'j', 'temporary-failure', :'t0');
SELECT pg_temp.bewaar(:'k', 'technical-failure', :'t0');
SELECT pg_temp.bewaar(:'l', 'temporary-failure', :'t0');
SELECT pg_temp.bewaar(:'m', 'technical-failure', :'t0');
SELECT ARRAY[:'a', :'b', :'c', :'d', :'e', :'f', :'i', :'j', :'k', :'l', :'m']::uuid[] AS alle \gset

-- What the one-by-one path alone (in its order), or the set alone, makes of the batch;
-- undone afterwards (the block's exception rolls its writes back, the result stays).
CREATE FUNCTION pg_temp.een_voor_een(p_ids uuid[]) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    v_stand jsonb;
BEGIN
    PERFORM nmc.apply_receipt_v2(
        t.poging_id, (t.payload ->> 'id')::uuid, t.payload ->> 'status',
        (t.payload ->> 'completed_at')::timestamptz, (t.payload ->> 'sent_at')::timestamptz,
        'callback', t.aangemaakt_op, (t.payload ->> 'template_id')::uuid,
        (t.payload ->> 'template_version')::integer
    ), nmc.close_taak(t.id)
    FROM (
        SELECT t.* FROM nmc.taak AS t
        WHERE t.soort = 'receipt' AND t.staat = 'open'
        ORDER BY t.receipt_completed_at NULLS FIRST, t.id
    ) AS t;
    v_stand := pg_temp.stand(p_ids);
    RAISE EXCEPTION 'terug';
EXCEPTION WHEN raise_exception THEN
    RETURN v_stand;
END $$;
CREATE FUNCTION pg_temp.als_set(p_set text) RETURNS SETOF uuid
LANGUAGE plpgsql AS $$
DECLARE
    v_open bigint[] := ARRAY(
        SELECT t.id FROM nmc.taak AS t WHERE t.soort = 'receipt' AND t.staat = 'open'
    );
    v_taken bigint[];
BEGIN
    v_taken := CASE p_set
        WHEN 'bezorgd' THEN nmc.apply_receipts_bezorgd(v_open)
        ELSE nmc.apply_receipts_mislukt(v_open)
    END;
    RAISE EXCEPTION 'terug';
EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT t.notificatie_id FROM nmc.taak AS t WHERE t.id = ANY(v_taken);
END $$;

SELECT pg_temp.een_voor_een(:'alle') AS een_voor_een \gset
SELECT set_eq(
    $$SELECT k.notificatie_id FROM nmc.receipts_enkel(ARRAY(
        SELECT t.id FROM nmc.taak AS t WHERE t.soort = 'receipt' AND t.staat = 'open'
    )) AS k$$,
    format(
        'VALUES (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid), '
        '(%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid)',
        :'a', :'b', :'c', :'e', :'f', :'i', :'j', :'k', :'l', :'m'
    ),
    'what a set may take: every receipt alone for its attempt and notification, not d''s two'
);
SELECT set_eq(
    $$SELECT pg_temp.als_set('bezorgd')$$,
    format('VALUES (%L::uuid), (%L::uuid)', :'a', :'b'),
    'as one set: the two plain delivered receipts, not the others'
);
SELECT set_eq(
    $$SELECT pg_temp.als_set('mislukt')$$,
    format(
        'VALUES (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid)',
        :'c', :'i', :'j', :'k', :'l', :'m'
    ),
    'as the other set: the plain failures, not d''s two receipts'
);

SELECT is(
    (SELECT count(*)::integer FROM nmc.process_receipts_v2(100)),
    12, 'one call handles the whole batch'
);
SELECT is(pg_temp.stand(:'alle'), :'een_voor_een'::jsonb, 'the same outcome, row for row');
SELECT results_eq(
    format(
        'SELECT status::text FROM nmc.notificatie WHERE id IN (%L, %L, %L, %L, %L) ORDER BY '
        'array_position(ARRAY[%L, %L, %L, %L, %L]::uuid[], id)',
        :'a', :'b', :'c', :'d', :'e', :'a', :'b', :'c', :'d', :'e'
    ),
    $$VALUES ('bezorgd'), ('bezorgd'), ('niet-bezorgbaar'), ('bezorgd'), ('bezorgd')$$,
    'and it is the outcome the rules give'
);
SELECT results_eq(
    format(
        'SELECT n.status::text, n.reden::text, array(SELECT t.soort::text FROM nmc.taak AS t '
        'WHERE t.notificatie_id = n.id AND t.staat = %L AND t.soort <> %L ORDER BY t.soort) '
        'FROM nmc.notificatie AS n WHERE n.id IN (%L, %L, %L, %L, %L) '
        'ORDER BY array_position(ARRAY[%L, %L, %L, %L, %L]::uuid[], n.id)',
        'open', 'wissen', :'i', :'j', :'k', :'l', :'m', :'i', :'j', :'k', :'l', :'m'
    ),
    $$VALUES
        ('niet-bezorgbaar', 'onbereikbaar', ARRAY['ongeldig-melden']),
        ('verzonden', NULL, ARRAY['verzenden']),
        ('verlopen', 'verlopen', ARRAY[]::text[]),
        ('niet-bezorgbaar', 'onbereikbaar', ARRAY[]::text[]),
        ('technisch-mislukt', 'technisch', ARRAY[]::text[])$$,
    'the failures: reported, resent, verlopen, niet-bezorgbaar and technisch-mislukt'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE soort = 'receipt' AND staat <> 'done'),
    0, 'every receipt task is done'
);

-- A set that fails (here: a payload id that is no uuid) leaves every receipt to the
-- one-by-one path, where the failure is counted on its own task only.
SELECT pg_temp.verzonden() AS g \gset
SELECT pg_temp.verzonden() AS h \gset
SELECT pg_temp.bewaar(:'g', 'delivered', :'t0');
SELECT pg_temp.bewaar(:'h', 'delivered', :'t0');
UPDATE nmc.taak SET payload = payload || '{"id": "geen-uuid"}'
WHERE soort = 'receipt' AND notificatie_id = :'h';
SELECT is(
    (SELECT count(*)::integer FROM nmc.process_receipts_v2(100)), 2, 'both are handled'
);
SELECT results_eq(
    format(
        'SELECT n.status::text, t.staat::text, t.pogingen FROM nmc.notificatie AS n '
        'INNER JOIN nmc.taak AS t ON t.notificatie_id = n.id AND t.soort = %L '
        'WHERE n.id IN (%L, %L) ORDER BY n.id = %L',
        'receipt', :'g', :'h', :'h'
    ),
    $$VALUES ('bezorgd', 'done', 0), ('verzonden', 'open', 1)$$,
    'the good receipt is applied, the bad one counted and retried'
);

-- A round without a batch given takes 50: each receipt on the one-by-one path is a
-- subtransaction that writes, and a transaction with more than 64 of them overflows the
-- backend's cache of subtransaction ids (every other snapshot then looks them up in
-- pg_subtrans while it runs). Fifty failures: 50 + 1 (the set's attempt) stay below.
CREATE FUNCTION pg_temp.verzonden_n(p_n integer) RETURNS uuid[]
LANGUAGE plpgsql AS $$
DECLARE
    v_ids uuid [] := '{}';
BEGIN
    FOR i IN 1..p_n LOOP
        PERFORM nmc.advance_clock(interval '1 second');  -- a send token each (the pace)
        v_ids := v_ids || pg_temp.verzonden();
    END LOOP;
    RETURN v_ids;
END $$;
UPDATE nmc.taak SET staat = 'done' WHERE soort = 'receipt' AND notificatie_id = :'h';
SELECT pg_temp.verzonden_n(55) AS vijftig \gset
SELECT pg_temp.bewaar(u.id, 'permanent-failure', :'t0') FROM unnest(:'vijftig'::uuid[]) AS u (id);
SELECT is(
    (SELECT count(*)::integer FROM nmc.process_receipts_v2()), 50,
    'a round takes 50 receipts by default'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.process_receipts_v2()), 5, 'the next round the rest'
);

-- The helpers on their own: completed_at capped at the NMC clock; the history as
-- nmc.apply_receipt_v2 writes an applied receipt.
SELECT pg_temp.verzonden() AS z \gset
SELECT pg_temp.bewaar(:'z', 'delivered', nmc.now() + interval '1 hour');
SELECT t.id AS z_taak FROM nmc.taak AS t
WHERE t.soort = 'receipt' AND t.notificatie_id = :'z' \gset
SELECT is(
    (SELECT k.c FROM nmc.receipts_enkel(ARRAY[:'z_taak'::bigint]) AS k), nmc.now(),
    'a completed_at ahead of the NMC clock is taken at the clock'
);
SELECT nmc.write_receipts_geschiedenis(ARRAY[:'z_taak'::bigint], ARRAY['bezorgd'], ARRAY[4]);
SELECT results_eq(
    format(
        'SELECT h.status, h.resultaat, h.notificatie_versie, h.toegepast, h.na_eindstatus, '
        'h.template_versie, h.bron FROM nmc.receiptgeschiedenis AS h WHERE h.notificatie_id = %L',
        :'z'
    ),
    $$VALUES ('delivered', 'bezorgd', 4, true, false, 2, 'callback')$$,
    'the history row of an applied receipt, from the task''s payload'
);

SELECT * FROM finish();
ROLLBACK;
