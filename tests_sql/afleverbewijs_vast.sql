-- The delivery proof rests on evidence and stays put once final:
-- no operator forces a notification into bezorgd or definitief-bezorgd, the watchdog never
-- settles without a delivery time, a proof names every forced transition (who, when, why),
-- and after the final status nothing changes the proof but uitgegevenOp: no late receipt,
-- no reconciliation answer or dead end, no re-onboarding of the DV or its berichttype.
BEGIN;
SELECT plan(24);
\ir fixtures/setup.sql
\ir fixtures/bewijs.sql

-- A reconciliation of the notification's latest attempt, claimed (as the worker does) after
-- its due time; returns finish_navraag's answer.
CREATE FUNCTION pg_temp.navraag(p_id uuid, p_gevonden boolean, p_status text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_p nmc.poging := pg_temp.laatste_poging(p_id);
    v_c record;
BEGIN
    INSERT INTO nmc.taak (soort, dv_id, notificatie_id, poging_id, due, aangemaakt_op)
    VALUES ('reconciliëren', 1001, p_id, v_p.id, nmc.now(), nmc.now())
    ON CONFLICT DO NOTHING;
    UPDATE nmc.taak AS t SET due = nmc.now()
    WHERE t.poging_id = v_p.id AND t.soort = 'reconciliëren' AND t.staat = 'open';
    SELECT * INTO v_c FROM nmc.claim_navraag_v2('w', 1000) AS c WHERE c.poging_id = v_p.id;
    RETURN nmc.finish_navraag(v_c.taak_id, v_c.claim_epoch, p_gevonden, p_status,
        CASE WHEN p_gevonden THEN nmc.now() - interval '1 minute' END, NULL);
END $$;

-- ---------------------------------------------------------------------------------------
-- Item 2: bezorgd and definitief-bezorgd rest on NotifyNL's receipt and the settlement only.
SELECT pg_temp.verzonden() AS v \gset
SELECT throws_ok(
    format($$SELECT nmc.force_transition(%L, 'bezorgd', NULL, 'ticket 9', 'beheerder')$$, :'v'),
    'NM021', NULL, 'forcing verzonden -> bezorgd is refused (NM021)'
);
SELECT throws_ok(
    format(
        $$SELECT nmc.console_force_transition(%L, 'bezorgd', NULL, 'ticket 9', 'console:op')$$,
        :'v'
    ),
    'NM021', NULL, 'from the console too'
);
SELECT is(
    (
        SELECT array_agg(o ->> 'naar' ORDER BY o ->> 'naar')
        FROM nmc.console_notificatie(:'v') AS c, jsonb_array_elements(c.overgangen) AS o
    ),
    ARRAY['bezorgstatus-onbekend', 'niet-bezorgbaar', 'technisch-mislukt', 'verlopen'],
    'the console offers no bezorgd from verzonden'
);
SELECT is(
    (
        SELECT array_agg(s ORDER BY s)
        FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS s WHERE NOT nmc.forceerbaar(s)
    ),
    ARRAY['bezorgd', 'definitief-bezorgd']::nmc.notificatie_status[],
    'nmc.forceerbaar: every status but bezorgd and definitief-bezorgd'
);
SELECT pg_temp.callback(:'v', 'delivered', nmc.now() - interval '1 minute');
SELECT throws_ok(
    format(
        $$SELECT nmc.force_transition(%L, 'definitief-bezorgd', NULL, 'x', 'beheerder')$$, :'v'
    ),
    'NM021', NULL, 'forcing bezorgd -> definitief-bezorgd is refused (NM021)'
);
SELECT is(
    (
        SELECT array_agg(o ->> 'naar' ORDER BY o ->> 'naar')
        FROM nmc.console_notificatie(:'v') AS c, jsonb_array_elements(c.overgangen) AS o
    ),
    ARRAY['niet-bezorgbaar', 'verlopen', 'verzonden'],
    'the console offers no definitief-bezorgd from bezorgd'
);

-- A bezorgd without a delivered attempt (what a forced bezorgd of an earlier release left):
-- the watchdog keeps the whole term, and the settlement needs a delivery time.
SELECT pg_temp.verzonden() AS zonder \gset
SELECT nmc.transition_notificatie(:'zonder', 'bezorgd');
UPDATE nmc.taak AS t SET staat = 'done' WHERE t.notificatie_id = :'zonder';
SELECT nmc.plan_missing_taken(1000);
SELECT is(
    (
        SELECT t.due FROM nmc.taak AS t
        WHERE t.notificatie_id = :'zonder' AND t.soort = 'vaststellen' AND t.staat = 'open'
    ),
    nmc.now() + interval '7 days 30 minutes',
    'the watchdog plans it the whole term out, never now (NULL + term)'
);
SELECT nmc.advance_clock('8 days');
SELECT nmc.process_vaststellingen(1000);
SELECT is(
    (SELECT n.status::text FROM nmc.notificatie AS n WHERE n.id = :'zonder'), 'bezorgd',
    'and the settlement does not settle without a delivered attempt'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.vaststelling AS v WHERE v.notificatie_id = :'zonder'), 0,
    'nor records a settlement'
);

