-- Event-log partitions (SPEC §9): the next xid range before the current one is full; a
-- range dropped only when the delivery-proof retention and every live cursor allow it.

CREATE OR REPLACE FUNCTION nmc.create_event_partitie(p_van xid8, p_tot xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_naam CONSTANT text := 'event_x' || pg_catalog.lpad(p_van::text, 12, '0');
BEGIN
    EXECUTE pg_catalog.format(
        'CREATE TABLE nmc.%I PARTITION OF nmc.event FOR VALUES FROM (%L) TO (%L)',
        v_naam, p_van::text, p_tot::text
    );
    EXECUTE pg_catalog.format(
        'COMMENT ON TABLE nmc.%I IS %L', v_naam,
        'Events written by transactions with xid in [' || p_van || ', ' || p_tot || ').'
    );
    -- TRUNCATE of the new range alone is refused like TRUNCATE of the whole log.
    PERFORM nmc.protect_event_partitie(pg_catalog.format('nmc.%I', v_naam)::regclass);
    INSERT INTO nmc.event_partitie (naam, xid_van, xid_tot) VALUES (v_naam, p_van, p_tot);
    RETURN v_naam;
END
$$;
COMMENT ON FUNCTION nmc.create_event_partitie(xid8, xid8) IS
'Creates and registers one xid range partition of the event log, with its COMMENT and its '
'own TRUNCATE trigger (nmc.protect_event_partitie). Internal.';

CREATE OR REPLACE FUNCTION nmc.maintain_event_partities(
    p_breedte bigint DEFAULT 16777216, p_xid xid8 DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- CREATE TABLE ... PARTITION OF takes an ACCESS EXCLUSIVE lock on nmc.event: behind one slow
-- reader it would wait, and every intake (which writes events) would queue behind it. So it
-- waits at most this long, and gives up with 55P03 (the job defers: nmc.run_onderhoud).
SET lock_timeout = '100ms'
AS $$
DECLARE
    v_nu CONSTANT bigint := coalesce(p_xid, pg_catalog.pg_current_xact_id())::text::bigint;
    v_laatste nmc.event_partitie;
    v_default_max bigint;
    v_van bigint;
BEGIN
    SELECT * INTO v_laatste FROM nmc.event_partitie AS p
    WHERE p.verwijderd_op IS NULL ORDER BY p.xid_tot DESC LIMIT 1;

    -- 80% of the newest range handed out (in xids): time for the next one. Created ahead,
    -- so inserts never reach the default partition and attaching scans an empty one.
    IF v_nu < v_laatste.xid_van::text::bigint
        + 0.8 * (v_laatste.xid_tot::text::bigint - v_laatste.xid_van::text::bigint) THEN
        RETURN NULL;
    END IF;
    v_van := v_laatste.xid_tot::text::bigint;
    -- If xids ran past every range (maintenance stopped), events sit in the default
    -- partition: start the new range above them, so attaching cannot conflict.
    SELECT pg_catalog.max(e.xid::text::bigint) INTO v_default_max FROM nmc.event_default AS e;
    IF v_default_max IS NOT NULL AND v_default_max >= v_van THEN
        v_van := (v_default_max / p_breedte + 1) * p_breedte;
    END IF;
    IF v_nu >= v_van + p_breedte THEN
        v_van := (v_nu / p_breedte) * p_breedte;
    END IF;
    RETURN nmc.create_event_partitie(v_van::text::xid8, (v_van + p_breedte)::text::xid8);
END
$$;
COMMENT ON FUNCTION nmc.maintain_event_partities(bigint, xid8) IS
'Creates the next xid range (default width 2^24) once the newest range is 80% used, '
'measured in xids handed out (p_xid: the current xid, given only by tests); starts above '
'any rows in the default partition. Returns the new partition''s name, or NULL. Waits at '
'most 100 ms (lock_timeout) for its lock on the event log, else raises 55P03.';

CREATE OR REPLACE FUNCTION nmc.partitie_bewaard(p_xid_tot xid8, p_jongste timestamptz)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
BEGIN
    -- A kept notification's proof and history are its whole chain from sequence 1, and it is
    -- kept until its terminal status plus the retention: later than its first events' range
    -- would go by that range's youngest event. All its events lie at or above its first
    -- (later transactions, higher xids), which carries its aangenomen_op. So one with events
    -- in a range was accepted at or before the range's youngest event and its first event
    -- lies below the range's end (one whose first event lies in an older range holds that
    -- one, which stays before this: the ranges go oldest first).
    IF p_jongste IS NULL THEN
        RETURN false;  -- no event in the range
    END IF;
    -- From the oldest kept notification up (notificatie_aangenomen_op), up to the first that
    -- holds the range: when the range may go, only the few accepted at its very end whose
    -- first event lies above it are read, one probe of event_notificatie each. One whose
    -- first event is gone (dropped before this rule) holds it too.
    FOR v_id IN
        SELECT n.id FROM nmc.notificatie AS n
        WHERE n.aangenomen_op <= p_jongste
        ORDER BY n.aangenomen_op
    LOOP
        IF NOT EXISTS (
            SELECT 1 FROM nmc.event AS e
            WHERE e.notificatie_id = v_id AND e.sequence = 1 AND e.xid >= p_xid_tot
        ) THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
COMMENT ON FUNCTION nmc.partitie_bewaard(xid8, timestamptz) IS
'Whether a closed event range ending at p_xid_tot, whose youngest event is p_jongste (NULL: '
'none), still holds an event of a notification that is kept: one accepted at or before '
'p_jongste whose first event does not lie at or above p_xid_tot. Internal: the drop rule '
'(nmc.drop_event_partities) keeps such a range.';

CREATE OR REPLACE FUNCTION nmc.drop_event_partities(p_xid xid8 DEFAULT NULL)
RETURNS text[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- DROP TABLE of a partition locks nmc.event ACCESS EXCLUSIVE: at most this long (see above).
SET lock_timeout = '100ms'
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    -- Every transaction with an xid below this one has ended: a range that ends at or below
    -- it is closed, no event can be added to it any more.
    v_gesloten CONSTANT xid8 := coalesce(
        p_xid, pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())
    );
    v_partitie nmc.event_partitie;
    v_weg text [] := '{}';
BEGIN
    FOR v_partitie IN
        SELECT * FROM nmc.event_partitie AS p
        WHERE p.verwijderd_op IS NULL
            -- never the range the current xids are written to, nor anything above it
            AND p.xid_tot <= v_gesloten
        ORDER BY p.xid_van
    LOOP
        -- The youngest event of a closed range cannot change, nor how many it holds: they
        -- are read once and kept (the count weighs its drop: nmc.eventlog_analyse_nodig).
        IF v_partitie.gesloten_op IS NULL THEN
            EXECUTE pg_catalog.format(
                'SELECT max(tijdstip), count(*) FROM nmc.%I', v_partitie.naam
            ) INTO v_partitie.jongste_tijdstip, v_partitie.aantal;
            UPDATE nmc.event_partitie AS p
            SET gesloten_op = v_nu, jongste_tijdstip = v_partitie.jongste_tijdstip,
                aantal = v_partitie.aantal
            WHERE p.naam = v_partitie.naam;
        END IF;
        -- Only ranges whose youngest event passed the delivery-proof retention ...
        EXIT WHEN v_partitie.jongste_tijdstip IS NOT NULL AND v_partitie.jongste_tijdstip
            >= v_nu - (SELECT i.bewijs_bewaartermijn FROM nmc.instellingen AS i);
        -- ... that hold no event of a notification still kept (its proof is its whole
        -- chain from sequence 1) ...
        EXIT WHEN nmc.partitie_bewaard(v_partitie.xid_tot, v_partitie.jongste_tijdstip);
        -- ... and that no live cursor (acknowledgement or webhook position younger than
        -- its DV's max cursor age) still needs: a cursor below the range's end reads it.
        -- A webhook position's age is that of its last delivery (geleverd_op), not of its
        -- last attempt: one that only fails stops holding the log back after the max age.
        EXIT WHEN EXISTS (
            SELECT 1 FROM nmc.bevestiging AS b
            INNER JOIN nmc.dienstverlener AS d ON d.dv_id = b.dv_id
            WHERE b.xid < v_partitie.xid_tot AND b.bevestigd_op > v_nu - d.max_cursorleeftijd
        ) OR EXISTS (
            SELECT 1 FROM nmc.webhookpositie AS w
            INNER JOIN nmc.dienstverlener AS d ON d.dv_id = w.dv_id
            WHERE w.xid < v_partitie.xid_tot AND w.geleverd_op > v_nu - d.max_cursorleeftijd
        );
        -- Dropping is the only removal from the append-only log.
        EXECUTE pg_catalog.format('DROP TABLE nmc.%I', v_partitie.naam);
        UPDATE nmc.event_partitie AS p SET verwijderd_op = v_nu WHERE p.naam = v_partitie.naam;
        v_weg := v_weg || v_partitie.naam;
    END LOOP;
    RETURN v_weg;
END
$$;
COMMENT ON FUNCTION nmc.drop_event_partities(xid8) IS
'Drops, oldest first, the closed event partitions (every transaction with an xid in the '
'range ended) whose youngest event is older than the delivery-proof retention, that hold '
'no event of a notification still kept (none accepted at or before their youngest event '
'whose first event lies below their end is left: its proof is its chain from sequence 1) '
'and into which no acknowledgement (bevestigd_op) or webhook position (geleverd_op: its '
'last delivery, not its last attempt) younger than its DV''s max cursor age points; stops '
'at the first that must stay. The youngest event of a closed range and its count are read once '
'and kept in the register (gesloten_op, jongste_tijdstip, aantal). The register keeps the '
'dropped range so older cursors get 410. Returns the dropped names. p_xid (the xid below '
'which every transaction '
'ended) is given only by tests. Waits at most 100 ms (lock_timeout) for its locks on the '
'event log, else raises 55P03 and drops nothing.';

CREATE OR REPLACE FUNCTION nmc.analyseer_eventlog()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- ANALYZE takes SHARE UPDATE EXCLUSIVE on the log and each partition, which intake does not
-- wait for; but autovacuum on a partition holds the same, and a run behind it waits at most
-- this long.
SET lock_timeout = '100ms'
AS $$
BEGIN
    -- Autovacuum analyzes the partitions but never the partitioned parent: without this the
    -- planner has no statistics for a scan of the whole log (joins, reports). PostgreSQL 15
    -- analyzes every partition with it (ANALYZE ONLY comes with 17).
    ANALYZE nmc.event;
END
$$;
-- How many events the log gained and lost since: ANALYZE of the parent reads every
-- partition (PostgreSQL 15 analyzes each with it), so its cost is the log's size; run once
-- a day (and after each change of partitions) that cost grew with the history kept. Due
-- now, as autovacuum judges a table, when the changed events reach
-- autovacuum_analyze_threshold + autovacuum_analyze_scale_factor x the rows the last
-- ANALYZE counted (pg_class.reltuples of the parent): its cost per event written stays
-- the same however long the term.
CREATE OR REPLACE FUNCTION nmc.eventlog_stand()
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        -- every event ever written has taken a number of the log's identity (a rolled-back
        -- one too: a few more counted, never fewer)
        'geschreven', coalesce(
            pg_catalog.pg_sequence_last_value(
                pg_catalog.pg_get_serial_sequence('nmc.event', 'event_id')::regclass
            ), 0
        ),
        'weg', (
            SELECT coalesce(pg_catalog.sum(p.aantal), 0) FROM nmc.event_partitie AS p
            WHERE p.verwijderd_op IS NOT NULL
        )
    )
