-- The cursor feed (SPEC §7): a DV reads its events on (xid, event_id) strictly below the
-- visibility watermark, so a cursor never skips an event committed late by an older
-- transaction.

CREATE OR REPLACE FUNCTION nmc.check_cursor(
    p_dv nmc.dienstverlener, p_epoch integer, p_xid xid8, p_uitgegeven_op timestamptz
)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_epoch <> (SELECT c.epoch FROM nmc.cluster_epoch AS c) THEN
        RAISE EXCEPTION 'cursor from another cluster epoch' USING ERRCODE = 'NM018';
    END IF;
    IF p_uitgegeven_op < nmc.now() - p_dv.max_cursorleeftijd THEN
        RAISE EXCEPTION 'cursor older than the maximum cursor age' USING ERRCODE = 'NM018';
    END IF;
    -- A cursor below the end of a dropped partition would skip what was in it.
    IF EXISTS (
        SELECT 1 FROM nmc.event_partitie AS p
        WHERE p.verwijderd_op IS NOT NULL AND p_xid < p.xid_tot
    ) THEN
        RAISE EXCEPTION 'cursor points into a dropped partition' USING ERRCODE = 'NM018';
    END IF;
END
$$;
COMMENT ON FUNCTION nmc.check_cursor(nmc.dienstverlener, integer, xid8, timestamptz) IS
'Refuses (NM018, 410 cursor-vervallen) a cursor of another cluster epoch, one issued longer '
'ago than the DV''s max cursor age, or one that points into (or before) a dropped '
'partition. The DV restarts from the oldest event or a snapshot.';

CREATE OR REPLACE FUNCTION nmc.take_feed_aanroep(p_dv nmc.dienstverlener)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_venster CONSTANT timestamptz := pg_catalog.date_trunc('minute', nmc.now());
    v_aantal integer;
BEGIN
    INSERT INTO nmc.feedaanroep AS f (dv_id, venster_start, aantal)
    VALUES (p_dv.dv_id, v_venster, 1)
    ON CONFLICT (dv_id, venster_start) DO UPDATE SET aantal = f.aantal + 1
    RETURNING f.aantal INTO v_aantal;
    IF v_aantal > p_dv.feed_aanroepen_per_minuut THEN
        RAISE EXCEPTION 'feed call rate exceeded' USING ERRCODE = 'NM019',
            DETAIL = pg_catalog.ceil(
                EXTRACT(EPOCH FROM v_venster + INTERVAL '1 minute' - nmc.now())
            )::bigint::text;
    END IF;
END
$$;
COMMENT ON FUNCTION nmc.take_feed_aanroep(nmc.dienstverlener) IS
'Counts one feed call of the DV in the current minute; over feed_aanroepen_per_minuut: '
'NM019 with DETAIL = seconds until the window ends (the Retry-After).';

CREATE OR REPLACE FUNCTION nmc.event_json(p_event nmc.event)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'eventId', p_event.event_id,
        'notificatieId', p_event.notificatie_id,
        'sequence', p_event.sequence,
        'van', p_event.van,
        'naar', p_event.naar,
        'reden', p_event.reden,
        'tijdstip', p_event.tijdstip,
        'xid', p_event.xid::text
    )
$$;
COMMENT ON FUNCTION nmc.event_json(nmc.event) IS
'One event as the shell needs it to build a CloudEvent (and the cursor of its position).';

-- json, not jsonb: a page is built once and sent as text, and building 1000 jsonb objects
-- plus their aggregate cost about half of a page's CPU (json_build_object only writes text).

CREATE OR REPLACE FUNCTION nmc.read_events(
    p_dv_id integer,
    p_xid xid8,
    p_event_id bigint,
    p_limiet integer,
    p_epoch integer,
    p_uitgegeven_op timestamptz
)
RETURNS json
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
-- PL/pgSQL, and its plan generic: planned once per session, and the partitions below p_xid
-- pruned when the statement starts. A SQL function with a SET clause is planned at every
-- call, and its plan covers every partition of the log (with a year's term, some forty:
-- the planning then cost a DV's empty poll five times what it did with two).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
    WITH grens AS (
        SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) AS watermerk
    ),

    -- Each event as nmc.event_json makes it, built here: a call of that function per row
    -- (not inlined, because of its pinned search_path) costs a third of a 1000-event page.
    -- tests_sql/page_events.sql holds the two to the same shape.
    pagina AS MATERIALIZED (
        SELECT
            e.xid,
            e.event_id,
            pg_catalog.json_build_object(
                'eventId', e.event_id,
                'notificatieId', e.notificatie_id,
                'sequence', e.sequence,
                'van', e.van,
                'naar', e.naar,
                'reden', e.reden,
                'tijdstip', e.tijdstip,
                'xid', e.xid::text
            ) AS event
        FROM nmc.event AS e, grens AS g
        WHERE e.dv_id = p_dv_id
            AND e.xid >= p_xid
            AND (e.xid, e.event_id) > (p_xid, p_event_id)
            AND e.xid < g.watermerk
        ORDER BY e.xid, e.event_id
        LIMIT p_limiet
    ),

    laatste AS (
        SELECT p.xid, p.event_id FROM pagina AS p
        ORDER BY p.xid DESC, p.event_id DESC
        LIMIT 1
    ),

    geheel AS (
        SELECT
            pg_catalog.count(*) AS aantal,
            coalesce(
                pg_catalog.json_agg(p.event ORDER BY p.xid, p.event_id), '[]'::json
            ) AS events
        FROM pagina AS p
    )

    SELECT pg_catalog.json_build_object(
        'events', h.events,
        -- A full page ends at its last event; a short page has read everything of this
        -- DV below the watermark, so the cursor may move up to it (quiet DVs stay fresh).
        'xid', CASE
            WHEN h.aantal = p_limiet THEN l.xid
            ELSE greatest(p_xid, g.watermerk)
        END::text,
        'eventId', CASE
            WHEN h.aantal = p_limiet THEN l.event_id
            WHEN g.watermerk > p_xid THEN 0
            ELSE p_event_id
        END,
        'epoch', p_epoch,
        'uitgegevenOp', p_uitgegeven_op
    )
    FROM grens AS g
    CROSS JOIN geheel AS h
    LEFT JOIN laatste AS l ON true
    );
