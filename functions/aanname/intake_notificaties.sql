-- Intake (SPEC §7): notifications, their first send task and first event, in the caller's
-- transaction; idempotent on (DV, dvRef HMAC, payload HMAC); quota per minute and day.
--
-- The payload HMAC is keyed with the `payload` pepper (its version on the row), never a
-- plain hash of the request: the request holds the recipient, and a plain hash would let
-- anyone holding the database test candidate addresses or BSNs offline. Rows stored before
-- the payload pepper carry the unkeyed SHA-256 with payload_pepper_versie 0; erasure
-- clears that hash (nmc.process_wissen).

CREATE OR REPLACE FUNCTION nmc.intake_notificaties_v4(
    p_dv_id integer,
    p_regie nmc.regie,
    p_pepper_versie smallint,
    p_payload_pepper_versie smallint,
    p_kek_id text,
    p_batch_id uuid,
    p_ids uuid[],
    p_berichttypen text[],
    p_dvref_hmacs bytea[],
    p_payload_hmacs bytea[],
    p_ontvangers bytea[],
    p_gegevens bytea[],
    p_sleutels bytea[],
    p_geldig_tot timestamptz[],
    p_trace_ids text[],
    p_span_ids text[],
    p_diensten text[],
    p_namen text[],
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hashes bytea[] DEFAULT NULL
)
RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_nu CONSTANT timestamptz := nmc.now();
    v_n CONSTANT integer := coalesce(pg_catalog.cardinality(p_ids), 0);
    v_dv nmc.dienstverlener;
    v_fout_berichttype integer;
    v_fout_geldig integer;
    v_fout_payload integer;
    v_fout_verdwenen integer;
    v_fout_namen integer;
    v_ontbrekend text[];
    v_sha256_nodig boolean;
    v_nieuw integer;
    v_uit_ids uuid [];
    v_uit_nieuw boolean [];
    v_k integer;
    v_kp integer;
    v_oud_nrs bigint [];
    v_oud_ids uuid [];
    v_oud_hashes bytea [];
    v_oud_versies smallint [];