$$;
COMMENT ON FUNCTION nmc.eventlog_stand() IS
'The event log''s counters for the partities job''s ANALYZE rule: geschreven (events ever '
'written: the identity''s last value) and weg (events dropped with their ranges, as counted '
'when they closed). Internal (nmc.eventlog_analyse_nodig).';

CREATE OR REPLACE FUNCTION nmc.eventlog_analyse_nodig(p_stand jsonb, p_vorige jsonb)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_vorige IS NULL
        OR NOT (p_vorige ? 'geschreven' AND p_vorige ? 'weg')
        OR c.reltuples < 0
        OR (p_stand ->> 'geschreven')::bigint - (p_vorige ->> 'geschreven')::bigint
        + (p_stand ->> 'weg')::bigint - (p_vorige ->> 'weg')::bigint
        >= pg_catalog.current_setting('autovacuum_analyze_threshold')::bigint
        + pg_catalog.current_setting('autovacuum_analyze_scale_factor')::float8 * c.reltuples
    FROM pg_catalog.pg_class AS c
    WHERE c.oid = 'nmc.event'::regclass
$$;
COMMENT ON FUNCTION nmc.eventlog_analyse_nodig(jsonb, jsonb) IS
'Whether the partitioned event log''s statistics are due: never analyzed (p_vorige NULL or '
'incomplete, or no reltuples), or the events written plus dropped since p_vorige (the '
'nmc.eventlog_stand of the last ANALYZE) reach autovacuum_analyze_threshold + '
'autovacuum_analyze_scale_factor x the rows that ANALYZE counted: autovacuum''s rule for a '
'table, which it never applies to a partitioned one. Internal (nmc.onderhoud_partities).';

