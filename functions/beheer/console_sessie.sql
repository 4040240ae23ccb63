-- The console's sessions (schema/0030_console_sessie.sql) and the actions that name one.
-- The console verifies an operator's IAM token once (at the login form, or on every request
-- from the platform's proxy) and opens a session here; every later request and every action
-- names the session, and the operator in the audit trail is the session's. The expiry is
-- the NMC clock's: the console passes how long the token still lives, capped.

CREATE OR REPLACE FUNCTION nmc.console_open_sessie(
    p_sessie_hash bytea, p_subject text, p_mag_handelen boolean, p_duur interval
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- A console session lasts at most a working day, however long the token lives.
    v_verloopt_op CONSTANT timestamptz := nmc.now() + least(p_duur, interval '8 hours');
    v_csrf text;
BEGIN
    IF p_duur <= interval '0' THEN
        RAISE EXCEPTION 'the token has expired' USING ERRCODE = '22023';
    END IF;
    -- Housekeeping: sessions that ended more than a day ago.
    DELETE FROM nmc.console_sessie AS s
    WHERE s.verloopt_op < nmc.now() - interval '1 day'
        OR s.ingetrokken_op < nmc.now() - interval '1 day';
    -- The same hash again is the proxy's bearer token on its next request: the session
    -- keeps its CSRF token (a form shown before still posts) unless it was ended.
    INSERT INTO nmc.console_sessie AS s (
        sessie_hash, subject, mag_handelen, csrf, aangemaakt_op, verloopt_op
    )
    VALUES (
        p_sessie_hash, p_subject, p_mag_handelen,
        pg_catalog.replace(
            pg_catalog.gen_random_uuid()::text || pg_catalog.gen_random_uuid()::text, '-', ''
        ),
        nmc.now(), v_verloopt_op
    )
    ON CONFLICT (sessie_hash) DO UPDATE
    SET subject = excluded.subject, mag_handelen = excluded.mag_handelen,
        verloopt_op = greatest(s.verloopt_op, excluded.verloopt_op)
    WHERE s.ingetrokken_op IS NULL
    RETURNING s.csrf INTO v_csrf;
    IF v_csrf IS NULL THEN
        RAISE EXCEPTION 'this session was ended' USING ERRCODE = '42501';
    END IF;
    RETURN v_csrf;
END
$$;
COMMENT ON FUNCTION nmc.console_open_sessie(bytea, text, boolean, interval) IS
'Opens (or, for the same hash, prolongs) a console session after the console verified the '
'operator''s IAM token: the SHA-256 of the session id, the IAM subject, whether the role may '
'act, and how long the token still lives (p_duur, at most 8 hours; 22023 when not positive). '
'It ends at nmc.now() + that. Returns the session''s CSRF token; 42501 for a session ended '
'by a logout. Removes sessions that ended more than a day ago.';

CREATE OR REPLACE FUNCTION nmc.console_sessie(p_sessie_hash bytea)
RETURNS TABLE (subject text, mag_handelen boolean, csrf text, verloopt_op timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.subject, s.mag_handelen, s.csrf, s.verloopt_op
    FROM nmc.console_sessie AS s
    WHERE s.sessie_hash = p_sessie_hash
        AND s.ingetrokken_op IS NULL
        AND s.verloopt_op > nmc.now()
$$;
COMMENT ON FUNCTION nmc.console_sessie(bytea) IS
'The live console session with this SHA-256 of its id (no row: unknown, expired by '
'nmc.now() or ended): the IAM subject, whether it may act, its CSRF token and its end.';

CREATE OR REPLACE FUNCTION nmc.console_sluit_sessie(p_sessie_hash bytea)
RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gesloten AS (
        UPDATE nmc.console_sessie AS s SET ingetrokken_op = nmc.now()
        WHERE s.sessie_hash = p_sessie_hash AND s.ingetrokken_op IS NULL
        RETURNING 1
    )

    SELECT EXISTS (SELECT 1 FROM gesloten)
$$;
COMMENT ON FUNCTION nmc.console_sluit_sessie(bytea) IS
'Logout: ends the console session for good (a copy of its cookie opens nothing any more). '
'True when a live session was ended.';

CREATE OR REPLACE FUNCTION nmc.console_door(p_sessie_hash bytea)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_sessie record;
BEGIN
    SELECT * INTO v_sessie FROM nmc.console_sessie(p_sessie_hash) AS s;
    IF NOT FOUND OR NOT v_sessie.mag_handelen THEN
        RAISE EXCEPTION 'no live console session of the operator role'
            USING ERRCODE = '42501';
    END IF;
    RETURN pg_catalog.left('console:' || v_sessie.subject, 100);
END
$$;
COMMENT ON FUNCTION nmc.console_door(bytea) IS
'Who acts, for the audit trail (nmc.beheeractie.door): console:<subject> of the live '
'console session, which must be of the operator role; 42501 otherwise. Not granted: read '
'by the console''s _v2 actions.';

CREATE OR REPLACE FUNCTION nmc.console_reopen_taak_v2(
    p_taak_id bigint, p_toelichting text, p_sessie_hash bytea
)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM nmc.reopen_taak(p_taak_id, p_toelichting, nmc.console_door(p_sessie_hash));
END
$$;
COMMENT ON FUNCTION nmc.console_reopen_taak_v2(bigint, text, bytea) IS
'The console''s reopen by the operator of a live session (nmc.console_door, 42501): '
'nmc.reopen_taak (mislukt only, NM020 otherwise), audited. Replaces '
'nmc.console_reopen_taak, whose caller named the operator.';

CREATE OR REPLACE FUNCTION nmc.console_force_transition_v2(
    p_notificatie_id uuid, p_naar nmc.notificatie_status, p_reden nmc.reden,
    p_toelichting text, p_sessie_hash bytea
)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN nmc.force_transition(
        p_notificatie_id, p_naar, p_reden, p_toelichting, nmc.console_door(p_sessie_hash)
    );
END
$$;
COMMENT ON FUNCTION nmc.console_force_transition_v2(
    uuid, nmc.notificatie_status, nmc.reden, text, bytea
) IS
'The console''s forced transition by the operator of a live session (nmc.console_door, '
'42501): nmc.force_transition (allowed pairs only: NM001; a fitting reason: NM013; NM005 '
'not found), audited. Returns the new version. Replaces nmc.console_force_transition.';

CREATE OR REPLACE FUNCTION nmc.resume_webhook_beheer_v2(
    p_dv_id integer, p_toelichting text, p_sessie_hash bytea
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN nmc.resume_webhook_beheer(p_dv_id, p_toelichting, nmc.console_door(p_sessie_hash));
END
$$;
COMMENT ON FUNCTION nmc.resume_webhook_beheer_v2(integer, text, bytea) IS
'The console''s webhook resume by the operator of a live session (nmc.console_door, 42501): '
'nmc.resume_webhook_beheer (NM005 without a webhook), audited. Replaces '
'nmc.resume_webhook_beheer as the console''s call.';
