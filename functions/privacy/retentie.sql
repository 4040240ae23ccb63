-- Retention (SPEC §8): notifications and attempts go after the delivery-proof retention;
-- bookkeeping rows after short terms. Small batches, short transactions.

CREATE OR REPLACE FUNCTION nmc.delete_expired(p_batch integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_notificaties integer;
    v_taken integer;
    v_vensters integer;
    v_beheeracties integer;
BEGIN
    -- Attempts (ON DELETE CASCADE) and tasks (trigger notificatie_taken_weg) go with their
    -- notification; so do its receipt history and settlement record, the delivery proof's
    -- (nmc.receiptgeschiedenis, nmc.vaststelling: ON DELETE CASCADE).
    -- Each batch is chosen once (MATERIALIZED): as `id IN (SELECT … LIMIT)` the planner
    -- may rescan the sub-select per row, and with SKIP LOCKED a rescan picks other rows,
    -- so a batch of 1 deleted 2.
    WITH batch AS MATERIALIZED (
        SELECT x.id FROM nmc.notificatie AS x
        WHERE x.terminaal_op < v_nu - (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i)
        ORDER BY x.terminaal_op
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM nmc.notificatie AS n USING batch AS b WHERE n.id = b.id;
    GET DIAGNOSTICS v_notificaties = ROW_COUNT;

    WITH batch AS MATERIALIZED (
        SELECT x.id FROM nmc.taak AS x
        WHERE x.staat = 'done' AND x.afgerond_op < v_nu - INTERVAL '7 days'
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM nmc.taak AS t USING batch AS b WHERE t.id = b.id;
    GET DIAGNOSTICS v_taken = ROW_COUNT;

    -- The operators' audit trail explains events and notifications: it is kept as long as
    -- they are (the delivery-proof retention), then goes. Ids grow with time, so the oldest
    -- actions are the first ones.
    -- A forced transition is part of its notification's delivery proof: it stays while the
    -- notification does (forced before the final status, it is older than that).
    WITH batch AS MATERIALIZED (
        SELECT x.id FROM nmc.beheeractie AS x
        WHERE x.tijdstip < v_nu - (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i)
            AND (
                x.notificatie_id IS NULL
                OR NOT EXISTS (SELECT 1 FROM nmc.notificatie AS n WHERE n.id = x.notificatie_id)
            )
        ORDER BY x.id
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM nmc.beheeractie AS a USING batch AS b WHERE a.id = b.id;
    GET DIAGNOSTICS v_beheeracties = ROW_COUNT;

    DELETE FROM nmc.quotumgebruik AS q WHERE q.venster_start < v_nu - INTERVAL '2 days';
    GET DIAGNOSTICS v_vensters = ROW_COUNT;
    DELETE FROM nmc.verzendbudget AS b WHERE b.venster_start < v_nu - INTERVAL '1 day';
    DELETE FROM nmc.verzendaandeel AS a WHERE a.uur < v_nu - INTERVAL '2 days';
    DELETE FROM nmc.feedaanroep AS f WHERE f.venster_start < v_nu - INTERVAL '1 hour';
    -- The counts of requests NotifyNL could not render, per DV, berichttype and day.
    DELETE FROM nmc.onverwerkbaar AS o
    -- Its days are Amsterdam days (as they were counted), so the bound is one too.
    WHERE o.dag < (
        (v_nu - (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i))
        AT TIME ZONE 'Europe/Amsterdam'
    )::date;
    DELETE FROM nmc.bewijsaanroep AS f WHERE f.venster_start < v_nu - INTERVAL '1 hour';
    -- The notification count's deltas of the last run, one row per key again.
    PERFORM nmc.voeg_tellingen_samen();

    RETURN pg_catalog.jsonb_build_object(
        'notificaties', v_notificaties, 'taken', v_taken, 'quotumvensters', v_vensters,
        'beheeracties', v_beheeracties
    );
END
$$;
COMMENT ON FUNCTION nmc.delete_expired(integer) IS
'One small retention batch: notifications terminal for longer than the delivery-proof '
'retention (with their attempts, tasks, receipt history and settlement record), done '
'tasks older than 7 days, operator '
'actions (nmc.beheeractie) older than the delivery-proof retention (one of a notification '
'only once the notification is gone: its proof names it), the daily counts of '
'unrenderable requests (nmc.onverwerkbaar) older than it, and expired quota, '
'budget and feed-rate windows; folds the notification count''s delta rows '
'(nmc.voeg_tellingen_samen). Returns the counts (notificaties, taken, beheeracties, '
'quotumvensters); call it until the batched ones are 0. '
'Event partitions follow their own drop rule (nmc.drop_event_partities).';
