-- The parts of the delivery proof and the history (functions/bewijs/afleverbewijs.sql), one
-- by one: nmc.bewijs_events_json, _receipt_json, _pogingen_json, _vaststelling_json and
-- _notificatie_json give exactly these members of these JSON types, arrays in their order,
-- and nothing personal; and nmc.apply_receipt_v2 writes the receipt history they read. The
-- whole proof and its pages are in afleverbewijs.sql.
BEGIN;
SELECT plan(27);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

-- A notification by its id.
CREATE FUNCTION pg_temp.n(p_id uuid) RETURNS nmc.notificatie
LANGUAGE sql AS $$ SELECT n.* FROM nmc.notificatie AS n WHERE n.id = p_id $$;

-- Delivered with template version 7 and settled.
SELECT pg_temp.verzonden() AS id \gset
SELECT pg_temp.callback(:'id', 'delivered', nmc.now() - interval '2 minutes', 7);
SELECT nmc.advance_clock('8 days');
SELECT nmc.process_vaststellingen(100);
-- technisch-mislukt: a technical failure on both attempts.
SELECT pg_temp.verzonden() AS tid \gset
SELECT pg_temp.callback(:'tid', 'technical-failure', nmc.now());
SELECT pg_temp.verstuur(:'tid');
SELECT pg_temp.callback(:'tid', 'technical-failure', nmc.now());
-- niet-bezorgbaar under centraal, sent to the contactgegeven the Profielservice named.
SELECT pg_temp.verzonden('centraal', 'c0c0c0c0-0000-4000-8000-00000000000c') AS cen \gset
SELECT pg_temp.callback(:'cen', 'permanent-failure', nmc.now());
-- Cancelled before any attempt, and one sent and not final yet.
SELECT pg_temp.nieuwe_notificatie() AS ann \gset
SELECT nmc.cancel_notificatie(1001, :'ann');
SELECT pg_temp.verzonden() AS open \gset
SELECT is(
    ARRAY[
        (pg_temp.n(:'id')).status::text, (pg_temp.n(:'tid')).status::text,
        (pg_temp.n(:'cen')).status::text, (pg_temp.n(:'ann')).status::text,
        (pg_temp.n(:'open')).status::text
    ],
    ARRAY['definitief-bezorgd', 'technisch-mislukt', 'niet-bezorgbaar', 'geannuleerd', 'verzonden'],
    'set-up: settled, failed on two attempts, failed under centraal, cancelled, under way'
);

-- A JSON object's shape: each member with its JSON type.
CREATE FUNCTION pg_temp.vorm(p_object jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_object_agg(k, jsonb_typeof(p_object -> k)), '{}'::jsonb)
    FROM jsonb_object_keys(p_object) AS k
$$;
-- The shapes of the elements of a JSON array, each once, in order of first appearance.
CREATE FUNCTION pg_temp.vormen(p_array jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_agg(v.vorm ORDER BY v.eerste), '[]'::jsonb)
    FROM (
        SELECT pg_temp.vorm(x.e) AS vorm, min(x.o) AS eerste
        FROM jsonb_array_elements(p_array) WITH ORDINALITY AS x (e, o)
        GROUP BY 1
    ) AS v
$$;

-- An attempt with a duplicate NotifyNL id before its final status (a receipt not final
-- yet), a permanent failure found by reconciliation, and a delivered receipt under a second
-- duplicate id after the final status: it changes nothing, so it is the history's only.
SELECT pg_temp.verzonden() AS dup \gset
SELECT (pg_temp.laatste_poging(:'dup')).id AS dup_p \gset
SELECT gen_random_uuid() AS d1, gen_random_uuid() AS d2, nmc.now() AS dup_op \gset
SELECT nmc.apply_receipt_v2(
    :'dup_p', :'d1', 'sending', :'dup_op', NULL, 'callback', :'dup_op', NULL, -1
);
SELECT nmc.apply_receipt_v2(
    :'dup_p', (pg_temp.laatste_poging(:'dup')).notifynl_id, 'permanent-failure', :'dup_op',
    NULL, 'navraag', NULL, NULL, NULL
);
SELECT nmc.advance_clock('1 minute');
SELECT nmc.apply_receipt_v2(
    :'dup_p', :'d2', 'delivered', :'dup_op', NULL, 'callback', nmc.now(),
    'a0a0a0a0-0000-4000-8000-000000000001', 9
);
SELECT results_eq(
    format(
        $$SELECT h.bron, h.status, h.resultaat, h.toegepast, h.na_eindstatus, h.template_versie,
            h.ontvangen_op = %L::timestamptz
          FROM nmc.receiptgeschiedenis AS h WHERE h.poging_id = %L ORDER BY h.id$$,
        :'dup_op', :'dup_p'
    ),
    $$VALUES
        ('callback', 'sending', 'niet-definitief', false, false, NULL::integer, true),
        ('navraag', 'permanent-failure', 'niet-bezorgbaar', true, false, NULL, true),
        ('callback', 'delivered', 'vastgelegd', false, true, 9, false)$$,
    'apply_receipt_v2 writes each judgement: source, status, result, whether it changed the '
    'outcome or came after the final status, a negative template version as none, received '
    'now when no time is given'
);

