-- The send budget (SPEC §5): tokens per NotifyNL service per one-minute window, taken in
-- one upsert. No refiller and no other lock; unused tokens expire with the window.

CREATE OR REPLACE FUNCTION nmc.take_budget(p_service text, p_soort text, p_gewenst integer)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_venster CONSTANT timestamptz := pg_catalog.date_trunc('minute', nmc.now());
    v_budget integer;
    v_aandeel numeric;
    v_plafond integer;
    v_toegekend integer;
BEGIN
    IF p_gewenst <= 0 THEN
        RETURN 0;
    END IF;
    SELECT s.budget_per_minuut, s.navraag_aandeel INTO v_budget, v_aandeel
    FROM nmc.notify_service AS s WHERE s.code = p_service;
    v_budget := coalesce(v_budget, 1400);
    v_aandeel := coalesce(v_aandeel, 0.1);
    -- Reconciliation has a fixed share of every window; sends get the rest.
    v_plafond := CASE p_soort
        WHEN 'navraag' THEN pg_catalog.floor(v_budget * v_aandeel)::integer
        WHEN 'verzenden' THEN v_budget - pg_catalog.floor(v_budget * v_aandeel)::integer
    END;
    IF v_plafond IS NULL THEN
        RAISE EXCEPTION 'unknown budget kind %', p_soort USING ERRCODE = '22023';
    END IF;

    -- The SET expressions read the row as it was, so the grant is computed under the
    -- row lock the upsert takes, and returned by the same statement.
    INSERT INTO nmc.verzendbudget AS b (
        notify_service, venster_start, soort, gebruikt, laatst_toegekend
    )
    VALUES (
        p_service, v_venster, p_soort, least(p_gewenst, v_plafond), least(p_gewenst, v_plafond)
    )
    ON CONFLICT (notify_service, venster_start, soort) DO UPDATE
    SET laatst_toegekend = greatest(least(p_gewenst, v_plafond - b.gebruikt), 0),
        gebruikt = b.gebruikt + greatest(least(p_gewenst, v_plafond - b.gebruikt), 0)
    RETURNING b.laatst_toegekend INTO v_toegekend;
    RETURN v_toegekend;
END
$$;
COMMENT ON FUNCTION nmc.take_budget(text, text, integer) IS
'Takes up to p_gewenst tokens of kind verzenden or navraag from the current one-minute '
'window of a NotifyNL service and returns how many were granted (0 when the window is '
'used up). Sends get budget_per_minuut minus the reconciliation share; reconciliation '
'gets its fixed share. Never more than the budget in a window, however many claim at once.';
