-- The guard triggers refuse every write to a status that bypasses the single writer.
BEGIN;
SELECT plan(22);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS id \gset
SELECT pg_temp.naar_status(:'id', 'verzonden');

SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'bezorgd' WHERE id = %L$$, :'id'),
    'NM002', 'status change without a new version and event',
    'a direct status update without version is refused (NM002)'
);
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET reden = 'technisch' WHERE id = %L$$, :'id'),
    'NM002', 'status change without a new version and event',
    'a direct reason update without version is refused (NM002)'
);
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'bezorgd', versie = versie + 1
             WHERE id = %L$$, :'id'),
    'NM002', 'version change without its event in the same transaction',
    'an allowed pair with a new version but no event is refused (NM002)'
);
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'bezorgd', versie = versie + 2
             WHERE id = %L$$, :'id'),
    'NM003', 'version must rise by exactly one (3 to 5)',
    'a version that jumps is refused (NM003)'
);
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'bezorgd', versie = versie - 1
             WHERE id = %L$$, :'id'),
    'NM003', 'version must rise by exactly one (3 to 2)',
    'a version that goes down is refused (NM003)'
);
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'aangenomen', versie = versie + 1
             WHERE id = %L$$, :'id'),
    'NM001', 'transition from verzonden to aangenomen is not allowed',
    'a pair outside the table is refused by the trigger (NM001)'
);

-- An event for another transition does not cover this one.
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
VALUES (:'id', 1001, 4, 'verzonden', 'verlopen', 'verlopen', nmc.now());
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'bezorgd', versie = versie + 1
             WHERE id = %L$$, :'id'),
    'NM002', 'version change without its event in the same transaction',
    'an event whose naar differs from the new status does not count (NM002)'
);
SELECT lives_ok(
    format($$UPDATE nmc.notificatie SET status = 'verlopen', reden = 'verlopen',
             versie = versie + 1 WHERE id = %L$$, :'id'),
    'a hand-written transition with its matching event in the same transaction passes'
);

-- The pair is judged per statement (the row guard's WHEN clause leaves it out): a pair
-- outside the table is refused even when its event was written, with the current status
-- as DETAIL.
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
VALUES (:'id', 1001, 5, 'verlopen', 'verzonden', NULL, nmc.now());
SELECT is(
    pg_temp.fout(format(
        $$UPDATE nmc.notificatie SET status = 'verzonden', reden = NULL, versie = versie + 1
          WHERE id = %L$$, :'id'
    )),
    'NM001:verlopen',
    'a pair outside the table is refused even with its event written (NM001, DETAIL van)'
);
SELECT ok(
    (
        SELECT t.tgqual IS NOT NULL FROM pg_catalog.pg_trigger AS t
        WHERE t.tgrelid = 'nmc.notificatie'::regclass AND t.tgname = 'notificatie_guard_row'
    ),
    'the row guard is called only for a row its WHEN clause finds at fault'
);

SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET dv_id = 1002 WHERE id = %L$$, :'id'),
    'NM015', 'id, dv_id and aangenomen_op of a notificatie never change',
    'moving a notification to another DV is refused (NM015)'
);
SELECT lives_ok(
    format($$UPDATE nmc.notificatie SET sleutel_gewrapt = NULL, gewist_op = nmc.now()
             WHERE id = %L$$, :'id'),
    'columns outside the lifecycle (erasure) change without a transition'
);

