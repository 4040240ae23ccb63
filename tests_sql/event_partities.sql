-- Partition maintenance: the next range at 80%, never into a filled default; the drop rule.
BEGIN;
SELECT plan(15);
\ir fixtures/setup.sql

SELECT xid_tot::text::bigint AS eind FROM nmc.event_partitie \gset

SELECT is(
    nmc.maintain_event_partities(1000, (:eind * 0.79)::bigint::text::xid8), NULL,
    'below 80% of the newest range nothing is created'
);
SELECT is(
    nmc.maintain_event_partities(1000, (:eind * 0.8)::bigint::text::xid8),
    'event_x' || lpad(:eind::text, 12, '0'),
    'at 80% the next range is created'
);
SELECT results_eq(
    format('SELECT xid_van::text, xid_tot::text FROM nmc.event_partitie WHERE xid_van = %L', :eind),
    format('VALUES (%L, %L)', :eind, :eind + 1000),
    'it continues where the newest ended, with the given width'
);
SELECT is(
    nmc.maintain_event_partities(1000, (:eind * 0.8)::bigint::text::xid8), NULL,
    'the new range is not yet 80% used: nothing more'
);
SELECT ok(
    (
        SELECT
            obj_description(
                ('nmc.event_x' || lpad(:eind::text, 12, '0'))::regclass, 'pg_class'
            ) IS NOT NULL
    ),
    'the new partition states what it holds'
);

SELECT is_empty(
    $$SELECT t.relid::regclass FROM pg_catalog.pg_partition_tree('nmc.event') AS t
      WHERE t.isleaf AND pg_catalog.obj_description(t.relid, 'pg_class') IS NULL$$,
    'every partition of the event log states what it holds, the first range included'
);

-- Xids ran past every range: events sit in the default partition.
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), (:eind + 1500)::text::xid8);
SELECT is(
    (SELECT tableoid::regclass::text FROM nmc.event WHERE xid = (:eind + 1500)::text::xid8),
    'nmc.event_default', 'an event beyond every range lands in the default partition'
);
SELECT is(
    nmc.maintain_event_partities(1000, (:eind + 1600)::text::xid8),
    'event_x' || lpad((((:eind + 1500) / 1000 + 1) * 1000)::text, 12, '0'),
    'the next range starts above the rows in the default partition, so attaching cannot fail'
);

-- The drop rule: retention and live cursors.
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), '30');
SELECT is(
    nmc.drop_event_partities((:eind + 2500)::text::xid8), '{}'::text[],
    'a range with an event younger than the retention stays'
);
SELECT results_eq(
    $$SELECT gesloten_op IS NOT NULL, jongste_tijdstip = nmc.now(),
          aantal = (SELECT count(*) FROM nmc.event_x000000000000)
      FROM nmc.event_partitie WHERE naam = 'event_x000000000000'$$,
    $$VALUES (true, true, true)$$,
    'a closed range''s youngest event and its count are read once and kept in the register'
);
-- DV 1001 has a webhook whose delivery position points into the first range.
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook' WHERE dv_id = 1001;
SELECT nmc.ensure_terugkoppelen();
UPDATE nmc.webhookpositie SET xid = '25', event_id = 0;
SELECT nmc.advance_clock('366 days');
INSERT INTO nmc.bevestiging (dv_id, epoch, xid, event_id, bevestigd_op)
VALUES (1001, 1, '25', 0, nmc.now() - interval '1 day');
SELECT is(
    nmc.drop_event_partities((:eind + 2500)::text::xid8), '{}'::text[],
    'a range a live acknowledgement points into stays'
);
UPDATE nmc.bevestiging SET bevestigd_op = nmc.now() - interval '31 days';
CREATE FUNCTION pg_temp.webhook(p_uitkomst text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v record;
BEGIN
    UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'terugkoppelen' AND staat = 'open';
    SELECT * INTO v FROM nmc.claim_terugkoppelen_v3('w', 5);
    RETURN nmc.finish_terugkoppelen_v2(
        v.taak_id, v.claim_epoch, p_uitkomst,
        CASE WHEN p_uitkomst = 'geleverd' THEN '25'::xid8 END,
        CASE WHEN p_uitkomst = 'geleverd' THEN 0::bigint END, NULL
    );
END $$;
SELECT pg_temp.webhook('geleverd');
SELECT is(
    nmc.drop_event_partities((:eind + 2500)::text::xid8), '{}'::text[],
    'a range a webhook position delivered to within the max cursor age points into stays'
);
-- The webhook then fails for longer than the max cursor age (30 days): every failure
-- touches the position, but its age is that of its last delivery.
SELECT nmc.advance_clock('31 days');
SELECT pg_temp.webhook('mislukt');
SELECT is(
    nmc.drop_event_partities((:eind + 2500)::text::xid8),
    ARRAY['event_x000000000000', 'event_x' || lpad(:eind::text, 12, '0')],
    'past the retention, with only an expired acknowledgement and a webhook that has failed '
    'since its last delivery longer ago than the max cursor age pointing in, the old ranges go'
);
SELECT ok(
    (SELECT verwijderd_op IS NOT NULL FROM nmc.event_partitie WHERE naam = 'event_x000000000000')
    AND to_regclass('nmc.event_x000000000000') IS NULL,
    'the partition is dropped; the register keeps its range for 410s'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.page_events(1001, 1, '25', 0, nmc.now(), 10)$$),
    'NM018:', 'a cursor into it now gets 410'
);

SELECT * FROM finish();
ROLLBACK;
