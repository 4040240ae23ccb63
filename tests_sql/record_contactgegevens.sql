-- The lease extension before a centraal send, which records the contactgegeven on the
-- attempt: fenced by epoch, kept by the commits that recover a lost send.
BEGIN;
SELECT plan(7);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie(p_dvref => 'a') AS a_id \gset
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'b') AS b_id \gset
CREATE TEMP TABLE geclaimd AS SELECT * FROM nmc.claim_verzenden('w', 20);
SELECT taak_id AS a_taak, claim_epoch AS a_epoch, poging_id AS a_poging
FROM geclaimd WHERE notificatie_id = :'a_id' \gset
SELECT taak_id AS b_taak, claim_epoch AS b_epoch, poging_id AS b_poging
FROM geclaimd WHERE notificatie_id = :'b_id' \gset
SELECT nmc.advance_clock('1 minute');

SELECT results_eq(
    format(
        $$SELECT item, lease_tot = nmc.now() + interval '2 minutes'
          FROM nmc.record_contactgegevens(
              ARRAY[%s, %s, 424242]::bigint[], ARRAY[%s, %s, 1],
              '{c0c0c0c0-0000-4000-8000-00000000000a,c0c0c0c0-0000-4000-8000-00000000000b,
                c0c0c0c0-0000-4000-8000-00000000000c}'
          )$$,
        :a_taak, :b_taak, :a_epoch, :b_epoch + 1
    ),
    $$VALUES (1, true), (2, null), (3, null)$$,
    'the new lease end per held task, NULL for a stale epoch or an unknown task'
);
SELECT results_eq(
    format(
        $$SELECT id::text, contactgegeven_id::text FROM nmc.poging WHERE id IN (%L, %L)
          ORDER BY id = %L DESC$$,
        :'a_poging', :'b_poging', :'a_poging'
    ),
    format(
        $$VALUES (%L, 'c0c0c0c0-0000-4000-8000-00000000000a'), (%L, null)$$,
        :'a_poging', :'b_poging'
    ),
    'the held task''s attempt records the contactgegeven; the stale one records nothing'
);
SELECT is(
    (SELECT lease_tot = nmc.now() + interval '2 minutes' FROM nmc.taak WHERE id = :b_taak),
    false,
    'and the stale task keeps its lease'
);

-- The send's answer is lost; a re-claim finds the e-mail by reference and commits it
-- without a contactgegeven: the recorded one stays.
SELECT nmc.advance_clock('3 minutes');
CREATE TEMP TABLE herclaim AS SELECT * FROM nmc.claim_verzenden('w2', 20);
SELECT claim_epoch AS a_epoch2 FROM herclaim WHERE notificatie_id = :'a_id' \gset
SELECT claim_epoch AS b_epoch2 FROM herclaim WHERE notificatie_id = :'b_id' \gset
SELECT nmc.finish_verzenden(
    :a_taak, :a_epoch2, 'verzonden', 'e0e0e0e0-0000-4000-8000-0000000000a1'
);
SELECT is(
    (SELECT contactgegeven_id::text FROM nmc.poging WHERE id = :'a_poging'),
    'c0c0c0c0-0000-4000-8000-00000000000a',
    'a commit found by reference keeps the recorded contactgegeven'
);

-- A receipt takes over the NotifyNL id while the worker's commit is lost.
SELECT nmc.record_contactgegevens(
    ARRAY[:b_taak]::bigint[], ARRAY[:b_epoch2], '{c0c0c0c0-0000-4000-8000-00000000000b}'
);
SELECT pg_temp.navraag_antwoord(
    :'b_poging', 'e0e0e0e0-0000-4000-8000-0000000000b1', 'permanent-failure', nmc.now(), null
);
SELECT is(
    (SELECT contactgegeven_id::text FROM nmc.poging WHERE id = :'b_poging'),
    'c0c0c0c0-0000-4000-8000-00000000000b',
    'a receipt that takes over the NotifyNL id keeps it too'
);
SELECT is(
    (
        SELECT count(r.lease_tot)::integer FROM nmc.record_contactgegevens(
            ARRAY[:b_taak]::bigint[], ARRAY[:b_epoch2], '{c0c0c0c0-0000-4000-8000-0000000000ff}'
        ) AS r
    )
    || ' ' || (SELECT contactgegeven_id::text FROM nmc.poging WHERE id = :'b_poging'),
    '1 c0c0c0c0-0000-4000-8000-00000000000b',
    'once the attempt has a NotifyNL id its contactgegeven is no longer replaced'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.record_contactgegevens('{1,2}', '{1,1}', '{}')$$,
    '22023', null,
    'arrays of different length are refused (22023)'
);

SELECT * FROM finish();
ROLLBACK;