-- Inserts: only version 1 aangenomen, with its first event.
PREPARE nieuw_rij (integer, nmc.notificatie_status) AS
INSERT INTO nmc.notificatie (
    id, dv_id, berichttype, regie, status, versie, geldig_tot, dvref_hmac, pepper_versie,
    payload_hash, trace_id, ontvanger_versleuteld, aangenomen_op, bijgewerkt_op
) VALUES (
    'b0b0b0b0-0000-4000-8000-000000000001', 1001, 'aanslag', 'decentraal', $2, $1,
    nmc.now() + interval '1 day', pg_temp.b32('x'), 1, pg_temp.b32('y'),
    '0123456789abcdef0123456789abcdef', '\x01', nmc.now(), nmc.now()
);
SELECT throws_ok(
    'EXECUTE nieuw_rij(1, ''aangenomen'')',
    'NM002', 'version change without its event in the same transaction',
    'a notification inserted without its first event is refused (NM002)'
);
SELECT throws_ok(
    'EXECUTE nieuw_rij(2, ''aangenomen'')',
    'NM003', 'a new notificatie starts at version 1',
    'a notification inserted at version 2 is refused (NM003)'
);
SELECT throws_ok(
    'EXECUTE nieuw_rij(1, ''verzonden'')',
    'NM001', 'a new notificatie starts as aangenomen, not verzonden',
    'a notification inserted in another status is refused (NM001)'
);
SELECT throws_ok(
    $$INSERT INTO nmc.notificatie (
        id, dv_id, berichttype, regie, status, reden, versie, geldig_tot, dvref_hmac,
        pepper_versie, payload_hash, trace_id, ontvanger_versleuteld, aangenomen_op,
        bijgewerkt_op
    )
    SELECT gen_random_uuid(), 1001, 'aanslag', 'decentraal', r.status, NULL, 1,
        nmc.now() + interval '1 day', pg_temp.b32(r.nr::text), 1, pg_temp.b32('y'),
        '0123456789abcdef0123456789abcdef', '\x01', nmc.now(), nmc.now()
    FROM (VALUES (1, 'aangenomen'::nmc.notificatie_status), (2, 'in-verzending'))
        AS r (nr, status)$$,
    'NM001', 'a new notificatie starts as aangenomen, not in-verzending',
    'a multi-row insert is refused when one row starts in another status (NM001)'
);
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip)
VALUES ('b0b0b0b0-0000-4000-8000-000000000001', 1001, 1, NULL, 'aangenomen', nmc.now());
SELECT lives_ok(
    'EXECUTE nieuw_rij(1, ''aangenomen'')',
    'a notification inserted with its first event in the same transaction passes'
);

-- A multi-row update is judged row by row.
SELECT pg_temp.nieuwe_notificatie() AS a \gset
SELECT pg_temp.nieuwe_notificatie() AS b \gset
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
VALUES (:'a', 1001, 2, 'aangenomen', 'geannuleerd', 'geannuleerd', nmc.now());
SELECT throws_ok(
    format($$UPDATE nmc.notificatie SET status = 'geannuleerd', reden = 'geannuleerd',
             versie = versie + 1 WHERE id IN (%L, %L)$$, :'a', :'b'),
    'NM002', 'version change without its event in the same transaction',
    'one row without its event fails the whole statement'
);
SELECT is(
    (
        SELECT count(*)::integer
        FROM nmc.notificatie WHERE
            id IN (:'a', :'b')
            AND status = 'aangenomen'
    ),
    2,
    'and neither row changed'
);

-- A multi-row transition: one pair outside the table among allowed ones, every event
-- written, fails the whole statement with the offender's pair.
SELECT pg_temp.nieuwe_notificatie() AS c \gset
SELECT pg_temp.nieuwe_notificatie() AS d \gset
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
VALUES
(:'c', 1001, 2, 'aangenomen', 'in-verzending', NULL, nmc.now()),
(:'d', 1001, 2, 'aangenomen', 'bezorgd', NULL, nmc.now());
SELECT throws_ok(
    format($$UPDATE nmc.notificatie
             SET status = CASE id WHEN %L THEN 'in-verzending' ELSE 'bezorgd' END
                     ::nmc.notificatie_status,
                 versie = versie + 1
             WHERE id IN (%L, %L)$$, :'c', :'c', :'d'),
    'NM001', 'transition from aangenomen to bezorgd is not allowed',
    'one pair outside the table among allowed ones fails the statement (NM001)'
);
SELECT is(
    (SELECT count(*)::integer FROM nmc.notificatie WHERE id IN (:'c', :'d') AND versie = 1),
    2,
    'and neither row changed'
);
SELECT lives_ok(
    format($$UPDATE nmc.notificatie SET status = 'in-verzending', versie = versie + 1
             WHERE id = %L$$, :'c'),
    'the allowed one alone, with its event, passes'
);

SELECT * FROM finish();
ROLLBACK;