BEGIN
    IF v_n = 0 OR v_n > 1000 OR pg_catalog.cardinality(p_berichttypen) <> v_n
        OR pg_catalog.cardinality(p_dvref_hmacs) <> v_n
        OR pg_catalog.cardinality(p_payload_hmacs) <> v_n
        OR pg_catalog.cardinality(p_ontvangers) <> v_n
        OR pg_catalog.cardinality(p_gegevens) <> v_n
        OR pg_catalog.cardinality(p_sleutels) <> v_n
        OR pg_catalog.cardinality(p_geldig_tot) <> v_n
        OR pg_catalog.cardinality(p_trace_ids) <> v_n
        OR coalesce(pg_catalog.cardinality(p_span_ids), v_n) <> v_n
        OR pg_catalog.cardinality(p_diensten) <> v_n
        OR coalesce(pg_catalog.cardinality(p_namen), v_n) <> v_n
        OR coalesce(pg_catalog.cardinality(p_sha256_hashes), v_n) <> v_n THEN
        RAISE EXCEPTION 'intake takes 1 to 1000 items with every array of the same length'
            USING ERRCODE = 'NM016';
    END IF;
    IF p_payload_pepper_versie IS NULL OR p_payload_pepper_versie < 0 THEN
        RAISE EXCEPTION 'the payload pepper version is 0 (unkeyed, before the pepper) or more'
            USING ERRCODE = 'NM016';
    END IF;
    v_k := coalesce(pg_catalog.cardinality(p_vorige_hmacs), 0) / v_n;
    v_kp := coalesce(pg_catalog.cardinality(p_vorige_payload_hmacs), 0) / v_n;
    IF coalesce(pg_catalog.cardinality(p_vorige_hmacs), 0) <> v_k * v_n
        OR coalesce(pg_catalog.cardinality(p_vorige_payload_hmacs), 0) <> v_kp * v_n THEN
        RAISE EXCEPTION 'earlier-pepper HMACs come in the same number for every item'
            USING ERRCODE = 'NM016';
    END IF;

    SELECT * INTO v_dv FROM nmc.dienstverlener AS d WHERE d.dv_id = p_dv_id AND d.actief;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown or inactive dienstverlener' USING ERRCODE = 'NM010';
    END IF;

    -- Refusals that need no stored notification, first offending item first; DETAIL is
    -- the 0-based item index.
    SELECT
        pg_catalog.min(u.nr - 1) FILTER (
            WHERE NOT coalesce(b.actief AND p_regie = ANY(b.regie_toegestaan), false)
        ),
        pg_catalog.min(u.nr - 1) FILTER (
            WHERE u.geldig_tot <= v_nu OR u.geldig_tot > v_nu + b.geldigheid_max
        ),
        -- The template as NotifyNL last answered (nmc.notifynl_template): gone, or with a
        -- placeholder the item's berichtgegevens lack (p_namen: each item's names,
        -- normalized as NotifyNL matches them, space-separated; normalizing removes every
        -- space, so a name never holds one). A template not read yet is not checked. NULL
        -- p_namen (a caller of the previous release) checks neither, as before.
        pg_catalog.min(u.nr - 1) FILTER (WHERE p_namen IS NOT NULL AND t.staat = 'verdwenen'),
        pg_catalog.min(u.nr - 1) FILTER (
            WHERE p_namen IS NOT NULL AND t.staat = 'beschikbaar'
            AND NOT t.sleutels OPERATOR(pg_catalog.<@) pg_catalog.string_to_array(u.namen, ' ')
        )
    INTO v_fout_berichttype, v_fout_geldig, v_fout_verdwenen, v_fout_namen
    FROM unnest(p_berichttypen, p_geldig_tot, coalesce(p_namen, ARRAY[]::text []))
        WITH ORDINALITY AS u (berichttype, geldig_tot, namen, nr)
    LEFT JOIN nmc.berichttype AS b ON b.dv_id = p_dv_id AND b.code = u.berichttype
    LEFT JOIN nmc.notifynl_template AS t
        ON t.notify_service = b.notify_service AND t.template_id = b.notifynl_template_id;
    IF v_fout_berichttype IS NOT NULL THEN
        RAISE EXCEPTION 'berichttype not allowed for this dienstverlener and regie %', p_regie
            USING ERRCODE = 'NM008', DETAIL = v_fout_berichttype::text;
    END IF;
    IF v_fout_verdwenen IS NOT NULL THEN
        RAISE EXCEPTION 'the NotifyNL template of this berichttype is gone: it is unavailable'
            USING ERRCODE = 'NM033', DETAIL = v_fout_verdwenen::text;
    END IF;
    IF v_fout_geldig IS NOT NULL THEN
        RAISE EXCEPTION 'geldig_tot must lie after now and within the berichttype maximum'
            USING ERRCODE = 'NM014', DETAIL = v_fout_geldig::text;
    END IF;
    IF v_fout_namen IS NOT NULL THEN
        -- The template's names (never values) the first offending item lacks, in the
        -- template's order; HINT carries them as a JSON array.
        SELECT pg_catalog.array_agg(p.naam ORDER BY p.nr) INTO v_ontbrekend
        FROM nmc.berichttype AS b
        INNER JOIN nmc.notifynl_template AS t
            ON t.notify_service = b.notify_service AND t.template_id = b.notifynl_template_id
        CROSS JOIN LATERAL unnest(t.placeholders, t.sleutels) WITH ORDINALITY AS p (naam, sleutel, nr)
        WHERE b.dv_id = p_dv_id AND b.code = p_berichttypen[v_fout_namen + 1]
            AND p.sleutel <> ALL(pg_catalog.string_to_array(p_namen[v_fout_namen + 1], ' '));
        RAISE EXCEPTION 'the berichtgegevens lack placeholders of the berichttype''s template'
            USING ERRCODE = 'NM032', DETAIL = v_fout_namen::text,
            HINT = pg_catalog.to_jsonb(v_ontbrekend)::text;
    END IF;

    -- While peppers rotate, a dvRef accepted under an earlier version is a replay too: its
    -- stored row, per item (the oldest when several), is answered instead of a new one.
    IF v_k > 0 THEN
        SELECT
            pg_catalog.array_agg(f.nr),
            pg_catalog.array_agg(f.id),
            pg_catalog.array_agg(f.payload_hash),
            pg_catalog.array_agg(f.payload_pepper_versie)
        INTO v_oud_nrs, v_oud_ids, v_oud_hashes, v_oud_versies
        FROM (
            SELECT DISTINCT ON (v.nr)
                v.nr,
                x.id,
                x.payload_hash,
                x.payload_pepper_versie
            FROM (
                SELECT (o.plek - 1) / v_k + 1 AS nr, o.hmac
                FROM unnest(p_vorige_hmacs) WITH ORDINALITY AS o (hmac, plek)
            ) AS v
            INNER JOIN nmc.notificatie AS x ON x.dv_id = p_dv_id AND x.dvref_hmac = v.hmac
            ORDER BY v.nr, x.aangenomen_op
        ) AS f;
    END IF;

    -- Insert first, judge after: the first item per dvRef is inserted; a stored dvRef (also
    -- one a concurrent intake just committed) is skipped by ON CONFLICT. The common batch
    -- (all new) so needs no index probe beyond the insert's own. A refusal below (409,
    -- quota) rolls the whole statement back: nothing of the batch stays.
    WITH nieuwe_notificatie AS (
        INSERT INTO nmc.notificatie (
            id, dv_id, berichttype, regie, status, reden, versie, geldig_tot, dvref_hmac,
            pepper_versie, payload_hash, payload_pepper_versie, batch_id, dienst, trace_id,
            intake_span_id, ontvanger_versleuteld, gegevens_versleuteld, sleutel_gewrapt,
            kek_id, aangenomen_op, bijgewerkt_op, dv_naam, notifynl_template_id
        )
        SELECT DISTINCT ON (u.hmac)
            u.id, p_dv_id, u.berichttype, p_regie, 'aangenomen', NULL, 1,
            coalesce(u.geldig_tot, v_nu + b.geldigheid_standaard), u.hmac, p_pepper_versie,
            u.hash, p_payload_pepper_versie, p_batch_id, u.dienst, u.trace_id,
            u.span_id, u.ontvanger, u.gegevens, u.sleutel, p_kek_id, v_nu, v_nu,
            -- What the delivery proof names, as it is now: a later re-onboarding must not
            -- rewrite it.
            v_dv.naam, b.notifynl_template_id
        FROM unnest(
            p_ids, p_berichttypen, p_dvref_hmacs, p_payload_hmacs, p_ontvangers, p_gegevens,
            p_sleutels, p_geldig_tot, p_trace_ids, p_diensten, p_span_ids
        ) WITH ORDINALITY AS u (
            id, berichttype, hmac, hash, ontvanger, gegevens, sleutel, geldig_tot, trace_id,
            dienst, span_id, nr
        )
        INNER JOIN nmc.berichttype AS b ON b.dv_id = p_dv_id AND b.code = u.berichttype
        WHERE v_oud_nrs IS NULL OR u.nr <> ALL(v_oud_nrs)
        ORDER BY u.hmac, u.nr
        ON CONFLICT (dv_id, dvref_hmac) DO NOTHING
        RETURNING id, trace_id, berichttype
    ),

    eerste_event AS (
        INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
        SELECT nn.id, p_dv_id, 1, NULL, 'aangenomen', NULL, v_nu FROM nieuwe_notificatie AS nn
    ),

    eerste_taak AS (
        INSERT INTO nmc.taak (
            soort, dv_id, notificatie_id, berichttype, due, trace_id, aangemaakt_op
        )
        SELECT 'verzenden', p_dv_id, nn.id, nn.berichttype, v_nu, nn.trace_id, v_nu
        FROM nieuwe_notificatie AS nn
    )

    SELECT pg_catalog.count(*)::integer INTO v_nieuw FROM nieuwe_notificatie;

    IF v_nieuw = v_n THEN
        -- Every item stored its own row.
        v_uit_ids := p_ids;
        v_uit_nieuw := pg_catalog.array_fill(true, ARRAY[v_n]);
    ELSE
        -- Replays and duplicates within the batch map to the stored row, which must carry
        -- the same payload (also when a concurrent intake stored it a moment ago): its
        -- HMAC under the current or an earlier live payload pepper version, or, for a row
        -- from before the payload pepper (version 0), the unkeyed SHA-256. A row whose
        -- unkeyed hash was erased can no longer be compared: another payload (409).
        SELECT
            pg_catalog.array_agg(s.id ORDER BY s.nr),
            pg_catalog.array_agg(s.id = s.eigen_id ORDER BY s.nr),
            pg_catalog.min(s.nr - 1) FILTER (WHERE NOT s.gelijk),
            pg_catalog.bool_or(
                NOT s.gelijk AND s.versie = 0 AND s.hash IS NOT NULL AND p_sha256_hashes IS NULL
            )
        INTO v_uit_ids, v_uit_nieuw, v_fout_payload, v_sha256_nodig
        FROM (
            SELECT
                u.nr,
                u.id AS eigen_id,
                coalesce(o.id, n.id) AS id,
                coalesce(o.payload_hash, n.payload_hash) AS hash,
                coalesce(o.versie, n.payload_pepper_versie) AS versie,
                coalesce(
                    coalesce(o.payload_hash, n.payload_hash) = u.hash
                    OR coalesce(o.payload_hash, n.payload_hash) = ANY(
                        p_vorige_payload_hmacs[(u.nr - 1) * v_kp + 1:u.nr * v_kp]
                    )
                    OR (
                        coalesce(o.versie, n.payload_pepper_versie) = 0
                        AND coalesce(o.payload_hash, n.payload_hash) = p_sha256_hashes[u.nr]
                    ),
                    false
                ) AS gelijk
            FROM unnest(p_ids, p_dvref_hmacs, p_payload_hmacs) WITH ORDINALITY AS u (
                id, hmac, hash, nr
            )
            LEFT JOIN unnest(v_oud_nrs, v_oud_ids, v_oud_hashes, v_oud_versies)
                AS o (nr, id, payload_hash, versie)
                ON u.nr = o.nr
            LEFT JOIN LATERAL (
                SELECT x.id, x.payload_hash, x.payload_pepper_versie FROM nmc.notificatie AS x
                WHERE x.dv_id = p_dv_id AND x.dvref_hmac = u.hmac AND o.nr IS NULL
                LIMIT 1
            ) AS n ON true
        ) AS s;
        IF v_sha256_nodig THEN
            -- Not a refusal: the shell calls again with p_sha256_hashes (nothing is kept).
            RAISE EXCEPTION 'a replay of a row stored before the payload pepper needs the '
                'unkeyed payload hashes to be judged'
                USING ERRCODE = 'NMP01';
        END IF;
        IF v_fout_payload IS NOT NULL THEN
            RAISE EXCEPTION 'this dvRef was accepted before with another payload'
                USING ERRCODE = 'NM007', DETAIL = v_fout_payload::text;
        END IF;
    END IF;

    -- Quota count what is new (replays are free). Checked after the insert so that the
    -- common path probes nothing twice; a refusal rolls the insert back (a DV beyond its
    -- quota leaves dead rows for autovacuum, never stored notifications).
    IF v_nieuw > 0 THEN
        PERFORM nmc.take_intake_quotum(v_dv, v_nieuw, v_nu);
    END IF;

    RETURN QUERY
    SELECT (u.nr - 1)::integer, u.id, u.nieuw
    FROM unnest(v_uit_ids, v_uit_nieuw) WITH ORDINALITY AS u (id, nieuw, nr)
    ORDER BY u.nr;
