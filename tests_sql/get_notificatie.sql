-- Status reads: the DV's own notifications only, with attempts, without personal data.
BEGIN;
SELECT plan(9);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie(p_dvref => 'ref-a') AS id \gset
SELECT pg_temp.naar_status(:'id', 'verzonden');
INSERT INTO nmc.poging (id, notificatie_id, nummer, status, verzonden_op, aangemaakt_op)
VALUES (gen_random_uuid(), :'id', 1, 'verzonden', '2026-11-30 10:00:00+00', nmc.now());

SELECT nmc.get_notificatie(1001, :'id') AS j \gset
SELECT is(
    (:'j'::jsonb) - 'aangenomenOp' - 'bijgewerktOp' - 'geldigTot' - 'pogingen',
    jsonb_build_object(
        'notificatieId', :'id', 'berichtType', 'aanslag', 'regie', 'decentraal',
        'status', 'verzonden', 'reden', NULL, 'versie', 3
    ),
    'the status carries id, berichttype, regie, status, reden and version'
);
SELECT is(
    (:'j'::jsonb) -> 'pogingen',
    '[{"nummer": 1, "status": "verzonden", "verzondenOp": "2026-11-30T10:00:00+00:00",
       "afgerondOp": null}]'::jsonb,
    'and the attempts with their source timestamps'
);
SELECT ok(
    (:'j'::jsonb) ?& ARRAY['aangenomenOp', 'bijgewerktOp', 'geldigTot'],
    'and its own timestamps'
);
SELECT is_empty(
    format($$SELECT k FROM jsonb_object_keys(%L::jsonb) AS k
             WHERE k ~* 'dvref|ontvanger|email|gegevens|sleutel|hmac|trace'$$, :'j'),
    'nothing personal or secret is in it'
);
SELECT throws_ok(
    format('SELECT nmc.get_notificatie(1002, %L)', :'id'),
    'NM005', 'notificatie not found',
    'another DV''s notification does not exist for the caller'
);
SELECT throws_ok(
    'SELECT nmc.get_notificatie(1001, gen_random_uuid())',
    'NM005', 'notificatie not found',
    'an unknown id is not found either'
);

-- Search on dvRef HMACs (one per live pepper version).
SELECT results_eq(
    $$SELECT x ->> 'notificatieId' FROM nmc.find_notificaties(
        1001, ARRAY[pg_temp.b32('ref-a'), pg_temp.b32('other-pepper')]) AS x$$,
    format('VALUES (%L)', :'id'),
    'find_notificaties finds the DV''s notification by dvRef HMAC'
);
SELECT is_empty(
    $$SELECT * FROM nmc.find_notificaties(1002, ARRAY[pg_temp.b32('ref-a')])$$,
    'another DV finds nothing with the same HMAC'
);
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'ref-' || i) FROM generate_series(1, 5) AS i;
SELECT is(
    (SELECT count(
        *)::integer FROM nmc.find_notificaties(
        1001,
        array(SELECT pg_temp.b32('ref-' || i) FROM generate_series(1, 5) AS i), 3
    )),
    3,
    'the page size limits the answer'
);

SELECT * FROM finish();
ROLLBACK;
