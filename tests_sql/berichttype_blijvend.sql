-- A berichttype is retired, never deleted or renamed: notifications name it without a
-- foreign key (schema/0012).
BEGIN;
SELECT plan(7);
\ir fixtures/setup.sql

SELECT hasnt_fk('nmc', 'notificatie', 'the notificatie -> berichttype foreign key is gone');
SELECT trigger_is(
    'nmc', 'berichttype', 'berichttype_blijvend', 'nmc', 'refuse_berichttype_removal',
    'nmc.refuse_berichttype_removal guards every update and delete of a berichttype'
);
SELECT throws_ok(
    $$DELETE FROM nmc.berichttype WHERE dv_id = 1001 AND code = 'aanslag'$$,
    'NM015', 'a berichttype is retired (actief = false), never deleted or renamed (DELETE refused)',
    'deleting a berichttype is refused (NM015)'
);
SELECT throws_ok(
    $$UPDATE nmc.berichttype SET code = 'aanslag2' WHERE dv_id = 1001 AND code = 'aanslag'$$,
    'NM015', 'a berichttype is retired (actief = false), never deleted or renamed (UPDATE refused)',
    'renaming a berichttype is refused (NM015)'
);
SELECT throws_ok(
    'TRUNCATE nmc.berichttype CASCADE',
    'NM015',
    'a berichttype is retired (actief = false), never deleted or renamed (TRUNCATE refused)',
    'truncating the berichttypen is refused (NM015)'
);
SELECT lives_ok(
    $$UPDATE nmc.berichttype SET actief = false, geldigheid_max = '40 days'
      WHERE dv_id = 1001 AND code = 'aanslag'$$,
    'retiring or changing the policy of a berichttype is allowed'
);
-- The intake's own check takes the place of the foreign key.
SELECT throws_ok(
    $$SELECT pg_temp.nieuwe_notificatie()$$,
    'NM008', NULL,
    'an intake naming a retired berichttype is refused (NM008)'
);

SELECT * FROM finish();
ROLLBACK;