END
$$;
COMMENT ON FUNCTION nmc.intake_notificaties_v4(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], text[], text[], bytea[], bytea[],
    bytea[]
) IS
'Accepts 1 to 1000 notifications of one DV and regie in the caller''s transaction: per '
'new item the notificatie (version 1, aangenomen), its first event and its verzenden task '
'(due now). Parallel arrays, one element per item (p_trace_ids: the W3C trace id of each '
'item''s request, p_span_ids: the span id of its intake span, stored as intake_span_id; '
'NULL p_span_ids stores none); ids are generated by the shell (the '
'ciphertext is bound to them). p_payload_hmacs: the keyed HMAC of each canonical request '
'under payload pepper version p_payload_pepper_versie (stored with it). Idempotent: an '
'item whose (DV, dvRef HMAC) exists with the same payload returns the stored id with '
'nieuw = false; the same dvRef within the batch too. While peppers rotate, '
'p_vorige_hmacs (dvRef) and p_vorige_payload_hmacs (payload) hold each item''s HMACs '
'under the earlier live versions, k per item, item by item, so a request accepted under '
'an earlier version is still a replay. A replay of a row from before the payload pepper '
'(payload_pepper_versie 0, an unkeyed SHA-256) raises NMP01 unless p_sha256_hashes holds '
'each item''s SHA-256: the shell then calls again with them. Refusals (DETAIL = 0-based '
'item index): NM008 berichttype not allowed for the DV and regie, NM033 its NotifyNL '
'template is gone (unavailable), NM014 geldig_tot not '
'after now or beyond the berichttype maximum, NM032 the item''s p_namen (its '
'berichtgegevens names normalized as NotifyNL matches them, space-separated) lack a '
'placeholder of the template (HINT: the missing names as a JSON array; NULL p_namen '
'checks neither template rule), NM007 same dvRef with another payload (also '
'when an erased row''s unkeyed hash is gone). NM010 unknown DV, NM009 quota, NM016 bad '
'arrays.';

