-- The work hint (nmc.meld_werk, nmc.luister_naar_werk): what a notification does once
-- committed is tested across two connections in tests_py/test_werk_hints.py; here the
-- functions' shape and rights.
BEGIN;
SELECT plan(8);
\ir fixtures/setup.sql

SELECT lives_ok('SELECT nmc.meld_werk()', 'meld_werk queues a notification');
SELECT lives_ok('SELECT nmc.luister_naar_werk()', 'luister_naar_werk listens (at commit)');
SELECT volatility_is('nmc', 'meld_werk', '{}'::name[], 'volatile', 'meld_werk is volatile');
SELECT isnt_definer('nmc', 'meld_werk', '{}'::name[], 'meld_werk runs with the caller''s rights');
SELECT isnt_definer(
    'nmc', 'luister_naar_werk', '{}'::name[], 'luister_naar_werk runs with the caller''s rights'
);
SELECT function_privs_are(
    'nmc', 'meld_werk', '{}'::name[], 'nmc_api', ARRAY['EXECUTE'], 'the API may send the hint'
);
SELECT function_privs_are(
    'nmc', 'luister_naar_werk', '{}'::name[], 'nmc_worker', ARRAY['EXECUTE'],
    'a worker may listen for it'
);
SELECT function_privs_are(
    'nmc', 'meld_werk', '{}'::name[], 'nmc_worker', '{}'::text[],
    'a worker does not send it (its own work wakes its own kinds)'
);

SELECT * FROM finish();
ROLLBACK;
