-- The receipt matrix (SPEC §4 notes, §6): receipt status x attempt x notification status x
-- settlement term x geldig_tot x NotifyNL id (matching, duplicate, none yet).
BEGIN;
SELECT plan(55);
\ir fixtures/setup.sql
-- Many sends at one instant of the test clock: a pace far above what these tests take.
INSERT INTO nmc.notify_service (code, budget_per_minuut, burst) VALUES ('standaard', 1000000, 1000);

-- Builds one notification in the wanted state and returns the attempt under test.
CREATE FUNCTION pg_temp.scenario(
    p_status nmc.notificatie_status, p_nummer integer, p_id text, p_regie nmc.regie,
    p_term text
) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_c record;
    v_p uuid;
    v_delivered timestamptz := CASE p_term WHEN 'buiten' THEN nmc.now() - interval '8 days'
        ELSE nmc.now() - interval '1 day' END;
BEGIN
    SELECT r.notificatie_id INTO v_id FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', p_regie, pg_temp.b32(gen_random_uuid()::text),
        1::smallint, pg_temp.b32('p'), 0::smallint, '\x01', NULL, '\x02', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef', NULL, NULL, NULL, NULL, pg_temp.b32('p')) AS r;
    SELECT * INTO v_c FROM nmc.claim_verzenden('w', 1000) AS c WHERE c.notificatie_id = v_id;
    v_p := v_c.poging_id;
    IF p_id = 'geen' THEN
        RETURN v_p;  -- in-verzending: the worker died before committing the NotifyNL id
    END IF;
    PERFORM nmc.finish_verzenden(v_c.taak_id, v_c.claim_epoch, 'verzonden', gen_random_uuid());
    IF p_nummer = 2 THEN
        PERFORM pg_temp.navraag_antwoord(v_p, NULL, 'temporary-failure',
            nmc.now() - interval '2 days', NULL);
        SELECT * INTO v_c FROM nmc.claim_verzenden('w', 1000) AS c WHERE c.notificatie_id = v_id;
        v_p := v_c.poging_id;
        PERFORM nmc.finish_verzenden(v_c.taak_id, v_c.claim_epoch, 'verzonden', gen_random_uuid());
    END IF;
    CASE p_status
        WHEN 'bezorgd' THEN
            PERFORM pg_temp.navraag_antwoord(v_p, NULL, 'delivered', v_delivered, NULL);
        WHEN 'definitief-bezorgd' THEN
            PERFORM pg_temp.navraag_antwoord(v_p, NULL, 'delivered', v_delivered, NULL);
            PERFORM nmc.transition_notificatie(v_id, 'definitief-bezorgd');
        WHEN 'bezorgstatus-onbekend' THEN
            UPDATE nmc.poging SET status = 'onbekend' WHERE id = v_p;
            PERFORM nmc.transition_notificatie(v_id, 'bezorgstatus-onbekend');
        WHEN 'niet-bezorgbaar' THEN
            PERFORM pg_temp.navraag_antwoord(v_p, NULL, 'permanent-failure',
                nmc.now() - interval '1 day', NULL);
        ELSE
            NULL;
    END CASE;
    RETURN v_p;
END $$;

