-- The commit after the send: fenced by epoch; each outcome through the single writer.
BEGIN;
SELECT plan(29);
\ir fixtures/setup.sql

-- Accepts a notification and claims its send task.
CREATE FUNCTION pg_temp.claim(p_ref text) RETURNS TABLE (
    taak bigint, epoch integer, poging uuid, id uuid
)
LANGUAGE plpgsql AS $$
DECLARE v_id uuid := pg_temp.nieuwe_notificatie(p_dvref => p_ref);
BEGIN
    RETURN QUERY SELECT c.taak_id, c.claim_epoch, c.poging_id, c.notificatie_id
    FROM nmc.claim_verzenden('w', 20) AS c WHERE c.notificatie_id = v_id;
END $$;

-- 201: verzonden, NotifyNL id on the attempt, reconcile task +1 h.
SELECT * FROM pg_temp.claim('ok') \gset ok_
SELECT is(
    nmc.finish_verzenden(
        :ok_taak, :ok_epoch, 'verzonden', 'e0e0e0e0-0000-4000-8000-00000000000a',
        'f0f0f0f0-0000-4000-8000-00000000000a'
    )::text,
    'verzonden',
    'after the 201 the notification is verzonden'
);
SELECT results_eq(
    format('SELECT status::text, notifynl_id::text, contactgegeven_id::text,
            verzonden_op = nmc.now() FROM nmc.poging WHERE id = %L', :'ok_poging'),
    $$VALUES ('verzonden', 'e0e0e0e0-0000-4000-8000-00000000000a',
              'f0f0f0f0-0000-4000-8000-00000000000a', true)$$,
    'the attempt holds the NotifyNL id and the contactgegeven id'
);
SELECT results_eq(
    format($$SELECT soort::text, staat::text, poging_id::text, due = nmc.now() + interval '1 hour'
             FROM nmc.taak WHERE notificatie_id = %L ORDER BY id$$, :'ok_id'),
    format(
        $$VALUES ('verzenden', 'done', NULL, false), ('reconciliëren', 'open', %L, true)$$,
        :'ok_poging'
    ),
    'the send task is done and a reconcile task for the attempt is due in an hour'
);
SELECT throws_ok(
    format(
        $$SELECT nmc.finish_verzenden(%s, %s, 'verzonden', gen_random_uuid())$$,
        :ok_taak, :ok_epoch
    ),
    'NM011', NULL,
    'committing twice is refused (NM011)'
);

-- The worker died after the 201; the re-claim found the message and commits with epoch 2,
-- while the old worker wakes up and tries to commit with epoch 1.
SELECT * FROM pg_temp.claim('herclaim') \gset hc_
SELECT nmc.advance_clock('3 minutes');
SELECT claim_epoch AS hc_epoch2 FROM nmc.claim_verzenden('w2', 20)
WHERE notificatie_id = :'hc_id' \gset
SELECT throws_ok(
    format(
        $$SELECT nmc.finish_verzenden(%s, %s, 'verzonden', gen_random_uuid())$$,
        :hc_taak, :hc_epoch
    ),
    'NM011', NULL,
    'the commit with the lower epoch is refused'
);
SELECT is(
    nmc.finish_verzenden(
        :hc_taak, :hc_epoch2, 'verzonden',
        'e0e0e0e0-0000-4000-8000-00000000000b'
    )::text,
    'verzonden',
    'the commit with the current epoch goes through'
);

-- A receipt got there first and recorded the id; the worker's commit only closes its task.
SELECT * FROM pg_temp.claim('receipt-eerst') \gset re_
UPDATE nmc.poging SET notifynl_id = 'e0e0e0e0-0000-4000-8000-00000000000c', status = 'bezorgd'
WHERE id = :'re_poging';
SELECT nmc.transition_notificatie(:'re_id', 'verzonden');
SELECT nmc.transition_notificatie(:'re_id', 'bezorgd');
SELECT is(
    nmc.finish_verzenden(
        :re_taak, :re_epoch, 'verzonden',
        'e0e0e0e0-0000-4000-8000-00000000000c'
    )::text,
    'bezorgd',
    'a commit after the receipt changes no status'
);
SELECT results_eq(
    format('SELECT status::text, duplicaat_ids FROM nmc.poging WHERE id = %L', :'re_poging'),
    $$VALUES ('bezorgd', '{}'::uuid[])$$,
    'and leaves the attempt as the receipt made it'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM nmc.taak
        WHERE notificatie_id = :'re_id' AND soort = 'reconciliëren'
    ),
    0,
    'no reconciliation for an attempt that already has its outcome'
);

