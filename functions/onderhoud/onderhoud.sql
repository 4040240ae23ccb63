-- Maintenance as tasks (SPEC §5, §9): one open onderhoud task per job of nmc.onderhoudswerk,
-- claimed like any other task by every worker with the default kinds, and re-planned by its
-- own run, as the watchdog is. Each run is one short transaction over a small batch.

CREATE OR REPLACE FUNCTION nmc.ensure_onderhoud_v2(p_kek_actief text, p_eigenaar text)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_gepland integer;
BEGIN
    -- The worker's active KEK: kept per worker; the target follows them all.
    IF p_kek_actief IS NOT NULL AND p_eigenaar IS NOT NULL THEN
        INSERT INTO nmc.kek (kek_id, actief_gemeld_op) VALUES (p_kek_actief, v_nu)
        ON CONFLICT (kek_id) DO NOTHING;
        INSERT INTO nmc.kek_melding AS m (eigenaar, kek_id, gemeld_op)
        VALUES (p_eigenaar, p_kek_actief, v_nu)
        ON CONFLICT (eigenaar) DO UPDATE SET kek_id = excluded.kek_id, gemeld_op = v_nu;
        DELETE FROM nmc.kek_melding AS m WHERE m.gemeld_op < v_nu - interval '1 day';
        PERFORM nmc.herwrap_doel_bijwerken(v_nu);
    END IF;
    -- A job whose task is mislukt waits for an operator (nmc.reopen_taak), as every
    -- exhausted task does: no second task beside it.
    INSERT INTO nmc.taak (soort, due, payload, aangemaakt_op)
    SELECT 'onderhoud', v_nu, pg_catalog.jsonb_build_object('werk', w.werk), v_nu
    FROM nmc.onderhoudswerk AS w
    WHERE NOT EXISTS (
        SELECT 1 FROM nmc.taak AS t
        WHERE t.soort = 'onderhoud' AND t.staat = 'mislukt' AND t.payload ->> 'werk' = w.werk
    )
    ON CONFLICT ((payload ->> 'werk')) WHERE staat IN ('open', 'claimed') AND soort = 'onderhoud'
    DO NOTHING;
    GET DIAGNOSTICS v_gepland = ROW_COUNT;
    RETURN v_gepland;
END
$$;
COMMENT ON FUNCTION nmc.ensure_onderhoud_v2(text, text) IS
'Makes sure every maintenance job (nmc.onderhoudswerk) has its one open task, except a job '
'whose task is mislukt (it waits for an operator), and records p_kek_actief, the active '
'KEK of the calling worker p_eigenaar''s ring (an id, never key material), in nmc.kek and '
'nmc.kek_melding; the re-wrap target then moves if every live worker reports a newer KEK '
'(nmc.herwrap_doel_bijwerken). Workers call it at their first round and then once a minute; '
'idempotent. Returns how many tasks it planned.';

CREATE OR REPLACE FUNCTION nmc.kek_melding_afmelden(p_eigenaar text)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- A worker that stops says so: its report no longer holds the target for the three
    -- minutes a silent one counts (a rolling deploy moves it as soon as the last worker of
    -- the old ring is gone, not a report round later).
    DELETE FROM nmc.kek_melding AS m WHERE m.eigenaar = p_eigenaar;
    RETURN nmc.herwrap_doel_bijwerken(nmc.now());
END
$$;
COMMENT ON FUNCTION nmc.kek_melding_afmelden(text) IS
'A stopping worker p_eigenaar withdraws its KEK report (nmc.kek_melding); the re-wrap target '
'is judged again at once over the workers still live (nmc.herwrap_doel_bijwerken). Returns '
'the target. A worker that dies without it counts for three minutes.';

CREATE OR REPLACE FUNCTION nmc.herwrap_doel_bijwerken(p_nu timestamptz)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Workers report every minute: one silent for three is gone (rolled, stopped).
    v_levend CONSTANT interval := interval '3 minutes';
    v_doel CONSTANT text := nmc.herwrap_doel();
    v_enig text;