CREATE OR REPLACE FUNCTION nmc.intake_notificaties_v3(
    p_dv_id integer,
    p_regie nmc.regie,
    p_pepper_versie smallint,
    p_payload_pepper_versie smallint,
    p_kek_id text,
    p_batch_id uuid,
    p_ids uuid[],
    p_berichttypen text[],
    p_dvref_hmacs bytea[],
    p_payload_hmacs bytea[],
    p_ontvangers bytea[],
    p_gegevens bytea[],
    p_sleutels bytea[],
    p_geldig_tot timestamptz[],
    p_trace_ids text[],
    p_diensten text[],
    p_namen text[],
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hashes bytea[] DEFAULT NULL
)
RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.item, r.notificatie_id, r.nieuw
    FROM nmc.intake_notificaties_v4(
        p_dv_id, p_regie, p_pepper_versie, p_payload_pepper_versie, p_kek_id, p_batch_id,
        p_ids, p_berichttypen, p_dvref_hmacs, p_payload_hmacs, p_ontvangers, p_gegevens,
        p_sleutels, p_geldig_tot, p_trace_ids, NULL, p_diensten, p_namen, p_vorige_hmacs,
        p_vorige_payload_hmacs, p_sha256_hashes
    ) AS r
$$;
COMMENT ON FUNCTION nmc.intake_notificaties_v3(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], text[], bytea[], bytea[], bytea[]
) IS
'The batch intake of the release before the intake span was kept (superseded by '
'nmc.intake_notificaties_v4; kept for a rolling deploy, to be dropped in a later release): '
'nmc.intake_notificaties_v4 without span ids (intake_span_id stays NULL).';

