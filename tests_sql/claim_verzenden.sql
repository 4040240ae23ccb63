-- The send claim: budget, and the claim as a transition under the row lock.
BEGIN;
SELECT plan(29);
\ir fixtures/setup.sql

-- First send: aangenomen -> in-verzending with attempt 1.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'eerste') AS id \gset
CREATE TEMP TABLE c AS SELECT * FROM nmc.claim_verzenden('w1', 20);
SELECT results_eq(
    $$SELECT notificatie_id, poging_nummer, herclaim, mag_verzenden, claim_epoch,
             regie::text, berichttype, notifynl_template_id::text, notify_service, dv_naam,
             kek_id, ontvanger_versleuteld FROM c$$,
    format($$VALUES (%L::uuid, 1::smallint, false, true, 1, 'decentraal', 'aanslag',
        'a0a0a0a0-0000-4000-8000-000000000001', 'standaard', 'Test DV een', 'kek-1',
        '\x01'::bytea)$$, :'id'),
    'the claim returns what the worker needs to send'
);
SELECT results_eq(
    format('SELECT status::text, versie FROM nmc.notificatie WHERE id = %L', :'id'),
    $$VALUES ('in-verzending', 2)$$,
    'the claim is the transition aangenomen -> in-verzending'
);
SELECT results_eq(
    format('SELECT p.id = c.poging_id, p.nummer, p.status::text, p.claim_epoch
            FROM nmc.poging AS p, c WHERE p.notificatie_id = %L', :'id'),
    $$VALUES (true, 1::smallint, 'gepland', 1)$$,
    'attempt 1 is created (its id is the NotifyNL reference)'
);
SELECT is(
    (SELECT gebruikt FROM nmc.verzendbudget WHERE soort = 'verzenden'),
    1,
    'the claim took one token'
);
SELECT is(
    pg_temp.fout(format('SELECT nmc.cancel_notificatie(1001, %L)', :'id')),
    'NM006:in-verzending',
    'after the claim the DV can no longer cancel'
);

-- Re-claim after the lease ran out: same attempt, higher epoch, no transition.
SELECT nmc.advance_clock('3 minutes');
CREATE TEMP TABLE c2 AS SELECT * FROM nmc.claim_verzenden('w2', 20);
SELECT results_eq(
    'SELECT c2.poging_id = c.poging_id, c2.herclaim, c2.claim_epoch FROM c2, c',
    $$VALUES (true, true, 2)$$,
    'a re-claim reuses the attempt with a higher epoch and says so'
);
SELECT results_eq(
    format('SELECT versie, (SELECT count(*)::integer FROM nmc.poging WHERE notificatie_id = %L),
            (SELECT claim_epoch FROM nmc.poging WHERE notificatie_id = %L)
            FROM nmc.notificatie WHERE id = %L', :'id', :'id', :'id'),
    $$VALUES (2, 1, 2)$$,
    'a re-claim is not a transition and creates no attempt'
);

-- Past geldig_tot at the claim: verlopen straight from aangenomen.
SELECT
    pg_temp.nieuwe_notificatie(
        p_dvref => 'te-laat', p_geldig_tot => nmc.now() + interval '1 hour'
    ) AS laat
\gset
SELECT nmc.advance_clock('2 hours');
SELECT is_empty(
    format($$SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = %L$$, :'laat'),
    'a send past geldig_tot is not handed out'
);
SELECT results_eq(
    format('SELECT status::text, reden::text, (SELECT staat::text FROM nmc.taak
            WHERE notificatie_id = %L AND soort = ''verzenden'') FROM nmc.notificatie
            WHERE id = %L', :'laat', :'laat'),
    $$VALUES ('verlopen', 'verlopen', 'done')$$,
    'it goes to verlopen and its task is closed'
);

-- A notification that moved on: the task is closed without sending.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'al-bezorgd') AS bez \gset
SELECT pg_temp.naar_status(:'bez', 'bezorgd');
SELECT is_empty(
    format($$SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = %L$$, :'bez'),
    'a bezorgd notification is not sent again'
);
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE notificatie_id = :'bez' AND soort = 'verzenden'),
    'done',
    'its send task is closed without a transition'
);
SELECT is((SELECT versie FROM nmc.notificatie WHERE id = :'bez'), 4, 'and the version stays');

