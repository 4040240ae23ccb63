-- The drop rule keeps a range while a notification with events in it is kept: a kept
-- notification's proof is its whole chain from sequence 1 (SPEC §7), and a notification
-- is kept until its terminal status plus the delivery-proof retention, longer than the
-- youngest event of the range its first events lie in.
BEGIN;
SELECT plan(10);
\ir fixtures/setup.sql

SELECT xid_tot::text::bigint AS eind FROM nmc.event_partitie \gset
-- R2: the range after the first (R1), so R1 can close while R2 takes the newer events.
SELECT nmc.maintain_event_partities(1000, (:eind * 0.8)::bigint::text::xid8) IS NOT NULL AS r2
\gset

-- N is accepted and delivered; R1 closes (every xid below its end ended, p_xid) and its
-- youngest event is read once: N's delivery. One test transaction has one xid, so N's
-- later events are written into R1 as well; the register, read when R1 closed, says what
-- R1 held then, as it does for a range that really closed before N became terminal.
SELECT pg_temp.nieuwe_notificatie() AS n \gset
SELECT pg_temp.naar_status(:'n', 'bezorgd');
SELECT is(
    nmc.drop_event_partities(:eind::text::xid8), '{}'::text[],
    'R1 closes with events younger than the retention: it stays'
);
-- Every definitief-bezorgd comes at least the settlement term after the delivery.
SELECT nmc.advance_clock('8 days');
SELECT nmc.transition_notificatie(:'n', 'definitief-bezorgd', NULL);

-- Past R1's youngest event plus the retention (a day), before N's terminal status plus it.
SELECT nmc.advance_clock(interval '1 year' - interval '7 days');
SELECT nmc.delete_expired(1000);
SELECT is(
    (SELECT count(*) FROM nmc.notificatie WHERE id = :'n'), 1::bigint,
    'N is still kept (terminal for less than the retention)'
);
SELECT is(
    nmc.drop_event_partities(:eind::text::xid8), '{}'::text[],
    'R1 stays while it holds events of a kept notification'
);
SELECT is(
    nmc.partitie_bewaard(:eind::text::xid8, (
        SELECT jongste_tijdstip FROM nmc.event_partitie WHERE naam = 'event_x000000000000'
    )),
    TRUE, 'R1 holds an event of a kept notification'
);
SELECT is(
    nmc.partitie_bewaard('5'::xid8, (
        SELECT jongste_tijdstip FROM nmc.event_partitie WHERE naam = 'event_x000000000000'
    )),
    FALSE, 'a range below N''s first event does not hold N'
);
SELECT is(nmc.partitie_bewaard(:eind::text::xid8, NULL), FALSE, 'an empty range holds nothing');
SELECT results_eq(
    format('SELECT sequence FROM nmc.event WHERE notificatie_id = %L ORDER BY sequence', :'n'),
    'VALUES (1), (2), (3), (4), (5)',
    'N''s chain is still whole: sequence 1 to its version'
);
SELECT ok(
    nmc.get_afleverbewijs((SELECT dv_id FROM nmc.notificatie WHERE id = :'n'), :'n') IS NOT NULL,
    'and its delivery proof is served'
);

-- A notification accepted after R1 closed (its events all above R1) does not hold R1.
SELECT nmc.advance_clock('8 days');
SELECT nmc.delete_expired(1000);
SELECT pg_temp.nieuwe_notificatie() AS m \gset
SELECT is(
    (SELECT count(*) FROM nmc.notificatie WHERE id = :'n'), 0::bigint,
    'past N''s terminal status plus the retention N goes'
);
SELECT is(
    nmc.drop_event_partities(:eind::text::xid8), ARRAY['event_x000000000000'],
    'then R1 goes: no kept notification has events in it (a younger one does not hold it)'
);

SELECT * FROM finish();
ROLLBACK;