CREATE OR REPLACE FUNCTION nmc.intake_notificaties_v2(
    p_dv_id integer,
    p_regie nmc.regie,
    p_pepper_versie smallint,
    p_payload_pepper_versie smallint,
    p_kek_id text,
    p_batch_id uuid,
    p_ids uuid[],
    p_berichttypen text[],
    p_dvref_hmacs bytea[],
    p_payload_hmacs bytea[],
    p_ontvangers bytea[],
    p_gegevens bytea[],
    p_sleutels bytea[],
    p_geldig_tot timestamptz[],
    p_trace_ids text[],
    p_diensten text[],
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hashes bytea[] DEFAULT NULL
)
RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.item, r.notificatie_id, r.nieuw
    FROM nmc.intake_notificaties_v3(
        p_dv_id, p_regie, p_pepper_versie, p_payload_pepper_versie, p_kek_id, p_batch_id,
        p_ids, p_berichttypen, p_dvref_hmacs, p_payload_hmacs, p_ontvangers, p_gegevens,
        p_sleutels, p_geldig_tot, p_trace_ids, p_diensten, NULL, p_vorige_hmacs,
        p_vorige_payload_hmacs, p_sha256_hashes
    ) AS r
$$;
COMMENT ON FUNCTION nmc.intake_notificaties_v2(
    integer, nmc.regie, smallint, smallint, text, uuid, uuid[], text[], bytea[], bytea[],
    bytea[], bytea[], bytea[], timestamptz[], text[], text[], bytea[], bytea[], bytea[]
) IS
'The batch intake of the release before the template check (superseded by '
'nmc.intake_notificaties_v3; kept for a rolling deploy, to be dropped in a later release): '
'nmc.intake_notificaties_v3 without berichtgegevens names, so neither template rule '
'(placeholders, a template gone) applies, as in that release.';

