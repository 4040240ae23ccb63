-- The group commit of send outcomes: one call, every item judged on its own.
BEGIN;
SELECT plan(24);
\ir fixtures/setup.sql

-- Twelve notifications, claimed together (one claim, epoch 1 each).
CREATE TEMP TABLE n AS
SELECT
    r.ref,
    pg_temp.nieuwe_notificatie(p_dvref => r.ref) AS id
FROM unnest(ARRAY[
    'ok', 'oud', 'tweemaal', 'adres', 'geen', 'vroeg', 'laat', 'raar', 'zonder-id',
    'receipt-eerst', 'dubbel', 'eindstand'
]) AS r (ref);
UPDATE nmc.notificatie SET geldig_tot = nmc.now() - interval '1 second'
WHERE id = (SELECT id FROM n WHERE ref = 'laat');
CREATE TEMP TABLE c AS
SELECT n.ref, k.*
FROM n INNER JOIN nmc.claim_verzenden('w', 50) AS k ON n.id = k.notificatie_id;
-- 'laat' was past geldig_tot at the claim and went to verlopen there; give it a fresh
-- send task claimed as a re-claim would be, so the batch sees a held task past geldig_tot.
UPDATE nmc.notificatie SET geldig_tot = nmc.now() + interval '1 hour'
WHERE id = (SELECT id FROM n WHERE ref = 'vroeg');
SELECT is((SELECT count(*)::integer FROM c), 11, 'eleven sends claimed (laat went to verlopen)');

-- 'laat': a re-claim after geldig_tot (in-verzending, attempt gepland).
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'laat-2') AS laat \gset
INSERT INTO c
SELECT 'laat', k.* FROM nmc.claim_verzenden('w', 50) AS k WHERE k.notificatie_id = :'laat';
UPDATE nmc.notificatie SET geldig_tot = nmc.now() + interval '1 minute' WHERE id = :'laat';
DELETE FROM c WHERE ref = 'laat' AND notificatie_id <> :'laat';

-- The worker's epoch of 'oud' is stale: another claim took the task over.
UPDATE nmc.taak SET claim_epoch = claim_epoch + 1
WHERE id = (SELECT taak_id FROM c WHERE ref = 'oud');
-- A receipt came first for 'receipt-eerst' (id recorded, verzonden, bezorgd).
UPDATE nmc.poging SET notifynl_id = 'e0e0e0e0-0000-4000-8000-0000000000a1', status = 'bezorgd'
WHERE id = (SELECT poging_id FROM c WHERE ref = 'receipt-eerst');
SELECT
    nmc.transition_notificatie(
        (SELECT notificatie_id FROM c WHERE ref = 'receipt-eerst'), 'verzonden'
    );
SELECT
    nmc.transition_notificatie(
        (SELECT notificatie_id FROM c WHERE ref = 'receipt-eerst'), 'bezorgd'
    );
-- 'dubbel': the attempt already holds another NotifyNL id.
UPDATE nmc.poging SET notifynl_id = 'e0e0e0e0-0000-4000-8000-0000000000b1'
WHERE id = (SELECT poging_id FROM c WHERE ref = 'dubbel');
-- 'eindstand': an operator forced it to technisch-mislukt meanwhile; ongeldig-adres no
-- longer fits (niet-bezorgbaar is not allowed from there).
SELECT nmc.transition_notificatie(
    (SELECT notificatie_id FROM c WHERE ref = 'eindstand'), 'technisch-mislukt', 'technisch'
);
SELECT nmc.advance_clock('2 minutes');

CREATE TEMP TABLE invoer AS
SELECT
    v.i,
    v.ref,
    c.taak_id,
    c.claim_epoch,
    c.notificatie_id,
    c.poging_id,
    v.uitkomst,
    v.notifynl_id::uuid,
    v.contactgegeven_id::uuid
