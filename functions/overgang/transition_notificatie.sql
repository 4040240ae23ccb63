-- The single writer of notificatie.status (SPEC §4, ADR 0024).

CREATE OR REPLACE FUNCTION nmc.transition_notificatie(
    p_notificatie_id uuid,
    p_naar nmc.notificatie_status,
    p_reden nmc.reden DEFAULT NULL
)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_dv_id integer;
    v_van nmc.notificatie_status;
    v_versie integer;
BEGIN
    -- 1. The row lock comes before any write to the row.
    SELECT n.dv_id, n.status, n.versie
    INTO v_dv_id, v_van, v_versie
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;

    -- 2. Only the allowed pairs, with a reason that fits the target status.
    IF NOT nmc.transition_allowed(v_van, p_naar) THEN
        RAISE EXCEPTION 'transition from % to % is not allowed', v_van, p_naar
            USING ERRCODE = 'NM001', DETAIL = v_van::text;
    END IF;
    IF NOT nmc.reden_fits(p_naar, p_reden) THEN
        RAISE EXCEPTION 'reason % does not fit status %', coalesce(p_reden::text, 'NULL'), p_naar
            USING ERRCODE = 'NM013';
    END IF;

    -- 3 and 4. The event first (sequence = new version), then the row; the guard
    -- trigger checks that the one matches the other.
    INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
    VALUES (p_notificatie_id, v_dv_id, v_versie + 1, v_van, p_naar, p_reden, v_nu);

    UPDATE nmc.notificatie
    SET status = p_naar,
        reden = p_reden,
        versie = v_versie + 1,
        bijgewerkt_op = v_nu,
        terminaal_op = CASE WHEN nmc.is_terminal(p_naar) THEN v_nu END
    WHERE id = p_notificatie_id;

    -- Personal data goes a fixed term after the terminal status (SPEC §8).
    IF nmc.is_terminal(p_naar) THEN
        INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
        SELECT 'wissen', v_dv_id, p_notificatie_id, v_nu + i.wistermijn, v_nu
        FROM nmc.instellingen AS i
        ON CONFLICT (notificatie_id, soort)
        WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
            AND notificatie_id IS NOT NULL
        DO UPDATE SET due = excluded.due;
    END IF;

    RETURN v_versie + 1;
END
$$;
COMMENT ON FUNCTION nmc.transition_notificatie(uuid, nmc.notificatie_status, nmc.reden) IS
'The only writer of notificatie.status: locks the row (FOR UPDATE), checks the pair '
'against nmc.allowed_transitions() and the reason against the status, raises the version '
'by one and writes the event with sequence = the new version in the same transaction. '
'On a terminal status it plans the wissen task (erase term later). Returns the new '
'version. Refusals: NM005 not found, NM001 pair not allowed (DETAIL = the current status), '
'NM013 reason does not fit. Internal: callers are other nmc functions.';

-- The same writer for many notifications at once (a send claim or a batch of send
-- commits): every rule of nmc.transition_notificatie, as one lock statement, one event
-- INSERT and one UPDATE, so the guard trigger judges the whole set once.
CREATE OR REPLACE FUNCTION nmc.transition_notificaties(
    p_ids uuid[],
    p_naar nmc.notificatie_status[],
    p_redenen nmc.reden[] DEFAULT NULL
)
RETURNS TABLE (notificatie_id uuid, versie integer)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- One generic plan per session (see nmc.claim_verzenden).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_aantal CONSTANT integer := coalesce(pg_catalog.cardinality(p_ids), 0);
    v_ids uuid [];
    v_dvs integer [];
    v_van nmc.notificatie_status [];
    v_versies integer [];
    v_naar nmc.notificatie_status [];
    v_redenen nmc.reden [];
    v_verschillend integer;
    v_onbekend boolean;
    v_niet_toegestaan text [];
    v_reden_fout text [];
    v_terminaal boolean;
