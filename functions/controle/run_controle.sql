-- The watchdog (SPEC §5): every live notification has a task that moves it on.

CREATE OR REPLACE FUNCTION nmc.plan_missing_taken(p_batch integer DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_instelling nmc.instellingen;
    v_n record;
    v_running uuid;
    v_aantal integer := 0;
BEGIN
    SELECT * INTO v_instelling FROM nmc.instellingen;
    FOR v_n IN
        SELECT n.id, n.dv_id, n.status, n.trace_id FROM nmc.notificatie AS n
        WHERE n.terminaal_op IS NULL
            AND NOT EXISTS (
                SELECT 1 FROM nmc.taak AS t
                WHERE t.notificatie_id = n.id AND t.staat IN ('open', 'claimed', 'mislukt')
            )
        LIMIT p_batch
        FOR UPDATE OF n SKIP LOCKED
    LOOP
        SELECT p.id INTO v_running FROM nmc.poging AS p
        WHERE p.notificatie_id = v_n.id AND p.status IN ('verzonden', 'onbekend')
        ORDER BY p.nummer DESC LIMIT 1;

        INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, trace_id, aangemaakt_op)
        SELECT
            CASE
                WHEN v_n.status = 'bezorgd' THEN 'vaststellen'
                WHEN v_n.status = 'verzonden' AND v_running IS NOT NULL THEN 'reconciliëren'
                ELSE 'verzenden'
            END::nmc.taak_soort,
            v_n.dv_id, v_n.id,
            CASE v_n.status
                WHEN 'bezorgd' THEN (
                    SELECT p.id FROM nmc.poging AS p
                    WHERE p.notificatie_id = v_n.id AND p.status = 'bezorgd'
                    ORDER BY p.afgerond_op DESC LIMIT 1
                )
                WHEN 'verzonden' THEN v_running
            END,
            CASE
                -- Without a delivered attempt's completed_at (a bezorgd an earlier release let
                -- an operator force) the whole term from now: NULL + term would make
                -- greatest() plan it now, settling at once.
                WHEN v_n.status = 'bezorgd' THEN greatest(v_nu, coalesce((
                    SELECT pg_catalog.max(p.afgerond_op) FROM nmc.poging AS p
                    WHERE p.notificatie_id = v_n.id AND p.status = 'bezorgd'
                ), v_nu) + v_instelling.vaststellingstermijn + v_instelling.callback_venster)
                ELSE v_nu
            END,
            v_n.trace_id, v_nu;
        v_aantal := v_aantal + 1;
    END LOOP;
    RETURN v_aantal;
END
$$;
COMMENT ON FUNCTION nmc.plan_missing_taken(integer) IS
'Gives up to p_batch live notifications without an open, claimed or mislukt task the task '
'that moves them on: aangenomen -> send; in-verzending -> send (a re-claim of the same '
'attempt); verzonden -> send when no attempt runs, else reconcile the running one; '
'bezorgd -> settle at completed_at + term + callback window (without a delivered '
'attempt: that term from now, never at once). Returns how many it planned.';

CREATE OR REPLACE FUNCTION nmc.run_controle(p_taak_id bigint, p_claim_epoch integer)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_aantal integer;
BEGIN
    PERFORM nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_aantal := nmc.plan_missing_taken();
    -- The watchdog plans its own next round: the same row, open again.
    UPDATE nmc.taak AS t
    SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL,
        due = nmc.now() + (SELECT i.controle_interval FROM nmc.instellingen AS i)
    WHERE t.id = p_taak_id;
    RETURN v_aantal;
END
$$;
COMMENT ON FUNCTION nmc.run_controle(bigint, integer) IS
'Runs one watchdog round for the claimed controle task (fenced by epoch) and reopens the '
'task for the next round, settings.controle_interval later. Returns how many tasks it '
'planned.';

CREATE OR REPLACE FUNCTION nmc.ensure_controle()
RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO nmc.taak (soort, due, aangemaakt_op)
    VALUES ('controle', nmc.now(), nmc.now())
    ON CONFLICT (soort) WHERE staat IN ('open', 'claimed') AND soort = 'controle' DO NOTHING
$$;
COMMENT ON FUNCTION nmc.ensure_controle() IS
'Makes sure the one watchdog task exists (workers call it at start; idempotent).';