END
$$;
COMMENT ON FUNCTION nmc.read_events(integer, xid8, bigint, integer, integer, timestamptz) IS
'One statement: up to p_limiet events of the DV after (p_xid, p_event_id), strictly below '
'the watermark pg_snapshot_xmin(pg_current_snapshot()), in (xid, event_id) order, each as '
'nmc.event_json makes it, with the next position: the last event of a full page, else the '
'watermark (xid, 0). Returns a feed page {events, xid, eventId, epoch, uitgegevenOp} '
'as json; epoch and uitgegevenOp are the caller''s, for the cursor the shell seals.';

CREATE OR REPLACE FUNCTION nmc.feed_dienstverlener(p_dv_id integer)
RETURNS nmc.dienstverlener
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
BEGIN
    SELECT * INTO v_dv FROM nmc.dienstverlener AS d WHERE d.dv_id = p_dv_id AND d.actief;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown or inactive dienstverlener' USING ERRCODE = 'NM010';
    END IF;
    RETURN v_dv;
END
$$;
COMMENT ON FUNCTION nmc.feed_dienstverlener(integer) IS
'Internal: the row of active DV p_dv_id, which every feed call (page, snapshot, '
'acknowledgement, the standby''s reads) starts from; NM010 when it is unknown or inactive.';

CREATE OR REPLACE FUNCTION nmc.feed_pagina(
    p_dv nmc.dienstverlener, p_xid xid8, p_event_id bigint, p_limiet integer
)
RETURNS json
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.read_events(
        p_dv.dv_id, coalesce(p_xid, '0'::xid8), coalesce(p_event_id, 0),
        least(greatest(coalesce(p_limiet, p_dv.feed_max_pagina), 1), p_dv.feed_max_pagina),
        (SELECT c.epoch FROM nmc.cluster_epoch AS c), nmc.now()
    )
$$;
COMMENT ON FUNCTION nmc.feed_pagina(nmc.dienstverlener, xid8, bigint, integer) IS
'Internal: the feed page of DV p_dv after position (p_xid, p_event_id) (NULL: from the '
'start), nmc.read_events with p_limiet capped at the DV''s feed_max_pagina (NULL: that '
'maximum), under the cluster''s epoch and the NMC clock. No checks, no call count: the page '
'of nmc.page_events and nmc.read_feed_pagina_v2.';

CREATE OR REPLACE FUNCTION nmc.page_events(
    p_dv_id integer,
    p_epoch integer,
    p_xid xid8,
    p_event_id bigint,
    p_uitgegeven_op timestamptz,
    p_limiet integer
)
RETURNS json
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
BEGIN
    v_dv := nmc.feed_dienstverlener(p_dv_id);
    IF p_xid IS NOT NULL THEN
        PERFORM nmc.check_cursor(v_dv, p_epoch, p_xid, p_uitgegeven_op);
    END IF;
    PERFORM nmc.take_feed_aanroep(v_dv);
    RETURN nmc.feed_pagina(v_dv, p_xid, p_event_id, p_limiet);
END
$$;
COMMENT ON FUNCTION nmc.page_events(integer, integer, xid8, bigint, timestamptz, integer) IS
'A feed page for the DV: checks the cursor (NM018 -> 410) and the call rate (NM019 -> '
'429), then nmc.read_events with the page size capped at the DV''s feed_max_pagina. No '
'cursor (p_xid NULL): from the oldest available event. Returns {events, epoch, xid, '
'eventId, uitgegevenOp}: the shell seals (epoch, xid, eventId, uitgegevenOp) into the '
'opaque cursor.';
