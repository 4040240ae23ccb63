-- A beheer report that is tried again after midnight (its send's answer was lost, or it was
-- deferred) stays the report it was, as the new day's: its id is the NotifyNL reference the
-- worker looks up, so a new id would send the e-mail a second time. A report that went out
-- days late (its task reopened after a failure) is followed by the next day's, not one per
-- day it missed; a report left unfinished by an earlier task is not taken over by a new one.
BEGIN;
SELECT plan(15);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET beheerkanaal = 'mailto:beheer@voorbeeld.nl' WHERE dv_id = 1001;

CREATE FUNCTION pg_temp.vandaag() RETURNS date
LANGUAGE sql AS $$ SELECT (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date $$;
CREATE FUNCTION pg_temp.taak() RETURNS nmc.taak
LANGUAGE sql AS $$
    SELECT t.* FROM nmc.taak AS t
    WHERE t.soort = 'beheerrapport' AND t.dv_id = 1001 AND t.staat <> 'done'
$$;
-- Claims DV 1001's report task (made due now) and begins its report.
CREATE FUNCTION pg_temp.begin() RETURNS TABLE (rapport_id uuid, dag date)
LANGUAGE plpgsql AS $$
DECLARE
    v_claim record;
BEGIN
    PERFORM nmc.ensure_beheerrapporten();
    UPDATE nmc.taak AS t SET due = nmc.now()
    WHERE t.soort = 'beheerrapport' AND t.dv_id = 1001 AND t.staat = 'open';
    SELECT c.* INTO v_claim FROM nmc.claim_taken('beheerrapport', 'w', 10) AS c
    WHERE c.dv_id = 1001;
    RETURN QUERY SELECT b.rapport_id, b.dag
    FROM nmc.begin_beheerrapport_v2(v_claim.taak_id, v_claim.claim_epoch, 0.3) AS b;
END $$;

-- To 23:55 in Amsterdam.
SELECT nmc.advance_clock(
    (
        SELECT CASE WHEN m.t > nmc.now() THEN m.t ELSE m.t + interval '1 day' END
        FROM (
            SELECT (pg_temp.vandaag() + time '23:55') AT TIME ZONE 'Europe/Amsterdam' AS t
        ) AS m
    ) - nmc.now()
);
SELECT * INTO TEMP voor FROM pg_temp.begin();
SELECT is((SELECT v.dag FROM voor AS v), pg_temp.vandaag(), 'at 23:55 the report is today''s');
SELECT is(
    nmc.defer_taak((pg_temp.taak()).id, (pg_temp.taak()).claim_epoch, 'notifynl-timeout'),
    'uitgesteld', 'its send timed out: deferred'
);

SELECT nmc.advance_clock('10 minutes');
SELECT * INTO TEMP na FROM pg_temp.begin();
SELECT isnt((SELECT v.dag FROM voor AS v), pg_temp.vandaag(), 'the try comes after midnight');
SELECT is(
    (SELECT n.rapport_id FROM na AS n), (SELECT v.rapport_id FROM voor AS v),
    'it is the same report: its id, the NotifyNL reference, is looked up'
);
SELECT is((SELECT n.dag FROM na AS n), pg_temp.vandaag(), 'as the day''s it goes out on');
SELECT is(
    (SELECT count(*)::integer FROM nmc.beheerrapport AS r WHERE r.dv_id = 1001), 1,
    'no second report'
);
SELECT is(
    nmc.finish_beheerrapport(
        (pg_temp.taak()).id, (pg_temp.taak()).claim_epoch, (SELECT n.rapport_id FROM na AS n),
        'verzonden'
    ),
    'verzonden', 'it went out'
);
SELECT is(
    (pg_temp.taak()).due, nmc.beheerrapport_due(pg_temp.vandaag() + 1),
    'today''s went out: the next report is tomorrow''s, at the report time'
);

-- Tomorrow's report fails and waits for an operator, who reopens it three days later.
SELECT nmc.advance_clock('1 day');
SELECT * INTO TEMP ochtend FROM pg_temp.begin();
SELECT isnt(
    (SELECT o.rapport_id FROM ochtend AS o), (SELECT n.rapport_id FROM na AS n),
    'the next day''s report is a new one'
);
UPDATE nmc.taak AS t SET staat = 'mislukt', lease_eigenaar = NULL, lease_tot = NULL
WHERE t.id = (pg_temp.taak()).id;
SELECT nmc.advance_clock('3 days');
SELECT nmc.reopen_taak((pg_temp.taak()).id, 'template hersteld', 'beheerder');
SELECT * INTO TEMP laat FROM pg_temp.begin();
SELECT is(
    (SELECT l.rapport_id FROM laat AS l), (SELECT o.rapport_id FROM ochtend AS o),
    'the reopened task goes on with the report it began'
);
SELECT is((SELECT l.dag FROM laat AS l), pg_temp.vandaag(), 'now as today''s');
SELECT nmc.finish_beheerrapport(
    (pg_temp.taak()).id, (pg_temp.taak()).claim_epoch, (SELECT l.rapport_id FROM laat AS l),
    'verzonden'
);
SELECT is(
    (pg_temp.taak()).due, nmc.beheerrapport_due(pg_temp.vandaag() + 1),
    'a report three days late is followed by the next day''s, not one per missed day'
);

-- A report left unfinished when its task ended (the channel was removed) is not taken over
-- by the task a new channel plans.
SELECT nmc.advance_clock('1 day');
SELECT * INTO TEMP los FROM pg_temp.begin();
SELECT nmc.finish_taak((pg_temp.taak()).id, (pg_temp.taak()).claim_epoch);
SELECT nmc.advance_clock('1 day');
SELECT * INTO TEMP nieuw FROM pg_temp.begin();
SELECT isnt(
    (SELECT n.rapport_id FROM nieuw AS n), (SELECT l.rapport_id FROM los AS l),
    'a new task begins a report of its own'
);
SELECT is((SELECT n.dag FROM nieuw AS n), pg_temp.vandaag(), 'today''s');
SELECT is(
    (SELECT r.dag FROM nmc.beheerrapport AS r WHERE r.id = (SELECT l.rapport_id FROM los AS l)),
    pg_temp.vandaag() - 1, 'the old one stays as it was'
);

SELECT * FROM finish();
ROLLBACK;
