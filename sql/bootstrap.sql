-- Bootstrap: everything the versioned schema files assume exists.
-- Applied by `nmc migrate` on every run, before anything else; idempotent.
-- Runs as the migrating (admin) user, which needs CREATEROLE (or superuser).

-- Roles. nmc_owner owns every object and never logs in. The shell's roles own
-- nothing and may only EXECUTE the API functions granted to them in sql/grants.sql.
-- A role is created only when it is missing: an existing role's LOGIN, password and
-- memberships are never changed, since a platform may manage them (CloudNativePG's
-- managed roles, deploy/k8s, give nmc_api and nmc_worker their passwords).
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
    -- The operator console (`nmc console`): its reads and the beheer actions only.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'nmc_console') THEN
        CREATE ROLE nmc_console LOGIN;
    END IF;
END
$$;

-- Every open write transaction holds the feed watermark back, so no shell role may
-- keep one open for long (SPEC §2). PostgreSQL 17+ also gets transaction_timeout.
-- Timestamps the functions render (JSON) do not depend on the server's time zone.
-- A setting is written only when it differs: role settings are cluster-wide, and two
-- databases of one cluster migrated at the same moment must not both update the row.
DO $$
DECLARE
    wanted record;
BEGIN
    FOR wanted IN
        SELECT s.rol, s.naam, s.waarde
        FROM (VALUES
            ('nmc_api', 'statement_timeout', '5s', 0),
            ('nmc_api', 'idle_in_transaction_session_timeout', '10s', 0),
            ('nmc_api', 'TimeZone', 'UTC', 0),
            ('nmc_api', 'transaction_timeout', '10s', 170000),
            ('nmc_worker', 'statement_timeout', '30s', 0),
            ('nmc_worker', 'idle_in_transaction_session_timeout', '60s', 0),
            ('nmc_worker', 'TimeZone', 'UTC', 0),
            ('nmc_worker', 'transaction_timeout', '120s', 170000),
            ('nmc_console', 'statement_timeout', '15s', 0),
            ('nmc_console', 'idle_in_transaction_session_timeout', '10s', 0),
            ('nmc_console', 'TimeZone', 'UTC', 0),
            ('nmc_console', 'transaction_timeout', '20s', 170000)
        ) AS s (rol, naam, waarde, vanaf_versie)
        WHERE pg_catalog.current_setting('server_version_num')::int >= s.vanaf_versie
    LOOP
        IF NOT EXISTS (
            SELECT 1
            FROM pg_catalog.pg_db_role_setting AS d
            INNER JOIN pg_catalog.pg_roles AS r ON r.oid = d.setrole
            WHERE r.rolname = wanted.rol
                AND d.setdatabase = 0
                AND wanted.naam || '=' || wanted.waarde = ANY(d.setconfig)
        ) THEN
            EXECUTE pg_catalog.format(
                'ALTER ROLE %I SET %I = %L', wanted.rol, wanted.naam, wanted.waarde
            );
        END IF;
    END LOOP;
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

-- nmc.metrics() reports the age of the oldest open write transaction (it holds back every
-- DV's feed); PostgreSQL shows another role's transaction start only to members of
-- pg_read_all_stats. Granted when the migrating user may; otherwise that one metric is left
-- out (docs/operations.md says how to grant it).
DO $$
BEGIN
    IF NOT pg_catalog.pg_has_role('nmc_owner', 'pg_read_all_stats', 'MEMBER')
        AND (
            (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
            OR pg_catalog.pg_has_role(current_user, 'pg_read_all_stats', 'USAGE WITH ADMIN OPTION')
        ) THEN
        GRANT pg_read_all_stats TO nmc_owner;
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
