-- Acknowledgement (SPEC §7): the DV writes the cursor it has processed; only forward.

CREATE OR REPLACE FUNCTION nmc.acknowledge_cursor(
    p_dv_id integer, p_epoch integer, p_xid xid8, p_event_id bigint, p_uitgegeven_op timestamptz
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
    v_vooruit boolean;
BEGIN
    v_dv := nmc.feed_dienstverlener(p_dv_id);
    PERFORM nmc.check_cursor(v_dv, p_epoch, p_xid, p_uitgegeven_op);

    INSERT INTO nmc.bevestiging AS b (dv_id, epoch, xid, event_id, bevestigd_op)
    VALUES (p_dv_id, p_epoch, p_xid, p_event_id, nmc.now())
    ON CONFLICT (dv_id) DO UPDATE
    SET epoch = excluded.epoch, xid = excluded.xid, event_id = excluded.event_id,
        bevestigd_op = excluded.bevestigd_op
    -- Only forward; a position from an older epoch is replaced by any current one.
    WHERE b.epoch <> excluded.epoch OR (b.xid, b.event_id) < (excluded.xid, excluded.event_id)
    RETURNING true INTO v_vooruit;
    RETURN CASE WHEN v_vooruit THEN 'bevestigd' ELSE 'ongewijzigd' END;
END
$$;
COMMENT ON FUNCTION nmc.acknowledge_cursor(integer, integer, xid8, bigint, timestamptz) IS
'Stores the DV''s processed feed position. Moves only forward: an older or equal cursor '
'is a no-op answered ongewijzigd (else bevestigd). An expired cursor is NM018 (410).';

-- The count reads the oldest terminal events past the acknowledgement, at most
-- onbevestigd_telgrens per DV, from the partial index event_terminaal alone: a scrape costs
-- the same for a DV that never acknowledged a log of millions. Events are read in feed
-- order (xid, event_id), which is the order of their time up to the length of a
-- transaction, so the first ones read are the oldest; when every one read is overdue the
-- count is a lower bound ("at least"). The status list is event_terminaal's predicate.
CREATE OR REPLACE FUNCTION nmc.report_onbevestigd_v2()
RETURNS TABLE (
    dv_id integer, naam text, beheerkanaal text, aantal bigint, oudste timestamptz,
    afgekapt boolean
)
-- PL/pgSQL, not SQL: its plan is kept for the session (PostgreSQL 15 plans a SQL function's
-- query again at every call; every metrics scrape reads this).
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- A small read whose estimates run high (the DV register and the settings row are too small
-- for autovacuum to analyze): compiling it (JIT) would cost more than running it.
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT
        d.dv_id, d.naam, d.beheerkanaal, x.aantal, x.oudste,
        x.aantal >= i.onbevestigd_telgrens
    FROM nmc.instellingen AS i
    CROSS JOIN nmc.dienstverlener AS d
    LEFT JOIN nmc.bevestiging AS b
        ON b.dv_id = d.dv_id AND b.epoch = (SELECT c.epoch FROM nmc.cluster_epoch AS c)
    CROSS JOIN LATERAL (
        -- (SELECT nmc.now()): the clock once per scrape, not a function call per event.
        SELECT
            pg_catalog.count(*) FILTER (
                WHERE t.tijdstip < (SELECT nmc.now()) - d.bevestigingstermijn
            ) AS aantal,
            pg_catalog.min(t.tijdstip) FILTER (
                WHERE t.tijdstip < (SELECT nmc.now()) - d.bevestigingstermijn
            ) AS oudste
        FROM (
            SELECT e.tijdstip
            FROM nmc.event AS e
            WHERE e.dv_id = d.dv_id
                AND e.naar IN (
                    'definitief-bezorgd', 'niet-bezorgbaar', 'technisch-mislukt',
                    'bezorgstatus-onbekend', 'verlopen', 'geannuleerd'
                )
                AND e.xid >= coalesce(b.xid, '0'::xid8)
                AND (e.xid, e.event_id) > (coalesce(b.xid, '0'::xid8), coalesce(b.event_id, 0))
            -- dv_id in the order (it is one DV here) leaves the planner only the DV's own
            -- indexes: the primary key (xid, event_id) with a filter would read the whole
            -- log past the acknowledgement for a DV with few events.
            ORDER BY e.dv_id, e.xid, e.event_id
            LIMIT i.onbevestigd_telgrens
        ) AS t
    ) AS x
    WHERE x.aantal > 0
    ORDER BY d.dv_id;
END
$$;
COMMENT ON FUNCTION nmc.report_onbevestigd_v2() IS
'Per DV the terminal-status events beyond its acknowledged cursor that are older than its '
'ack term (bevestigingstermijn): the count and the oldest, for the metric and the report '
'on the DV''s beheer channel. Reads at most settings.onbevestigd_telgrens terminal events '
'per DV (oldest first, from an index), so its cost does not grow with the log; afgekapt: '
'every one read was overdue, the count means "at least".';
