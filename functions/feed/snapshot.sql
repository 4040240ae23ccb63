-- Snapshot for resync (seed 003): the current status of all the DV's notifications with
-- the feed position it is consistent with, so a DV that got 410 rebuilds without a gap.
-- Each page is a feed call: it counts against the DV's feed call rate (nmc.take_feed_aanroep,
-- in page_events.sql), shared with the feed pages.

-- plpgsql and VOLATILE now (it was a STABLE sql function): it writes the call count.
CREATE OR REPLACE FUNCTION nmc.snapshot_notificaties(
    p_dv_id integer, p_na uuid DEFAULT NULL, p_limiet integer DEFAULT 1000
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv nmc.dienstverlener;
BEGIN
    SELECT * INTO v_dv FROM nmc.dienstverlener AS d WHERE d.dv_id = p_dv_id AND d.actief;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown or inactive dienstverlener' USING ERRCODE = 'NM010';
    END IF;
    PERFORM nmc.take_feed_aanroep(v_dv);
    -- One statement, so the page and the watermark come from one snapshot.
    RETURN (
        WITH pagina AS (
            SELECT n.id, n.status, n.reden, n.versie, n.bijgewerkt_op
            FROM nmc.notificatie AS n
            WHERE n.dv_id = p_dv_id AND (p_na IS NULL OR n.id > p_na)
            ORDER BY n.id
            LIMIT least(greatest(p_limiet, 1), 10000)
        )

        SELECT pg_catalog.jsonb_build_object(
            'notificaties', coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'notificatieId', p.id, 'status', p.status, 'reden', p.reden,
                'versie', p.versie, 'bijgewerktOp', p.bijgewerkt_op
            ) ORDER BY p.id) FILTER (WHERE p.id IS NOT NULL), '[]'::jsonb),
            'laatste', pg_catalog.max(p.id::text),
            -- Every event below the watermark is reflected in this statement's snapshot;
            -- events from it on may be replayed, which the DV's sequence rule absorbs.
            'epoch', (SELECT c.epoch FROM nmc.cluster_epoch AS c),
            'xid', pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())::text,
            'eventId', 0,
            'uitgegevenOp', nmc.now()
        )
        FROM (SELECT 1) AS een LEFT JOIN pagina AS p ON true
    );
END
$$;
COMMENT ON FUNCTION nmc.snapshot_notificaties(integer, uuid, integer) IS
'One page (by id) of the DV''s notifications with status, reason and version, plus the '
'feed position (watermark, 0) consistent with it. A DV reading several pages continues '
'the feed from the first page''s position; replayed events are ignored by sequence. Each '
'call is a feed call of the DV: over its feed_aanroepen_per_minuut NM019 (429, DETAIL = '
'Retry-After seconds); an unknown or inactive DV NM010.';
