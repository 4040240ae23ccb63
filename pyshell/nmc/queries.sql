-- The SQL the shell sends, one named query per `-- name --` header (procrastinate style).
-- Queries with {placeholders} take identifiers composed with psycopg.sql; %(name)s are
-- ordinary parameters.

-- lock_migrations --
-- Serialises concurrent `nmc migrate` runs on one database until their transaction ends;
-- transaction scoped, so it also works behind PgBouncer. The key is 'NMC_MIGR' in ASCII.
SELECT pg_catalog.pg_advisory_xact_lock(5642239984762701650)

-- act_as_owner --
SET LOCAL ROLE nmc_owner

-- migration_table_exists --
SELECT pg_catalog.to_regclass('nmc_migratie.toegepast') IS NOT NULL

-- applied_files --
SELECT t.bestand, t.checksum
FROM nmc_migratie.toegepast AS t

-- record_schema_file --
INSERT INTO nmc_migratie.toegepast (bestand, soort, checksum)
VALUES (%(bestand)s, 'schema', %(checksum)s)

-- record_module --
INSERT INTO nmc_migratie.toegepast (bestand, soort, checksum)
VALUES (%(bestand)s, 'module', %(checksum)s)
ON CONFLICT (bestand) DO UPDATE
SET checksum = excluded.checksum, toegepast_op = pg_catalog.clock_timestamp()

-- advance_clock --
SELECT nmc.advance_clock(%(duration)s::interval)

-- clock_now --
SELECT nmc.now()

-- server_version --
SHOW server_version

-- database_exists --
SELECT 1 FROM pg_catalog.pg_database WHERE datname = %(name)s

-- create_database --
CREATE DATABASE {database}

-- drop_database --
DROP DATABASE IF EXISTS {database} WITH (FORCE)

-- create_pgtap --
CREATE EXTENSION IF NOT EXISTS pgtap