BEGIN
    SELECT CASE WHEN pg_catalog.count(DISTINCT m.kek_id) = 1 THEN pg_catalog.min(m.kek_id) END
    INTO v_enig
    FROM nmc.kek_melding AS m
    WHERE m.gemeld_op > p_nu - v_levend;
    -- Only forward: to a KEK first reported after the target (a worker of an older ring,
    -- left alone during a rolling deploy, never turns the keys back).
    IF v_enig IS NOT NULL AND v_enig IS DISTINCT FROM v_doel AND (
        v_doel IS NULL OR (
            SELECT (n.actief_gemeld_op, n.kek_id) > (d.actief_gemeld_op, d.kek_id)
            FROM nmc.kek AS n, nmc.kek AS d
            WHERE n.kek_id = v_enig AND d.kek_id = v_doel
        )
    ) THEN
        UPDATE nmc.kek AS k SET doel_sinds = p_nu WHERE k.kek_id = v_enig;
        RETURN v_enig;
    END IF;
    RETURN v_doel;
END
$$;
COMMENT ON FUNCTION nmc.herwrap_doel_bijwerken(timestamptz) IS
'Internal: moves the re-wrap target to the KEK every live worker (one that reported in the '
'last three minutes, nmc.kek_melding) reports active, when that KEK was first reported after '
'the current target; one worker''s new ring among others does not move it, nor does a '
'worker of an older ring turn it back. Returns the target.';

CREATE OR REPLACE FUNCTION nmc.herwrap_doel()
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.kek_id FROM nmc.kek AS k
    WHERE k.doel_sinds IS NOT NULL
    ORDER BY k.doel_sinds DESC, k.kek_id DESC
    LIMIT 1
$$;
COMMENT ON FUNCTION nmc.herwrap_doel() IS
'The KEK maintenance re-wraps data keys to: the one that became the target last '
'(nmc.herwrap_doel_bijwerken: once every live worker reports it; NULL before any report). '
'Internal.';

CREATE OR REPLACE FUNCTION nmc.kek_ids_levend()
RETURNS SETOF text
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- One probe of the live-key index per KEK (a loose index scan), however many keys.
    WITH RECURSIVE k (kek_id) AS (
        SELECT pg_catalog.min(n.kek_id) FROM nmc.notificatie AS n
        WHERE n.sleutel_gewrapt IS NOT NULL
        UNION ALL
        SELECT (
            SELECT pg_catalog.min(n.kek_id) FROM nmc.notificatie AS n
            WHERE n.sleutel_gewrapt IS NOT NULL AND n.kek_id > k.kek_id
        )
        FROM k WHERE k.kek_id IS NOT NULL
    )

    SELECT k.kek_id FROM k WHERE k.kek_id IS NOT NULL
$$;
COMMENT ON FUNCTION nmc.kek_ids_levend() IS
'The ids of the KEKs that still wrap a live (not erased) data key, from the live-key index: '
'a worker compares them with its ring at start-up and refuses to start without one of them '
'(its sends would fail for good). Ids only, never key material.';

CREATE OR REPLACE FUNCTION nmc.heropen_onderhoud(
    p_taak_id bigint, p_payload jsonb, p_uitgesteld boolean, p_meer boolean
)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_due timestamptz;
BEGIN
    -- The same row opens again. After a run: clean, due at once while there is more, else
    -- after the job's pause. A deferral is not a failure: the tries (pogingen) stay as they
    -- were, so a busy log never makes the job mislukt; each deferral in a row waits longer,
    -- never longer than the job's own pause (its next run would come then anyway).
    UPDATE nmc.taak AS t
    SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL,
        pogingen = CASE WHEN p_uitgesteld THEN t.pogingen ELSE 0 END,
        uitstellen = CASE WHEN p_uitgesteld THEN t.uitstellen + 1 ELSE 0 END,
        laatste_fout = CASE
            WHEN p_uitgesteld THEN 'uitgesteld: het eventlog was bezet (lock_timeout)'
        END,
        payload = coalesce(p_payload, t.payload),
        due = nmc.now() + CASE
            WHEN p_uitgesteld THEN least(nmc.uitstel(t.uitstellen), w.herhaal_na)
            WHEN p_meer THEN interval '0'
            ELSE w.herhaal_na
        END
    FROM nmc.onderhoudswerk AS w
    WHERE t.id = p_taak_id AND w.werk = t.payload ->> 'werk'
    RETURNING t.due INTO v_due;
    RETURN v_due;
