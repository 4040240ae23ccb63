-- The table of allowed (van, naar) pairs, and transition_allowed, its fast copy that the
-- trigger and the writer use (a test proves the two equal).
-- These four tiny IMMUTABLE SQL functions carry no SET search_path on purpose: that clause
-- stops PostgreSQL from inlining them, and the guard trigger calls them for every row. They
-- name only qualified objects and run inside callers that pin search_path.

CREATE OR REPLACE FUNCTION nmc.allowed_transitions()
RETURNS TABLE (van nmc.notificatie_status, naar nmc.notificatie_status)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT t.van::nmc.notificatie_status, t.naar::nmc.notificatie_status
    FROM (VALUES
        -- intake
        (NULL, 'aangenomen'),
        -- claim of the first send task; DV cancel before the claim
        ('aangenomen', 'in-verzending'),
        ('aangenomen', 'geannuleerd'),
        ('aangenomen', 'verlopen'),
        -- commit after NotifyNL's 201; Profielservice or NotifyNL 400; exhausted send
        ('in-verzending', 'verzonden'),
        ('in-verzending', 'niet-bezorgbaar'),
        ('in-verzending', 'technisch-mislukt'),
        ('in-verzending', 'verlopen'),
        -- resend claim and commit; receipts; reconciliation dead ends
        ('verzonden', 'verzonden'),
        ('verzonden', 'bezorgd'),
        ('verzonden', 'niet-bezorgbaar'),
        ('verzonden', 'technisch-mislukt'),
        ('verzonden', 'verlopen'),
        ('verzonden', 'bezorgstatus-onbekend'),
        -- settlement, or a failure within the settlement term
        ('bezorgd', 'definitief-bezorgd'),
        ('bezorgd', 'verzonden'),
        ('bezorgd', 'niet-bezorgbaar'),
        ('bezorgd', 'verlopen'),
        -- the one terminal status a late receipt may still correct
        ('bezorgstatus-onbekend', 'bezorgd'),
        ('bezorgstatus-onbekend', 'niet-bezorgbaar')
    ) AS t (van, naar)
$$;
COMMENT ON FUNCTION nmc.allowed_transitions() IS
'The allowed status transitions of SPEC §4, exactly. (NULL, aangenomen) is the intake. '
'The guard trigger and the transition function both read this; the Python copy in '
'nmc.status is checked against it by a test.';

CREATE OR REPLACE FUNCTION nmc.transition_allowed(
    p_van nmc.notificatie_status, p_naar nmc.notificatie_status
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    -- The table above as one expression, without a sub-select, so that PL/pgSQL evaluates
    -- it as a simple expression (a scan of the table cost ~60 µs per call, nine calls per
    -- send). tests_sql/allowed_transitions.sql proves both copies equal for every pair.
    SELECT CASE
        WHEN p_van IS NULL THEN p_naar = 'aangenomen'
        WHEN p_van = 'aangenomen' THEN p_naar IN ('in-verzending', 'geannuleerd', 'verlopen')
        WHEN p_van = 'in-verzending' THEN
            p_naar IN ('verzonden', 'niet-bezorgbaar', 'technisch-mislukt', 'verlopen')
        WHEN p_van = 'verzonden' THEN
            p_naar IN (
                'verzonden', 'bezorgd', 'niet-bezorgbaar', 'technisch-mislukt', 'verlopen',
                'bezorgstatus-onbekend'
            )
        WHEN p_van = 'bezorgd' THEN
            p_naar IN ('definitief-bezorgd', 'verzonden', 'niet-bezorgbaar', 'verlopen')
        WHEN p_van = 'bezorgstatus-onbekend' THEN p_naar IN ('bezorgd', 'niet-bezorgbaar')
        ELSE false
    END IS TRUE
$$;
COMMENT ON FUNCTION nmc.transition_allowed(nmc.notificatie_status, nmc.notificatie_status) IS
'True when (p_van, p_naar) is one of nmc.allowed_transitions(); p_van NULL means intake. '
'Written as one CASE expression so callers evaluate it cheaply; a test keeps it equal to '
'the table.';

CREATE OR REPLACE FUNCTION nmc.is_terminal(p_status nmc.notificatie_status)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT p_status IN (
        'definitief-bezorgd', 'niet-bezorgbaar', 'technisch-mislukt',
        'bezorgstatus-onbekend', 'verlopen', 'geannuleerd'
    )
$$;
COMMENT ON FUNCTION nmc.is_terminal(nmc.notificatie_status) IS
'True for the terminal statuses of SPEC §4 (bezorgstatus-onbekend included, although a '
'late receipt may still move it).';

CREATE OR REPLACE FUNCTION nmc.reden_fits(
    p_status nmc.notificatie_status, p_reden nmc.reden
)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT CASE p_status
        WHEN 'niet-bezorgbaar' THEN p_reden IN ('onbereikbaar', 'geen-contactgegevens')
        WHEN 'technisch-mislukt' THEN p_reden = 'technisch'
        WHEN 'verlopen' THEN p_reden = 'verlopen'
        WHEN 'geannuleerd' THEN p_reden = 'geannuleerd'
        ELSE p_reden IS NULL
    END IS TRUE
$$;
COMMENT ON FUNCTION nmc.reden_fits(nmc.notificatie_status, nmc.reden) IS
'True when the reason fits the status: a coarse reason on the terminal failures, none '
'elsewhere (mirrors the table check notificatie_reden_past).';
