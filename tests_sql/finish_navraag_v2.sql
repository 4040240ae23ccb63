-- A reconciliation answer's history row carries what NotifyNL answered: its id and the
-- template (id, version) of GET /v2/notifications/{id}, shown where the proof shows receipts.
BEGIN;
SELECT plan(6);
\ir fixtures/setup.sql

-- Accepts, claims and commits a send with NotifyNL id p_notifynl; an hour later claims its
-- reconciliation. Returns (attempt, task, epoch, notification).
CREATE FUNCTION pg_temp.navraag(p_ref text, p_notifynl uuid) RETURNS TABLE (
    poging uuid, taak bigint, epoch integer, id uuid
)
LANGUAGE plpgsql AS $$
DECLARE v_id uuid := pg_temp.nieuwe_notificatie(p_dvref => p_ref); v_c record;
BEGIN
    SELECT * INTO v_c FROM nmc.claim_verzenden('w', 100) AS c WHERE c.notificatie_id = v_id;
    PERFORM nmc.finish_verzenden(v_c.taak_id, v_c.claim_epoch, 'verzonden', p_notifynl);
    PERFORM nmc.advance_clock('1 hour');
    RETURN QUERY SELECT c.poging_id, c.taak_id, c.claim_epoch, v_id
    FROM nmc.claim_navraag_v2('w', 100) AS c WHERE c.poging_id = v_c.poging_id;
END $$;

SELECT * FROM pg_temp.navraag('met', 'e0e0e0e0-0000-4000-8000-0000000000f1') \gset m_
SELECT is(
    nmc.finish_navraag_v2(
        :m_taak, :m_epoch, true, 'delivered', nmc.now() - interval '5 minutes',
        nmc.now() - interval '10 minutes', 'e0e0e0e0-0000-4000-8000-0000000000f1',
        'a0a0a0a0-0000-4000-8000-000000000001', 4
    ),
    'bezorgd',
    'a delivered answer is judged like a receipt'
);
SELECT results_eq(
    format(
        'SELECT bron, notifynl_id::text, template_id::text, template_versie
         FROM nmc.receiptgeschiedenis WHERE poging_id = %L', :'m_poging'
    ),
    $$VALUES ('navraag', 'e0e0e0e0-0000-4000-8000-0000000000f1',
              'a0a0a0a0-0000-4000-8000-000000000001', 4)$$,
    'its history row holds NotifyNL''s id and the template (id, version) of the answer'
);
SELECT results_eq(
    format(
        $$SELECT r ->> 'bron', r ->> 'notifynlId', r ->> 'templateId', (r ->> 'templateVersie')::int
          FROM jsonb_array_elements(
              nmc.get_geschiedenis(1001, %L, 0, 0, 100) -> 'receipts'
          ) AS r$$,
        :'m_id'
    ),
    $$VALUES ('navraag', 'e0e0e0e0-0000-4000-8000-0000000000f1',
              'a0a0a0a0-0000-4000-8000-000000000001', 4)$$,
    'the history shows them with the receipt'
);
SELECT is(
    (nmc.get_afleverbewijs(1001, :'m_id') -> 'notificatie' ->> 'templateVersie')::int, 4,
    'and the proof names the template version the outcome rests on'
);

-- The previous release's form: the same judgement, without what it does not pass.
SELECT * FROM pg_temp.navraag('oud', 'e0e0e0e0-0000-4000-8000-0000000000f2') \gset o_
SELECT is(
    nmc.finish_navraag(
        :o_taak, :o_epoch, true, 'sending', null, nmc.now() - interval '10 minutes'
    ),
    'opnieuw',
    'nmc.finish_navraag answers as nmc.finish_navraag_v2'
);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE id = :o_taak), 'open',
    'and asks again later'
);

SELECT * FROM finish();
ROLLBACK;
