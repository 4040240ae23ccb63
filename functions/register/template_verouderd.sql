-- A berichttype's NotifyNL template due for a read now: after NotifyNL refused a send with
-- Missing personalisation (nmc.finish_verzenden_batch), or on an operator's word. A module of
-- its own, above its caller; the reads themselves are in functions/register/templates.sql.

CREATE OR REPLACE FUNCTION nmc.markeer_template_verouderd(p_dv_id integer, p_berichttype text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_b nmc.berichttype;
BEGIN
    SELECT * INTO v_b FROM nmc.berichttype AS b
    WHERE b.dv_id = p_dv_id AND b.code = p_berichttype;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO nmc.notifynl_template AS t (notify_service, template_id, verversen_na)
    VALUES (v_b.notify_service, v_b.notifynl_template_id, v_nu)
    ON CONFLICT (notify_service, template_id) DO UPDATE SET
        verversen_na = least(t.verversen_na, v_nu);
    -- The job's open task comes forward, so the read is a matter of a worker's round.
    UPDATE nmc.taak AS k SET due = least(k.due, v_nu)
    WHERE k.soort = 'onderhoud' AND k.staat = 'open' AND k.payload ->> 'werk' = 'templates';
    RETURN true;
END
$$;
COMMENT ON FUNCTION nmc.markeer_template_verouderd(integer, text) IS
'Marks the NotifyNL template of one berichttype (dv_id, code, as nmc.berichttype keys it) '
'as due for a read now and brings the templates job''s open task forward: after NotifyNL '
'refused a send with Missing personalisation (the template was edited after the intake). '
'Returns false for an unknown berichttype. Worker (and admin).';