FROM (
    VALUES
    (
        1,
        'ok',
        'verzonden',
        'e0e0e0e0-0000-4000-8000-000000000001',
        'f0f0f0f0-0000-4000-8000-000000000001'
    ),
    (2, 'oud', 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000002', NULL),
    (3, 'tweemaal', 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000003', NULL),
    (4, 'tweemaal', 'ongeldig-adres', NULL, NULL),
    (5, 'adres', 'ongeldig-adres', NULL, 'f0f0f0f0-0000-4000-8000-000000000005'),
    (6, 'geen', 'geen-contactgegevens', NULL, NULL),
    (7, 'vroeg', 'verlopen', NULL, NULL),
    (8, 'raar', 'weet-niet', NULL, NULL),
    (9, 'zonder-id', 'verzonden', NULL, NULL),
    (10, 'receipt-eerst', 'verzonden', 'e0e0e0e0-0000-4000-8000-0000000000a1', NULL),
    (11, 'dubbel', 'verzonden', 'e0e0e0e0-0000-4000-8000-0000000000b2', NULL),
    (12, 'eindstand', 'ongeldig-adres', NULL, NULL),
    (13, 'laat', 'verlopen', NULL, NULL)
) AS v (i, ref, uitkomst, notifynl_id, contactgegeven_id)
INNER JOIN c ON v.ref = c.ref;

CREATE TEMP TABLE uit AS
SELECT r.*
FROM nmc.finish_verzenden_batch(
    (SELECT array_agg(taak_id ORDER BY i) FROM invoer),
    (SELECT array_agg(claim_epoch ORDER BY i) FROM invoer),
    (SELECT array_agg(uitkomst ORDER BY i) FROM invoer),
    (SELECT array_agg(notifynl_id ORDER BY i) FROM invoer),
    (SELECT array_agg(contactgegeven_id ORDER BY i) FROM invoer)
) AS r;

SELECT results_eq(
    'SELECT item, status::text, fout FROM uit ORDER BY item',
    $$VALUES
        (1, 'verzonden', NULL),
        (2, NULL, 'NM011'),
        (3, 'verzonden', NULL),
        (4, NULL, 'NM011'),
        (5, 'niet-bezorgbaar', NULL),
        (6, 'niet-bezorgbaar', NULL),
        (7, 'in-verzending', 'NM014'),
        (8, 'in-verzending', '22023'),
        (9, 'in-verzending', '22023'),
        (10, 'bezorgd', NULL),
        (11, 'verzonden', NULL),
        (12, 'technisch-mislukt', 'NM001'),
        (13, 'verlopen', NULL)$$,
    'per item: the status after the call, or the SQLSTATE of its refusal (no status if not held)'
);

-- The items that committed.
SELECT results_eq(
    $$SELECT p.status::text, p.notifynl_id::text, p.contactgegeven_id::text,
             p.verzonden_op = nmc.now()
      FROM nmc.poging AS p INNER JOIN invoer AS i ON p.id = i.poging_id WHERE i.ref = 'ok'$$,
    $$VALUES ('verzonden', 'e0e0e0e0-0000-4000-8000-000000000001',
              'f0f0f0f0-0000-4000-8000-000000000001', true)$$,
    'a sent attempt holds its NotifyNL id and contactgegeven id'
);
SELECT set_eq(
    $$SELECT t.poging_id FROM nmc.taak AS t WHERE t.soort = 'reconciliëren'
      AND t.staat = 'open' AND t.due = nmc.now() + interval '1 hour'$$,
    $$SELECT poging_id FROM invoer WHERE ref IN ('ok', 'tweemaal', 'dubbel')$$,
    'a reconcile task in an hour for each attempt that was sent (not for one a receipt settled)'
);
SELECT results_eq(
    $$SELECT p.status::text, p.afgerond_op = nmc.now(), p.contactgegeven_id::text, n.reden::text
      FROM nmc.poging AS p INNER JOIN invoer AS i ON p.id = i.poging_id
      INNER JOIN nmc.notificatie AS n ON n.id = i.notificatie_id WHERE i.ref = 'adres'$$,
    $$VALUES ('permanent-mislukt', true, 'f0f0f0f0-0000-4000-8000-000000000005', 'onbereikbaar')$$,
    'NotifyNL 400: attempt permanent-mislukt, niet-bezorgbaar (onbereikbaar)'
);
SELECT results_eq(
    $$SELECT n.reden::text, (SELECT count(*)::integer FROM nmc.poging AS p
        WHERE p.notificatie_id = n.id)
      FROM nmc.notificatie AS n INNER JOIN invoer AS i ON n.id = i.notificatie_id
      WHERE i.ref = 'geen'$$,
    $$VALUES ('geen-contactgegevens', 0)$$,
    'no e-mail address: niet-bezorgbaar (geen-contactgegevens), the unsent attempt is gone'
);
SELECT results_eq(
    $$SELECT n.reden::text, (SELECT count(*)::integer FROM nmc.poging AS p
        WHERE p.notificatie_id = n.id)
      FROM nmc.notificatie AS n INNER JOIN invoer AS i ON n.id = i.notificatie_id
      WHERE i.ref = 'laat'$$,
    $$VALUES ('verlopen', 0)$$,
    'nothing found after geldig_tot: verlopen, the unsent attempt is gone'
);
SELECT results_eq(
    $$SELECT p.status::text, p.notifynl_id::text, p.duplicaat_ids::text[]
      FROM nmc.poging AS p INNER JOIN invoer AS i ON p.id = i.poging_id
      WHERE i.ref IN ('receipt-eerst', 'dubbel') ORDER BY i.i$$,
    $$VALUES ('bezorgd', 'e0e0e0e0-0000-4000-8000-0000000000a1', '{}'::text[]),
             ('verzonden', 'e0e0e0e0-0000-4000-8000-0000000000b1',
              '{e0e0e0e0-0000-4000-8000-0000000000b2}'::text[])$$,
    'a receipt''s id stays as it was; another id is kept as a duplicate'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.event AS e
        WHERE
            e.notificatie_id IN (SELECT i.notificatie_id FROM invoer AS i)
            AND e.xid = pg_current_xact_id() AND e.tijdstip = nmc.now()
    ),
    6,
    'six transitions at the commit time: ok, tweemaal, adres, geen, dubbel, laat'
);
SELECT is(
    (
        SELECT count(DISTINCT e.cmin::text)::integer FROM nmc.event AS e
        INNER JOIN invoer AS i ON e.notificatie_id = i.notificatie_id
        WHERE e.tijdstip = nmc.now()
    ),
    1,
    'written by one statement of the single writer'
);
SELECT set_eq(
    $$SELECT t.id FROM nmc.taak AS t WHERE t.soort = 'verzenden' AND t.staat = 'done'
      AND t.afgerond_op = nmc.now() AND t.lease_tot IS NULL$$,
    $$SELECT DISTINCT taak_id FROM invoer
      WHERE ref IN ('ok', 'tweemaal', 'adres', 'geen', 'receipt-eerst', 'dubbel', 'laat')$$,
    'exactly the committed items'' tasks are done'
);

-- The refused items changed nothing.
SELECT set_eq(
    $$SELECT t.id, t.claim_epoch FROM nmc.taak AS t WHERE t.soort = 'verzenden'
      AND t.staat = 'claimed'$$,
    $$SELECT taak_id, claim_epoch + (ref = 'oud')::integer FROM invoer
      WHERE ref IN ('oud', 'vroeg', 'raar', 'zonder-id', 'eindstand')$$,
    'the refused items'' tasks are still claimed, with their epochs'
);
SELECT results_eq(
    $$SELECT n.status::text, n.versie, p.status::text, p.notifynl_id IS NULL
      FROM invoer AS i INNER JOIN nmc.notificatie AS n ON n.id = i.notificatie_id
      LEFT JOIN nmc.poging AS p ON p.id = i.poging_id
      WHERE i.ref IN ('oud', 'vroeg', 'raar', 'zonder-id') ORDER BY i.i$$,
    $$VALUES ('in-verzending', 2, 'gepland', true), ('in-verzending', 2, 'gepland', true),
             ('in-verzending', 2, 'gepland', true), ('in-verzending', 2, 'gepland', true)$$,
    'their notifications and attempts are as the claim left them'
);
SELECT results_eq(
    $$SELECT n.status::text, p.status::text FROM invoer AS i
      INNER JOIN nmc.notificatie AS n ON n.id = i.notificatie_id
      INNER JOIN nmc.poging AS p ON p.id = i.poging_id WHERE i.ref = 'eindstand'$$,
    $$VALUES ('technisch-mislukt', 'gepland')$$,
    'an outcome the status no longer allows (NM001) leaves the attempt alone too'
);

-- Committing the same batch again: every item is stale now or still refused.
SELECT results_eq(
    $$SELECT r.fout FROM nmc.finish_verzenden_batch(
        (SELECT array_agg(taak_id ORDER BY i) FROM invoer),
        (SELECT array_agg(claim_epoch ORDER BY i) FROM invoer),
        (SELECT array_agg(uitkomst ORDER BY i) FROM invoer),
        (SELECT array_agg(notifynl_id ORDER BY i) FROM invoer),
        (SELECT array_agg(contactgegeven_id ORDER BY i) FROM invoer)
    ) AS r ORDER BY r.item$$,
    $$VALUES ('NM011'), ('NM011'), ('NM011'), ('NM011'), ('NM011'), ('NM011'), ('NM014'),
             ('22023'), ('22023'), ('NM011'), ('NM011'), ('NM001'), ('NM011')$$,
    'a batch committed twice: the committed items are stale (NM011), no second transition'
);

-- The single form is this function for one item, raising its refusal.
SELECT throws_ok(
    format(
        $$SELECT nmc.finish_verzenden(%s, %s, 'verlopen')$$,
        (SELECT taak_id FROM invoer WHERE ref = 'vroeg'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'vroeg')
    ),
    'NM014', 'geldig_tot has not passed; send instead',
    'finish_verzenden raises the item''s refusal (NM014)'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.finish_verzenden(%s, %s, 'ongeldig-adres')$$,
        (SELECT taak_id FROM invoer WHERE ref = 'eindstand'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'eindstand')
    )),
    'NM001:technisch-mislukt',
    'and NM001 with the current status as DETAIL'
);
SELECT throws_ok(
    format(
        $$SELECT nmc.finish_verzenden(%s, %s, 'verzonden')$$,
        (SELECT taak_id FROM invoer WHERE ref = 'zonder-id'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'zonder-id')
    ),
    '22023', 'a sent attempt needs its NotifyNL id',
    'and 22023 for a sent attempt without its id'
);

