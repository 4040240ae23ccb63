-- Erasure by key (SPEC §8): destroying the wrapped data key makes the ciphertext unreadable;
-- status, attempts, events and the delivery proof stay.

CREATE OR REPLACE FUNCTION nmc.process_wissen(p_batch integer DEFAULT 500)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_termijn CONSTANT interval := (SELECT i.wistermijn FROM nmc.instellingen AS i);
    v_gewist integer;
BEGIN
    WITH taak AS (
        SELECT t.id, t.notificatie_id FROM nmc.taak AS t
        INNER JOIN nmc.lock_due_taken('wissen', greatest(p_batch, 1)) AS l ON l.taak_id = t.id
    ),

    gewist AS (
        UPDATE nmc.notificatie AS n
        SET sleutel_gewrapt = NULL, ontvanger_versleuteld = '\x'::bytea,
            gegevens_versleuteld = NULL, gewist_op = v_nu,
            -- The payload hash goes with the key, keyed or not: an unkeyed one lets anyone
            -- with the database test candidate recipients offline, a keyed one anyone who
            -- also holds the payload pepper (on every API pod). A re-submit of the dvRef
            -- is then answered as another payload (409), as it cannot be judged.
            payload_hash = NULL
        FROM taak AS t
        WHERE n.id = t.notificatie_id
            AND n.terminaal_op IS NOT NULL AND n.terminaal_op + v_termijn <= v_nu
            AND n.gewist_op IS NULL
        RETURNING n.id
    ),

    -- A notification that left its terminal status (a late receipt) gets a new wissen
    -- task at its next terminal status; this one just closes. One still within its erase
    -- term keeps its task open: the claim reads the clock on its own, and a clock moved
    -- while this round ran (tests, the demo, a soak) made it due a moment early; closed,
    -- the key would never go.
    klaar AS (
        UPDATE nmc.taak AS t
        SET staat = 'done', afgerond_op = v_nu, lease_eigenaar = NULL, lease_tot = NULL
        FROM taak
        WHERE t.id = taak.id
            AND NOT EXISTS (
                SELECT 1 FROM nmc.notificatie AS n
                WHERE n.id = taak.notificatie_id
                    AND n.terminaal_op IS NOT NULL AND n.gewist_op IS NULL
                    AND n.terminaal_op + v_termijn > v_nu
            )
        RETURNING t.id
    )

    SELECT pg_catalog.count(*) INTO v_gewist FROM gewist;
    RETURN v_gewist;
END
$$;
COMMENT ON FUNCTION nmc.process_wissen(integer) IS
'Runs up to p_batch due wissen tasks: for a notification terminal for at least the erase '
'term, destroys the wrapped data key and drops the ciphertext (recipient and '
'personalisation are then gone for good) and the payload hash, keyed or not (a re-submit of '
'the dvRef is then answered as another payload); a notification that is no longer '
'terminal is left alone (its task closes), one still within the term keeps its task open. '
'Returns how many were erased.';

CREATE OR REPLACE FUNCTION nmc.store_rewrap(
    p_ids uuid[], p_oude_kek text[], p_sleutels bytea[], p_naar_kek text
)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH herwrapt AS (
        UPDATE nmc.notificatie AS n
        SET sleutel_gewrapt = u.sleutel, kek_id = p_naar_kek
        FROM unnest(p_ids, p_oude_kek, p_sleutels) AS u (id, oude_kek, sleutel)
        -- Only where nothing changed meanwhile (erased, or rewrapped by another run).
        WHERE n.id = u.id AND n.kek_id = u.oude_kek AND n.sleutel_gewrapt IS NOT NULL
        RETURNING n.id
    )

    SELECT pg_catalog.count(*)::integer FROM herwrapt
$$;
COMMENT ON FUNCTION nmc.store_rewrap(uuid[], text[], bytea[], text) IS
'Stores rewrapped data keys under KEK p_naar_kek in one short statement, only for rows '
'still under the KEK they were read with and not erased meanwhile. The data ciphertext '
'is not touched. Returns how many were stored.';