-- A forced transition is in the proof's signed content: what, who, when, why.
SELECT pg_temp.verzonden() AS f \gset
SELECT nmc.force_transition(:'f', 'verlopen', 'verlopen', 'ticket 12', 'beheerder') AS fv \gset
SELECT nmc.get_afleverbewijs(1001, :'f') AS fb \gset
SELECT is(
    :'fb'::jsonb -> 'beheeracties',
    jsonb_build_array(jsonb_build_object(
        'soort', 'forceer-overgang', 'van', 'verzonden', 'naar', 'verlopen',
        'sequence', :'fv'::integer, 'door', 'beheerder', 'toelichting', 'ticket 12',
        'tijdstip', :'fb'::jsonb #> '{events,-1,tijdstip}'
    )),
    'the proof names the forced transition: its event, who, when and why'
);
SELECT is(
    (:'fb'::jsonb #>> '{beheeracties,0,tijdstip}')::timestamptz, nmc.now(),
    'at the time it was forced'
);
SELECT is(
    nmc.bewijs_beheeracties_json(:'f'), :'fb'::jsonb -> 'beheeracties',
    'nmc.bewijs_beheeracties_json gives the member'
);
SELECT ok(
    NOT (nmc.get_afleverbewijs(1001, :'v') ? 'beheeracties'),
    'a proof without forced transitions has no beheeracties member'
);

-- The audit row is kept as long as the notification it explains (the proof must not lose
-- it before the notification goes).
UPDATE nmc.beheeractie AS a SET tijdstip = a.tijdstip - interval '400 days'
WHERE a.notificatie_id = :'f';
SELECT nmc.delete_expired(1000);
SELECT is(
    nmc.get_afleverbewijs(1001, :'f') #>> '{beheeracties,0,toelichting}', 'ticket 12',
    'an old forced transition stays in the proof while the notification is kept'
);

-- ---------------------------------------------------------------------------------------
-- Item 4: after the final status the proof stays as it was.

-- A receipt for an attempt still running when the notification became terminal.
SELECT pg_temp.verzonden() AS r \gset
SELECT nmc.force_transition(:'r', 'verlopen', 'verlopen', 'ticket 13', 'beheerder');
SELECT nmc.get_afleverbewijs(1001, :'r') AS rb \gset
SELECT pg_temp.callback(:'r', 'delivered', nmc.now() - interval '1 minute');
SELECT is(
    pg_temp.zonder_tijd(nmc.get_afleverbewijs(1001, :'r')), pg_temp.zonder_tijd(:'rb'),
    'a receipt after the final status does not change the final proof'
);
SELECT is(
    (
        SELECT array_agg(r ->> 'status' || ':' || (r ->> 'naEindstatus'))
        FROM jsonb_array_elements(nmc.get_geschiedenis(1001, :'r', 0, 0, 100) -> 'receipts') AS r
    ),
    ARRAY['delivered:true'],
    'it is in the history, after the final status'
);
SELECT is(
    (SELECT p.status::text FROM nmc.poging AS p WHERE p.notificatie_id = :'r'), 'verzonden',
    'and the attempt is left as it was'
);

-- A reconciliation answer, and the reconciliation's dead end, after the final status.
SELECT pg_temp.verzonden() AS a \gset
SELECT nmc.force_transition(:'a', 'technisch-mislukt', 'technisch', 'ticket 14', 'beheerder');
SELECT nmc.get_afleverbewijs(1001, :'a') AS ab \gset
SELECT pg_temp.navraag(:'a', TRUE, 'permanent-failure');
SELECT is(
    pg_temp.zonder_tijd(nmc.get_afleverbewijs(1001, :'a')), pg_temp.zonder_tijd(:'ab'),
    'a reconciliation answer after the final status does not change the final proof'
);
SELECT pg_temp.navraag(:'a', FALSE, NULL);
SELECT is(
    (SELECT p.status::text FROM nmc.poging AS p WHERE p.notificatie_id = :'a'), 'verzonden',
    'the dead end does not set the attempt of a terminal notification onbekend'
);
SELECT is(
    pg_temp.zonder_tijd(nmc.get_afleverbewijs(1001, :'a')), pg_temp.zonder_tijd(:'ab'),
    'nor changes its final proof'
);

-- Re-onboarding: another DV name, another template for the berichttype.
SELECT pg_temp.verzonden() AS o \gset
SELECT pg_temp.callback(:'o', 'delivered', nmc.now() - interval '1 minute');
SELECT nmc.advance_clock('8 days');
SELECT nmc.process_vaststellingen(1000);
SELECT nmc.get_afleverbewijs(1001, :'o') AS ob \gset
UPDATE nmc.dienstverlener SET naam = 'Test DV een (nieuw)' WHERE dv_id = 1001;
UPDATE nmc.berichttype SET notifynl_template_id = 'b0b0b0b0-0000-4000-8000-000000000002'
WHERE dv_id = 1001 AND code = 'aanslag';
SELECT is(
    pg_temp.zonder_tijd(nmc.get_afleverbewijs(1001, :'o')), pg_temp.zonder_tijd(:'ob'),
    'renaming the DV and re-pointing the berichttype''s template do not change an old proof'
);
SELECT is(
    :'ob'::jsonb #>> '{notificatie,notifynlTemplateId}',
    (SELECT p.notifynl_template_id::text FROM nmc.poging AS p WHERE p.notificatie_id = :'o'),
    'the proof names the template its attempt was sent with'
);

-- One accepted before the re-onboarding and sent after it names the DV of its intake and
-- the template it was sent with.
SELECT r.notificatie_id AS l FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32(gen_random_uuid()::text),
    1::smallint, pg_temp.b32('p'), 0::smallint, '\x01', NULL, '\x02', 'kek-1', NULL, NULL,
    '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')
) AS r \gset
UPDATE nmc.dienstverlener SET naam = 'Test DV een (derde)' WHERE dv_id = 1001;
UPDATE nmc.berichttype SET notifynl_template_id = 'c0c0c0c0-0000-4000-8000-000000000003'
WHERE dv_id = 1001 AND code = 'aanslag';
SELECT pg_temp.verstuur(:'l');
UPDATE nmc.dienstverlener SET naam = 'Test DV een (vierde)' WHERE dv_id = 1001;
UPDATE nmc.berichttype SET notifynl_template_id = 'd0d0d0d0-0000-4000-8000-000000000004'
WHERE dv_id = 1001 AND code = 'aanslag';
SELECT is(
    nmc.get_afleverbewijs(1001, :'l') #>> '{notificatie,dienstverlener,naam}',
    'Test DV een (nieuw)', 'the DV''s name as it was at intake'
);
SELECT is(
    nmc.get_afleverbewijs(1001, :'l') #>> '{notificatie,notifynlTemplateId}',
    'c0c0c0c0-0000-4000-8000-000000000003', 'the template the attempt was sent with'
);

SELECT * FROM finish();
ROLLBACK;
