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
    SELECT * INTO v_dv FROM nmc.dienstverlener AS d WHERE d.dv_id = p_dv_id AND d.actief;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown or inactive dienstverlener' USING ERRCODE = 'NM010';
    END IF;
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

CREATE OR REPLACE FUNCTION nmc.report_onbevestigd()
RETURNS TABLE (dv_id integer, naam text, beheerkanaal text, aantal bigint, oudste timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT d.dv_id, d.naam, d.beheerkanaal, pg_catalog.count(*), pg_catalog.min(e.tijdstip)
    FROM nmc.dienstverlener AS d
    LEFT JOIN nmc.bevestiging AS b
        ON b.dv_id = d.dv_id AND b.epoch = (SELECT c.epoch FROM nmc.cluster_epoch AS c)
    INNER JOIN nmc.event AS e
        ON e.dv_id = d.dv_id
        AND (b.dv_id IS NULL OR (e.xid, e.event_id) > (b.xid, b.event_id))
    WHERE nmc.is_terminal(e.naar)
        AND e.tijdstip < nmc.now() - d.bevestigingstermijn
    GROUP BY d.dv_id, d.naam, d.beheerkanaal
    ORDER BY d.dv_id
$$;
COMMENT ON FUNCTION nmc.report_onbevestigd() IS
'Per DV the terminal-status events beyond its acknowledged cursor that are older than its '
'ack term (bevestigingstermijn): the count and the oldest, for the metric and the report '
'on the DV''s beheer channel.';
