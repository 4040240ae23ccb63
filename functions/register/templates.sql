-- The berichttypen's NotifyNL templates (schema/0032_notifynl_templates.sql): what to read
-- and what an answer means. The HTTP is the shell's (`nmc admin dv apply`, `nmc admin
-- templates verversen`, the worker's maintenance job templates); every rule is here.

CREATE OR REPLACE FUNCTION nmc.record_template(
    p_notify_service text,
    p_template_id uuid,
    p_uitkomst text,
    p_versie integer,
    p_placeholders text[],
    p_sleutels text[],
    p_fout text
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_pauze CONSTANT interval := coalesce(
        (SELECT w.herhaal_na FROM nmc.onderhoudswerk AS w WHERE w.werk = 'templates'),
        '15 minutes'
    );
    v_staat text;
BEGIN
    IF p_uitkomst NOT IN ('gelezen', 'verdwenen', 'mislukt') THEN
        RAISE EXCEPTION 'unknown template read outcome %', p_uitkomst USING ERRCODE = '22023';
    END IF;
    IF p_uitkomst = 'gelezen' AND (
        p_versie IS NULL OR p_placeholders IS NULL OR p_sleutels IS NULL
        OR pg_catalog.cardinality(p_placeholders) <> pg_catalog.cardinality(p_sleutels)
    ) THEN
        RAISE EXCEPTION 'a read template needs its version and its names, normalized beside'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO nmc.notifynl_template AS t (
        notify_service, template_id, staat, versie, placeholders, sleutels, gelezen_op,
        verdwenen_op, verversen_na, laatste_fout
    )
    VALUES (
        p_notify_service, p_template_id,
        CASE p_uitkomst WHEN 'gelezen' THEN 'beschikbaar' WHEN 'verdwenen' THEN 'verdwenen'
            ELSE 'onbekend' END,
        CASE WHEN p_uitkomst = 'gelezen' THEN p_versie END,
        CASE WHEN p_uitkomst = 'gelezen' THEN p_placeholders ELSE '{}' END,
        CASE WHEN p_uitkomst = 'gelezen' THEN p_sleutels ELSE '{}' END,
        CASE WHEN p_uitkomst = 'gelezen' THEN v_nu END,
        CASE WHEN p_uitkomst = 'verdwenen' THEN v_nu END,
        -- A failed read (an outage, no key) is tried again within a minute.
        v_nu + CASE WHEN p_uitkomst = 'mislukt' THEN least(v_pauze, '1 minute') ELSE v_pauze END,
        CASE WHEN p_uitkomst = 'mislukt' THEN pg_catalog.left(p_fout, 200) END
    )
    ON CONFLICT (notify_service, template_id) DO UPDATE SET
        -- A failed read keeps what was known: the template is not gone for an outage.
        staat = CASE WHEN p_uitkomst = 'mislukt' THEN t.staat ELSE excluded.staat END,
        versie = CASE WHEN p_uitkomst = 'gelezen' THEN excluded.versie ELSE t.versie END,
        placeholders = CASE
            WHEN p_uitkomst = 'gelezen' THEN excluded.placeholders ELSE t.placeholders
        END,
        sleutels = CASE WHEN p_uitkomst = 'gelezen' THEN excluded.sleutels ELSE t.sleutels END,
        gelezen_op = coalesce(excluded.gelezen_op, t.gelezen_op),
        verdwenen_op = CASE
            WHEN p_uitkomst = 'verdwenen' THEN coalesce(t.verdwenen_op, v_nu)
            WHEN p_uitkomst = 'gelezen' THEN NULL
            ELSE t.verdwenen_op
        END,
        verversen_na = excluded.verversen_na,
        laatste_fout = excluded.laatste_fout
    RETURNING t.staat INTO v_staat;
    RETURN v_staat;
END
$$;
COMMENT ON FUNCTION nmc.record_template(text, uuid, text, integer, text[], text[], text) IS
'Records one read of a berichttype''s NotifyNL template (GET /v2/template/{id} with the '
'Notify service''s key): gelezen (200, an e-mail template) stores its version, its '
'placeholder names and the same names normalized as NotifyNL matches them (p_sleutels, '
'same order) and makes it beschikbaar; verdwenen (404, or no longer an e-mail template) '
'makes its berichttypen unavailable (intake NM033) until a read finds it again; mislukt '
'(an outage, our key refused: p_fout, an error class) keeps the state and tries again '
'within a minute. The next read is due after the templates job''s herhaal_na. Returns the '
'state. Worker and admin. 22023 for an unknown outcome or a read without its names.';

CREATE OR REPLACE FUNCTION nmc.te_lezen_templates(p_alle boolean, p_batch integer)
RETURNS TABLE (notify_service text, template_id uuid)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    -- A berichttype whose template has no row yet (onboarded before this release, or its
    -- template changed by a new DV document) gets one, due now.
    INSERT INTO nmc.notifynl_template (notify_service, template_id, verversen_na)
    SELECT DISTINCT b.notify_service, b.notifynl_template_id, nmc.now()
    FROM nmc.berichttype AS b
    WHERE b.actief
    ON CONFLICT (notify_service, template_id) DO NOTHING;
    RETURN QUERY
    SELECT t.notify_service, t.template_id
    FROM nmc.notifynl_template AS t
    WHERE (p_alle OR t.verversen_na <= nmc.now())
        AND EXISTS (
            SELECT 1 FROM nmc.berichttype AS b
            WHERE b.actief AND b.notify_service = t.notify_service
                AND b.notifynl_template_id = t.template_id
        )
    ORDER BY t.verversen_na, t.notify_service, t.template_id
    LIMIT greatest(p_batch, 1);
END
$$;
COMMENT ON FUNCTION nmc.te_lezen_templates(boolean, integer) IS
'Internal: the templates of active berichttypen due for a read (all of them when p_alle), '
'most overdue first, at most p_batch; adds the row of a template no read has seen yet.';

CREATE OR REPLACE FUNCTION nmc.claim_template_verversen(
    p_taak_id bigint, p_claim_epoch integer
)
RETURNS TABLE (notify_service text, template_id uuid)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_taak CONSTANT nmc.taak := nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
BEGIN
    IF v_taak.soort <> 'onderhoud' OR v_taak.payload ->> 'werk' IS DISTINCT FROM 'templates' THEN
        RAISE EXCEPTION 'task % is not the templates job', p_taak_id USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT l.notify_service, l.template_id
    FROM nmc.te_lezen_templates(
        false, (SELECT w.batch FROM nmc.onderhoudswerk AS w WHERE w.werk = 'templates')
    ) AS l;
END
$$;
COMMENT ON FUNCTION nmc.claim_template_verversen(bigint, integer) IS
'For the claimed templates task (fenced by epoch): the templates (Notify service, template '
'id) of active berichttypen due for a read, at most the job''s batch. The worker reads each '
'with the service''s key, records it with nmc.record_template and ends the run with '
'nmc.finish_template_verversen. 22023 for another task.';

CREATE OR REPLACE FUNCTION nmc.finish_template_verversen(
    p_taak_id bigint, p_claim_epoch integer, p_meer boolean
)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_due timestamptz;
BEGIN
    PERFORM nmc.lock_claimed_taak(p_taak_id, p_claim_epoch);
    v_due := nmc.plan_onderhoud(p_taak_id, p_meer);
    -- Not later than the first template due (a failed read retries within a minute).
    UPDATE nmc.taak AS k SET due = least(k.due, greatest(s.eerste, nmc.now()))
    FROM (
        SELECT pg_catalog.min(t.verversen_na) AS eerste FROM nmc.notifynl_template AS t
        WHERE EXISTS (
            SELECT 1 FROM nmc.berichttype AS b
            WHERE b.actief AND b.notify_service = t.notify_service
                AND b.notifynl_template_id = t.template_id
        )
    ) AS s
    WHERE k.id = p_taak_id AND s.eerste IS NOT NULL
    RETURNING k.due INTO v_due;
    RETURN v_due;
END
$$;
COMMENT ON FUNCTION nmc.finish_template_verversen(bigint, integer, boolean) IS
'Ends one run of the templates job (fenced by epoch) and plans the next: at once when '
'p_meer (a full batch), else after the job''s herhaal_na or when the first template is due, '
'whichever is earlier. Returns the new due.';

CREATE OR REPLACE FUNCTION nmc.list_templates()
RETURNS TABLE (
    dv_id integer, oin text, berichttype text, actief boolean, notify_service text,
    template_id uuid, staat text, versie integer, placeholders text[],
    gelezen_op timestamptz, verdwenen_op timestamptz, verversen_na timestamptz,
    laatste_fout text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        b.dv_id, d.oin, b.code, b.actief, b.notify_service, b.notifynl_template_id,
        coalesce(t.staat, 'onbekend'), t.versie, coalesce(t.placeholders, '{}'),
        t.gelezen_op, t.verdwenen_op, t.verversen_na, t.laatste_fout
    FROM nmc.berichttype AS b
    INNER JOIN nmc.dienstverlener AS d ON d.dv_id = b.dv_id
    LEFT JOIN nmc.notifynl_template AS t
        ON t.notify_service = b.notify_service AND t.template_id = b.notifynl_template_id
    ORDER BY b.dv_id, b.code
$$;
COMMENT ON FUNCTION nmc.list_templates() IS
'Per berichttype its NotifyNL template as last read: state, version, placeholder names, '
'when read, when found gone, when due, the last failed read. `nmc admin templates list`; '
'admin only.';

CREATE OR REPLACE FUNCTION nmc.lees_templates(p_alle boolean)
RETURNS TABLE (notify_service text, template_id uuid)
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.notify_service, l.template_id FROM nmc.te_lezen_templates(p_alle, 10000) AS l
$$;
COMMENT ON FUNCTION nmc.lees_templates(boolean) IS
'The templates `nmc admin templates verversen` reads now: all of active berichttypen (or '
'only those due when p_alle is false). Admin only.';
