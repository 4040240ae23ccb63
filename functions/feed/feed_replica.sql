-- The feed from a standby (ADR 0024: "rapportage en feed-scans draaien op de replica,
-- waarbij feed en watermerk uit dezelfde snapshot komen"). A hot standby runs read-only
-- transactions only, so a feed call there is split in two: the small write (the call-rate
-- count) on the primary, then the page, read under the watermark, on the standby. An
-- API without a replica keeps the one-call forms (nmc.page_events,
-- nmc.snapshot_notificaties).
--
-- Why the watermark holds on a standby: pg_current_snapshot() there is built from the
-- transactions the standby knows to be running. It counts every xid up to the newest it
-- has seen in the WAL as running until their commit or abort record is replayed, so an
-- xid the primary handed out earlier but whose first record has not arrived yet still
-- holds pg_snapshot_xmin back. A lagging standby serves an older page, never a gap.
--
-- Two things an older page must not be (the _v2 readers refuse them with NMR01, DETAIL =
-- the replay lag in seconds, and the API reads the page on the primary instead):
-- * older than the API's staleness bound (NMC_API_REPLICA_MAX_LAG_SECONDS): a DV must not
--   wait on a standby that fell behind;
-- * for a snapshot page after the first, older than the first page: the DV resumes the
--   feed from the first page's watermark, so a status change below it that a later page
--   does not show would never reach the DV. A server whose own watermark has reached the
--   first page's has every transaction below it ended, so its page shows them all.

CREATE OR REPLACE FUNCTION nmc.replica_achterstand()
RETURNS double precision
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN NOT pg_catalog.pg_is_in_recovery() THEN 0
        -- Replayed everything it received while its WAL receiver runs: as new as it can know.
        WHEN pg_catalog.pg_last_wal_replay_lsn() >= pg_catalog.pg_last_wal_receive_lsn()
            AND EXISTS (
                SELECT 1 FROM pg_catalog.pg_stat_get_wal_receiver() AS r WHERE r.pid IS NOT NULL
            )
            THEN 0
        -- Behind (or not streaming): how old the newest commit it replayed is; nothing
        -- replayed yet is as stale as it gets.
        ELSE coalesce(
            greatest(
                EXTRACT(EPOCH FROM pg_catalog.now() - pg_catalog.pg_last_xact_replay_timestamp()),
                0
            )::double precision,
            'Infinity'::double precision
        )
    END
$$;
COMMENT ON FUNCTION nmc.replica_achterstand() IS
'How far this server''s data is behind its primary, in seconds: 0 on a primary and on a '
'standby that has replayed all the WAL it received while streaming; otherwise the age of '
'the newest commit it replayed (Infinity before the first). The real clock, not nmc.now(): '
'replication lag is physical time. Not granted: read by nmc.check_replica.';

CREATE OR REPLACE FUNCTION nmc.check_replica(p_max_achterstand double precision, p_watermerk xid8)
RETURNS double precision
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_achterstand CONSTANT double precision := nmc.replica_achterstand();
BEGIN
    IF v_achterstand > p_max_achterstand
        OR pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) < p_watermerk
    THEN
        RAISE EXCEPTION 'this server is behind: read on the primary'
            USING ERRCODE = 'NMR01', DETAIL = v_achterstand::text;
    END IF;
    RETURN v_achterstand;
END
$$;
COMMENT ON FUNCTION nmc.check_replica(double precision, xid8) IS
'The replay lag of this server (nmc.replica_achterstand), or NMR01 (DETAIL = that lag) when '
'it is above p_max_achterstand (NULL: no bound) or when this snapshot''s watermark is below '
'p_watermerk (NULL: none), a position the reader already had: then the read belongs on the '
'primary. On a primary neither happens (its watermark only rises).';

CREATE OR REPLACE FUNCTION nmc.take_feed_aanroep_api(
    p_dv_id integer, p_epoch integer, p_xid xid8, p_uitgegeven_op timestamptz
)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
BEGIN
    v_dv := nmc.feed_dienstverlener(p_dv_id);
    -- An expired cursor costs no call, as in nmc.page_events.
    IF p_xid IS NOT NULL THEN
        PERFORM nmc.check_cursor(v_dv, p_epoch, p_xid, p_uitgegeven_op);
    END IF;
    PERFORM nmc.take_feed_aanroep(v_dv);
