-- sql/bootstrap.sql and an operator that manages the roles (CloudNativePG's managed roles,
-- deploy/k8s) must not undo each other: the bootstrap creates a role only when it is missing
-- and never changes an existing role's LOGIN, password or memberships.
BEGIN;
SELECT plan(4);

-- As the operator may have left them: the API role locked out, passwords set by it.
ALTER ROLE nmc_api NOLOGIN PASSWORD 'gezet-door-de-operator';
ALTER ROLE nmc_worker PASSWORD 'ook-door-de-operator';
CREATE TEMP TABLE rollen_voor AS
SELECT a.rolname, a.rolcanlogin, a.rolpassword, a.rolinherit
FROM pg_catalog.pg_authid AS a
WHERE a.rolname IN ('nmc_owner', 'nmc_api', 'nmc_worker');
CREATE TEMP TABLE alle_rollen_voor AS SELECT a.rolname FROM pg_catalog.pg_authid AS a;
CREATE TEMP TABLE leden_voor AS
SELECT m.roleid, m.member, m.admin_option FROM pg_catalog.pg_auth_members AS m;

\ir ../sql/bootstrap.sql

SELECT set_eq(
    $$SELECT a.rolname, a.rolcanlogin, a.rolpassword, a.rolinherit
      FROM pg_catalog.pg_authid AS a
      WHERE a.rolname IN ('nmc_owner', 'nmc_api', 'nmc_worker')$$,
    'SELECT * FROM rollen_voor',
    'the bootstrap leaves LOGIN, password and INHERIT of existing roles as they were'
);
SELECT ok(
    NOT (SELECT a.rolcanlogin FROM pg_catalog.pg_authid AS a WHERE a.rolname = 'nmc_api'),
    'a role the operator set to NOLOGIN is not given LOGIN back'
);
SELECT set_eq(
    'SELECT m.roleid, m.member, m.admin_option FROM pg_catalog.pg_auth_members AS m',
    'SELECT * FROM leden_voor',
    'no membership is granted or revoked when the migrating user is a member already'
);
SELECT is(
    (SELECT count(*)::integer FROM pg_catalog.pg_authid),
    (SELECT count(*)::integer FROM alle_rollen_voor),
    'no role is created when they all exist'
);

SELECT * FROM finish();
ROLLBACK;
