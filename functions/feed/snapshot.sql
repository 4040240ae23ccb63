-- Snapshot for resync (seed 003): the current status of all the DV's notifications with
-- the feed position it is consistent with, so a DV that got 410 rebuilds without a gap.
-- Each page is a feed call: it counts against the DV's feed call rate (nmc.take_feed_aanroep,
-- in page_events.sql), shared with the feed pages.

CREATE OR REPLACE FUNCTION nmc.snapshot_pagina(p_dv_id integer, p_na uuid, p_limiet integer)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- One statement, so the page and the watermark come from one snapshot (the caller's).
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
$$;
COMMENT ON FUNCTION nmc.snapshot_pagina(integer, uuid, integer) IS
'Internal: one snapshot page of DV p_dv_id, as one statement under the caller''s snapshot: '
'up to p_limiet (1..10000) notifications after id p_na (NULL: from the first) with status, '
'reason, version and bijgewerktOp, the last id (laatste), and the feed position (epoch, '
'the snapshot''s watermark, eventId 0) consistent with them. No checks, no call count: '
'the page of nmc.snapshot_notificaties and nmc.read_snapshot_pagina_v2.';

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
    v_dv := nmc.feed_dienstverlener(p_dv_id);
    PERFORM nmc.take_feed_aanroep(v_dv);
    RETURN nmc.snapshot_pagina(p_dv_id, p_na, p_limiet);
END
$$;
COMMENT ON FUNCTION nmc.snapshot_notificaties(integer, uuid, integer) IS
'One page (by id) of the DV''s notifications with status, reason and version, plus the '
'feed position (watermark, 0) consistent with it. A DV reading several pages continues '
'the feed from the first page''s position; replayed events are ignored by sequence. Each '
'call is a feed call of the DV: over its feed_aanroepen_per_minuut NM019 (429, DETAIL = '
'Retry-After seconds); an unknown or inactive DV NM010.';