-- nmc.bewijs_events_json
SELECT is(
    pg_temp.vormen(nmc.bewijs_events_json(:'tid', 0, NULL)),
    '[
        {"eventId": "number", "sequence": "number", "van": "null", "naar": "string",
         "reden": "null", "tijdstip": "string"},
        {"eventId": "number", "sequence": "number", "van": "string", "naar": "string",
         "reden": "null", "tijdstip": "string"},
        {"eventId": "number", "sequence": "number", "van": "string", "naar": "string",
         "reden": "string", "tijdstip": "string"}
    ]'::jsonb,
    'events: eventId, sequence, van (null on the first), naar, reden (null but on a failure), '
    'tijdstip'
);
SELECT is(
    (
        SELECT array_agg((x.e ->> 'sequence')::integer ORDER BY x.o)
        FROM jsonb_array_elements(nmc.bewijs_events_json(:'tid', 0, NULL)) WITH ORDINALITY
            AS x (e, o)
    ),
    (
        SELECT array_agg(e.sequence ORDER BY e.sequence)
        FROM nmc.event AS e
        WHERE e.notificatie_id = :'tid'
    ),
    'events: every event of the notification, in sequence order'
);
SELECT is(
    nmc.bewijs_events_json(:'tid', 0, NULL) -> 0,
    (
        SELECT
            jsonb_build_object(
                'eventId', e.event_id, 'sequence', 1, 'van', NULL, 'naar', 'aangenomen',
                'reden', NULL, 'tijdstip', e.tijdstip
            )
        FROM nmc.event AS e WHERE e.notificatie_id = :'tid' AND e.sequence = 1
    ),
    'events: each as the log holds it'
);
SELECT is(
    (
        SELECT array_agg((x.e ->> 'sequence')::integer ORDER BY x.o)
        FROM jsonb_array_elements(nmc.bewijs_events_json(:'tid', 2, 2)) WITH ORDINALITY
            AS x (e, o)
    ),
    ARRAY[3, 4],
    'events: after a sequence, at most limiet'
);
SELECT is(
    ARRAY[
        nmc.bewijs_events_json(:'tid', (pg_temp.n(:'tid')).versie, NULL),
        nmc.bewijs_events_json(:'tid', 0, 0),
        nmc.bewijs_events_json(gen_random_uuid(), 0, NULL)
    ],
    ARRAY['[]'::jsonb, '[]'::jsonb, '[]'::jsonb],
    'events: an empty array past the last event, for limiet 0 and for an unknown notification'
);

-- nmc.bewijs_receipt_json
SELECT is(
    (
        SELECT nmc.bewijs_receipt_json(h) FROM nmc.receiptgeschiedenis AS h
        WHERE h.poging_id = :'dup_p' AND h.status = 'sending'
    ),
    jsonb_build_object(
        'status', 'sending', 'bron', 'callback', 'notifynlId', :'d1',
        'afgerondOp', :'dup_op'::timestamptz, 'verzondenOp', NULL,
        'ontvangenOp', :'dup_op'::timestamptz, 'toegepast', FALSE,
        'resultaat', 'niet-definitief', 'templateId', NULL, 'templateVersie', NULL
    ),
    'receipt: every member, those NotifyNL did not give as null'
);
SELECT is(
    (
        SELECT pg_temp.vorm(nmc.bewijs_receipt_json(h)) FROM nmc.receiptgeschiedenis AS h
        WHERE h.notificatie_id = :'id' AND h.status = 'delivered'
    ),
    '{"status": "string", "bron": "string", "notifynlId": "string", "afgerondOp": "string",
      "verzondenOp": "string", "ontvangenOp": "string", "toegepast": "boolean",
      "resultaat": "string", "templateId": "string", "templateVersie": "number"}'::jsonb,
    'receipt: exactly these members, of these types'
);

