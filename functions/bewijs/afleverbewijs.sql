-- The delivery proof (afleverbewijs) and the history (geschiedenis) of one notification
-- (SPEC §7): the event chain, the attempts with every receipt (source times), the
-- settlement and the final status, without any personal data. One call per request; the
-- API signs the proof (nmc.signing.afleverbewijs_signing). Served while the notification is kept,
-- also after its data key is erased: nothing here reads the sealed columns.
--
-- Times are rendered in UTC and intervals as ISO 8601 durations whatever the session's
-- settings, so the final proof is the same text at every later request but for its issue
-- time. Receipts judged after the final status that changed nothing are left out of the
-- proof (they do not count, SPEC §4) and shown in the history. The helpers are PL/pgSQL,
-- not SQL: their plans are kept per session, where a SQL function with a SET clause is
-- planned again at every call.

CREATE OR REPLACE FUNCTION nmc.bewijs_events_json_v2(
    p_notificatie_id uuid, p_na_sequence integer, p_limiet integer, p_vanaf_xid xid8
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
-- Generic: a custom plan would prune at planning time but is planned at every call (the
-- generic plan's estimate counts every partition, so the plan cache never picks it itself).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
            'eventId', e.event_id,
            'sequence', e.sequence,
            'van', e.van,
            'naar', e.naar,
            'reden', e.reden,
            'tijdstip', e.tijdstip
        ) ORDER BY e.sequence, e.event_id), '[]'::jsonb)
        FROM (
            -- xid from p_vanaf_xid on: the partitions below it are pruned when the
            -- statement starts, not probed one by one for this notification.
            SELECT x.* FROM nmc.event AS x
            WHERE x.notificatie_id = p_notificatie_id AND x.sequence > p_na_sequence
                AND x.xid >= coalesce(p_vanaf_xid, '0'::xid8)
            ORDER BY x.sequence, x.event_id
            LIMIT p_limiet
        ) AS e
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_events_json_v2(uuid, integer, integer, xid8) IS
'The events of one notification after sequence p_na_sequence, at most p_limiet (NULL: '
'all), in sequence order, as the delivery proof shows them, read from the event partitions '
'from p_vanaf_xid on (the notification''s aanname_xid; NULL: every partition). Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_events_json(
    p_notificatie_id uuid, p_na_sequence integer, p_limiet integer
)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.bewijs_events_json_v2(p_notificatie_id, p_na_sequence, p_limiet, NULL)
$$;
COMMENT ON FUNCTION nmc.bewijs_events_json(uuid, integer, integer) IS
'Kept for the previous release: nmc.bewijs_events_json_v2 over every event partition. '
'Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_receipt_json(p_h nmc.receiptgeschiedenis)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT pg_catalog.jsonb_build_object(
            'status', p_h.status,
            'bron', p_h.bron,
            'notifynlId', p_h.notifynl_id,
            'afgerondOp', p_h.completed_at,
            'verzondenOp', p_h.sent_at,
            'ontvangenOp', p_h.ontvangen_op,
            'toegepast', p_h.toegepast,
            'resultaat', p_h.resultaat,
            'templateId', p_h.template_id,
            'templateVersie', p_h.template_versie
        )
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_receipt_json(nmc.receiptgeschiedenis) IS
'One receipt as the delivery proof shows it: NotifyNL''s status and id, its completed_at '
'(the source time) and sent_at, when the NMC received it, the source (callback, navraag), '
'whether it changed the outcome and what it did, and the template from the receipt. '
'Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_pogingen_json(p_n nmc.notificatie, p_alles boolean)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(pg_catalog.jsonb_agg(
            pg_catalog.jsonb_build_object(
                'nummer', p.nummer,
                'status', p.status,
                'notifynlId', p.notifynl_id,
                -- The template version NotifyNL rendered for this attempt (its 201).
                'templateVersie', p.template_versie,
                -- A duplicate first seen in a receipt after the final status is not the final
                -- proof's (that receipt is not either).
                'duplicaatNotifynlIds', pg_catalog.to_jsonb(ARRAY(
                    SELECT d.id FROM unnest(p.duplicaat_ids) WITH ORDINALITY AS d (id, nr)
                    WHERE p_alles OR NOT coalesce((
                        SELECT h.na_eindstatus FROM nmc.receiptgeschiedenis AS h
                        WHERE h.notificatie_id = p_n.id AND h.poging_id = p.id
                            AND h.notifynl_id = d.id
                        ORDER BY h.id LIMIT 1
                    ), false)
                    ORDER BY d.nr
                )),
                'verzondenOp', p.verzonden_op,
                'afgerondOp', p.afgerond_op
            )
            -- Under centraal the Profielservice contactgegeven used, never the address.
            || CASE
                WHEN p_n.regie = 'centraal'
                    THEN pg_catalog.jsonb_build_object('contactgegevenId', p.contactgegeven_id)
                ELSE '{}'::jsonb
            END
            || CASE
                WHEN p_alles THEN '{}'::jsonb
                ELSE pg_catalog.jsonb_build_object('receipts', (
                    SELECT coalesce(pg_catalog.jsonb_agg(
                        nmc.bewijs_receipt_json(h) ORDER BY h.id
                    ), '[]'::jsonb)
                    FROM nmc.receiptgeschiedenis AS h
                    WHERE h.notificatie_id = p_n.id AND h.poging_id = p.id AND NOT h.na_eindstatus
                ))
            END
            ORDER BY p.nummer
        ), '[]'::jsonb)
        FROM nmc.poging AS p
        WHERE p.notificatie_id = p_n.id
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_pogingen_json(nmc.notificatie, boolean) IS
'The attempts of a notification as the delivery proof shows them: number, status, NotifyNL '
'id, the template version NotifyNL rendered (its 201), duplicate ids, sent and completed '
'at (source times), under centraal the contactgegeven id; with p_alles false (the proof) '
'each with its receipts up to the final status, with p_alles true (the history, which '
'lists receipts apart) every duplicate id and no receipts. Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_vaststelling_json(p_n nmc.notificatie)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT coalesce(
            -- Settled: as recorded when it settled.
            (
                SELECT pg_catalog.jsonb_build_object(
                    'poging', p.nummer,
                    'afgerondOp', v.completed_at,
                    'termijn', v.termijn,
                    'callbackVenster', v.callback_venster,
                    'geplandOp', v.gepland_op,
                    'vastgesteldOp', v.vastgesteld_op
                )
                FROM nmc.vaststelling AS v
                INNER JOIN nmc.poging AS p ON p.id = v.poging_id
                WHERE v.notificatie_id = p_n.id
            ),
            -- Delivered, not settled yet: the open settlement task.
            (
                SELECT pg_catalog.jsonb_build_object(
                    'poging', p.nummer,
                    'afgerondOp', p.afgerond_op,
                    'termijn', i.vaststellingstermijn,
                    'callbackVenster', i.callback_venster,
                    'geplandOp', t.due,
                    'vastgesteldOp', NULL
                )
                FROM nmc.taak AS t
                INNER JOIN nmc.poging AS p ON p.id = t.poging_id
                CROSS JOIN nmc.instellingen AS i
                WHERE p_n.status = 'bezorgd' AND t.notificatie_id = p_n.id
                    AND t.soort = 'vaststellen' AND t.staat IN ('open', 'claimed')
                LIMIT 1
            ),
            'null'::jsonb
        )
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_vaststelling_json(nmc.notificatie) IS
'The settlement of a delivered notification: the attempt it rests on and its completed_at, '
'the settlement term and NotifyNL''s callback window, when it was due and when it settled '
'(NULL while bezorgd). JSON null when there is none. Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_notificatie_json(p_n nmc.notificatie, p_alles boolean)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT pg_catalog.jsonb_build_object(
            'notificatieId', p_n.id,
            -- As recorded at intake and send (a re-onboarding later does not rewrite the
            -- proof); the live values only for rows from before they were recorded.
            'dienstverlener', pg_catalog.jsonb_build_object(
                'oin', d.oin, 'naam', coalesce(p_n.dv_naam, d.naam)
            ),
            'berichtType', p_n.berichttype,
            'regie', p_n.regie,
            'notifynlTemplateId', coalesce(
                (
                    SELECT p.notifynl_template_id FROM nmc.poging AS p
                    WHERE p.notificatie_id = p_n.id AND p.notifynl_template_id IS NOT NULL
                    ORDER BY p.nummer DESC
                    LIMIT 1
                ),
                p_n.notifynl_template_id,
                b.notifynl_template_id
            ),
            -- The version NotifyNL names in its receipts; the one the outcome rests on first.
            'templateVersie', (
                SELECT h.template_versie FROM nmc.receiptgeschiedenis AS h
                WHERE h.notificatie_id = p_n.id AND h.template_versie IS NOT NULL
                    AND (p_alles OR NOT h.na_eindstatus)
                ORDER BY h.toegepast DESC, h.id DESC
                LIMIT 1
            ),
            'aangenomenOp', p_n.aangenomen_op,
            'geldigTot', p_n.geldig_tot,
            'status', p_n.status,
            'reden', p_n.reden,
            'versie', p_n.versie
        )
        FROM nmc.dienstverlener AS d
        INNER JOIN nmc.berichttype AS b ON b.dv_id = d.dv_id AND b.code = p_n.berichttype
        WHERE d.dv_id = p_n.dv_id
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_notificatie_json(nmc.notificatie, boolean) IS
'The notification as the delivery proof names it: id, the DV (OIN and its name at intake), '
'berichttype, regie, the NotifyNL template id (the latest attempt''s as it was sent, else '
'the berichttype''s at intake) and the template version from the receipts, accepted at, '
'geldigTot, status, reason and version. Never the recipient, the personalisation or dvRef. '
'Internal.';