CREATE TEMP TABLE geval (
    nr integer, n_status nmc.notificatie_status, nummer integer, receipt text, term text,
    geldig text, id text, regie nmc.regie,
    want_resultaat text, want_status text, want_reden text, want_taken text,
    poging uuid, resultaat text
);
INSERT INTO geval (
    nr, n_status, nummer, receipt, term, geldig, id, regie,
    want_resultaat, want_status, want_reden, want_taken
) VALUES
-- running attempt 1
(
    1, 'verzonden', 1, 'delivered', 'binnen', 'voor', 'zelfde', 'decentraal',
    'bezorgd', 'bezorgd', NULL, '{vaststellen}'
),
(
    2, 'verzonden', 1, 'delivered', 'binnen', 'voor', 'duplicaat', 'decentraal',
    'bezorgd', 'bezorgd', NULL, '{vaststellen}'
),
(
    3, 'in-verzending', 1, 'delivered', 'binnen', 'voor', 'geen', 'decentraal',
    'bezorgd', 'bezorgd', NULL, '{vaststellen,verzenden}'
),
(
    4, 'verzonden', 1, 'permanent-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    5, 'verzonden', 1, 'permanent-failure', 'binnen', 'voor', 'zelfde', 'centraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{ongeldig-melden}'
),
(
    6, 'verzonden', 1, 'temporary-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'herverzenden', 'verzonden', NULL, '{verzenden}'
),
(
    7, 'verzonden', 1, 'technical-failure', 'binnen', 'voor', 'duplicaat', 'decentraal',
    'herverzenden', 'verzonden', NULL, '{verzenden}'
),
(
    8, 'verzonden', 1, 'temporary-failure', 'binnen', 'na', 'zelfde', 'decentraal',
    'verlopen', 'verlopen', 'verlopen', '{}'
),
(
    9, 'verzonden', 1, 'technical-failure', 'binnen', 'na', 'zelfde', 'decentraal',
    'verlopen', 'verlopen', 'verlopen', '{}'
),
(
    10, 'in-verzending', 1, 'permanent-failure', 'binnen', 'voor', 'geen', 'centraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{ongeldig-melden,verzenden}'
),
(
    11, 'in-verzending', 1, 'temporary-failure', 'binnen', 'voor', 'geen', 'decentraal',
    'herverzenden', 'verzonden', NULL, '{verzenden}'
),
-- running attempt 2
(
    12, 'verzonden', 2, 'delivered', 'binnen', 'voor', 'zelfde', 'decentraal',
    'bezorgd', 'bezorgd', NULL, '{vaststellen}'
),
(
    13, 'verzonden', 2, 'temporary-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    14, 'verzonden', 2, 'technical-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'technisch-mislukt', 'technisch-mislukt', 'technisch', '{}'
),
(
    15, 'verzonden', 2, 'permanent-failure', 'binnen', 'na', 'duplicaat', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    16, 'verzonden', 2, 'temporary-failure', 'binnen', 'na', 'zelfde', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
-- bezorgd: failures on the attempt it rests on, inside and outside the term
(
    17, 'bezorgd', 1, 'temporary-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'herverzenden', 'verzonden', NULL, '{verzenden}'
),
(
    18, 'bezorgd', 1, 'permanent-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    19, 'bezorgd', 1, 'temporary-failure', 'binnen', 'na', 'zelfde', 'decentraal',
    'verlopen', 'verlopen', 'verlopen', '{}'
),
(
    20, 'bezorgd', 1, 'technical-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'bezorgd', NULL, '{vaststellen}'
),
(
    21, 'bezorgd', 1, 'temporary-failure', 'buiten', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'bezorgd', NULL, '{vaststellen}'
),
(
    22, 'bezorgd', 1, 'permanent-failure', 'buiten', 'voor', 'zelfde', 'centraal',
    'vastgelegd', 'bezorgd', NULL, '{ongeldig-melden,vaststellen}'
),
(
    23, 'bezorgd', 2, 'temporary-failure', 'binnen', 'voor', 'duplicaat', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    24, 'bezorgd', 1, 'delivered', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'bezorgd', NULL, '{vaststellen}'
),
-- bezorgstatus-onbekend: a late receipt may still correct it, but never resends
(
    25, 'bezorgstatus-onbekend', 1, 'delivered', 'binnen', 'voor', 'zelfde', 'decentraal',
    'bezorgd', 'bezorgd', NULL, '{vaststellen}'
),
(
    26, 'bezorgstatus-onbekend', 1, 'permanent-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'niet-bezorgbaar', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    27, 'bezorgstatus-onbekend', 1, 'temporary-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'bezorgstatus-onbekend', NULL, '{}'
),
(
    28, 'bezorgstatus-onbekend', 2, 'technical-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'bezorgstatus-onbekend', NULL, '{}'
),
-- other terminal statuses absorb
(
    29, 'niet-bezorgbaar', 1, 'delivered', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'niet-bezorgbaar', 'onbereikbaar', '{}'
),
(
    30, 'definitief-bezorgd', 1, 'permanent-failure', 'binnen', 'voor', 'zelfde', 'decentraal',
    'vastgelegd', 'definitief-bezorgd', NULL, '{vaststellen}'
),
-- statuses that cause no transition
(
    31, 'verzonden', 1, 'sending', 'binnen', 'voor', 'zelfde', 'decentraal',
    'niet-definitief', 'verzonden', NULL, '{reconciliëren}'
),
(
    32, 'verzonden', 1, 'bounced-maybe', 'binnen', 'voor', 'zelfde', 'decentraal',
    'onbekende-status', 'verzonden', NULL, '{reconciliëren}'
);

UPDATE geval SET poging = pg_temp.scenario(n_status, nummer, id, regie, term);
-- Moving geldig_tot into the past where the case says so.
UPDATE nmc.notificatie AS n SET geldig_tot = nmc.now() - interval '1 second'
FROM nmc.poging AS p, geval AS g
WHERE p.id = g.poging AND n.id = p.notificatie_id AND g.geldig = 'na';
UPDATE geval AS g SET resultaat = pg_temp.navraag_antwoord(
    g.poging,
    CASE g.id
        WHEN 'zelfde' THEN (SELECT p.notifynl_id FROM nmc.poging AS p WHERE p.id = g.poging)
        ELSE gen_random_uuid()
    END,
    g.receipt,
    nmc.now() - interval '1 minute',
    nmc.now() - interval '5 minutes'
);

-- 32 cases: the answer, the status and reason, and the open tasks afterwards.
SELECT
    is(
        g.resultaat || ' ' || n.status || ' ' || coalesce(n.reden::text, '-') || ' '
        || (
            SELECT coalesce(array_agg(t.soort::text ORDER BY t.soort::text), '{}')::text
            FROM nmc.taak AS t
            WHERE
                t.notificatie_id = n.id AND t.staat IN ('open', 'claimed')
                AND t.soort <> 'wissen'  -- every terminal status plans one (wissen.sql)
        ),
        g.want_resultaat || ' ' || g.want_status || ' ' || coalesce(g.want_reden, '-') || ' '
        || g.want_taken,
        format(
            'case %s: %s on attempt %s of a %s notification (%s term, %s geldig_tot, %s id, %s)',
            g.nr, g.receipt, g.nummer, g.n_status, g.term, g.geldig, g.id, g.regie
        )
    )
FROM geval AS g
INNER JOIN nmc.poging AS p ON g.poging = p.id
INNER JOIN nmc.notificatie AS n ON p.notificatie_id = n.id
ORDER BY g.nr;

-- What the receipts left on the attempts.
SELECT is(
    (
        SELECT count(*)::integer FROM geval AS g INNER JOIN nmc.poging AS p ON g.poging = p.id
        WHERE g.id = 'duplicaat' AND cardinality(p.duplicaat_ids) = 1
    ),
    (SELECT count(*)::integer FROM geval WHERE id = 'duplicaat'),
    'an unknown NotifyNL id is kept as a duplicate id of the attempt'
);
SELECT is(
    (
        SELECT count(*)::integer FROM geval AS g INNER JOIN nmc.poging AS p ON g.poging = p.id
        WHERE g.id = 'geen' AND p.notifynl_id IS NOT NULL AND cardinality(p.duplicaat_ids) = 0
    ),
    3,
    'an attempt without id takes the id from the receipt'
);
SELECT results_eq(
    $$SELECT e.van::text, e.naar::text FROM nmc.event AS e
      INNER JOIN nmc.poging AS p ON p.notificatie_id = e.notificatie_id
      INNER JOIN geval AS g ON g.poging = p.id AND g.nr = 3
      WHERE e.sequence > 2 ORDER BY e.sequence$$,
    $$VALUES ('in-verzending', 'verzonden'), ('verzonden', 'bezorgd')$$,
    'without a committed id, the receipt first commits the send on the worker''s behalf'
);
SELECT is(
    (
        SELECT
            p.status::text || ' ' || p.laatste_receipt_status || ' '
            || p.vastgelegde_receipt_status
        FROM geval AS g
        INNER JOIN nmc.poging AS p ON g.poging = p.id WHERE g.nr = 21
    ),
    'bezorgd delivered temporary-failure',
    'a failure past the term is recorded on the delivered attempt, beside its outcome'
);
SELECT is(
    (
        SELECT coalesce(p.laatste_receipt_status, '-') || ' ' || p.vastgelegde_receipt_status
        FROM geval AS g
        INNER JOIN nmc.poging AS p ON g.poging = p.id WHERE g.nr = 32
    ),
    '- bounced-maybe',
    'an unknown status is recorded on the attempt, beside its last known receipt status'
);
SELECT is(
    (SELECT aantal::integer FROM nmc.teller WHERE naam = 'receipt_onbekende_status'),
    1,
    'and counted'
);
SELECT ok(
    (
        SELECT t.due = p.afgerond_op + interval '7 days 30 minutes'
        FROM geval AS g INNER JOIN nmc.poging AS p ON g.poging = p.id
        INNER JOIN nmc.taak AS t ON p.id = t.poging_id AND t.soort = 'vaststellen'
        WHERE g.nr = 1
    ),
    'settlement is due at completed_at + 7 days + the callback window'
);
SELECT is(
    (
        SELECT count(*)::integer FROM geval AS g INNER JOIN nmc.poging AS p ON g.poging = p.id
        INNER JOIN nmc.taak AS t ON p.notificatie_id = t.notificatie_id
        WHERE g.nr IN (17, 18) AND t.soort = 'vaststellen' AND t.staat = 'done'
    ),
    2,
    'a failure within the term closes the open settlement task'
);

-- Ordering: an older receipt never overrides a newer one.
SELECT pg_temp.scenario('verzonden', 1, 'zelfde', 'decentraal', 'binnen') AS o \gset
SELECT is(
    pg_temp.navraag_antwoord(:'o', NULL, 'delivered', nmc.now() - interval '1 hour', NULL),
    'bezorgd', 'a delivered receipt (completed an hour ago) arrives first'
);
SELECT is(
    pg_temp.navraag_antwoord(:'o', NULL, 'permanent-failure', nmc.now() - interval '2 hours', NULL),
    'ouder', 'an older failure arriving later is ignored'
);
SELECT is(
    (SELECT status::text FROM nmc.poging WHERE id = :'o'), 'bezorgd',
    'the attempt keeps the newer outcome'
);
SELECT is(
    pg_temp.navraag_antwoord(:'o', NULL, 'permanent-failure', nmc.now() + interval '3 days', NULL),
    'niet-bezorgbaar', 'a completed_at in the future is capped at the NMC clock, and counts'
);
SELECT pg_temp.scenario('verzonden', 1, 'zelfde', 'decentraal', 'binnen') AS o2 \gset
SELECT pg_temp.navraag_antwoord(
    :'o2', NULL, 'temporary-failure', nmc.now() - interval '2 hours', NULL
);
SELECT is(
    pg_temp.navraag_antwoord(:'o2', NULL, 'delivered', nmc.now() - interval '1 hour', NULL),
    'bezorgd', 'a newer delivered after a temporary failure on attempt 1 wins'
);
SELECT is(
    (
        SELECT count(*)::integer FROM nmc.claim_verzenden('w', 1000) AS c
        WHERE c.notificatie_id = (SELECT p.notificatie_id FROM nmc.poging AS p WHERE p.id = :'o2')
    ),
    0,
    'and the resend it had planned is closed without sending'
);
SELECT is(
    pg_temp.fout('SELECT pg_temp.navraag_antwoord(gen_random_uuid(), NULL, ''delivered'', now(),
        NULL)'),
    'NM005:',
    'a receipt for no attempt is refused (NM005)'
);

-- The delivery proof rests on the delivered attempt and its completed_at: a bounce past the
-- settlement term is recorded beside it, before and after the settlement, never over it.
SELECT pg_temp.scenario('verzonden', 1, 'zelfde', 'centraal', 'binnen') AS laat \gset
SELECT nmc.now() AS laat_bezorgd \gset
SELECT pg_temp.navraag_antwoord(:'laat', NULL, 'delivered', :'laat_bezorgd', NULL);
SELECT nmc.advance_clock('7 days 10 minutes');
SELECT nmc.now() AS laat_bounce \gset
SELECT is(
    pg_temp.navraag_antwoord(:'laat', NULL, 'permanent-failure', nmc.now(), NULL),
    'vastgelegd',
    'a bounce 7 d 10 min after delivered (past the term) causes no transition'
);
SELECT results_eq(
    format(
        $$SELECT p.status::text, p.afgerond_op = %L::timestamptz, p.laatste_receipt_status
          FROM nmc.poging AS p WHERE p.id = %L$$,
        :'laat_bezorgd', :'laat'
    ),
    $$VALUES ('bezorgd', true, 'delivered')$$,
    'late bounce: the attempt stays delivered, afgerond_op still the delivered completed_at'
);
SELECT results_eq(
    format(
        $$SELECT p.vastgelegde_receipt_status, p.vastgelegde_receipt_op = %L::timestamptz
          FROM nmc.poging AS p WHERE p.id = %L$$,
        :'laat_bounce', :'laat'
    ),
    $$VALUES ('permanent-failure', true)$$,
    'the bounce is recorded beside, with its completed_at'
);
SELECT is(
    (
        SELECT c.gemeld_op FROM nmc.claim_ongeldig_melden('w', 1000) AS c
        WHERE c.poging_id = :'laat'
    ),
    :'laat_bounce'::timestamptz,
    'under centraal the bounce is still reported invalid, as of the bounce'
);
SELECT nmc.advance_clock('20 minutes');
SELECT nmc.process_vaststellingen(1000) >= 1 AS settled \gset
SELECT pg_temp.navraag_antwoord(:'laat', NULL, 'temporary-failure', nmc.now(), NULL);
SELECT is(
    (
        SELECT
            n.status::text || ' ' || (j -> 'pogingen' -> 0 ->> 'status')
            || ' ' || ((j -> 'pogingen' -> 0 ->> 'afgerondOp')::timestamptz = :'laat_bezorgd')
        FROM nmc.poging AS p
        INNER JOIN nmc.notificatie AS n ON p.notificatie_id = n.id,
            LATERAL nmc.notificatie_json(n) AS j
        WHERE p.id = :'laat'
    ),
    'definitief-bezorgd bezorgd true',
    'settled, and after a further late receipt the proof still shows the delivered attempt'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM geval AS g
        INNER JOIN nmc.poging AS p ON g.poging = p.id
        INNER JOIN nmc.taak AS t ON p.id = t.poging_id AND t.soort = 'vaststellen'
        WHERE
            g.nr IN (20, 24, 30) AND p.status = 'bezorgd'
            AND t.due = p.afgerond_op + interval '7 days 30 minutes'
    ),
    3,
    'a receipt that does not count never rewrites a delivered attempt (cases 20, 24, 30)'
);

-- A status the NMC does not know is recorded beside what was known, not over it.
SELECT pg_temp.scenario('verzonden', 1, 'zelfde', 'decentraal', 'binnen') AS onb \gset
SELECT pg_temp.navraag_antwoord(:'onb', NULL, 'delivered', nmc.now() - interval '2 minutes', NULL);
SELECT is(
    pg_temp.navraag_antwoord(:'onb', NULL, 'bounced-maybe', nmc.now() - interval '1 minute', NULL),
    'onbekende-status',
    'an unknown status after delivered'
);
SELECT is(
    (SELECT status::text || ' ' || laatste_receipt_status FROM nmc.poging WHERE id = :'onb'),
    'bezorgd delivered',
    'an unknown status leaves the attempt''s last known receipt status as it was'
);

SELECT * FROM finish();
ROLLBACK;
