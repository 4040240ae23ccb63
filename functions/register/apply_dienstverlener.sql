-- Onboarding (`nmc admin dv apply`): create or update a DV and its berichttypen from one
-- JSON document, keyed by OIN. The format is documented in the README.

CREATE OR REPLACE FUNCTION nmc.apply_dienstverlener(p_config jsonb)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_dv_id integer;
    v_onbekend text;
BEGIN
    SELECT pg_catalog.string_agg(k, ', ') INTO v_onbekend
    FROM pg_catalog.jsonb_object_keys(p_config) AS k
    WHERE k NOT IN ('oin', 'naam', 'quotumPerMinuut', 'quotumPerDag', 'webhook',
        'bevestigingstermijn', 'maxCursorleeftijd', 'beheerkanaal', 'feedMaxPagina',
        'feedAanroepenPerMinuut', 'actief', 'berichttypen');
    IF v_onbekend IS NOT NULL THEN
        RAISE EXCEPTION 'unknown fields in the DV document: %', v_onbekend
            USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_typeof(p_config -> 'berichttypen') IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'the DV document needs a berichttypen array' USING ERRCODE = '22023';
    END IF;

    INSERT INTO nmc.dienstverlener AS d (
        oin, naam, quotum_per_minuut, quotum_per_dag, webhook_url, webhook_max_mislukt,
        webhook_max_batch, bevestigingstermijn, max_cursorleeftijd, beheerkanaal,
        feed_max_pagina, feed_aanroepen_per_minuut, actief
    )
    VALUES (
        p_config ->> 'oin',
        p_config ->> 'naam',
        coalesce((p_config ->> 'quotumPerMinuut')::integer, 6000),
        coalesce((p_config ->> 'quotumPerDag')::integer, 1000000),
        p_config #>> '{webhook,url}',
        coalesce((p_config #>> '{webhook,maxMislukt}')::integer, 10),
        coalesce((p_config #>> '{webhook,maxBatch}')::integer, 100),
        coalesce((p_config ->> 'bevestigingstermijn')::interval, '7 days'),
        coalesce((p_config ->> 'maxCursorleeftijd')::interval, '30 days'),
        p_config ->> 'beheerkanaal',
        coalesce((p_config ->> 'feedMaxPagina')::integer, 1000),
        coalesce((p_config ->> 'feedAanroepenPerMinuut')::integer, 600),
        coalesce((p_config ->> 'actief')::boolean, true)
    )
    ON CONFLICT (oin) DO UPDATE SET
        naam = excluded.naam,
        quotum_per_minuut = excluded.quotum_per_minuut,
        quotum_per_dag = excluded.quotum_per_dag,
        webhook_url = excluded.webhook_url,
        webhook_max_mislukt = excluded.webhook_max_mislukt,
        webhook_max_batch = excluded.webhook_max_batch,
        bevestigingstermijn = excluded.bevestigingstermijn,
        max_cursorleeftijd = excluded.max_cursorleeftijd,
        beheerkanaal = excluded.beheerkanaal,
        feed_max_pagina = excluded.feed_max_pagina,
        feed_aanroepen_per_minuut = excluded.feed_aanroepen_per_minuut,
        actief = excluded.actief,
        gewijzigd_op = pg_catalog.now()
    RETURNING d.dv_id INTO v_dv_id;

    INSERT INTO nmc.berichttype AS b (
        dv_id, code, notifynl_template_id, notify_service, regie_toegestaan,
        geldigheid_standaard, geldigheid_max, actief
    )
    SELECT
        v_dv_id,
        t ->> 'code',
        (t ->> 'notifynlTemplateId')::uuid,
        coalesce(t ->> 'notifyService', 'standaard'),
        CASE WHEN t ? 'regie'
            THEN ARRAY(SELECT pg_catalog.jsonb_array_elements_text(t -> 'regie'))::nmc.regie []
            ELSE '{centraal,decentraal}'
        END,
        coalesce((t ->> 'geldigheidStandaard')::interval, '3 days'),
        coalesce((t ->> 'geldigheidMax')::interval, '30 days'),
        true
    FROM pg_catalog.jsonb_array_elements(p_config -> 'berichttypen') AS t
    ON CONFLICT (dv_id, code) DO UPDATE SET
        notifynl_template_id = excluded.notifynl_template_id,
        notify_service = excluded.notify_service,
        regie_toegestaan = excluded.regie_toegestaan,
        geldigheid_standaard = excluded.geldigheid_standaard,
        geldigheid_max = excluded.geldigheid_max,
        actief = true;

    -- A berichttype left out of the document is retired, not deleted (notifications
    -- refer to it).
    UPDATE nmc.berichttype AS b SET actief = false
    WHERE b.dv_id = v_dv_id
        AND b.code NOT IN (
            SELECT t ->> 'code' FROM pg_catalog.jsonb_array_elements(p_config -> 'berichttypen') AS t
        );

    RETURN v_dv_id;
END
$$;
COMMENT ON FUNCTION nmc.apply_dienstverlener(jsonb) IS
'Creates or updates a DV (keyed by OIN) and its berichttypen from one JSON document; '
'berichttypen left out are retired (actief = false). Returns dv_id. Admin only. Bad '
'input raises the table''s own check violations or 22023 for unknown fields.';

CREATE OR REPLACE FUNCTION nmc.find_dienstverlener(p_oin text)
RETURNS TABLE (dv_id integer, naam text)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT d.dv_id, d.naam FROM nmc.dienstverlener AS d WHERE d.oin = p_oin AND d.actief
$$;
COMMENT ON FUNCTION nmc.find_dienstverlener(text) IS
'The active DV for an OIN from a verified token (no row: the caller is not onboarded, 403).';

CREATE OR REPLACE FUNCTION nmc.list_dienstverleners()
RETURNS TABLE (
    dv_id integer, oin text, naam text, actief boolean, berichttypen text[],
    quotum_per_minuut integer, quotum_per_dag integer, webhook_url text
)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT
        d.dv_id, d.oin, d.naam, d.actief,
        ARRAY(
            SELECT b.code FROM nmc.berichttype AS b
            WHERE b.dv_id = d.dv_id AND b.actief ORDER BY b.code
        ),
        d.quotum_per_minuut, d.quotum_per_dag, d.webhook_url
    FROM nmc.dienstverlener AS d
    ORDER BY d.dv_id
$$;
COMMENT ON FUNCTION nmc.list_dienstverleners() IS
'The DV register for `nmc admin dv list`. Admin only.';