-- nmc.bewijs_pogingen_json
SELECT is(
    pg_temp.vormen(nmc.bewijs_pogingen_json(pg_temp.n(:'tid'), FALSE)),
    '[{"nummer": "number", "status": "string", "notifynlId": "string",
       "templateVersie": "null", "duplicaatNotifynlIds": "array", "verzondenOp": "string",
       "afgerondOp": "string", "receipts": "array"}]'::jsonb,
    'attempts in the proof (decentraal): exactly these members, with their receipts'
);
SELECT is(
    pg_temp.vormen(nmc.bewijs_pogingen_json(pg_temp.n(:'tid'), TRUE)),
    '[{"nummer": "number", "status": "string", "notifynlId": "string",
       "templateVersie": "null", "duplicaatNotifynlIds": "array", "verzondenOp": "string",
       "afgerondOp": "string"}]'::jsonb,
    'attempts in the history: the same without receipts'
);
SELECT is(
    (
        SELECT array_agg(x.p ->> 'nummer' || ':' || (x.p ->> 'status') ORDER BY x.o)
        FROM
            jsonb_array_elements(nmc.bewijs_pogingen_json(pg_temp.n(:'tid'), FALSE))
            WITH ORDINALITY AS x (p, o)
    ),
    ARRAY['1:technisch-mislukt', '2:technisch-mislukt'],
    'attempts: in number order'
);
SELECT is(
    (
        SELECT array_agg(DISTINCT jsonb_typeof(p -> 'contactgegevenId'))
        FROM unnest(ARRAY[FALSE, TRUE]) AS a (alles),
            LATERAL jsonb_array_elements(nmc.bewijs_pogingen_json(pg_temp.n(:'cen'), a.alles))
                AS p
    ),
    ARRAY['string'],
    'attempts under centraal: with the contactgegeven id, in the proof and the history'
);
SELECT is(
    ARRAY[
        nmc.bewijs_pogingen_json(pg_temp.n(:'dup'), FALSE) #> '{0,duplicaatNotifynlIds}',
        nmc.bewijs_pogingen_json(pg_temp.n(:'dup'), TRUE) #> '{0,duplicaatNotifynlIds}'
    ],
    ARRAY[jsonb_build_array(:'d1'), jsonb_build_array(:'d1', :'d2')],
    'duplicate ids: in the proof those seen up to the final status, in the history all, in order'
);
SELECT is(
    (
        SELECT array_agg(r ->> 'status' ORDER BY o)
        FROM jsonb_array_elements(
            nmc.bewijs_pogingen_json(pg_temp.n(:'dup'), FALSE) #> '{0,receipts}'
        ) WITH ORDINALITY AS x (r, o)
    ),
    ARRAY['sending', 'permanent-failure'],
    'receipts in the proof: up to the final status, in order; the one after it left out'
);
SELECT is(
    nmc.bewijs_pogingen_json(pg_temp.n(:'ann'), FALSE),
    '[]'::jsonb,
    'attempts: an empty array when none was made'
);

-- nmc.bewijs_vaststelling_json
SELECT is(
    nmc.bewijs_vaststelling_json(pg_temp.n(:'id')),
    (
        SELECT
            jsonb_build_object(
                'poging', 1, 'afgerondOp', v.completed_at, 'termijn', v.termijn,
                'callbackVenster', v.callback_venster, 'geplandOp', v.gepland_op,
                'vastgesteldOp', v.vastgesteld_op
            )
        FROM nmc.vaststelling AS v WHERE v.notificatie_id = :'id'
    ),
    'settlement once settled: as recorded when it settled'
);
SELECT is(
    pg_temp.vorm(nmc.bewijs_vaststelling_json(pg_temp.n(:'id'))),
    '{"poging": "number", "afgerondOp": "string", "termijn": "string",
      "callbackVenster": "string", "geplandOp": "string", "vastgesteldOp": "string"}'::jsonb,
    'settlement: exactly these members, of these types'
);
SELECT pg_temp.verzonden() AS bez \gset
SELECT pg_temp.callback(:'bez', 'delivered', nmc.now() - interval '1 minute');
SELECT is(
    nmc.bewijs_vaststelling_json(pg_temp.n(:'bez')),
    (
        SELECT
            jsonb_build_object(
                'poging', 1, 'afgerondOp', p.afgerond_op, 'termijn', i.vaststellingstermijn,
                'callbackVenster', i.callback_venster, 'geplandOp', t.due, 'vastgesteldOp', NULL
            )
        FROM nmc.poging AS p
        INNER JOIN nmc.taak AS t ON p.id = t.poging_id AND t.soort = 'vaststellen'
        CROSS JOIN nmc.instellingen AS i
        WHERE p.notificatie_id = :'bez'
    ),
    'settlement while bezorgd: the open settlement task, not settled yet'
);
SELECT is(
    (
        SELECT array_agg(DISTINCT nmc.bewijs_vaststelling_json(pg_temp.n(x.id)))
        FROM unnest(ARRAY[:'tid', :'cen', :'ann', :'open', :'dup']::uuid[]) AS x (id)
    ),
    ARRAY['null'::jsonb],
    'settlement: JSON null for every notification that was not delivered'
);

