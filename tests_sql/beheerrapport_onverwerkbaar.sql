-- The DV's daily beheer report counts its notifications NotifyNL could not render (ended
-- technisch-mislukt: the template changed after the intake), per berichttype, of the day
-- before the report's: each day is in one report.
BEGIN;
SELECT plan(5);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET beheerkanaal = 'https://dv2.example/beheer' WHERE dv_id = 1002;
SELECT nmc.ensure_beheerrapporten();
UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'beheerrapport';
SELECT c.taak_id, c.claim_epoch FROM nmc.claim_taken('beheerrapport', 'w', 10) AS c
WHERE c.dv_id = 1002 \gset

-- Nothing else to report: no overdue statuses, no centraal notifications.
SELECT is(
    (SELECT b.te_melden FROM nmc.begin_beheerrapport_v2(:taak_id, :claim_epoch, 0.3) AS b),
    false,
    'without unrenderable notifications there is nothing to report'
);

-- Yesterday three, today five (tomorrow's report), and another DV's.
INSERT INTO nmc.onverwerkbaar (dv_id, berichttype, dag, aantal)
VALUES
(1002, 'herinnering', (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date - 1, 3),
(1002, 'herinnering', (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date, 5),
(1001, 'aanslag', (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date - 1, 7);

SELECT results_eq(
    format(
        'SELECT b.te_melden, b.onverwerkbaar, b.budget
         FROM nmc.begin_beheerrapport_v2(%s, %s, 0.3) AS b', :taak_id, :claim_epoch
    ),
    $$VALUES (true, '[{"berichttype": "herinnering", "aantal": 3}]'::jsonb, true)$$,
    'the report counts yesterday''s unrenderable notifications per berichttype, and is sent'
);
SELECT is(
    (SELECT b.onverwerkbaar_dag FROM nmc.begin_beheerrapport_v2(:taak_id, :claim_epoch, 0.3) AS b),
    (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date - 1,
    'the day the count is of'
);

-- The previous release's form: the same report without the new columns, and to be sent
-- only for what that release's worker can put in it (unacknowledged statuses, the share).
SELECT results_eq(
    format('SELECT b.* FROM nmc.begin_beheerrapport(%s, %s, 0.3) AS b', :taak_id, :claim_epoch),
    format(
        'SELECT b.rapport_id, b.dv_id, b.oin, b.naam, b.kanaal, b.dag, b.onbevestigd,
                b.afgekapt, b.oudste, b.bevestigingstermijn, b.notificatie_ids, b.aandeel,
                b.drempel, b.boven_drempel,
                b.te_melden AND (b.onbevestigd > 0 OR b.boven_drempel), b.afgerond, b.template_id,
                b.notify_service, b.budget
         FROM nmc.begin_beheerrapport_v2(%s, %s, 0.3) AS b', :taak_id, :claim_epoch
    ),
    'nmc.begin_beheerrapport answers as nmc.begin_beheerrapport_v2, without what it cannot report'
);
SELECT throws_ok(
    format('SELECT * FROM nmc.begin_beheerrapport_v2(%s, %s, 0.3)', :taak_id, :claim_epoch + 1),
    'NM011', null,
    'fenced by the claim epoch'
);

SELECT * FROM finish();
ROLLBACK;
