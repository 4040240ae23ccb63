-- The daily beheer report (ADR 0024): once a day per DV with a beheer channel, idempotent per
-- DV and day, its unacknowledged terminal statuses past the ack term and the flag for a high
-- share of geen-contactgegevens; planned like the maintenance jobs.
BEGIN;
SELECT plan(51);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener
SET beheerkanaal = 'mailto:beheer@voorbeeld.nl', bevestigingstermijn = '1 day'
WHERE dv_id = 1001;
UPDATE nmc.dienstverlener SET beheerkanaal = 'https://dv2.example/beheer' WHERE dv_id = 1002;
INSERT INTO nmc.dienstverlener (dv_id, oin, naam) OVERRIDING SYSTEM VALUE
VALUES (1003, '00000001003003003000', 'Zonder kanaal');

CREATE FUNCTION pg_temp.taak(p_dv integer) RETURNS nmc.taak
LANGUAGE sql AS $$
    SELECT t.* FROM nmc.taak AS t
    WHERE t.soort = 'beheerrapport' AND t.dv_id = p_dv AND t.staat <> 'done'
$$;
-- Claims the DV's report task (made due now) and begins its report with threshold 0.3; the
-- result is kept in pg_temp.rapporten under p_stap.
CREATE TEMP TABLE rapporten (
    stap text PRIMARY KEY, rapport_id uuid, dv_id integer, oin text, naam text, kanaal text,
    dag date, onbevestigd integer, afgekapt boolean, oudste timestamptz,
    bevestigingstermijn interval, notificatie_ids uuid[], aandeel double precision,
    drempel double precision, boven_drempel boolean, te_melden boolean, afgerond boolean,
    template_id uuid, notify_service text, budget boolean
);
CREATE FUNCTION pg_temp.begin(p_dv integer, p_stap text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_claim record;
BEGIN
    UPDATE nmc.taak AS t SET due = nmc.now()
    WHERE t.soort = 'beheerrapport' AND t.dv_id = p_dv AND t.staat = 'open';
    SELECT c.* INTO v_claim FROM nmc.claim_taken('beheerrapport', 'w', 10) AS c
    WHERE c.dv_id = p_dv;
    INSERT INTO rapporten
    SELECT p_stap, b.*
    FROM nmc.begin_beheerrapport(v_claim.taak_id, v_claim.claim_epoch, 0.3) AS b;
END $$;
CREATE FUNCTION pg_temp.r(p_stap text) RETURNS rapporten
LANGUAGE sql AS $$ SELECT r.* FROM rapporten AS r WHERE r.stap = p_stap $$;

-- A centraal notification of DV 1001 that ended without contact details.
CREATE FUNCTION pg_temp.geen_contactgegevens() RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
BEGIN
    SELECT r.notificatie_id INTO v_id FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'centraal', pg_temp.b32(gen_random_uuid()::text),
        1::smallint, pg_temp.b32('p'), 0::smallint, '\x01', NULL, '\x02', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')) AS r;
    PERFORM nmc.transition_notificatie(v_id, 'in-verzending', NULL);
    PERFORM nmc.transition_notificatie(v_id, 'niet-bezorgbaar', 'geen-contactgegevens');
    RETURN v_id;
END $$;

-- Planning --------------------------------------------------------------------------------
SELECT is(nmc.ensure_beheerrapporten(), 2, 'one report task per DV with a beheer channel');
SELECT is(nmc.ensure_beheerrapporten(), 0, 'planning again plans nothing');
SELECT ok(pg_temp.taak(1003) IS NULL, 'a DV without a beheer channel gets no report task');
SELECT is(
    (pg_temp.taak(1001)).due AT TIME ZONE 'Europe/Amsterdam' - date_trunc(
        'day', (pg_temp.taak(1001)).due AT TIME ZONE 'Europe/Amsterdam'
    ),
    interval '7 hours',
    'the report is due at the report time of day (07:00 in Amsterdam)'
);
SELECT ok(
    (pg_temp.taak(1001)).due > nmc.now()
    AND (pg_temp.taak(1001)).due <= nmc.now() + interval '1 day',
    'at its next occurrence'
);

-- Three terminal statuses, older than the DV's ack term of one day; one centraal notification
-- without contact details (a share of 1 of 1).
SELECT pg_temp.nieuwe_notificatie() AS oudste \gset
SELECT pg_temp.naar_status(:'oudste', 'geannuleerd');
SELECT nmc.advance_clock('1 minute');
SELECT pg_temp.naar_status(pg_temp.nieuwe_notificatie(), 'geannuleerd');
SELECT pg_temp.geen_contactgegevens() AS geen \gset
SELECT nmc.advance_clock('25 hours');
-- Not yet past the term: not reported.
SELECT pg_temp.naar_status(pg_temp.nieuwe_notificatie(), 'geannuleerd');

-- A report to an e-mail channel ------------------------------------------------------------
SELECT pg_temp.begin(1001, 'r');
SELECT
    is((pg_temp.r('r')).kanaal, 'mailto:beheer@voorbeeld.nl', 'the report names the DV''s channel');
SELECT
    is(
        (pg_temp.r('r')).onbevestigd,
        3,
        'it counts the unacknowledged terminal statuses past the term'
    );
SELECT is(
    ((pg_temp.r('r')).notificatie_ids)[1],
    :'oudste'::uuid,
    'and lists their notifications, oldest first'
);
SELECT is(cardinality((pg_temp.r('r')).notificatie_ids), 3, 'every one of them');
SELECT is((pg_temp.r('r')).afgekapt, FALSE, 'all of them were read');
SELECT is((pg_temp.r('r')).aandeel, 1::double precision, 'the share of geen-contactgegevens');
SELECT is((pg_temp.r('r')).boven_drempel, TRUE, 'above the threshold');
SELECT is((pg_temp.r('r')).te_melden, TRUE, 'so there is something to report');
SELECT is((pg_temp.r('r')).afgerond, FALSE, 'not sent today yet');
SELECT
    is((pg_temp.r('r')).dag, (nmc.now() AT TIME ZONE 'Europe/Amsterdam')::date, 'today''s report');
SELECT ok((pg_temp.r('r')).template_id IS NULL, 'no template configured yet');
SELECT is((pg_temp.r('r')).budget, FALSE, 'so no send token is taken: the worker defers the task');
SELECT is(
    nmc.defer_taak((pg_temp.taak(1001)).id, (pg_temp.taak(1001)).claim_epoch, 'geen-template'),
    'uitgesteld', 'and waits'
);

-- Configured like a berichttype: the template and its Notify service.
SELECT nmc.configure_beheerrapport(
    '{"notifynlTemplateId": "a0a0a0a0-0000-4000-8000-0000000000bb", "notifyService": "beheer"}'
);
SELECT is(
    (
        SELECT row(i.beheerrapport_template_id, i.beheerrapport_notify_service)::text
        FROM nmc.instellingen AS i
    ),
    '(a0a0a0a0-0000-4000-8000-0000000000bb,beheer)',
    'the report''s template and Notify service are configured like a berichttype'
);
SELECT throws_ok(
    $$SELECT nmc.configure_beheerrapport('{"template": "x"}')$$,
    '22023', NULL, 'unknown members are refused'
);
SELECT pg_temp.begin(1001, 't');
SELECT
    is(
        (pg_temp.r('t')).rapport_id,
        (pg_temp.r('r')).rapport_id,
        'the try after the deferral is the same report'
    );
SELECT is((pg_temp.r('t')).budget, TRUE, 'the e-mail took a send token');
SELECT is(
    (SELECT b.gebruikt FROM nmc.verzendbudget AS b WHERE b.notify_service = 'beheer'),
    1, 'from the send budget of the report''s Notify service'
);
SELECT is(
    (
        SELECT row(b.onbevestigd, b.boven_drempel, b.kanaal, b.uitkomst)::text
        FROM nmc.beheerrapport AS b WHERE b.id = (pg_temp.r('r')).rapport_id
    ),
    '(3,t,mailto,)', 'the report is recorded, without its address, as under way'
);

SELECT is(
    nmc.finish_beheerrapport(
        (pg_temp.taak(1001)).id,
        (pg_temp.taak(1001)).claim_epoch,
        (pg_temp.r('r')).rapport_id,
        'verzonden',
        'b0b0b0b0-0000-4000-8000-000000000001'
    ),
    'verzonden', 'finishing records the report as sent'
);
SELECT is(
    (SELECT b.uitkomst FROM nmc.beheerrapport AS b WHERE b.id = (pg_temp.r('r')).rapport_id),
    'verzonden',
    'on its row'
);
SELECT is((pg_temp.taak(1001)).staat, 'open', 'the same task is open again');
SELECT is(
    ((pg_temp.taak(1001)).due AT TIME ZONE 'Europe/Amsterdam')::date,
    (pg_temp.r('r')).dag + 1, 'for tomorrow''s report'
);

-- Idempotent per DV and day: the task run again today sends nothing new.
SELECT pg_temp.begin(1001, 's');
SELECT
    is((pg_temp.r('s')).afgerond, TRUE, 'a second run on the same day finds today''s report sent');
SELECT is((pg_temp.r('s')).rapport_id, (pg_temp.r('r')).rapport_id, 'and it is the same report');
SELECT is(
    (SELECT count(*) FROM nmc.beheerrapport AS b WHERE b.dv_id = 1001), 1::bigint,
    'one report per DV and day'
);
SELECT throws_ok(
    format(
        'SELECT nmc.finish_beheerrapport(%s, %s, %L, ''verzonden'', NULL)',
        (pg_temp.taak(1001)).id, (pg_temp.taak(1001)).claim_epoch - 1, (pg_temp.r('r')).rapport_id
    ),
    'NM011', NULL, 'a stale claim cannot finish a report'
);
SELECT is(
    nmc.finish_beheerrapport(
        (pg_temp.taak(1001)).id, (pg_temp.taak(1001)).claim_epoch, (pg_temp.r('s')).rapport_id, NULL
    ),
    'verzonden', 'finishing that run only re-plans: the report stays as it was'
);

-- The https: channel and a long list ------------------------------------------------------
UPDATE nmc.instellingen SET beheerrapport_max_ids = 1;
UPDATE nmc.dienstverlener SET bevestigingstermijn = '1 hour' WHERE dv_id = 1002;
SELECT
    pg_temp.naar_status(
        pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering'), 'geannuleerd'
    )
FROM generate_series(1, 2);
SELECT nmc.advance_clock('2 hours');
SELECT pg_temp.begin(1002, 'h');
SELECT is((pg_temp.r('h')).onbevestigd, 2, 'the count is whole');
SELECT
    is(cardinality((pg_temp.r('h')).notificatie_ids), 1, 'the list stops at the configured length');
SELECT is(
    (SELECT sum(b.gebruikt) FROM nmc.verzendbudget AS b), 1::bigint,
    'an https: report takes no send token'
);

-- A DV that lost its channel: its task comes without one (the worker closes it) and no new
-- one is planned.
UPDATE nmc.dienstverlener SET beheerkanaal = NULL WHERE dv_id = 1001;
SELECT pg_temp.begin(1001, 'z');
SELECT ok((pg_temp.r('z')).kanaal IS NULL, 'a DV without a channel gets no report');
SELECT nmc.finish_taak((pg_temp.taak(1001)).id, (pg_temp.taak(1001)).claim_epoch);
SELECT is(nmc.ensure_beheerrapporten(), 0, 'and no new task');

-- A mislukt report waits for an operator: no second task beside it.
UPDATE nmc.taak AS t SET staat = 'mislukt', lease_eigenaar = NULL, lease_tot = NULL
WHERE t.soort = 'beheerrapport' AND t.dv_id = 1002;
SELECT is(nmc.ensure_beheerrapporten(), 0, 'a mislukt report task is not planned again beside it');

-- Retention: reports older than the delivery-proof retention go when the next one finishes.
UPDATE nmc.instellingen SET bewijs_bewaartermijn = '1 day';
UPDATE nmc.dienstverlener SET beheerkanaal = 'mailto:beheer@voorbeeld.nl' WHERE dv_id = 1001;
SELECT nmc.advance_clock('3 days');
SELECT nmc.ensure_beheerrapporten();
SELECT pg_temp.begin(1001, 'n');
SELECT nmc.finish_beheerrapport(
    (pg_temp.taak(1001)).id,
    (pg_temp.taak(1001)).claim_epoch,
    (pg_temp.r('n')).rapport_id,
    'verzonden',
    NULL
);
SELECT is(
    (SELECT array_agg(b.id) FROM nmc.beheerrapport AS b WHERE b.dv_id = 1001),
    ARRAY[(pg_temp.r('n')).rapport_id], 'older reports are deleted after the retention'
);

-- nmc.beheerkanaal_soort: mailto with an address, an http(s) URL with a host, else none.
CREATE FUNCTION pg_temp.soorten(p_kanalen text[]) RETURNS text[]
LANGUAGE sql AS $$
    SELECT array_agg(coalesce(nmc.beheerkanaal_soort(k.kanaal), '-') ORDER BY k.nr)
    FROM unnest(p_kanalen) WITH ORDINALITY AS k (kanaal, nr)
$$;
SELECT is(
    pg_temp.soorten(ARRAY[
        'mailto:beheer@voorbeeld.nl', 'MAILTO:Beheer@Voorbeeld.NL',
        'mailto:beheer@voorbeeld.nl?subject=NMC'
    ]),
    ARRAY['mailto', 'mailto', 'mailto'],
    'a mailto: channel with one address (any case, with a query) is an e-mail channel'
);
SELECT is(
    pg_temp.soorten(ARRAY[
        'https://dv.example/beheer', 'HTTPS://DV.EXAMPLE', 'http://127.0.0.1:8080/rapport'
    ]),
    ARRAY['https', 'https', 'https'],
    'an http(s) URL with a host is an https channel'
);
SELECT is(
    pg_temp.soorten(ARRAY[
        NULL, '', 'beheer@voorbeeld.nl', 'mailto:', 'mailto:beheer', 'mailto:a@b@voorbeeld.nl',
        'mailto:be heer@voorbeeld.nl', 'mailto:?to=beheer@voorbeeld.nl', 'https://', 'https:///pad',
        'ftp://dv.example/beheer', ' https://dv.example', 'dv.example/beheer'
    ]),
    array_fill('-'::text, ARRAY[13]),
    'anything else is no channel: no address, no host, another scheme, leading space, none'
);

-- nmc.beheerrapport_due: the report time of that day in Amsterdam, whatever the session's
-- time zone; a day of 23 or 25 hours where summer time starts or ends.
SET LOCAL timezone = 'Pacific/Auckland';
SELECT is(
    ARRAY[
        nmc.beheerrapport_due('2027-01-15'), nmc.beheerrapport_due('2027-07-15'),
        nmc.beheerrapport_due('2027-03-28'), nmc.beheerrapport_due('2027-10-31')
    ],
    ARRAY[
        '2027-01-15 06:00+00', '2027-07-15 05:00+00', '2027-03-28 05:00+00',
        '2027-10-31 06:00+00'
    ]::timestamptz[],
    'due at 07:00 in Amsterdam: 06:00 UTC in winter, 05:00 UTC in summer'
);
RESET timezone;
SELECT is(
    ARRAY[
        nmc.beheerrapport_due('2027-03-28') - nmc.beheerrapport_due('2027-03-27'),
        nmc.beheerrapport_due('2027-11-01') - nmc.beheerrapport_due('2027-10-31')
    ],
    ARRAY[interval '23 hours', interval '24 hours'],
    'the day summer time starts the report comes 23 hours after the one before, then 24 again'
);
SELECT is(
    nmc.beheerrapport_due('2027-10-31') - nmc.beheerrapport_due('2027-10-30'),
    interval '25 hours',
    'the day it ends, 25 hours after'
);
SELECT nmc.configure_beheerrapport('{"tijd": "23:30"}');
SELECT is(
    nmc.beheerrapport_due('2027-12-31'), '2027-12-31 22:30+00'::timestamptz,
    'at the configured time of day'
);

-- nmc.list_beheerrapporten: newest day first, then by DV, at least 1 and at most 10,000.
DELETE FROM nmc.beheerrapport;
INSERT INTO nmc.beheerrapport (
    id, dv_id, dag, kanaal, onbevestigd, onbevestigd_afgekapt, geen_contactgegevens_aandeel,
    geen_contactgegevens_drempel, boven_drempel, uitkomst, notifynl_id, aangemaakt_op,
    afgerond_op
) VALUES
(
    gen_random_uuid(), 1002, '2027-01-02', 'https', 0, FALSE, NULL, 0.3, FALSE,
    'niets-te-melden', NULL, '2027-01-02 06:00+00', '2027-01-02 06:01+00'
),
(
    gen_random_uuid(), 1001, '2027-01-01', 'mailto', 3, TRUE, 0.5, 0.3, TRUE, 'verzonden',
    gen_random_uuid(), '2027-01-01 06:00+00', '2027-01-01 06:02+00'
),
(
    gen_random_uuid(), 1002, '2027-01-01', 'https', 1, FALSE, NULL, 0.3, FALSE, NULL, NULL,
    '2027-01-01 06:00+00', NULL
),
(
    gen_random_uuid(), 1001, '2027-01-02', 'mailto', 0, FALSE, 0.0, 0.3, FALSE, NULL, NULL,
    '2027-01-02 06:00+00', NULL
);
SELECT results_eq(
    'SELECT * FROM nmc.list_beheerrapporten()',
    $$VALUES
        (1001, '2027-01-02'::date, 'mailto', 0, FALSE, 0.0::double precision, FALSE, NULL::text,
            NULL::timestamptz),
        (1002, '2027-01-02', 'https', 0, FALSE, NULL, FALSE, 'niets-te-melden',
            '2027-01-02 06:01+00'),
        (1001, '2027-01-01', 'mailto', 3, TRUE, 0.5, TRUE, 'verzonden', '2027-01-01 06:02+00'),
        (1002, '2027-01-01', 'https', 1, FALSE, NULL, FALSE, NULL, NULL)$$,
    'the reports, newest day first and by DV, with their counts and outcome'
);
SELECT is(
    (
        SELECT array_agg(a.naam ORDER BY a.nr)
        FROM pg_catalog.pg_proc AS p,
            unnest(p.proargnames, p.proargmodes::text[]) WITH ORDINALITY AS a (naam, modus, nr)
        WHERE p.oid = 'nmc.list_beheerrapporten(integer)'::regprocedure AND a.modus = 't'
    ),
    ARRAY[
        'dv_id', 'dag', 'kanaal', 'onbevestigd', 'onbevestigd_afgekapt',
        'geen_contactgegevens_aandeel', 'boven_drempel', 'uitkomst', 'afgerond_op'
    ],
    'a report is listed by its channel kind and counts only (no address, no NotifyNL id)'
);
SELECT is(
    ARRAY[
        (SELECT count(*) FROM nmc.list_beheerrapporten(2)),
        (SELECT count(*) FROM nmc.list_beheerrapporten(0)),
        (SELECT count(*) FROM nmc.list_beheerrapporten(-5))
    ],
    ARRAY[2, 1, 1]::bigint[],
    'at most limiet reports, and at least one'
);
INSERT INTO nmc.beheerrapport (
    id, dv_id, dag, kanaal, onbevestigd, onbevestigd_afgekapt, geen_contactgegevens_drempel,
    boven_drempel, aangemaakt_op
)
SELECT gen_random_uuid(), 1001, date '1990-01-01' + d, 'mailto', 0, FALSE, 0.3, FALSE, nmc.now()
FROM generate_series(0, 10000) AS d;
SELECT is(
    (SELECT count(*) FROM nmc.list_beheerrapporten(20000)), 10000::bigint,
    'and never more than 10,000'
);

SELECT * FROM finish();
ROLLBACK;