END
$$;
COMMENT ON FUNCTION nmc.heropen_onderhoud(bigint, jsonb, boolean, boolean) IS
'Internal: reopens maintenance task p_taak_id (the caller has checked the epoch), without a '
'lease; p_payload (when not NULL) replaces the payload (a job''s cursor). After a run '
'(p_uitgesteld false): tries, deferrals and last error cleared, due now when p_meer (a full '
'batch: more to do), else after its job''s herhaal_na. After a run that could not get its '
'lock on the event log in time (p_uitgesteld): due after the growing backoff of its '
'deferrals (nmc.uitstel), at most herhaal_na; uitstellen counts up, pogingen does not. '
'Returns the new due; NULL for a task that is no maintenance job. Under nmc.plan_onderhoud '
'and nmc.stel_onderhoud_uit.';

CREATE OR REPLACE FUNCTION nmc.plan_onderhoud(
    p_taak_id bigint, p_meer boolean, p_payload jsonb DEFAULT NULL
)
RETURNS timestamptz
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.heropen_onderhoud(p_taak_id, p_payload, false, p_meer)
$$;
COMMENT ON FUNCTION nmc.plan_onderhoud(bigint, boolean, jsonb) IS
'Internal: reopens a maintenance task after its run (the caller has checked the epoch): due '
'now when p_meer (a full batch: more to do), else after its job''s herhaal_na; p_payload '
'replaces the payload (a job''s cursor). Returns the new due (nmc.heropen_onderhoud).';

CREATE OR REPLACE FUNCTION nmc.stel_onderhoud_uit(p_taak_id bigint, p_payload jsonb)
RETURNS timestamptz
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.heropen_onderhoud(p_taak_id, p_payload, true, false)
$$;
COMMENT ON FUNCTION nmc.stel_onderhoud_uit(bigint, jsonb) IS
'Internal: reopens a maintenance task whose run could not get its lock on the event log in '
'time (55P03): due after the growing backoff of its deferrals (nmc.uitstel), at most its '
'job''s herhaal_na; uitstellen counts up, pogingen does not (no failure); p_payload (when '
'not NULL) replaces the payload. Returns the new due (nmc.heropen_onderhoud).';

CREATE OR REPLACE FUNCTION nmc.onderhoud_partities(p_payload jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_geanalyseerd_op timestamptz := (p_payload ->> 'geanalyseerd_op')::timestamptz;
    v_stand jsonb := p_payload -> 'geanalyseerd_stand';
    v_aangemaakt text;
    v_verwijderd text [] := '{}';
    v_geanalyseerd boolean := false;
    v_uitgesteld boolean := false;
    v_nu jsonb;
BEGIN
    -- Each step waits at most its lock_timeout for the event log; one that did not get it
    -- is rolled back alone (its block) and the job is deferred (nmc.stel_onderhoud_uit).
    BEGIN
        v_aangemaakt := nmc.maintain_event_partities(
            (SELECT i.event_partitie_breedte FROM nmc.instellingen AS i)
        );
    EXCEPTION WHEN lock_not_available THEN
        v_uitgesteld := true;
    END;
    IF NOT v_uitgesteld THEN
        BEGIN
            v_verwijderd := nmc.drop_event_partities();
        EXCEPTION WHEN lock_not_available THEN
            v_uitgesteld := true;
        END;
    END IF;
    -- A run that changed the partitions does not analyze: its transaction holds the DDL's
    -- ACCESS EXCLUSIVE lock until it commits (intake would wait for the whole ANALYZE). The
    -- events a dropped range held count as changed for the next run's judgement.
    IF v_aangemaakt IS NULL AND pg_catalog.cardinality(v_verwijderd) = 0
        AND NOT v_uitgesteld THEN
        v_nu := nmc.eventlog_stand();
        IF nmc.eventlog_analyse_nodig(v_nu, v_stand) THEN
            BEGIN
                PERFORM nmc.analyseer_eventlog();
                v_geanalyseerd_op := nmc.now();
                v_stand := v_nu;
                v_geanalyseerd := true;
            EXCEPTION WHEN lock_not_available THEN
                v_uitgesteld := true;
            END;
        END IF;
    END IF;
    RETURN pg_catalog.jsonb_build_object(
        'aangemaakt', v_aangemaakt,
        'verwijderd', pg_catalog.to_jsonb(v_verwijderd),
        'geanalyseerd', v_geanalyseerd,
        'uitgesteld', v_uitgesteld,
        'payload', pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
            'werk', 'partities', 'geanalyseerd_op', v_geanalyseerd_op,
            'geanalyseerd_stand', v_stand
        ))
    );