-- A resend: verzonden with attempt 1 failed -> verzonden -> verzonden with attempt 2.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'resend') AS rs \gset
SELECT
    taak_id AS rt,
    claim_epoch AS re
FROM nmc.claim_verzenden('w', 20)
WHERE notificatie_id = :'rs' \gset
SELECT nmc.finish_verzenden(:rt, :re, 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000001');
UPDATE nmc.poging SET status = 'tijdelijk-mislukt' WHERE notificatie_id = :'rs';
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('verzenden', 1001, :'rs', nmc.now(), nmc.now());
CREATE TEMP TABLE c3 AS SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = :'rs';
SELECT results_eq(
    'SELECT poging_nummer, herclaim FROM c3',
    $$VALUES (2::smallint, false)$$,
    'a resend claim creates attempt 2'
);
SELECT results_eq(
    format('SELECT sequence, van::text, naar::text FROM nmc.event WHERE notificatie_id = %L
            AND sequence = 4', :'rs'),
    $$VALUES (4, 'verzonden', 'verzonden')$$,
    'and is the transition verzonden -> verzonden, with its event'
);
-- A third send is never made: two attempts at most.
UPDATE nmc.poging SET status = 'tijdelijk-mislukt' WHERE notificatie_id = :'rs';
SELECT nmc.close_taak(id) FROM nmc.taak WHERE notificatie_id = :'rs';
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('verzenden', 1001, :'rs', nmc.now(), nmc.now());
SELECT is_empty(
    format($$SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = %L$$, :'rs'),
    'after two attempts no third is made'
);
-- A running attempt blocks a resend.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'loopt') AS lp \gset
SELECT
    taak_id AS lt,
    claim_epoch AS le
FROM nmc.claim_verzenden('w', 20)
WHERE notificatie_id = :'lp' \gset
SELECT nmc.finish_verzenden(:lt, :le, 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000002');
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('verzenden', 1001, :'lp', nmc.now(), nmc.now());
SELECT is_empty(
    format($$SELECT * FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = %L$$, :'lp'),
    'while an attempt is running no resend is made'
);

-- The budget bounds the batch, fairly: DV 1002 (small) and DV 1001 (large) both get sends.
-- krap: 80 sends a minute, at most 8 at once.
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel, burst)
VALUES ('krap', 100, 0.2, 8);
UPDATE nmc.berichttype SET notify_service = 'krap';
SELECT nmc.close_taak(id) FROM nmc.taak WHERE soort = 'verzenden' AND staat <> 'done';
UPDATE nmc.dienstverlener SET quotum_per_minuut = 1000, quotum_per_dag = 1000;
SELECT pg_temp.nieuwe_notificatie(1001) FROM generate_series(1, 30);
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering') FROM generate_series(1, 3);
CREATE TEMP TABLE k1 AS SELECT * FROM nmc.claim_verzenden('w', 20);
SELECT is((SELECT count(*)::integer FROM k1), 8, 'a claim gets min(backlog, tokens): 8 of 20');
SELECT is(
    (SELECT count(*)::integer FROM k1 WHERE dv_id = 1002), 3,
    'the small DV is served within the cut (round robin by rank)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.claim_verzenden('w', 20)), 0,
    'with the burst used up nothing more is claimed at once'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie WHERE status = 'aangenomen'),
    25,
    'the rest stays aangenomen, untouched'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.taak WHERE soort = 'verzenden' AND staat = 'open'),
    25,
    'with their send tasks open'
);
SELECT nmc.advance_clock('1 minute');
SELECT is(
    (SELECT count(*)::integer FROM nmc.claim_verzenden('w', 20)), 8,
    'a minute later the next 8 (a whole burst again)'
);
SELECT is(
    (SELECT max(gebruikt) FROM nmc.verzendbudget WHERE notify_service = 'krap'),
    8,
    'no minute ever held more than the burst'
);

-- A cancelled notification's task was closed by the cancel, so the claim never sees it.
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'weg') AS weg \gset
SELECT nmc.cancel_notificatie(1001, :'weg');
SELECT is(
    (SELECT staat::text FROM nmc.taak WHERE notificatie_id = :'weg' AND soort = 'verzenden'),
    'done',
    'cancel closes the send task before any claim'
);