CREATE OR REPLACE FUNCTION nmc.intake_notificatie_v4(
    p_notificatie_id uuid,
    p_dv_id integer,
    p_berichttype text,
    p_regie nmc.regie,
    p_dvref_hmac bytea,
    p_pepper_versie smallint,
    p_payload_hmac bytea,
    p_payload_pepper_versie smallint,
    p_ontvanger bytea,
    p_gegevens bytea,
    p_sleutel bytea,
    p_kek_id text,
    p_geldig_tot timestamptz,
    p_batch_id uuid,
    p_trace_id text,
    p_span_id text,
    p_dienst text,
    p_namen text,
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hash bytea DEFAULT NULL
)
RETURNS TABLE (notificatie_id uuid, nieuw boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.notificatie_id, r.nieuw
    FROM nmc.intake_notificaties_v4(
        p_dv_id, p_regie, p_pepper_versie, p_payload_pepper_versie, p_kek_id, p_batch_id,
        ARRAY[p_notificatie_id], ARRAY[p_berichttype], ARRAY[p_dvref_hmac],
        ARRAY[p_payload_hmac], ARRAY[p_ontvanger], ARRAY[p_gegevens], ARRAY[p_sleutel],
        ARRAY[p_geldig_tot], ARRAY[p_trace_id],
        CASE WHEN p_span_id IS NOT NULL THEN ARRAY[p_span_id] END, ARRAY[p_dienst],
        CASE WHEN p_namen IS NOT NULL THEN ARRAY[p_namen] END, p_vorige_hmacs,
        p_vorige_payload_hmacs,
        CASE WHEN p_sha256_hash IS NOT NULL THEN ARRAY[p_sha256_hash] END
    ) AS r
$$;
COMMENT ON FUNCTION nmc.intake_notificatie_v4(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, text, text, bytea[], bytea[], bytea
) IS
'Accepts one notification: nmc.intake_notificaties_v4 with one item (p_trace_id and '
'p_span_id: the trace id and the intake span id of its request; p_namen: its '
'berichtgegevens names, normalized and space-separated; p_vorige_hmacs and '
'p_vorige_payload_hmacs: its HMACs under earlier live pepper versions; p_sha256_hash: the '
'unkeyed hash, only after NMP01). Returns the id (the stored one on an idempotent replay) '
'and whether it is new.';

CREATE OR REPLACE FUNCTION nmc.intake_notificatie_v3(
    p_notificatie_id uuid,
    p_dv_id integer,
    p_berichttype text,
    p_regie nmc.regie,
    p_dvref_hmac bytea,
    p_pepper_versie smallint,
    p_payload_hmac bytea,
    p_payload_pepper_versie smallint,
    p_ontvanger bytea,
    p_gegevens bytea,
    p_sleutel bytea,
    p_kek_id text,
    p_geldig_tot timestamptz,
    p_batch_id uuid,
    p_trace_id text,
    p_dienst text,
    p_namen text,
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hash bytea DEFAULT NULL
)
RETURNS TABLE (notificatie_id uuid, nieuw boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.notificatie_id, r.nieuw
    FROM nmc.intake_notificatie_v4(
        p_notificatie_id, p_dv_id, p_berichttype, p_regie, p_dvref_hmac, p_pepper_versie,
        p_payload_hmac, p_payload_pepper_versie, p_ontvanger, p_gegevens, p_sleutel, p_kek_id,
        p_geldig_tot, p_batch_id, p_trace_id, NULL, p_dienst, p_namen, p_vorige_hmacs,
        p_vorige_payload_hmacs, p_sha256_hash
    ) AS r
$$;
COMMENT ON FUNCTION nmc.intake_notificatie_v3(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, text, bytea[], bytea[], bytea
) IS
'The single intake of the release before the intake span was kept (superseded by '
'nmc.intake_notificatie_v4; kept for a rolling deploy, to be dropped in a later release): '
'nmc.intake_notificatie_v4 without a span id.';

CREATE OR REPLACE FUNCTION nmc.intake_notificatie_v2(
    p_notificatie_id uuid,
    p_dv_id integer,
    p_berichttype text,
    p_regie nmc.regie,
    p_dvref_hmac bytea,
    p_pepper_versie smallint,
    p_payload_hmac bytea,
    p_payload_pepper_versie smallint,
    p_ontvanger bytea,
    p_gegevens bytea,
    p_sleutel bytea,
    p_kek_id text,
    p_geldig_tot timestamptz,
    p_batch_id uuid,
    p_trace_id text,
    p_dienst text DEFAULT NULL,
    p_vorige_hmacs bytea[] DEFAULT NULL,
    p_vorige_payload_hmacs bytea[] DEFAULT NULL,
    p_sha256_hash bytea DEFAULT NULL
)
RETURNS TABLE (notificatie_id uuid, nieuw boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.notificatie_id, r.nieuw
    FROM nmc.intake_notificatie_v3(
        p_notificatie_id, p_dv_id, p_berichttype, p_regie, p_dvref_hmac, p_pepper_versie,
        p_payload_hmac, p_payload_pepper_versie, p_ontvanger, p_gegevens, p_sleutel, p_kek_id,
        p_geldig_tot, p_batch_id, p_trace_id, p_dienst, NULL, p_vorige_hmacs,
        p_vorige_payload_hmacs, p_sha256_hash
    ) AS r
$$;
COMMENT ON FUNCTION nmc.intake_notificatie_v2(
    uuid, integer, text, nmc.regie, bytea, smallint, bytea, smallint, bytea, bytea, bytea,
    text, timestamptz, uuid, text, text, bytea[], bytea[], bytea
) IS
'The single intake of the release before the template check (superseded by '
'nmc.intake_notificatie_v3; kept for a rolling deploy, to be dropped in a later release): '
'nmc.intake_notificatie_v3 without berichtgegevens names (neither template rule applies).';
