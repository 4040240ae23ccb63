-- Bootstrap: everything the versioned schema files assume exists.
-- Applied by `nmc migrate` on every run, before anything else; idempotent.
-- Runs as the migrating (admin) user, which needs CREATEROLE (or superuser).

-- Roles. nmc_owner owns every object and never logs in. The shell's roles own
-- nothing and may only EXECUTE the API functions granted to them in sql/grants.sql.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'nmc_owner') THEN
        CREATE ROLE nmc_owner NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'nmc_api') THEN
        CREATE ROLE nmc_api LOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'nmc_worker') THEN
        CREATE ROLE nmc_worker LOGIN;
    END IF;
END
$$;

-- Every open write transaction holds the feed watermark back, so no shell role may
-- keep one open for long (SPEC §2). PostgreSQL 17+ also gets transaction_timeout.
ALTER ROLE nmc_api SET statement_timeout = '5s';
ALTER ROLE nmc_api SET idle_in_transaction_session_timeout = '10s';
ALTER ROLE nmc_worker SET statement_timeout = '30s';
ALTER ROLE nmc_worker SET idle_in_transaction_session_timeout = '60s';
-- Timestamps the functions render (JSON) do not depend on the server's time zone.
ALTER ROLE nmc_api SET timezone = 'UTC';
ALTER ROLE nmc_worker SET timezone = 'UTC';
DO $$
BEGIN
    IF pg_catalog.current_setting('server_version_num')::int >= 170000 THEN
        EXECUTE 'ALTER ROLE nmc_api SET transaction_timeout = ''10s''';
        EXECUTE 'ALTER ROLE nmc_worker SET transaction_timeout = ''120s''';
    END IF;
END
$$;

-- The migrating user must be able to act as the owner.
DO $$
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user, 'nmc_owner', 'MEMBER') THEN
        EXECUTE pg_catalog.format('GRANT nmc_owner TO %I', current_user);
    END IF;
END
$$;

CREATE SCHEMA IF NOT EXISTS nmc AUTHORIZATION nmc_owner;
CREATE SCHEMA IF NOT EXISTS nmc_migratie AUTHORIZATION nmc_owner;
REVOKE ALL ON SCHEMA nmc, nmc_migratie FROM PUBLIC;

CREATE TABLE IF NOT EXISTS nmc_migratie.toegepast (
    bestand text PRIMARY KEY,
    soort text NOT NULL CHECK (soort IN ('schema', 'module')),
    checksum text NOT NULL,
    toegepast_op timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
ALTER TABLE nmc_migratie.toegepast OWNER TO nmc_owner;
COMMENT ON TABLE nmc_migratie.toegepast IS
'Which schema files and function/trigger modules `nmc migrate` applied, with the '
'SHA-256 of their text. Schema files are applied once (editing one afterwards is an '
'error); modules are re-applied when their checksum changes. Kept for the life of the '
'database.';

-- Functions are executable by PUBLIC by default; ours are not.
ALTER DEFAULT PRIVILEGES FOR ROLE nmc_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