END
$$;
COMMENT ON FUNCTION nmc.take_feed_aanroep_api(integer, integer, xid8, timestamptz) IS
'The primary''s half of a feed call read on a standby: the DV must be active (NM010), a '
'cursor, when given, must be current (NM018 -> 410), then one call is counted against '
'the DV''s feed_aanroepen_per_minuut (NM019 -> 429, DETAIL = Retry-After seconds). For a '
'snapshot page pass no cursor. The page itself comes from nmc.read_feed_pagina or '
'nmc.read_snapshot_pagina on the standby.';

CREATE OR REPLACE FUNCTION nmc.read_feed_pagina_v2(
    p_dv_id integer,
    p_epoch integer,
    p_xid xid8,
    p_event_id bigint,
    p_uitgegeven_op timestamptz,
    p_limiet integer,
    p_max_achterstand double precision
)
RETURNS json
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
BEGIN
    v_dv := nmc.feed_dienstverlener(p_dv_id);
    PERFORM nmc.check_replica(p_max_achterstand, NULL);
    -- Checked again against the standby's own state: the epoch and the dropped partitions
    -- it has replayed are the ones the page below is read under.
    IF p_xid IS NOT NULL THEN
        PERFORM nmc.check_cursor(v_dv, p_epoch, p_xid, p_uitgegeven_op);
    END IF;
    RETURN nmc.feed_pagina(v_dv, p_xid, p_event_id, p_limiet);
END
$$;
COMMENT ON FUNCTION nmc.read_feed_pagina_v2(
    integer, integer, xid8, bigint, timestamptz, integer, double precision
) IS
'A feed page without writing: nmc.page_events less the call count, so it runs on a hot '
'standby (after nmc.take_feed_aanroep_api on the primary). Checks the DV (NM010), that this '
'server is at most p_max_achterstand seconds behind (NULL: no bound; else NMR01, DETAIL = '
'its lag: read on the primary) and the cursor (NM018) against the state it reads, then '
'nmc.read_events under this snapshot''s watermark with the page size capped at '
'feed_max_pagina. Same answer as nmc.page_events.';

CREATE OR REPLACE FUNCTION nmc.read_feed_pagina(
    p_dv_id integer,
    p_epoch integer,
    p_xid xid8,
    p_event_id bigint,
    p_uitgegeven_op timestamptz,
    p_limiet integer
)
RETURNS json
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.read_feed_pagina_v2(
        p_dv_id, p_epoch, p_xid, p_event_id, p_uitgegeven_op, p_limiet, NULL
    )
$$;
COMMENT ON FUNCTION nmc.read_feed_pagina(integer, integer, xid8, bigint, timestamptz, integer) IS
'Kept for the previous release (replaced by nmc.read_feed_pagina_v2, which takes the lag '
'bound): nmc.read_feed_pagina_v2 without a bound.';

CREATE OR REPLACE FUNCTION nmc.read_snapshot_pagina_v2(
    p_dv_id integer,
    p_na uuid,
    p_limiet integer,
    p_watermerk xid8,
    p_max_achterstand double precision
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM nmc.feed_dienstverlener(p_dv_id);
    -- A later page at least as new as the first (its watermark p_watermerk): see above.
    PERFORM nmc.check_replica(p_max_achterstand, p_watermerk);
    -- The same page as nmc.snapshot_notificaties, from this standby's snapshot.
    RETURN nmc.snapshot_pagina(p_dv_id, p_na, p_limiet);
END
$$;
COMMENT ON FUNCTION nmc.read_snapshot_pagina_v2(integer, uuid, integer, xid8, double precision) IS
'A snapshot page without writing: nmc.snapshot_notificaties less the call count, so it '
'runs on a hot standby (after nmc.take_feed_aanroep_api on the primary). The page (by id) '
'and the feed position (watermark, 0) come from one snapshot of the standby. For a page '
'after the first, p_watermerk is the first page''s watermark: a server whose watermark is '
'below it, or that is more than p_max_achterstand seconds behind (NULL: no bound), '
'refuses with NMR01 (DETAIL = its lag) and the page is read on the primary. An unknown or '
'inactive DV NM010.';

CREATE OR REPLACE FUNCTION nmc.read_snapshot_pagina(
    p_dv_id integer, p_na uuid DEFAULT NULL, p_limiet integer DEFAULT 1000
)
RETURNS jsonb
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.read_snapshot_pagina_v2(p_dv_id, p_na, p_limiet, NULL, NULL)
$$;
COMMENT ON FUNCTION nmc.read_snapshot_pagina(integer, uuid, integer) IS
'Kept for the previous release (replaced by nmc.read_snapshot_pagina_v2, which takes the '
'first page''s watermark and the lag bound): nmc.read_snapshot_pagina_v2 without either.';