END
$$;
COMMENT ON FUNCTION nmc.onderhoud_partities(jsonb) IS
'Internal, one run of the partities job: the next event partition once the newest is 80% '
'used, the drop rule, and, in a run that changed no partition, ANALYZE of the partitioned '
'log (nmc.analyseer_eventlog) once the events written and dropped since the last one reach '
'autovacuum''s analyze threshold for its size (nmc.eventlog_analyse_nodig; p_payload: the '
'task''s, with geanalyseerd_op and geanalyseerd_stand, the nmc.eventlog_stand of the last '
'ANALYZE). A step that did not get its lock on the event log within its lock_timeout is '
'rolled back alone and ends the run deferred. Returns aangemaakt, verwijderd, geanalyseerd, '
'uitgesteld and the task''s next payload.';

CREATE OR REPLACE FUNCTION nmc.run_onderhoud(p_taak_id bigint, p_claim_epoch integer)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak CONSTANT nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_werk nmc.onderhoudswerk;
    v_uitkomst jsonb;
    v_meer boolean := false;
BEGIN
    SELECT * INTO v_werk FROM nmc.onderhoudswerk AS w WHERE w.werk = v_taak.payload ->> 'werk';
    IF v_taak.soort <> 'onderhoud' OR NOT FOUND OR v_werk.werk = 'herwrappen' THEN
        RAISE EXCEPTION 'task % is not a maintenance job nmc.run_onderhoud runs', p_taak_id
            USING ERRCODE = '22023',
            HINT = 'herwrappen runs with nmc.list_herwrap and nmc.finish_herwrap.';
    END IF;
    IF v_werk.werk = 'partities' THEN
        v_uitkomst := nmc.onderhoud_partities(v_taak.payload);
        IF (v_uitkomst ->> 'uitgesteld')::boolean THEN
            PERFORM nmc.stel_onderhoud_uit(p_taak_id, v_uitkomst -> 'payload');
        ELSE
            PERFORM nmc.plan_onderhoud(p_taak_id, false, v_uitkomst -> 'payload');
        END IF;
        RETURN (v_uitkomst - 'payload')
            || pg_catalog.jsonb_build_object('werk', v_werk.werk, 'meer', false);
    ELSIF v_werk.werk = 'templates' THEN
        -- Read by nmc.claim_template_verversen (the worker does the HTTP). A worker of the
        -- previous release knows no such job and calls this: it hands the task back, due
        -- again in 30 seconds, for a worker of this release to take.
        PERFORM nmc.plan_onderhoud(p_taak_id, true);
        UPDATE nmc.taak AS t SET due = nmc.now() + interval '30 seconds' WHERE t.id = p_taak_id;
        RETURN pg_catalog.jsonb_build_object('werk', v_werk.werk, 'meer', false);
    ELSE
        v_uitkomst := nmc.delete_expired(v_werk.batch);
        -- A batch that came back full: there is more, so the next run is due at once.
        v_meer := EXISTS (
            SELECT 1 FROM pg_catalog.jsonb_each_text(v_uitkomst) AS e
            WHERE e.value ~ '^[0-9]+$' AND e.value::integer >= v_werk.batch
        );
    END IF;
    PERFORM nmc.plan_onderhoud(p_taak_id, v_meer);
    RETURN v_uitkomst || pg_catalog.jsonb_build_object('werk', v_werk.werk, 'meer', v_meer);