-- Another NotifyNL id for the same attempt (the first call did reach NotifyNL after all).
SELECT * FROM pg_temp.claim('dubbel') \gset du_
UPDATE nmc.poging SET notifynl_id = 'e0e0e0e0-0000-4000-8000-00000000000d' WHERE id = :'du_poging';
SELECT
    nmc.finish_verzenden(:du_taak, :du_epoch, 'verzonden', 'e0e0e0e0-0000-4000-8000-00000000000e');
SELECT results_eq(
    format(
        'SELECT notifynl_id::text, duplicaat_ids::text FROM nmc.poging WHERE id = %L', :'du_poging'
    ),
    $$VALUES ('e0e0e0e0-0000-4000-8000-00000000000d', '{e0e0e0e0-0000-4000-8000-00000000000e}')$$,
    'a second NotifyNL id is kept as a duplicate of the attempt'
);

-- NotifyNL 400: niet-bezorgbaar (onbereikbaar).
SELECT * FROM pg_temp.claim('adres') \gset ad_
SELECT is(
    nmc.finish_verzenden(:ad_taak, :ad_epoch, 'ongeldig-adres')::text, 'niet-bezorgbaar',
    'an invalid address ends the notification'
);
SELECT results_eq(
    format('SELECT n.reden::text, p.status::text FROM nmc.notificatie AS n
            JOIN nmc.poging AS p ON p.notificatie_id = n.id WHERE n.id = %L', :'ad_id'),
    $$VALUES ('onbereikbaar', 'permanent-mislukt')$$,
    'reason onbereikbaar, attempt permanent-mislukt'
);

SELECT is(
    (
        SELECT count(*)::integer
        FROM nmc.taak
        WHERE notificatie_id = :'ad_id' AND soort = 'ongeldig-melden'
    ),
    0,
    'decentraal: no address to report invalid at the Profielservice'
);

-- Under centraal the address came from the Profielservice: refused by NotifyNL (or by the
-- worker's check of NotifyNL's rule before the call), it is reported invalid there, as after
-- a permanent failure.
SELECT r.notificatie_id AS ac_id
FROM nmc.intake_notificatie_v3(
    gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32('adres-centraal'), 1::smallint,
    pg_temp.b32('payload'), 0::smallint, '\x01'::bytea, '\x02'::bytea, '\x03'::bytea, 'kek-1', NULL,
    NULL, '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('payload')
) AS r \gset
SELECT c.taak_id AS ac_taak, c.claim_epoch AS ac_epoch, c.poging_id AS ac_poging
FROM nmc.claim_verzenden('w', 20) AS c WHERE c.notificatie_id = :'ac_id' \gset
SELECT nmc.finish_verzenden(
    :ac_taak, :ac_epoch, 'ongeldig-adres', NULL, 'f0f0f0f0-0000-4000-8000-0000000000ac'
);
SELECT results_eq(
    format($$SELECT t.staat::text, t.poging_id::text, t.due = nmc.now(), p.contactgegeven_id::text
             FROM nmc.taak AS t JOIN nmc.poging AS p ON p.id = t.poging_id
             WHERE t.notificatie_id = %L AND t.soort = 'ongeldig-melden'$$, :'ac_id'),
    format($$VALUES ('open', %L, true, 'f0f0f0f0-0000-4000-8000-0000000000ac')$$, :'ac_poging'),
    'centraal: an ongeldig-melden task for the attempt and its contactgegeven, due now'
);

-- Profielservice: no e-mail -> niet-bezorgbaar (geen-contactgegevens), no attempt made.
SELECT * FROM pg_temp.claim('geen') \gset gc_
SELECT is(
    nmc.finish_verzenden(:gc_taak, :gc_epoch, 'geen-contactgegevens')::text,
    'niet-bezorgbaar', 'no contact details ends the notification'
);
SELECT results_eq(
    format('SELECT reden::text, (SELECT count(*)::integer FROM nmc.poging WHERE notificatie_id = %L)
            FROM nmc.notificatie WHERE id = %L', :'gc_id', :'gc_id'),
    $$VALUES ('geen-contactgegevens', 0)$$,
    'reason geen-contactgegevens, and the unsent attempt is gone'
);

-- A re-claim that found nothing after geldig_tot.
SELECT * FROM pg_temp.claim('laat') \gset la_
SELECT throws_ok(
    format($$SELECT nmc.finish_verzenden(%s, %s, 'verlopen')$$, :la_taak, :la_epoch),
    'NM014', NULL,
    'verlopen before geldig_tot is refused (NM014)'
);
SELECT nmc.advance_clock('4 days');
SELECT is(
    nmc.finish_verzenden(:la_taak, :la_epoch, 'verlopen')::text, 'verlopen',
    'after geldig_tot the send ends in verlopen'
);

-- Deferral past geldig_tot, and exhaustion of a send.
SELECT * FROM pg_temp.claim('storing') \gset st_
UPDATE nmc.notificatie SET geldig_tot = nmc.now() + interval '3 seconds' WHERE id = :'st_id';
SELECT is(
    nmc.defer_taak(:st_taak, :st_epoch, 'http-503'), 'verlopen',
    'a deferral that would pass geldig_tot ends the notification in verlopen'
);
-- NotifyNL accepted the send, but the worker timed out: the receipt commits the send on
-- its behalf and delivers. A deferral past geldig_tot must not undo that outcome.
SELECT * FROM pg_temp.claim('laat-bezorgd') \gset lb_
SELECT nmc.store_receipt(
    :'lb_poging', 'e0e0e0e0-0000-4000-8000-0000000000bb', 'delivered', nmc.now(), nmc.now()
);
SELECT nmc.process_receipts(10);
UPDATE nmc.notificatie SET geldig_tot = nmc.now() + interval '3 seconds' WHERE id = :'lb_id';
SELECT is(
    nmc.defer_taak(:lb_taak, :lb_epoch, 'timeout'), 'uitgesteld',
    'a deferral of a send whose attempt already has an outcome does not expire it'
);
SELECT is(
    (SELECT status::text FROM nmc.notificatie WHERE id = :'lb_id'), 'bezorgd',
    'the delivered notification stays bezorgd'
);
SELECT * FROM pg_temp.claim('kapot') \gset ka_
UPDATE nmc.taak SET pogingen = 4 WHERE id = :ka_taak;
SELECT is(
    nmc.fail_taak(:ka_taak, :ka_epoch, 'bug'), 'technisch-mislukt',
    'an exhausted send task ends the notification'
);
SELECT results_eq(
    format('SELECT n.status::text, n.reden::text, t.staat::text FROM nmc.notificatie AS n
            JOIN nmc.taak AS t ON t.notificatie_id = n.id AND t.soort = ''verzenden''
            WHERE n.id = %L', :'ka_id'),
    $$VALUES ('technisch-mislukt', 'technisch', 'done')$$,
    'technisch-mislukt with reason technisch; the task is done'
);
SELECT throws_ok(
    format($$SELECT nmc.finish_verzenden(%s, %s, 'weet-niet')$$, :ka_taak, :ka_epoch),
    'NM011', NULL,
    'nothing commits on a closed task'
);

-- A temporary or technical failure processed between NotifyNL's 201 and the worker's
-- commit: its resend meets the still-claimed send task, so the commit that comes second
-- (the worker's) plans it. Then the resend claim makes attempt 2.
SELECT * FROM pg_temp.claim('race-tijdelijk') \gset rt_
SELECT * FROM pg_temp.claim('race-technisch') \gset rx_
SELECT is(
    pg_temp.navraag_antwoord(
        :'rt_poging', 'e0e0e0e0-0000-4000-8000-0000000000f1', 'temporary-failure', nmc.now(), NULL
    )
    || ' ' || pg_temp.navraag_antwoord(
        :'rx_poging', 'e0e0e0e0-0000-4000-8000-0000000000f2', 'technical-failure', nmc.now(), NULL
    ),
    'herverzenden herverzenden',
    'the failures arrive before the worker''s commits'
);
SELECT is(
    nmc.finish_verzenden(
        :rt_taak, :rt_epoch, 'verzonden', 'e0e0e0e0-0000-4000-8000-0000000000f1'
    )::text,
    'verzonden',
    'the worker''s commit after the temporary failure'
);
SELECT is(
    (
        SELECT r.status::text || ' ' || coalesce(r.fout, '-') FROM nmc.finish_verzenden_batch(
            ARRAY[:rx_taak]::bigint[], ARRAY[:rx_epoch], '{verzonden}',
            '{e0e0e0e0-0000-4000-8000-0000000000f2}'
        ) AS r
    ),
    'verzonden -',
    'the worker''s group commit after the technical failure'
);
SELECT results_eq(
    format(
        $$SELECT notificatie_id::text, staat::text FROM nmc.taak
          WHERE notificatie_id IN (%L, %L) AND soort = 'verzenden' ORDER BY notificatie_id, id$$,
        :'rt_id', :'rx_id'
    ),
    format(
        $$VALUES (%L, 'done'), (%L, 'open') UNION ALL VALUES (%L, 'done'), (%L, 'open')
          ORDER BY 1, 2$$,
        least(:'rt_id', :'rx_id'), least(:'rt_id', :'rx_id'),
        greatest(:'rt_id', :'rx_id'), greatest(:'rt_id', :'rx_id')
    ),
    'each closes its send task and plans the resend the receipt could not plan'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM nmc.claim_verzenden('w', 20) AS c
        WHERE
            c.notificatie_id IN (:'rt_id', :'rx_id') AND c.poging_nummer = 2
            AND NOT c.herclaim
    ),
    2,
    'the resend claims make attempt 2'
);

SELECT * FROM finish();
ROLLBACK;