-- nmc.bewijs_notificatie_json
SELECT is(
    ARRAY[
        pg_temp.vorm(nmc.bewijs_notificatie_json(pg_temp.n(:'id'), FALSE)),
        pg_temp.vorm(nmc.bewijs_notificatie_json(pg_temp.n(:'id'), TRUE))
    ],
    array_fill(
        '{"notificatieId": "string", "dienstverlener": "object", "berichtType": "string",
          "regie": "string", "notifynlTemplateId": "string", "templateVersie": "number",
          "aangenomenOp": "string", "geldigTot": "string", "status": "string",
          "reden": "null", "versie": "number"}'::jsonb,
        ARRAY[2]
    ),
    'notification: exactly these members, of these types, in the proof and the history'
);
SELECT is(
    pg_temp.vorm(nmc.bewijs_notificatie_json(pg_temp.n(:'id'), FALSE) -> 'dienstverlener'),
    '{"oin": "string", "naam": "string"}'::jsonb,
    'notification: the DV by OIN and name only'
);
SELECT is(
    ARRAY[
        nmc.bewijs_notificatie_json(pg_temp.n(:'dup'), FALSE) -> 'templateVersie',
        nmc.bewijs_notificatie_json(pg_temp.n(:'dup'), TRUE) -> 'templateVersie'
    ],
    ARRAY['null'::jsonb, '9'::jsonb],
    'notification: the template version of a receipt after the final status is the history''s only'
);
SELECT is(
    ARRAY[
        nmc.bewijs_notificatie_json(pg_temp.n(:'cen'), FALSE) ->> 'reden',
        nmc.bewijs_notificatie_json(pg_temp.n(:'tid'), FALSE) ->> 'reden'
    ],
    ARRAY['onbereikbaar', 'technisch'],
    'notification: the reason of a failure'
);

-- Nothing personal in any part, for any notification here: no member naming a recipient,
-- personalisation, key or dvRef, no byte string, not the dvRef HMAC nor the payload hash.
SELECT is_empty(
    $$SELECT n.id FROM nmc.notificatie AS n,
        LATERAL (
            SELECT concat_ws(
                ' ',
                nmc.bewijs_notificatie_json(n, false), nmc.bewijs_notificatie_json(n, true),
                nmc.bewijs_pogingen_json(n, false), nmc.bewijs_pogingen_json(n, true),
                nmc.bewijs_vaststelling_json(n), nmc.bewijs_events_json(n.id, 0, NULL)
            ) AS tekst
        ) AS j
      WHERE j.tekst ~* 'dvref|e-?mail|bsn|ontvanger|personali|gegevens_|sleutel|versleuteld|\\x'
        OR strpos(j.tekst, encode(n.dvref_hmac, 'hex')) > 0
        OR strpos(j.tekst, encode(n.dvref_hmac, 'base64')) > 0
        OR strpos(j.tekst, encode(n.payload_hash, 'hex')) > 0
        OR strpos(j.tekst, encode(n.payload_hash, 'base64')) > 0$$,
    'no part of any proof or history carries personal data'
);

-- The two history forms' volgende: one member left out, the last page's null kept.
SELECT is(
    nmc.geschiedenis_volgende(
        '{"n": 1, "volgende": {"sequence": 3, "receipt": 7, "receipts": 2}}', 'receipt'
    ),
    '{"n": 1, "volgende": {"sequence": 3, "receipts": 2}}'::jsonb,
    'get_geschiedenis_v2''s volgende has no NMC-wide receipt number'
);
SELECT is(
    nmc.geschiedenis_volgende('{"n": 1, "volgende": null}', 'receipts'),
    '{"n": 1, "volgende": null}'::jsonb,
    'the last page''s volgende stays null'
);

SELECT * FROM finish();
ROLLBACK;
