-- Status reads for the DV (SPEC §7): the delivery proof, without any personal data.

CREATE OR REPLACE FUNCTION nmc.notificatie_json(p_notificatie nmc.notificatie)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'notificatieId', p_notificatie.id,
        'berichtType', p_notificatie.berichttype,
        'regie', p_notificatie.regie,
        'status', p_notificatie.status,
        'reden', p_notificatie.reden,
        'versie', p_notificatie.versie,
        'aangenomenOp', p_notificatie.aangenomen_op,
        'bijgewerktOp', p_notificatie.bijgewerkt_op,
        'geldigTot', p_notificatie.geldig_tot,
        'pogingen', coalesce((
            SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'nummer', p.nummer,
                'status', p.status,
                'verzondenOp', p.verzonden_op,
                'afgerondOp', p.afgerond_op
            ) ORDER BY p.nummer)
            FROM nmc.poging AS p
            WHERE p.notificatie_id = p_notificatie.id
        ), '[]'::jsonb)
    )
$$;
COMMENT ON FUNCTION nmc.notificatie_json(nmc.notificatie) IS
'The DV-facing JSON of one notification with its attempts (status, version, source '
'timestamps): the delivery proof. Never the recipient, the personalisation or dvRef.';

CREATE OR REPLACE FUNCTION nmc.get_notificatie(p_dv_id integer, p_notificatie_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_json jsonb;
BEGIN
    SELECT nmc.notificatie_json(n) INTO v_json
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id AND n.dv_id = p_dv_id;
    IF v_json IS NULL THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;
    RETURN v_json;
END
$$;
COMMENT ON FUNCTION nmc.get_notificatie(integer, uuid) IS
'One notification of the caller DV as JSON (nmc.notificatie_json). NM005 when it does '
'not exist or belongs to another DV: the two are indistinguishable.';

CREATE OR REPLACE FUNCTION nmc.find_notificaties(
    p_dv_id integer,
    p_dvref_hmacs bytea[],
    p_limiet integer DEFAULT 100,
    p_voor_aangenomen_op timestamptz DEFAULT NULL,
    p_voor_id uuid DEFAULT NULL
)
RETURNS SETOF jsonb
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.notificatie_json(n)
    FROM nmc.notificatie AS n
    WHERE n.dv_id = p_dv_id
        AND n.dvref_hmac = ANY(p_dvref_hmacs)
        AND (p_voor_aangenomen_op IS NULL
             OR (n.aangenomen_op, n.id) < (p_voor_aangenomen_op, p_voor_id))
    ORDER BY n.aangenomen_op DESC, n.id DESC
    LIMIT least(greatest(p_limiet, 1), 1000)
$$;
COMMENT ON FUNCTION nmc.find_notificaties(integer, bytea[], integer, timestamptz, uuid) IS
'The caller DV''s notifications whose dvRef HMAC is one of p_dvref_hmacs (one per live '
'pepper version), newest first; keyset pagination on (aangenomen_op, id) of the last row.';
