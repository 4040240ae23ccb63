-- A DV's webhook is validated before it is used and when its URL changes (SPEC §7; the
-- architecture chapter: "bij onboarding geregistreerd en gevalideerd"): the NL GOV
-- CloudEvents webhook handshake (OPTIONS with WebHook-Request-Origin, answered with
-- WebHook-Allowed-Origin), and no loopback, link-local or private target unless explicitly
-- allowed. The shell makes the call (nmc.adapters.webhook_validatie: `nmc admin dv apply`, and the
-- webhook task before its first delivery); these functions record the outcome and tell
-- whether the current URL passed.

CREATE OR REPLACE FUNCTION nmc.webhook_gevalideerd(p_dv_id integer, p_url text)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1 FROM nmc.webhookvalidatie AS v
        WHERE v.dv_id = p_dv_id AND v.url = p_url AND v.uitkomst IN ('geldig', 'bestaand')
    )
$$;
COMMENT ON FUNCTION nmc.webhook_gevalideerd(integer, text) IS
'Internal: true when the DV''s webhook at exactly p_url passed its validation (geldig, or '
'bestaand: in use before validation existed).';

CREATE OR REPLACE FUNCTION nmc.record_webhookvalidatie(
    p_dv_id integer, p_url text, p_uitkomst text, p_detail text
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_url text;
BEGIN
    SELECT d.webhook_url INTO v_url FROM nmc.dienstverlener AS d WHERE d.dv_id = p_dv_id;
    IF v_url IS NULL THEN
        RAISE EXCEPTION 'this dienstverlener has no webhook' USING ERRCODE = 'NM005';
    END IF;
    IF p_uitkomst = 'bestaand' THEN
        RAISE EXCEPTION 'bestaand is the migration''s outcome, not a validation''s'
            USING ERRCODE = '22023';
    END IF;
    -- The URL changed while it was being validated: the new one needs its own.
    IF p_url IS DISTINCT FROM v_url THEN
        RETURN false;
    END IF;
    INSERT INTO nmc.webhookvalidatie AS v (dv_id, url, uitkomst, detail, gevalideerd_op)
    VALUES (p_dv_id, p_url, p_uitkomst, p_detail, nmc.now())
    ON CONFLICT (dv_id) DO UPDATE
    SET url = excluded.url, uitkomst = excluded.uitkomst, detail = excluded.detail,
        gevalideerd_op = excluded.gevalideerd_op;
    IF p_uitkomst = 'geldig' THEN
        -- Deliver what waits at once.
        UPDATE nmc.taak AS t SET due = least(t.due, nmc.now())
        WHERE t.dv_id = p_dv_id AND t.soort = 'terugkoppelen' AND t.staat = 'open';
        RETURN true;
    END IF;
    RETURN false;
END
$$;
COMMENT ON FUNCTION nmc.record_webhookvalidatie(integer, text, text, text) IS
'Records the outcome of validating the DV''s webhook at p_url (geldig, adres-geweigerd, '
'geen-handshake, onbereikbaar, ongeldige-url; p_detail a short error class, never content) '
'when p_url is still the DV''s webhook URL; a geldig outcome makes its webhook task due now. '
'Returns whether the current URL is now validated. NM005 when the DV has no webhook; 23514 '
'for an unknown outcome.';

CREATE OR REPLACE FUNCTION nmc.get_webhookvalidatie(p_dv_id integer)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'webhookUrl', d.webhook_url,
        'url', v.url,
        'uitkomst', v.uitkomst,
        'detail', v.detail,
        'gevalideerdOp', v.gevalideerd_op,
        'gevalideerd', d.webhook_url IS NOT NULL AND nmc.webhook_gevalideerd(d.dv_id, d.webhook_url)
    )
    FROM nmc.dienstverlener AS d
    LEFT JOIN nmc.webhookvalidatie AS v ON v.dv_id = d.dv_id
    WHERE d.dv_id = p_dv_id
$$;
COMMENT ON FUNCTION nmc.get_webhookvalidatie(integer) IS
'The DV''s webhook URL and its latest validation (the URL validated, outcome, error class, '
'when) and whether the current URL passed, for `nmc admin dv apply`. Admin only.';
