-- A send NotifyNL refused for a reason of our own configuration (notifynl-contract.md,
-- Errors: template, key type, service permissions, our request, our credentials, any
-- unknown 400). Not the recipient's fault and not the notification's: the send waits like
-- any outage, and the berichttype is recorded as refused so an operator is alerted.

CREATE OR REPLACE FUNCTION nmc.defer_verzenden(
    p_taak_id bigint, p_claim_epoch integer, p_soort text
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_taak nmc.taak;
    v_uitkomst text;
BEGIN
    IF p_soort IS NULL
        OR p_soort NOT IN ('template', 'sleutel', 'dienst', 'verzoek', 'toegang', 'onbekend') THEN
        RAISE EXCEPTION 'unknown kind of send refusal %', p_soort USING ERRCODE = '22023';
    END IF;
    v_taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    IF v_taak.soort <> 'verzenden' THEN
        RAISE EXCEPTION 'task % is not a send', p_taak_id USING ERRCODE = '22023';
    END IF;

    -- The deferral of any outage (growing backoff, no attempt counted; past geldig_tot the
    -- notification ends verlopen). Locks the task, then the notification.
    v_uitkomst := nmc.defer_taak(p_taak_id, p_claim_epoch, 'notifynl-geweigerd-' || p_soort);

    -- Then the berichttype's refused state (the lock order of nmc.finish_verzenden_batch,
    -- which clears it: task, notification, refusal).
    INSERT INTO nmc.verzendweigering AS w (dv_id, berichttype, soort, sinds, laatst, aantal)
    SELECT n.dv_id, n.berichttype, p_soort, v_nu, v_nu, 1
    FROM nmc.notificatie AS n
    WHERE n.id = v_taak.notificatie_id
    ON CONFLICT (dv_id, berichttype) DO UPDATE
    SET soort = excluded.soort, laatst = greatest(w.laatst, excluded.laatst),
        aantal = w.aantal + 1;
    RETURN v_uitkomst;
END
$$;
COMMENT ON FUNCTION nmc.defer_verzenden(bigint, integer, text) IS
'After NotifyNL refused a send for a reason of our own configuration, p_soort as the '
'adapter classified it: template (not found, deleted, not suitable), sleutel (team-only '
'key, trial mode), dienst (no e-mail permission), verzoek (a ValidationError on a field '
'other than email_address), toegang (401/403), onbekend (any other 400). The send is '
'deferred as after an outage (nmc.defer_taak: backoff, no attempt counted, nothing final; '
'verlopen when the next try falls after geldig_tot) with laatste_fout '
'notifynl-geweigerd-<soort>, and the berichttype''s refused state is recorded in '
'nmc.verzendweigering (latest kind, since, count), which the next accepted send of that '
'berichttype clears. Returns uitgesteld or verlopen. NM011 when stale; 22023 for an '
'unknown kind or a task that is not a send.';
