-- Deferral (an outage of a called service) versus failure (inside the NMC), SPEC §5.

CREATE OR REPLACE FUNCTION nmc.defer_taak_tot(
    p_taak_id bigint, p_claim_epoch integer, p_fout text, p_due timestamptz, p_tellen boolean
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_due timestamptz := coalesce(p_due, nmc.now() + nmc.uitstel(v_taak.uitstellen));
    v_status nmc.notificatie_status;
    v_geldig_tot timestamptz;
    v_zonder_uitkomst boolean;
BEGIN
    -- Only geldig_tot bounds the wait of a send: a deferral past it ends the notification,
    -- but only while its latest attempt has no outcome yet. A receipt may already have
    -- committed the send on the worker's behalf (NotifyNL accepted it, the worker timed
    -- out): then the receipts decide, and the next claim closes the task.
    IF v_taak.soort = 'verzenden' THEN
        SELECT
            n.status,
            n.geldig_tot,
            coalesce(p.status = 'gepland', true) AND n.status IN (
                'aangenomen', 'in-verzending', 'verzonden'
            )
        INTO v_status, v_geldig_tot, v_zonder_uitkomst
        FROM nmc.notificatie AS n
        LEFT JOIN LATERAL (
            SELECT q.status FROM nmc.poging AS q
            WHERE q.notificatie_id = n.id
            ORDER BY q.nummer DESC
            LIMIT 1
        ) AS p ON true
        WHERE n.id = v_taak.notificatie_id
        FOR UPDATE OF n;
        IF v_due > v_geldig_tot AND v_zonder_uitkomst
            AND nmc.transition_allowed(v_status, 'verlopen') THEN
            PERFORM nmc.transition_notificatie(v_taak.notificatie_id, 'verlopen', 'verlopen');
            UPDATE nmc.taak AS t SET laatste_fout = p_fout WHERE t.id = p_taak_id;
            PERFORM nmc.close_taak(p_taak_id);
            RETURN 'verlopen';
        END IF;
    END IF;

    UPDATE nmc.taak AS t
    SET staat = 'open', due = v_due,
        uitstellen = t.uitstellen + CASE WHEN p_tellen THEN 1 ELSE 0 END, laatste_fout = p_fout,
        lease_eigenaar = NULL, lease_tot = NULL
    WHERE t.id = p_taak_id;
    RETURN 'uitgesteld';
END
$$;
COMMENT ON FUNCTION nmc.defer_taak_tot(bigint, integer, text, timestamptz, boolean) IS
'Puts a claimed task back to wait until p_due (NULL: the growing backoff), raising its '
'deferral count when p_tellen; a send whose wait would pass geldig_tot ends verlopen '
'unless its latest attempt already has an outcome. Internal to nmc.defer_taak and '
'nmc.defer_limiet_taak. NM011 when stale.';

CREATE OR REPLACE FUNCTION nmc.defer_taak(
    p_taak_id bigint, p_claim_epoch integer, p_fout text DEFAULT NULL
)
RETURNS text
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.defer_taak_tot(p_taak_id, p_claim_epoch, p_fout, NULL, true)
$$;
COMMENT ON FUNCTION nmc.defer_taak(bigint, integer, text) IS
'After an outage of a called service (401/403/429/5xx, connection error, timeout): the '
'task waits with growing backoff and its attempt counter does not rise. A send whose '
'next try would fall after geldig_tot ends in verlopen instead, unless its latest attempt '
'already has an outcome (a receipt committed it). Returns uitgesteld or '
'verlopen. p_fout is a short error class, never personal data. NM011 when stale.';

CREATE OR REPLACE FUNCTION nmc.fail_taak(
    p_taak_id bigint, p_claim_epoch integer, p_fout text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_taak nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_status nmc.notificatie_status;
BEGIN
    IF v_taak.pogingen + 1 < (SELECT i.max_pogingen FROM nmc.instellingen AS i) THEN
        UPDATE nmc.taak AS t
        SET staat = 'open', due = nmc.now() + nmc.uitstel(t.pogingen), pogingen = t.pogingen + 1,
            laatste_fout = p_fout, lease_eigenaar = NULL, lease_tot = NULL
        WHERE t.id = p_taak_id;
        RETURN 'opnieuw';
    END IF;

    -- Exhausted: a send ends the notification; any other kind waits for an operator.
    UPDATE nmc.taak AS t SET pogingen = t.pogingen + 1, laatste_fout = p_fout
    WHERE t.id = p_taak_id;
    IF v_taak.soort = 'verzenden' THEN
        SELECT n.status INTO v_status
        FROM nmc.notificatie AS n WHERE n.id = v_taak.notificatie_id FOR UPDATE;
        IF nmc.transition_allowed(v_status, 'technisch-mislukt') THEN
            PERFORM nmc.transition_notificatie(
                v_taak.notificatie_id, 'technisch-mislukt', 'technisch'
            );
        END IF;
        PERFORM nmc.close_taak(p_taak_id);
        RETURN 'technisch-mislukt';
    END IF;
    UPDATE nmc.taak AS t
    SET staat = 'mislukt', lease_eigenaar = NULL, lease_tot = NULL
    WHERE t.id = p_taak_id;
    RETURN 'mislukt';
END
$$;
COMMENT ON FUNCTION nmc.fail_taak(bigint, integer, text) IS
'After a failure inside the NMC: the attempt counter rises and the task retries with '
'backoff; at settings.max_pogingen (5) it is exhausted: a send takes the notification to '
'technisch-mislukt, any other kind gets state mislukt (counted; an operator reopens it or '
'forces a transition). Returns opnieuw, technisch-mislukt or mislukt. NM011 when stale.';