-- One claim, every path at once (set-based): a first send, a re-claim, a resend, one past
-- geldig_tot and one with nothing to send.
SELECT nmc.close_taak(id) FROM nmc.taak WHERE soort = 'verzenden' AND staat <> 'done';
UPDATE nmc.berichttype SET notify_service = 'standaard';
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'mix-herclaim') AS mh \gset
SELECT claim_epoch AS mh_epoch FROM nmc.claim_verzenden('w', 20) WHERE notificatie_id = :'mh' \gset
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'mix-resend') AS mr \gset
SELECT
    taak_id AS mr_taak,
    claim_epoch AS mr_epoch
FROM nmc.claim_verzenden('w', 20)
WHERE notificatie_id = :'mr' \gset
SELECT
    nmc.finish_verzenden(:mr_taak, :mr_epoch, 'verzonden', 'e0e0e0e0-0000-4000-8000-000000000003');
UPDATE nmc.poging SET status = 'tijdelijk-mislukt' WHERE notificatie_id = :'mr';
INSERT INTO nmc.taak (soort, dv_id, notificatie_id, due, aangemaakt_op)
VALUES ('verzenden', 1001, :'mr', nmc.now(), nmc.now());
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'mix-eerste') AS me \gset
SELECT
    pg_temp.nieuwe_notificatie(
        p_dvref => 'mix-laat', p_geldig_tot => nmc.now() + interval '1 minute'
    ) AS ml
\gset
SELECT pg_temp.nieuwe_notificatie(p_dvref => 'mix-bezorgd') AS mb \gset
SELECT pg_temp.naar_status(:'mb', 'bezorgd');
SELECT nmc.advance_clock('3 minutes');
CREATE TEMP TABLE mix AS SELECT * FROM nmc.claim_verzenden('w', 20);
SELECT set_eq(
    'SELECT notificatie_id, herclaim, poging_nummer, claim_epoch, mag_verzenden FROM mix',
    format(
        $$VALUES (%L::uuid, false, 1::smallint, 1, true), (%L::uuid, true, 1::smallint, %s, true),
                 (%L::uuid, false, 2::smallint, 1, true)$$,
        :'me', :'mh', :mh_epoch + 1, :'mr'
    ),
    'one claim hands out the first send, the re-claim and the resend'
);
SELECT results_eq(
    format(
        $$SELECT status::text, reden::text, versie FROM nmc.notificatie
          WHERE id IN (%L, %L, %L, %L, %L) ORDER BY dvref_hmac = pg_temp.b32('mix-eerste') DESC,
          dvref_hmac = pg_temp.b32('mix-herclaim') DESC, dvref_hmac = pg_temp.b32('mix-resend') DESC,
          dvref_hmac = pg_temp.b32('mix-laat') DESC$$,
        :'me', :'mh', :'mr', :'ml', :'mb'
    ),
    $$VALUES ('in-verzending', NULL, 2), ('in-verzending', NULL, 2), ('verzonden', NULL, 4),
             ('verlopen', 'verlopen', 2), ('bezorgd', NULL, 4)$$,
    'first send, re-claim (no transition), resend, verlopen past geldig_tot, bezorgd untouched'
);
SELECT results_eq(
    format(
        $$SELECT notificatie_id, staat::text FROM nmc.taak WHERE soort = 'verzenden'
          AND notificatie_id IN (%L, %L) ORDER BY notificatie_id = %L DESC$$,
        :'ml', :'mb', :'ml'
    ),
    format($$VALUES (%L::uuid, 'done'), (%L::uuid, 'done')$$, :'ml', :'mb'),
    'the tasks with nothing to send are closed in the same claim'
);
SELECT results_eq(
    format(
        $$SELECT count(*)::integer, count(DISTINCT cmin::text)::integer FROM nmc.event
          WHERE notificatie_id IN (%L, %L, %L) AND tijdstip = nmc.now()$$,
        :'me', :'mr', :'ml'
    ),
    $$VALUES (3, 1)$$,
    'the batch''s three transitions are written by one statement of the single writer'
);
SELECT set_eq(
    format(
        $$SELECT p.id, p.notificatie_id, p.nummer, p.claim_epoch, p.status::text
          FROM nmc.poging AS p WHERE p.notificatie_id IN (%L, %L, %L) AND p.status = 'gepland'$$,
        :'me', :'mh', :'mr'
    ),
    'SELECT poging_id, notificatie_id, poging_nummer, claim_epoch, ''gepland'' FROM mix',
    'each handed-out send has its gepland attempt carrying the claim''s epoch'
);

SELECT * FROM finish();
ROLLBACK;