-- Refusals of the whole call, and the empty batch.
SELECT throws_ok(
    $$SELECT * FROM nmc.finish_verzenden_batch('{1,2}', '{1}', '{verzonden,verzonden}')$$,
    '22023', 'the arrays differ in length',
    'arrays of different length are refused (22023)'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.finish_verzenden_batch('{1}', '{1}', '{verzonden}', '{}')$$,
    '22023', 'the arrays differ in length',
    'NotifyNL ids of another length are refused (22023)'
);
SELECT is_empty(
    $$SELECT * FROM nmc.finish_verzenden_batch('{}', '{}', '{}')$$,
    'an empty batch commits nothing'
);

-- extend_leases: the lease of every held item, NULL for a stale one.
SELECT nmc.advance_clock('30 seconds');
SELECT results_eq(
    format(
        $$SELECT item, lease_tot FROM nmc.extend_leases(ARRAY[%s, %s, %s, 424242],
            ARRAY[%s, %s, %s, 1]) ORDER BY item$$,
        (SELECT taak_id FROM invoer WHERE ref = 'vroeg'),
        (SELECT taak_id FROM invoer WHERE ref = 'oud'),
        (SELECT taak_id FROM invoer WHERE ref = 'raar'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'vroeg'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'oud'),
        (SELECT claim_epoch FROM invoer WHERE ref = 'raar')
    ),
    $$VALUES (1, nmc.now() + interval '2 minutes'), (2, NULL),
             (3, nmc.now() + interval '2 minutes'), (4, NULL)$$,
    'extend_leases: the new lease end per held task, NULL for a stale epoch or unknown task'
);
SELECT results_eq(
    $$SELECT t.lease_tot FROM nmc.taak AS t INNER JOIN invoer AS i ON t.id = i.taak_id
      WHERE i.ref IN ('vroeg', 'oud', 'raar') ORDER BY i.i$$,
    $$VALUES (nmc.now() - interval '30 seconds'), (nmc.now() + interval '2 minutes'),
             (nmc.now() + interval '2 minutes')$$,
    'only the held tasks'' leases move; the stale one keeps the lease of its new holder'
);
SELECT throws_ok(
    $$SELECT * FROM nmc.extend_leases('{1,2}', '{1}')$$,
    '22023', 'p_taak_ids and p_claim_epochs differ in length',
    'extend_leases refuses arrays of different length (22023)'
);

SELECT * FROM finish();
ROLLBACK;
