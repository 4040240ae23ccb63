-- The delivery proof and the history (SPEC §7): nmc.get_afleverbewijs assembles the whole
-- proof in one call, nmc.get_geschiedenis the same facts page by page. Within the caller's
-- DV only, for every final status of SPEC §4, stable once final, also after erasure.
BEGIN;
SELECT plan(54);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

SELECT has_function('nmc', 'get_afleverbewijs', ARRAY['integer', 'uuid'], 'the proof function');
SELECT is_definer('nmc', 'get_afleverbewijs', ARRAY['integer', 'uuid'], 'it is SECURITY DEFINER');
SELECT has_function(
    'nmc', 'get_geschiedenis', ARRAY['integer', 'uuid', 'integer', 'bigint', 'integer'],
    'the history function'
);

-- ---------------------------------------------------------------------------------------
-- Delivered and settled: the whole proof.
SELECT pg_temp.verzonden() AS id \gset
SELECT nmc.now() - interval '2 minutes' AS completed \gset
SELECT pg_temp.callback(:'id', 'delivered', :'completed', 7);

SELECT nmc.get_afleverbewijs(1001, :'id') AS bezorgd \gset
SELECT is((:'bezorgd'::jsonb ->> 'definitief')::boolean, false, 'bezorgd: not final yet');
SELECT is(:'bezorgd'::jsonb -> 'eindstatus', 'null'::jsonb, 'no final status yet');
SELECT is(
    (:'bezorgd'::jsonb #>> '{vaststelling,geplandOp}')::timestamptz,
    :'completed'::timestamptz + interval '7 days 30 minutes',
    'bezorgd: the settlement is due at completed_at + term + callback window'
);
SELECT is(
    :'bezorgd'::jsonb #> '{vaststelling,vastgesteldOp}', 'null'::jsonb, 'and not settled yet'
);

SELECT nmc.advance_clock('8 days') AS vastgesteld \gset
SELECT nmc.process_vaststellingen(100);
SELECT nmc.get_afleverbewijs(1001, :'id') AS b1 \gset

SELECT is((:'b1'::jsonb ->> 'definitief')::boolean, true, 'definitief-bezorgd: final');
SELECT is(:'b1'::jsonb ->> 'formaat', 'nmc-afleverbewijs/1', 'the format is named');
SELECT is(
    (:'b1'::jsonb ->> 'uitgegevenOp')::timestamptz, nmc.now(), 'issued at the NMC clock'
);
SELECT is(
    (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(:'b1'::jsonb -> 'notificatie') AS k),
    ARRAY[
        'aangenomenOp', 'berichtType', 'dienstverlener', 'geldigTot', 'notificatieId',
        'notifynlTemplateId', 'reden', 'regie', 'status', 'templateVersie', 'versie'
    ],
    'the notification part holds exactly these members (no recipient, no dvRef)'
);
SELECT is(
    :'b1'::jsonb -> 'notificatie',
    jsonb_build_object(
        'notificatieId', :'id', 'dienstverlener',
        jsonb_build_object('oin', '00000001001001001000', 'naam', 'Test DV een'),
        'berichtType', 'aanslag', 'regie', 'decentraal',
        'notifynlTemplateId', 'a0a0a0a0-0000-4000-8000-000000000001', 'templateVersie', 7,
        'aangenomenOp', :'b1'::jsonb #> '{notificatie,aangenomenOp}',
        'geldigTot', :'b1'::jsonb #> '{notificatie,geldigTot}',
        'status', 'definitief-bezorgd', 'reden', null, 'versie', 5
    ),
    'the notification: id, DV (OIN and name), berichttype, regie, template and its version '
    'from the receipt, status, version'
);
SELECT is(
    (
        SELECT jsonb_build_array(n.aangenomen_op, n.geldig_tot) FROM nmc.notificatie AS n
        WHERE n.id = :'id'
    ),
    jsonb_build_array(
        (:'b1'::jsonb #>> '{notificatie,aangenomenOp}')::timestamptz,
        (:'b1'::jsonb #>> '{notificatie,geldigTot}')::timestamptz
    ),
    'accepted at and geldigTot are the notification''s'
);
SELECT ok(pg_temp.keten_klopt(:'b1'), 'the event chain is whole, allowed and the log''s own');
SELECT is(
    :'b1'::jsonb -> 'eindstatus',
    jsonb_build_object(
        'status', 'definitief-bezorgd', 'reden', null, 'sequence', 5,
        'tijdstip', :'b1'::jsonb #> '{events,4,tijdstip}'
    ),
    'the final status, its reason, sequence and time'
);
SELECT is(
    (SELECT p - 'receipts' FROM jsonb_array_elements(:'b1'::jsonb -> 'pogingen') AS p),
    (SELECT
        jsonb_build_object(
            'nummer', 1, 'status', 'bezorgd', 'notifynlId', p.notifynl_id,
            'templateVersie', p.template_versie, 'duplicaatNotifynlIds', '[]'::jsonb,
            'verzondenOp', :'b1'::jsonb #> '{pogingen,0,verzondenOp}',
            'afgerondOp', :'b1'::jsonb #> '{pogingen,0,afgerondOp}'
        )
    FROM pg_temp.laatste_poging(:'id') AS p),
    'the attempt: number, status, NotifyNL id, duplicates, times; decentraal: no contactgegeven'
);
SELECT is(
    (:'b1'::jsonb #>> '{pogingen,0,afgerondOp}')::timestamptz, :'completed'::timestamptz,
    'completed_at of the attempt is the source time'
);
SELECT is(
    :'b1'::jsonb #> '{pogingen,0,receipts}',
    jsonb_build_array(jsonb_build_object(
        'status', 'delivered', 'bron', 'callback',
        'notifynlId', (pg_temp.laatste_poging(:'id')).notifynl_id,
        'afgerondOp', :'b1'::jsonb #> '{pogingen,0,receipts,0,afgerondOp}',
        'verzondenOp', :'b1'::jsonb #> '{pogingen,0,receipts,0,verzondenOp}',
        'ontvangenOp', :'b1'::jsonb #> '{pogingen,0,receipts,0,ontvangenOp}',
        'toegepast', true, 'resultaat', 'bezorgd',
        'templateId', 'a0a0a0a0-0000-4000-8000-000000000001', 'templateVersie', 7
    )),
    'the receipt: status, source, NotifyNL id, times, changed the outcome, template'
);
SELECT is(
    (:'b1'::jsonb #>> '{pogingen,0,receipts,0,afgerondOp}')::timestamptz,
    :'completed'::timestamptz, 'the receipt''s completed_at is the source time'
);
SELECT is(
    :'b1'::jsonb -> 'vaststelling',
    jsonb_build_object(
        'poging', 1, 'termijn', 'P7D', 'callbackVenster', 'PT30M',
        'afgerondOp', :'b1'::jsonb #> '{pogingen,0,afgerondOp}',
        'geplandOp', :'bezorgd'::jsonb #> '{vaststelling,geplandOp}',
        'vastgesteldOp', :'b1'::jsonb #> '{eindstatus,tijdstip}'
    ),
    'the settlement: attempt, term, callback window, due and settled at'
);
SELECT is(
    (:'b1'::jsonb #>> '{vaststelling,vastgesteldOp}')::timestamptz, :'vastgesteld'::timestamptz,
    'settled when the settlement ran'
);

-- A late bounce, time passing, erasure: the final proof stays the same but for its time.
SELECT nmc.advance_clock('1 day');
SELECT pg_temp.callback(:'id', 'permanent-failure', nmc.now() - interval '1 hour');
SELECT nmc.get_afleverbewijs(1001, :'id') AS b2 \gset
SELECT is(
    pg_temp.zonder_tijd(:'b2'), pg_temp.zonder_tijd(:'b1'),
    'a receipt after the final status does not change the final proof'
);
SELECT isnt(:'b2'::jsonb ->> 'uitgegevenOp', :'b1'::jsonb ->> 'uitgegevenOp', 'but for its time');
SELECT nmc.advance_clock('8 days');
SELECT is(nmc.process_wissen(1000) >= 1, true, 'the data key is erased');
SELECT isnt(
    (SELECT n.gewist_op FROM nmc.notificatie AS n WHERE n.id = :'id'), null, 'erased'
);
SELECT is(
    pg_temp.zonder_tijd(nmc.get_afleverbewijs(1001, :'id')), pg_temp.zonder_tijd(:'b1'),
    'after erasure the proof is still served, the same'
);

-- Within the caller's DV only.
SELECT throws_ok(
    format('SELECT nmc.get_afleverbewijs(1002, %L)', :'id'), 'NM005', null,
    'another DV''s notification does not exist for the caller'
);
SELECT throws_ok(
    format('SELECT nmc.get_geschiedenis(1002, %L, 0, 0, 100)', :'id'), 'NM005', null,
    'nor its history'
);
SELECT throws_ok(
    format('SELECT nmc.get_afleverbewijs(1001, %L)', gen_random_uuid()), 'NM005', null,
    'an unknown id: NM005'
);

-- The history: the same facts, every receipt, the late one marked.
SELECT nmc.get_geschiedenis(1001, :'id', 0, 0, 100) AS g \gset
SELECT is(:'g'::jsonb -> 'events', :'b1'::jsonb -> 'events', 'the history has the events');
SELECT is(
    (SELECT
        array_agg(
            r ->> 'status' || ':' || (r ->> 'naEindstatus') || ':' || (r ->> 'poging')
            ORDER BY o
        )
    FROM jsonb_array_elements(:'g'::jsonb -> 'receipts') WITH ORDINALITY AS x (r, o)),
    ARRAY['delivered:false:1', 'permanent-failure:true:1'],
    'the history has every receipt with its attempt, the late one marked'
);
SELECT is(:'g'::jsonb -> 'volgende', 'null'::jsonb, 'all on one page: no next');
SELECT is(
    :'g'::jsonb -> 'vaststelling', :'b1'::jsonb -> 'vaststelling', 'and the settlement'
);

-- ---------------------------------------------------------------------------------------
-- Every final status of SPEC §4.
CREATE TEMP TABLE eind (naam text, id uuid, status text, reden text);

-- niet-bezorgbaar (onbereikbaar), centraal: the contactgegeven is named, not the address.
INSERT INTO eind
SELECT
    'onbereikbaar', pg_temp.verzonden('centraal', 'c0c0c0c0-0000-4000-8000-00000000000c'),
    'niet-bezorgbaar', 'onbereikbaar';
SELECT pg_temp.callback(e.id, 'permanent-failure', nmc.now()) FROM eind AS e
WHERE e.naam = 'onbereikbaar';

-- niet-bezorgbaar (geen-contactgegevens): the Profielservice knows no address.
INSERT INTO eind
SELECT 'geen-contactgegevens', r.notificatie_id, 'niet-bezorgbaar', 'geen-contactgegevens'
FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32('gc'), 1::smallint,
    pg_temp.b32('p'), 0::smallint, '\x01', null, '\x02', 'kek-1', null, null,
    '0123456789abcdef0123456789abcdef', null, null, null, null, pg_temp.b32('p')
) AS r;
SELECT nmc.finish_verzenden(c.taak_id, c.claim_epoch, 'geen-contactgegevens')
FROM nmc.claim_verzenden('w', 1000) AS c, eind AS e
WHERE e.naam = 'geen-contactgegevens' AND c.notificatie_id = e.id;

-- technisch-mislukt: a technical failure on both attempts.
INSERT INTO eind SELECT 'technisch', pg_temp.verzonden(), 'technisch-mislukt', 'technisch';
SELECT pg_temp.callback(e.id, 'technical-failure', nmc.now()) FROM eind AS e
WHERE e.naam = 'technisch';
SELECT pg_temp.verstuur(e.id) FROM eind AS e WHERE e.naam = 'technisch';
SELECT pg_temp.callback(e.id, 'technical-failure', nmc.now()) FROM eind AS e
WHERE e.naam = 'technisch';

-- geannuleerd: the DV cancels before the claim.
INSERT INTO eind SELECT 'geannuleerd', pg_temp.nieuwe_notificatie(), 'geannuleerd', 'geannuleerd';
SELECT nmc.cancel_notificatie(1001, e.id) FROM eind AS e WHERE e.naam = 'geannuleerd';

-- bezorgstatus-onbekend: reconciliation finds nothing (404).
INSERT INTO eind SELECT 'onbekend', pg_temp.verzonden(), 'bezorgstatus-onbekend', null;

-- verlopen: geldigTot passes before a worker claims the send
-- (accepted after the last claim above).
INSERT INTO eind
SELECT 'verlopen', r.notificatie_id, 'verlopen', 'verlopen'
FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('vl'), 1::smallint,
    pg_temp.b32('p'), 0::smallint, '\x01', null, '\x02', 'kek-1', nmc.now() + interval '1 minute',
    null, '0123456789abcdef0123456789abcdef', null, null, null, null, pg_temp.b32('p')
) AS r;
SELECT nmc.advance_clock('61 minutes');
SELECT nmc.claim_verzenden('w', 1000);  -- the short geldigTot has passed: verlopen
SELECT nmc.finish_navraag(c.taak_id, c.claim_epoch, false)
FROM nmc.claim_navraag_v2('w', 1000) AS c, eind AS e
WHERE e.naam = 'onbekend' AND c.notificatie_id = e.id;

-- definitief-bezorgd: the one above.
INSERT INTO eind VALUES ('definitief', :'id', 'definitief-bezorgd', null);

SELECT is(
    (
        SELECT array_agg(e.naam ORDER BY e.naam) FROM eind AS e
        INNER JOIN nmc.notificatie AS n ON e.id = n.id
        WHERE n.status::text = e.status AND n.reden::text IS NOT DISTINCT FROM e.reden
    ),
    ARRAY[
        'definitief', 'geannuleerd', 'geen-contactgegevens', 'onbekend', 'onbereikbaar',
        'technisch', 'verlopen'
    ],
    'set-up: one notification in every final status of SPEC §4'
);
SELECT is(
    (
        SELECT array_agg(e.naam ORDER BY e.naam) FROM eind AS e,
            LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
        WHERE
            (b ->> 'definitief')::boolean
            AND b #>> '{eindstatus,status}' = e.status
            AND b #>> '{eindstatus,reden}' IS NOT DISTINCT FROM e.reden
            AND b #>> '{notificatie,status}' = e.status
            AND (b #>> '{eindstatus,sequence}')::integer = (b #>> '{notificatie,versie}')::integer
    ),
    ARRAY[
        'definitief', 'geannuleerd', 'geen-contactgegevens', 'onbekend', 'onbereikbaar',
        'technisch', 'verlopen'
    ],
    'every final status: a final proof naming that status and reason at the last sequence'
);
SELECT is(
    (SELECT array_agg(e.naam ORDER BY e.naam) FROM eind AS e,
        LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
    WHERE pg_temp.keten_klopt(b)),
    ARRAY[
        'definitief', 'geannuleerd', 'geen-contactgegevens', 'onbekend', 'onbereikbaar',
        'technisch', 'verlopen'
    ],
    'every final status: a whole event chain ending in it'
);
SELECT is(
    (
        SELECT array_agg(e.naam || ':' || jsonb_array_length(b -> 'pogingen') ORDER BY e.naam)
        FROM eind AS e, LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
    ),
    ARRAY[
        'definitief:1', 'geannuleerd:0', 'geen-contactgegevens:0', 'onbekend:1',
        'onbereikbaar:1', 'technisch:2', 'verlopen:0'
    ],
    'every attempt is in the proof (an attempt never made is none)'
);
SELECT is(
    (SELECT b #> '{pogingen,0,contactgegevenId}' FROM eind AS e,
        LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
    WHERE e.naam = 'onbereikbaar'),
    '"c0c0c0c0-0000-4000-8000-00000000000c"'::jsonb,
    'centraal: the Profielservice contactgegeven id used is named'
);
SELECT is(
    (
        SELECT array_agg(r ->> 'resultaat' ORDER BY p ->> 'nummer')
        FROM eind AS e, LATERAL nmc.get_afleverbewijs(1001, e.id) AS b,
            LATERAL jsonb_array_elements(b -> 'pogingen') AS p,
            LATERAL jsonb_array_elements(p -> 'receipts') AS r
        WHERE e.naam = 'technisch'
    ),
    ARRAY['herverzenden', 'technisch-mislukt'],
    'technisch-mislukt: each attempt with its own receipt'
);
SELECT is(
    (
        SELECT b -> 'vaststelling' FROM eind AS e, LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
        WHERE e.naam = 'onbereikbaar'
    ),
    'null'::jsonb,
    'no settlement when the notification was not delivered'
);
SELECT ok(
    (
        SELECT
            bool_and(b::text !~* 'dvref|email|ontvanger|berichtgegevens|personalisat|sleutel|\\\\x')
        FROM eind AS e, LATERAL nmc.get_afleverbewijs(1001, e.id) AS b
    ),
    'no proof carries a recipient, personalisation, key or dvRef member or a byte string'
);

-- A notification that is not final yet says so.
SELECT pg_temp.verzonden() AS open \gset
SELECT nmc.get_afleverbewijs(1001, :'open') AS bo \gset
SELECT is(
    jsonb_build_array(
        :'bo'::jsonb -> 'definitief', :'bo'::jsonb #> '{notificatie,status}',
        :'bo'::jsonb -> 'vaststelling', :'bo'::jsonb -> 'eindstatus'
    ),
    '[false, "verzonden", null, null]'::jsonb,
    'verzonden: not final, no settlement, no final status'
);
SELECT ok(pg_temp.keten_klopt(:'bo'), 'its chain so far is whole');

-- ---------------------------------------------------------------------------------------
-- The history in pages: following `volgende` gives every event and receipt once.
SELECT e.id AS tid FROM eind AS e WHERE e.naam = 'technisch' \gset
CREATE TEMP TABLE pagina (nr integer, g jsonb);
DO $$
DECLARE
    v_id uuid := (SELECT e.id FROM eind AS e WHERE e.naam = 'technisch');
    v_g jsonb := nmc.get_geschiedenis(1001, v_id, 0, 0, 2);
    v_nr integer := 1;
BEGIN
    INSERT INTO pagina VALUES (v_nr, v_g);
    WHILE v_g -> 'volgende' <> 'null'::jsonb AND v_nr < 20 LOOP
        v_nr := v_nr + 1;
        v_g := nmc.get_geschiedenis(
            1001, v_id, (v_g #>> '{volgende,sequence}')::integer,
            (v_g #>> '{volgende,receipt}')::bigint, 2
        );
        INSERT INTO pagina VALUES (v_nr, v_g);
    END LOOP;
END
$$;
SELECT is(
    (SELECT max(jsonb_array_length(g -> 'events')) FROM pagina), 2, 'a page holds limiet events'
);
SELECT is(
    (
        SELECT jsonb_agg(x.e ORDER BY p.nr, x.o) FROM pagina AS p,
            LATERAL jsonb_array_elements(p.g -> 'events') WITH ORDINALITY AS x (e, o)
    ),
    nmc.get_afleverbewijs(1001, :'tid') -> 'events',
    'the pages together hold every event once, in order'
);
SELECT is(
    (
        SELECT count(*)::integer FROM pagina AS p,
            LATERAL jsonb_array_elements(p.g -> 'receipts') AS r
    ),
    2, 'and every receipt once'
);
SELECT is(
    (SELECT p.g -> 'volgende' FROM pagina AS p ORDER BY p.nr DESC LIMIT 1), 'null'::jsonb,
    'the last page has no next'
);
SELECT is(
    (SELECT count(DISTINCT p.g -> 'pogingen')::integer FROM pagina AS p), 1,
    'every page carries the attempts'
);
SELECT throws_ok(
    format('SELECT nmc.get_geschiedenis(1001, %L, 0, 0, 0)', :'tid'), '22023', null,
    'limiet must be 1 to 1000'
);

-- get_geschiedenis_v2: the same pages, its position the notification's own (the receipts
-- shown so far), never the NMC-wide receipt number.
SELECT has_function(
    'nmc', 'get_geschiedenis_v2', ARRAY['integer', 'uuid', 'integer', 'integer', 'integer'],
    'the history function, v2'
);
CREATE TEMP TABLE pagina2 (nr integer, g jsonb);
DO $$
DECLARE
    v_id uuid := (SELECT e.id FROM eind AS e WHERE e.naam = 'technisch');
    v_g jsonb := nmc.get_geschiedenis_v2(1001, v_id, 0, 0, 1);
    v_nr integer := 1;
BEGIN
    INSERT INTO pagina2 VALUES (v_nr, v_g);
    WHILE v_g -> 'volgende' <> 'null'::jsonb AND v_nr < 20 LOOP
        v_nr := v_nr + 1;
        v_g := nmc.get_geschiedenis_v2(
            1001, v_id, (v_g #>> '{volgende,sequence}')::integer,
            (v_g #>> '{volgende,receipts}')::integer, 1
        );
        INSERT INTO pagina2 VALUES (v_nr, v_g);
    END LOOP;
END
$$;
SELECT is(
    (
        SELECT jsonb_agg(x.r ORDER BY p.nr, x.o) FROM pagina2 AS p,
            LATERAL jsonb_array_elements(p.g -> 'receipts') WITH ORDINALITY AS x (r, o)
    ),
    (
        SELECT jsonb_agg(x.r ORDER BY p.nr, x.o) FROM pagina AS p,
            LATERAL jsonb_array_elements(p.g -> 'receipts') WITH ORDINALITY AS x (r, o)
    ),
    'v2 pages hold the same receipts, once each, in order'
);
SELECT is(
    (SELECT jsonb_agg(p.g -> 'volgende' ORDER BY p.nr) FROM pagina2 AS p WHERE p.nr <= 2),
    '[{"sequence": 1, "receipts": 1}, {"sequence": 2, "receipts": 2}]'::jsonb,
    'v2 volgende: the last sequence and the number of receipts shown so far'
);
SELECT is(
    (
        SELECT array_agg(k.k ORDER BY k.k)
        FROM jsonb_object_keys(nmc.geschiedenis_json(1001, :'tid', 0, 0, 0, 1) -> 'volgende')
            AS k (k)
    ),
    ARRAY['receipt', 'receipts', 'sequence'],
    'the one implementation gives both positions; each form keeps its own'
);
SELECT is(
    nmc.get_geschiedenis(1001, :'tid', 0, 0, 2) - 'volgende',
    nmc.get_geschiedenis_v2(1001, :'tid', 0, 0, 2) - 'volgende',
    'the kept form gives the same page as v2 but for its position'
);

SELECT * FROM finish();
ROLLBACK;