COMMENT ON FUNCTION nmc.analyseer_eventlog() IS
'ANALYZE of the partitioned event log (its statistics over all partitions, which autovacuum '
'never gathers, and each partition''s). Waits at most 100 ms (lock_timeout) for its locks, '
'else raises 55P03. Internal: the partities job runs it (nmc.run_onderhoud).';

CREATE OR REPLACE FUNCTION nmc.set_event_partitie_breedte(p_breedte bigint)
RETURNS text
LANGUAGE plpgsql
-- The range it cuts again belongs to nmc_owner, like every table (maintenance, running as
-- that owner, reads and drops it), whoever calls it.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_enige nmc.event_partitie;
    v_tot bigint;
BEGIN
    UPDATE nmc.instellingen AS i SET event_partitie_breedte = p_breedte;
    -- A log that is still empty has one range, as wide as the first migration made it: it
    -- is cut again to the new width, so the first range follows the setting too.
    IF (SELECT pg_catalog.count(*) FROM nmc.event_partitie AS p WHERE p.verwijderd_op IS NULL)
        <> 1 OR EXISTS (SELECT 1 FROM nmc.event) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO v_enige FROM nmc.event_partitie AS p WHERE p.verwijderd_op IS NULL;
    v_tot := greatest(
        pg_catalog.pg_current_xact_id()::text::bigint, v_enige.xid_van::text::bigint
    ) + p_breedte;
    EXECUTE pg_catalog.format('DROP TABLE nmc.%I', v_enige.naam);
    EXECUTE pg_catalog.format(
        'CREATE TABLE nmc.%I PARTITION OF nmc.event FOR VALUES FROM (%L) TO (%L)',
        v_enige.naam, v_enige.xid_van::text, v_tot::text
    );
    EXECUTE pg_catalog.format(
        'COMMENT ON TABLE nmc.%I IS %L', v_enige.naam,
        'Events written by transactions with xid in [' || v_enige.xid_van || ', ' || v_tot || ').'
    );
    PERFORM nmc.protect_event_partitie(pg_catalog.format('nmc.%I', v_enige.naam)::regclass);
    UPDATE nmc.event_partitie AS p SET xid_tot = v_tot::text::xid8 WHERE p.naam = v_enige.naam;
    RETURN v_enige.naam;