CREATE OR REPLACE FUNCTION nmc.bewijs_beheeracties_json(p_notificatie_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
            'soort', a.soort,
            'van', a.van,
            'naar', a.naar,
            'sequence', a.sequence,
            'door', a.door,
            'tijdstip', a.tijdstip,
            'toelichting', a.toelichting
        ) ORDER BY a.id)
        FROM nmc.beheeractie AS a
        WHERE a.notificatie_id = p_notificatie_id AND a.soort = 'forceer-overgang'
    );
END
$$;
COMMENT ON FUNCTION nmc.bewijs_beheeracties_json(uuid) IS
'The forced transitions of one notification as the delivery proof names them (who, when, '
'why, from and to which status, the sequence of the event it wrote), oldest first; SQL NULL '
'when there were none. Reopened tasks are not listed: they change no status. Internal.';
CREATE OR REPLACE FUNCTION nmc.take_bewijs_aanroep(p_dv_id integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_venster CONSTANT timestamptz := pg_catalog.date_trunc('minute', nmc.now());
    v_aantal bigint;
BEGIN
    -- Counted in this connection's own row (deel): the row lock, held until the call
    -- commits, is never one another call of the DV waits for (one row per DV and minute
    -- made a DV's proofs go one at a time). The sum reads the others' committed counts, so
    -- calls in flight at once may pass the limit by as many as run at that moment.
    INSERT INTO nmc.bewijsaanroep AS f (dv_id, venster_start, deel, aantal)
    VALUES (p_dv_id, v_venster, pg_catalog.pg_backend_pid(), 1)
    ON CONFLICT (dv_id, venster_start, deel) DO UPDATE SET aantal = f.aantal + 1;
    SELECT pg_catalog.sum(f.aantal) INTO v_aantal
    FROM nmc.bewijsaanroep AS f
    WHERE f.dv_id = p_dv_id AND f.venster_start = v_venster;
    IF v_aantal > (SELECT i.bewijs_aanroepen_per_minuut FROM nmc.instellingen AS i) THEN
        -- The feed's SQLSTATE and DETAIL (nmc.take_feed_aanroep): 429 with Retry-After.
        RAISE EXCEPTION 'proof call rate exceeded' USING ERRCODE = 'NM019',
            DETAIL = pg_catalog.ceil(
                EXTRACT(EPOCH FROM v_venster + INTERVAL '1 minute' - nmc.now())
            )::bigint::text;
    END IF;
END
$$;
COMMENT ON FUNCTION nmc.take_bewijs_aanroep(integer) IS
'Counts one delivery-proof or history call of the DV in the current minute, in the row of '
'this connection (nmc.bewijsaanroep.deel: concurrent calls of one DV never wait for each '
'other''s row); over instellingen.bewijs_aanroepen_per_minuut (the sum of the DV''s rows of '
'the minute, the others'' as committed): NM019 with DETAIL = seconds until the window ends '
'(the Retry-After), as for the feed.';

CREATE OR REPLACE FUNCTION nmc.get_afleverbewijs(p_dv_id integer, p_notificatie_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET timezone = 'UTC'
SET intervalstyle = 'iso_8601'
AS $$
DECLARE
    v_n nmc.notificatie;
    v_events jsonb;
    v_definitief boolean;
    v_beheeracties jsonb;
BEGIN
    -- Counted first; a call refused after it (404) takes its count back with its rollback.
    PERFORM nmc.take_bewijs_aanroep(p_dv_id);
    SELECT n.* INTO v_n
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id AND n.dv_id = p_dv_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;
    v_events := nmc.bewijs_events_json_v2(v_n.id, 0, NULL, v_n.aanname_xid);
    v_definitief := nmc.is_terminal(v_n.status);
    v_beheeracties := nmc.bewijs_beheeracties_json(v_n.id);
    RETURN pg_catalog.jsonb_build_object(
        'formaat', 'nmc-afleverbewijs/1',
        'definitief', v_definitief,
        'uitgegevenOp', nmc.now(),
        'notificatie', nmc.bewijs_notificatie_json(v_n, false),
        'pogingen', nmc.bewijs_pogingen_json(v_n, false),
        'vaststelling', nmc.bewijs_vaststelling_json(v_n),
        'eindstatus', CASE
            WHEN v_definitief THEN pg_catalog.jsonb_build_object(
                'status', v_n.status,
                'reden', v_n.reden,
                'sequence', v_n.versie,
                'tijdstip', v_events -> -1 -> 'tijdstip'
            )
            ELSE 'null'::jsonb
        END,
        'events', v_events
    )
    -- Nothing forced is hidden: every forced transition, signed with the rest. The member
    -- is there only when there is one, so the proofs of all other notifications read as
    -- before.
    || CASE
        WHEN v_beheeracties IS NULL THEN '{}'::jsonb
        ELSE pg_catalog.jsonb_build_object('beheeracties', v_beheeracties)
    END;
END
$$;
COMMENT ON FUNCTION nmc.get_afleverbewijs(integer, uuid) IS
'The content of the delivery proof of one notification of the caller DV, in one call (the '
'API signs it): format, definitief (terminal or not), issue time (NMC clock), the '
'notification (DV, berichttype, regie, template and version, accepted at, geldigTot, '
'status), every attempt with its NotifyNL ids, source times and receipts (status, '
'completed_at, received at, source, whether it changed the outcome), the settlement, the '
'final status and reason, the complete event chain and, when an operator forced a '
'transition, beheeracties (who, when, why, which event). No personal data. The final '
'proof is the same at every later request but for uitgegevenOp (receipts after the final '
'status that changed nothing are in the history only). Served while the notification is '
'kept, also after erasure. NM005 when it does not exist or belongs to another DV. Each '
'call counts against the DV''s proof call rate (nmc.take_bewijs_aanroep; NM019 -> 429).';

CREATE OR REPLACE FUNCTION nmc.geschiedenis_json(
    p_dv_id integer,
    p_notificatie_id uuid,
    p_na_sequence integer,
    p_na_receipt bigint,
    p_overgeslagen integer,
    p_limiet integer
)
RETURNS jsonb
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET timezone = 'UTC'
SET intervalstyle = 'iso_8601'
AS $$
DECLARE
    v_n nmc.notificatie;
    v_na_sequence CONSTANT integer := greatest(coalesce(p_na_sequence, 0), 0);
    v_na_receipt CONSTANT bigint := greatest(coalesce(p_na_receipt, 0), 0);
    v_overgeslagen CONSTANT integer := greatest(coalesce(p_overgeslagen, 0), 0);
    v_events jsonb;
    v_receipts jsonb;
    v_ids bigint [];
    v_getoond integer;
    v_meer boolean;
BEGIN
    IF p_limiet IS NULL OR p_limiet NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'limiet must be 1 to 1000' USING ERRCODE = '22023';
    END IF;
    PERFORM nmc.take_bewijs_aanroep(p_dv_id);
    SELECT n.* INTO v_n
    FROM nmc.notificatie AS n
    WHERE n.id = p_notificatie_id AND n.dv_id = p_dv_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'notificatie not found' USING ERRCODE = 'NM005';
    END IF;

    -- One more than shown tells whether a next page exists.
    v_events := nmc.bewijs_events_json_v2(v_n.id, v_na_sequence, p_limiet + 1, v_n.aanname_xid);
    SELECT
        coalesce(pg_catalog.jsonb_agg(
            nmc.bewijs_receipt_json(r.h)
            || pg_catalog.jsonb_build_object(
                'poging', r.nummer, 'naEindstatus', (r.h).na_eindstatus
            )
            ORDER BY (r.h).id
        ), '[]'::jsonb),
        pg_catalog.array_agg((r.h).id ORDER BY (r.h).id)
    INTO v_receipts, v_ids
    FROM (
        SELECT h AS h, p.nummer
        FROM nmc.receiptgeschiedenis AS h
        INNER JOIN nmc.poging AS p ON p.id = h.poging_id
        WHERE h.notificatie_id = v_n.id AND h.id > v_na_receipt
        ORDER BY h.id
        OFFSET v_overgeslagen
        LIMIT p_limiet + 1
    ) AS r;

    v_meer := pg_catalog.jsonb_array_length(v_events) > p_limiet
        OR pg_catalog.jsonb_array_length(v_receipts) > p_limiet;
    IF pg_catalog.jsonb_array_length(v_events) > p_limiet THEN
        v_events := v_events - p_limiet;
    END IF;
    IF pg_catalog.jsonb_array_length(v_receipts) > p_limiet THEN
        v_receipts := v_receipts - p_limiet;
    END IF;
    v_getoond := pg_catalog.jsonb_array_length(v_receipts);

    RETURN pg_catalog.jsonb_build_object(
        'notificatie',
        nmc.bewijs_notificatie_json(v_n, true)
        || pg_catalog.jsonb_build_object('definitief', nmc.is_terminal(v_n.status)),
        'pogingen', nmc.bewijs_pogingen_json(v_n, true),
        'vaststelling', nmc.bewijs_vaststelling_json(v_n),
        'events', v_events,
        'receipts', v_receipts,
        'volgende', CASE
            WHEN v_meer THEN pg_catalog.jsonb_build_object(
                'sequence', coalesce((v_events -> -1 ->> 'sequence')::integer, v_na_sequence),
                'receipt', CASE
                    WHEN v_getoond > 0 THEN v_ids[v_getoond] ELSE v_na_receipt
                END,
                'receipts', v_overgeslagen + v_getoond
            )
            ELSE 'null'::jsonb
        END
    );
END
$$;
COMMENT ON FUNCTION nmc.geschiedenis_json(integer, uuid, integer, bigint, integer, integer) IS
'The one implementation of a history page (nmc.get_geschiedenis_v2, and nmc.get_geschiedenis '
'kept for the previous release): the notification of DV p_dv_id (with definitief), its '
'attempts and settlement, then up to p_limiet (1 to 1000) events after sequence '
'p_na_sequence and up to p_limiet of its receipts with an id above p_na_receipt, the first '
'p_overgeslagen of those skipped. volgende: the next page''s position as the last event''s '
'sequence, the last receipt''s id (receipt) and the number of the notification''s receipts '
'shown so far (receipts), or null on the last page. NM005, 22023 as the callers. Internal.';

CREATE OR REPLACE FUNCTION nmc.geschiedenis_volgende(p_pagina jsonb, p_weg text)
RETURNS jsonb
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_pagina || pg_catalog.jsonb_build_object(
        'volgende', CASE
            WHEN p_pagina -> 'volgende' = 'null'::jsonb THEN 'null'::jsonb
            ELSE (p_pagina -> 'volgende') - p_weg
        END
    )
$$;
COMMENT ON FUNCTION nmc.geschiedenis_volgende(jsonb, text) IS
'Internal: a page of nmc.geschiedenis_json as one form of the history shows it: its '
'volgende without member p_weg (receipt, the NMC-wide receipt number, for '
'nmc.get_geschiedenis_v2; receipts, the count of this notification''s receipts, for '
'nmc.get_geschiedenis); a null volgende (the last page) stays null.';

CREATE OR REPLACE FUNCTION nmc.get_geschiedenis_v2(
    p_dv_id integer,
    p_notificatie_id uuid,
    p_na_sequence integer,
    p_na_receipts integer,
    p_limiet integer
)
RETURNS jsonb
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.geschiedenis_volgende(
        nmc.geschiedenis_json(p_dv_id, p_notificatie_id, p_na_sequence, 0, p_na_receipts, p_limiet),
        'receipt'
    )
$$;
COMMENT ON FUNCTION nmc.get_geschiedenis_v2(integer, uuid, integer, integer, integer) IS
'The history of one notification of the caller DV: the delivery proof''s facts as plain '
'JSON, a page at a time: the notification (with definitief), its attempts and settlement '
'on every page, then up to p_limiet (1 to 1000) events after sequence p_na_sequence and up '
'to p_limiet receipts after the first p_na_receipts of this notification''s receipts, each '
'receipt with its attempt number and whether it came after the final status. volgende '
'holds the position of the next page ({sequence, receipts}: numbers of this notification '
'only, no NMC-wide receipt number), or null on the last. NM005 when the notification does '
'not exist or belongs to another DV; 22023 for a limiet out of range. Each call counts '
'against the DV''s proof call rate (nmc.take_bewijs_aanroep; NM019 -> 429).';

CREATE OR REPLACE FUNCTION nmc.get_geschiedenis(
    p_dv_id integer,
    p_notificatie_id uuid,
    p_na_sequence integer,
    p_na_receipt bigint,
    p_limiet integer
)
RETURNS jsonb
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT nmc.geschiedenis_volgende(
        nmc.geschiedenis_json(p_dv_id, p_notificatie_id, p_na_sequence, p_na_receipt, 0, p_limiet),
        'receipts'
    )
$$;
COMMENT ON FUNCTION nmc.get_geschiedenis(integer, uuid, integer, bigint, integer) IS
'Kept for the previous release, replaced by nmc.get_geschiedenis_v2: the same page, but '
'after receipt id p_na_receipt, an NMC-wide number, with volgende {sequence, receipt}. '
'NM005 when the notification does not exist or belongs to another DV; 22023 for a limiet '
'out of range; counted against the proof call rate (NM019).';