END
$$;
COMMENT ON FUNCTION nmc.run_onderhoud(bigint, integer) IS
'Runs one claimed maintenance task (fenced by epoch) in this transaction and plans its next '
'run: partities creates the next event partition once the newest is 80% used '
'(settings.event_partitie_breedte wide), drops what the retention, the kept notifications and '
'the live cursors allow and analyzes the partitioned log (nmc.onderhoud_partities); when the '
'event log was locked longer than its lock_timeout it is deferred, no failure counted '
'(nmc.stel_onderhoud_uit, uitgesteld true); retentie deletes one batch of expired rows '
'(nmc.delete_expired; due again at once when a batch came back full). Returns what it did '
'as JSON (counts and partition names, geanalyseerd, uitgesteld, werk, meer); templates '
'(read by the worker through nmc.claim_template_verversen) is handed back, due in 30 s (a '
'worker of the previous release calls this for it). 22023 for '
'herwrappen (nmc.list_herwrap) or a task that is no maintenance job.';

CREATE OR REPLACE FUNCTION nmc.list_herwrap(
    p_taak_id bigint, p_claim_epoch integer, p_kek_actief text, p_batch integer DEFAULT 500
)
RETURNS TABLE (notificatie_id uuid, kek_id text, sleutel_gewrapt bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_taak CONSTANT nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_doel CONSTANT text := nmc.herwrap_doel();
    v_batch CONSTANT integer := least(greatest(p_batch, 1), 5000);
    -- The sweep's cursor: keys that did not unwrap stay behind it until the next sweep.
    v_na_kek CONSTANT text := coalesce(v_taak.payload ->> 'na_kek', '');
    v_na_id CONSTANT uuid := coalesce(
        (v_taak.payload ->> 'na_id')::uuid, '00000000-0000-0000-0000-000000000000'::uuid
    );
BEGIN
    IF v_taak.soort <> 'onderhoud' OR v_taak.payload ->> 'werk' IS DISTINCT FROM 'herwrappen' THEN
        RAISE EXCEPTION 'task % is not the herwrappen job', p_taak_id USING ERRCODE = '22023';
    END IF;
    -- Only a worker whose ring has the target active re-wraps (one of an older ring, during
    -- a rolling deploy, would wrap the keys back).
    IF v_doel IS NULL OR p_kek_actief IS DISTINCT FROM v_doel THEN
        RETURN;
    END IF;
    -- Two ranges of the live-key index, below and above the target: the keys under the
    -- target itself are never read.
    RETURN QUERY
    SELECT s.id, s.kek_id, s.sleutel_gewrapt
    FROM (
        (
            SELECT n.id, n.kek_id, n.sleutel_gewrapt FROM nmc.notificatie AS n
            WHERE n.sleutel_gewrapt IS NOT NULL AND n.kek_id < v_doel
                AND (n.kek_id, n.id) > (v_na_kek, v_na_id)
            ORDER BY n.kek_id, n.id
            LIMIT v_batch
        )
        UNION ALL
        (
            SELECT n.id, n.kek_id, n.sleutel_gewrapt FROM nmc.notificatie AS n
            WHERE n.sleutel_gewrapt IS NOT NULL AND n.kek_id > v_doel
                AND (n.kek_id, n.id) > (v_na_kek, v_na_id)
            ORDER BY n.kek_id, n.id
            LIMIT v_batch
        )
    ) AS s
    ORDER BY s.kek_id, s.id
    LIMIT v_batch;
END
$$;
COMMENT ON FUNCTION nmc.list_herwrap(bigint, integer, text, integer) IS
'For the claimed herwrappen task (fenced by epoch): the next p_batch (at most 5,000) live '
'data keys under another KEK than the re-wrap target (nmc.herwrap_doel), after the task''s '
'cursor, in (kek_id, id) order; nothing when p_kek_actief (the worker''s active KEK) is not '
'the target. The worker re-wraps them in memory and stores them with nmc.finish_herwrap.';

CREATE OR REPLACE FUNCTION nmc.finish_herwrap(
    p_taak_id bigint,
    p_claim_epoch integer,
    p_ids uuid[],
    p_oude_kek text[],
    p_sleutels bytea[],
    p_naar_kek text,
    p_na_kek text,
    p_na_id uuid
)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_opgeslagen integer;
BEGIN
    PERFORM nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    IF coalesce(pg_catalog.cardinality(p_ids), 0) <> coalesce(pg_catalog.cardinality(p_oude_kek), 0)
        OR coalesce(pg_catalog.cardinality(p_ids), 0)
        <> coalesce(pg_catalog.cardinality(p_sleutels), 0) THEN
        RAISE EXCEPTION 'p_ids, p_oude_kek and p_sleutels differ in length'
            USING ERRCODE = '22023';
    END IF;
    -- Only where nothing changed meanwhile (erased, or re-wrapped by another run).
    UPDATE nmc.notificatie AS n
    SET sleutel_gewrapt = u.sleutel, kek_id = p_naar_kek
    FROM unnest(p_ids, p_oude_kek, p_sleutels) AS u (id, oude_kek, sleutel)
    WHERE n.id = u.id AND n.kek_id = u.oude_kek AND n.sleutel_gewrapt IS NOT NULL;
    GET DIAGNOSTICS v_opgeslagen = ROW_COUNT;
    -- A cursor (the last key listed, of a full batch): the sweep goes on at once.
    PERFORM nmc.plan_onderhoud(
        p_taak_id, p_na_kek IS NOT NULL,
        CASE
            WHEN p_na_kek IS NOT NULL THEN pg_catalog.jsonb_build_object(
                'werk', 'herwrappen', 'na_kek', p_na_kek, 'na_id', p_na_id
            )
            ELSE '{"werk": "herwrappen"}'::jsonb
        END
    );
    RETURN v_opgeslagen;
END
$$;
COMMENT ON FUNCTION nmc.finish_herwrap(
    bigint, integer, uuid[], text[], bytea[], text, text, uuid
) IS
'Stores the re-wrapped data keys of one herwrappen run under p_naar_kek (only for rows still '
'under the KEK they were listed with and not erased; the data ciphertexts are not touched) '
'and plans the next run: with a cursor (p_na_kek, p_na_id: the last key of a full batch) '
'due at once, without one after the job''s pause. Fenced by epoch. Returns how many it '
'stored. 22023 when the arrays differ in length.';

CREATE OR REPLACE FUNCTION nmc.kek_status_v2()
RETURNS TABLE (kek_id text, sleutels bigint, doel boolean, actief_gemeld_op timestamptz)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        coalesce(s.kek_id, k.kek_id),
        coalesce(s.sleutels, 0),
        coalesce(s.kek_id, k.kek_id) IS NOT DISTINCT FROM nmc.herwrap_doel(),
        k.actief_gemeld_op
    FROM (
        SELECT n.kek_id, pg_catalog.count(*) AS sleutels
        FROM nmc.notificatie AS n
        WHERE n.sleutel_gewrapt IS NOT NULL
        GROUP BY n.kek_id
    ) AS s
    FULL JOIN nmc.kek AS k ON k.kek_id = s.kek_id
    ORDER BY 1
$$;
COMMENT ON FUNCTION nmc.kek_status_v2() IS
'Live (not erased) data keys per KEK, counted from the live-key index, with whether it is '
'the re-wrap target of maintenance and when a worker first reported it active: the '
'progress of a KEK rotation (every key but those under the target is still to do). A KEK '
'can be retired when it has none. Admin (nmc admin kek status); nmc.kek_status is kept for '
'an admin of the previous release.';

-- The previous release's form (its `nmc admin kek status`), on top of the one above.
CREATE OR REPLACE FUNCTION nmc.kek_status()
RETURNS TABLE (kek_id text, sleutels bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.kek_id, s.sleutels
    FROM nmc.kek_status_v2() AS s
    WHERE s.sleutels > 0
    ORDER BY s.kek_id
$$;
COMMENT ON FUNCTION nmc.kek_status() IS
'Live (not erased) data keys per KEK that has any: the kek_id and sleutels of '
'nmc.kek_status_v2, without the KEKs that hold none. Kept for an admin of the previous '
'release; dropped in the release after (docs/migrations.md).';