END
$$;
COMMENT ON FUNCTION nmc.set_event_partitie_breedte(bigint) IS
'Sets the width in xids of the event partitions maintenance creates from now on '
'(settings.event_partitie_breedte; at least 1000). While the event log is still empty (a '
'fresh install) its one range is cut again to end that width above the current xid, so '
'the first range follows the setting too. Returns the name of that range when it was cut, '
'else NULL. Admin (no role is granted it; nmc_owner''s members call it).';

CREATE OR REPLACE FUNCTION nmc.raise_epoch()
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_epoch integer;
BEGIN
    UPDATE nmc.cluster_epoch AS c SET epoch = c.epoch + 1, verhoogd_op = pg_catalog.now()
    RETURNING c.epoch INTO v_epoch;
    -- Every webhook position moves to the new epoch in this transaction, so no webhook call
    -- after the commit carries a cursor of the old one (which the DV's acknowledgement would
    -- get 410 for). It restarts where a feed consumer of the old epoch restarts after its
    -- 410 (ADR 0024): at the oldest available event. The xids of the old epoch say nothing
    -- in the new series (a restore reuses them, a broken series jumps), so any later start
    -- could skip events the DV never had; the DV drops what it has by sequence. The restart
    -- counts as a delivery for the position's age: it holds the log for the max cursor age.
    UPDATE nmc.webhookpositie AS w
    SET epoch = v_epoch, xid = '0', event_id = 0, bijgewerkt_op = nmc.now(),
        geleverd_op = nmc.now()
    WHERE w.epoch <> v_epoch;
    RETURN v_epoch;
END
$$;
COMMENT ON FUNCTION nmc.raise_epoch() IS
'Raises the cluster epoch (after a restore or a promotion that broke the xid series): '
'every older cursor gets 410 and DVs restart from the oldest event or a snapshot. In the '
'same transaction every webhook delivery position moves to the new epoch, restarting at '
'the oldest available event (a batch already out with the old epoch no longer moves it: '
'nmc.finish_terugkoppelen_v2). Admin.';