BEGIN
    IF coalesce(pg_catalog.cardinality(p_naar), 0) <> v_aantal
        OR (p_redenen IS NOT NULL AND pg_catalog.cardinality(p_redenen) <> v_aantal) THEN
        RAISE EXCEPTION 'p_ids, p_naar and p_redenen differ in length' USING ERRCODE = '22023';
    END IF;
    IF v_aantal = 0 THEN
        RETURN;
    END IF;

    -- 1. The row locks come before any write, in id order (no deadlock between two sets);
    -- the same statement gathers what the refusals below need.
    SELECT
        pg_catalog.array_agg(u.id ORDER BY u.id),
        pg_catalog.array_agg(l.dv_id ORDER BY u.id),
        pg_catalog.array_agg(l.status ORDER BY u.id),
        pg_catalog.array_agg(l.versie ORDER BY u.id),
        pg_catalog.array_agg(u.naar ORDER BY u.id),
        pg_catalog.array_agg(u.reden ORDER BY u.id),
        pg_catalog.count(DISTINCT u.id),
        pg_catalog.bool_or(l.id IS NULL),
        pg_catalog.array_agg(ARRAY[l.status::text, u.naar::text] ORDER BY u.id)
            FILTER (WHERE NOT nmc.transition_allowed(l.status, u.naar)),
        pg_catalog.array_agg(ARRAY[u.reden::text, u.naar::text] ORDER BY u.id)
            FILTER (WHERE NOT nmc.reden_fits(u.naar, u.reden)),
        pg_catalog.bool_or(nmc.is_terminal(u.naar))
    INTO
        v_ids, v_dvs, v_van, v_versies, v_naar, v_redenen,
        v_verschillend, v_onbekend, v_niet_toegestaan, v_reden_fout, v_terminaal
    FROM unnest(p_ids, p_naar, p_redenen) AS u (id, naar, reden)
    LEFT JOIN (
        SELECT n.id, n.dv_id, n.status, n.versie
        FROM nmc.notificatie AS n
        WHERE n.id = ANY(p_ids)
        ORDER BY n.id
        FOR UPDATE
    ) AS l ON u.id = l.id;

    -- 2. The single writer's refusals, for the whole call (the first offender by id).
    -- One transition per notification per call: two would both read the same version.
    IF v_verschillend <> v_aantal OR pg_catalog.array_position(p_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'a notificatie appears more than once (or is NULL)'
            USING ERRCODE = '21000';
    END IF;
    IF v_onbekend THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;
    IF v_niet_toegestaan IS NOT NULL THEN
        RAISE EXCEPTION 'transition from % to % is not allowed',
            v_niet_toegestaan[1][1], v_niet_toegestaan[1][2]
            USING ERRCODE = 'NM001', DETAIL = v_niet_toegestaan[1][1];
    END IF;
    IF v_reden_fout IS NOT NULL THEN
        RAISE EXCEPTION 'reason % does not fit status %',
            coalesce(v_reden_fout[1][1], 'NULL'), v_reden_fout[1][2]
            USING ERRCODE = 'NM013';
    END IF;

    -- 3 and 4. The events first (sequence = new version), then the rows; the statement
    -- guard checks the one against the other for the whole set at once.
    INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
    SELECT u.id, u.dv_id, u.versie + 1, u.van, u.naar, u.reden, v_nu
    FROM unnest(v_ids, v_dvs, v_versies, v_van, v_naar, v_redenen) AS u (
        id, dv_id, versie, van, naar, reden
    );

    UPDATE nmc.notificatie AS n
    SET status = u.naar,
        reden = u.reden,
        versie = u.versie + 1,
        bijgewerkt_op = v_nu,
        terminaal_op = CASE WHEN nmc.is_terminal(u.naar) THEN v_nu END
    FROM unnest(v_ids, v_versies, v_naar, v_redenen) AS u (id, versie, naar, reden)
    WHERE n.id = u.id;

    -- Personal data goes a fixed term after the terminal status (SPEC §8).
    IF v_terminaal THEN
        INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
        SELECT 'wissen', u.dv_id, u.id, v_nu + i.wistermijn, v_nu
        FROM unnest(v_ids, v_dvs, v_naar) AS u (id, dv_id, naar)
        CROSS JOIN nmc.instellingen AS i
        WHERE nmc.is_terminal(u.naar)
        ON CONFLICT (notificatie_id, soort)
        WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
            AND notificatie_id IS NOT NULL
        DO UPDATE SET due = excluded.due;
    END IF;

    RETURN QUERY SELECT u.id, u.versie + 1 FROM unnest(v_ids, v_versies) AS u (id, versie);
END
$$;
COMMENT ON FUNCTION nmc.transition_notificaties(uuid[], nmc.notificatie_status[], nmc.reden[])
IS
'The single writer for a set of notifications (element i of p_ids goes to p_naar[i] with '
'reason p_redenen[i]; p_redenen NULL: no reasons): every rule of '
'nmc.transition_notificatie, all or nothing. Locks the rows (FOR UPDATE, id order), checks '
'every pair and reason, writes one event per row (sequence = the new version) and raises '
'each version by one in one UPDATE, plans the wissen task of each terminal status. Returns '
'(notificatie_id, new version). Refusals (the whole call): NM005 not found, NM001 pair not '
'allowed (DETAIL = the current status of the first offender), NM013 reason does not fit, '
'21000 an id twice or NULL, 22023 arrays of different length. Internal: callers are '
'other nmc functions.';
