-- The invalid-address report gets the encrypted number and the contactgegeven id.
BEGIN;
SELECT plan(5);
\ir fixtures/setup.sql

SELECT r.notificatie_id AS id FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32('c'), 1::smallint,
    pg_temp.b32('p'), 0::smallint, '\x0abc', NULL, '\x0def', 'kek-1', NULL, NULL,
    '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')
) AS r \gset
SELECT taak_id AS t, claim_epoch AS e, poging_id AS p FROM nmc.claim_verzenden('w', 10) \gset
SELECT nmc.finish_verzenden(
    :t, :e, 'verzonden', gen_random_uuid(),
    'f0f0f0f0-0000-4000-8000-000000000001'
);
SELECT pg_temp.navraag_antwoord(:'p', NULL, 'permanent-failure', nmc.now(), NULL);

CREATE TEMP TABLE c AS SELECT * FROM nmc.claim_ongeldig_melden('w', 10);
SELECT results_eq(
    $$SELECT contactgegeven_id::text, ontvanger_versleuteld, sleutel_gewrapt, kek_id,
             gemeld_op = nmc.now() FROM c$$,
    $$VALUES ('f0f0f0f0-0000-4000-8000-000000000001', '\x0abc'::bytea, '\x0def'::bytea,
              'kek-1', true)$$,
    'the claim returns the contactgegeven id and the encrypted identifying number'
);
SELECT is((SELECT claim_epoch FROM c), 1, 'with its claim epoch');
SELECT lives_ok(
    format('SELECT nmc.finish_taak(%s, 1)', (SELECT taak_id FROM c)),
    'the task is finished like any other'
);
SELECT is_empty('SELECT * FROM nmc.claim_ongeldig_melden(''w'', 10)', 'nothing left to claim');

SELECT nmc.count_malformed_receipt();
SELECT is(
    (SELECT aantal::integer FROM nmc.teller WHERE naam = 'receipt_ongeldig'), 1,
    'a malformed callback is counted'
);

SELECT * FROM finish();
ROLLBACK;
