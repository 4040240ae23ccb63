-- The metrics the alert rules and the dashboard read beyond the first set (tests_sql/
-- metrics.sql): backlog per kind and DV, the budget's ceiling, the webhook's state, the
-- default event partition, the watermark.
BEGIN;
SELECT plan(19);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
DELETE FROM nmc.verzendbudget;
SELECT pg_temp.nieuwe_notificatie() FROM generate_series(1, 3);
SELECT pg_temp.nieuwe_notificatie(1002, p_berichttype => 'herinnering');
-- Not due yet: no backlog.
INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
VALUES ('terugkoppelen', 1001, nmc.now() + INTERVAL '1 hour', nmc.now());
SELECT nmc.advance_clock('30 seconds');

CREATE FUNCTION pg_temp.metriek(p_naam TEXT, p_labels JSONB) RETURNS DOUBLE PRECISION
LANGUAGE sql AS $$
    SELECT m.waarde FROM nmc.metrics() AS m WHERE m.naam = p_naam AND m.labels = p_labels
$$;

SELECT is(
    pg_temp.metriek('nmc_taak_achterstand', '{"soort": "verzenden", "dv": 1001}'),
    3::DOUBLE PRECISION,
    'due open tasks per kind and DV'
);
SELECT is(
    pg_temp.metriek('nmc_taak_achterstand', '{"soort": "verzenden", "dv": 1002}'),
    1::DOUBLE PRECISION,
    'another DV''s backlog has its own series'
);
SELECT is(
    (
        SELECT count(*) FROM nmc.metrics() AS m
        WHERE m.naam = 'nmc_taak_achterstand' AND m.labels ->> 'soort' = 'terugkoppelen'
    ),
    0::BIGINT,
    'a task that is not due yet is no backlog'
);

-- The budget: what the window allows next to what it used.
INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel)
VALUES ('eigen', 100, 0.2);
SELECT nmc.take_budget('standaard', 'verzenden', 5);
SELECT nmc.take_budget('eigen', 'navraag', 3);
SELECT is(
    pg_temp.metriek('nmc_verzendbudget_plafond', '{"service": "standaard", "soort": "verzenden"}'),
    2700::DOUBLE PRECISION,
    'the send ceiling of a service with the default budget: 3000 less the navraag share'
);
SELECT is(
    pg_temp.metriek('nmc_verzendbudget_plafond', '{"service": "eigen", "soort": "navraag"}'),
    20::DOUBLE PRECISION,
    'the navraag ceiling of a configured service: its share of its own budget'
);
SELECT is(
    pg_temp.metriek('nmc_verzendbudget_plafond', '{"service": "eigen", "soort": "verzenden"}'),
    80::DOUBLE PRECISION,
    'a service in use gets both ceilings, also of the kind it has not used yet'
);

-- The webhook's state.
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook' WHERE dv_id = 1001;
INSERT INTO nmc.webhookpositie (
    dv_id, epoch, xid, event_id, mislukt, gepauzeerd_tot, bijgewerkt_op, geleverd_op
)
VALUES (1001, 1, '0', 0, 3, nmc.now() + INTERVAL '5 minutes', nmc.now(), nmc.now());
SELECT nmc.advance_clock('1 minute');
SELECT is(
    pg_temp.metriek('nmc_webhook_mislukt', '{"dv": 1001}'), 3::DOUBLE PRECISION,
    'consecutive failed webhook deliveries per DV'
);
SELECT is(
    pg_temp.metriek('nmc_webhook_gepauzeerd', '{"dv": 1001}'), 1::DOUBLE PRECISION,
    'a webhook paused until later is paused'
);
SELECT is(
    pg_temp.metriek('nmc_webhook_achterstand_seconden', '{"dv": 1001}'), 60::DOUBLE PRECISION,
    'seconds since the webhook last delivered up to its position'
);
SELECT is(
    pg_temp.metriek('nmc_webhook_gevalideerd', '{"dv": 1001}'), 0::DOUBLE PRECISION,
    'a webhook without a validation is not validated'
);
INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, gevalideerd_op)
VALUES (1001, 'https://dv.example/hook', 'geldig', nmc.now());
SELECT is(
    pg_temp.metriek('nmc_webhook_gevalideerd', '{"dv": 1001}'), 1::DOUBLE PRECISION,
    'a webhook validated for its current URL is validated'
);
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/nieuw' WHERE dv_id = 1001;
SELECT is(
    pg_temp.metriek('nmc_webhook_gevalideerd', '{"dv": 1001}'), 0::DOUBLE PRECISION,
    'a changed URL is not validated by the old one''s validation'
);
SELECT nmc.advance_clock('10 minutes');
SELECT is(
    pg_temp.metriek('nmc_webhook_gepauzeerd', '{"dv": 1001}'), 0::DOUBLE PRECISION,
    'a pause that has passed is over'
);
UPDATE nmc.webhookpositie SET uitgeschakeld = true WHERE dv_id = 1001;
SELECT is(
    pg_temp.metriek('nmc_webhook_gepauzeerd', '{"dv": 1001}'), 1::DOUBLE PRECISION,
    'a webhook switched off by a 410 counts as paused until the DV resumes it'
);

-- Maintenance: the default partition catches what no xid range holds.
SELECT is(
    pg_temp.metriek('nmc_event_default_rijen', '{}'),
    (SELECT count(*) FROM nmc.event_default)::DOUBLE PRECISION,
    'the rows of the default event partition are reported, also when there are none'
);

-- The watermark (the committed case is tests_py/test_metrics_watermerk.py): this
-- transaction's own events sit at the watermark's xid and count as held back.
SELECT nmc.advance_clock('15 seconds');
SELECT cmp_ok(
    pg_temp.metriek('nmc_feed_watermerk_achterstand_seconden', '{}'), '>=', 15::DOUBLE PRECISION,
    'the age of the oldest event the watermark still holds back'
);

-- Tasks whose last try failed or was deferred (maintenance that keeps failing is late).
UPDATE nmc.taak SET laatste_fout = 'ldv-http-503', uitstellen = 1
WHERE id = (SELECT min(t.id) FROM nmc.taak AS t WHERE t.soort = 'verzenden');
SELECT is(
    pg_temp.metriek('nmc_taak_herhaald', '{"soort": "verzenden"}'), 1::DOUBLE PRECISION,
    'open tasks waiting after a failed or deferred try, per kind'
);

-- The age of each DV's last beheer report (-1: none yet), for a report that does not go out.
UPDATE nmc.dienstverlener SET beheerkanaal = 'mailto:beheer@voorbeeld.nl' WHERE dv_id = 1002;
SELECT is(
    pg_temp.metriek('nmc_beheerrapport_leeftijd_seconden', '{"dv": 1002}'), -1::DOUBLE PRECISION,
    'a DV with a beheer channel and no report yet'
);
INSERT INTO nmc.beheerrapport (
    id, dv_id, dag, kanaal, onbevestigd, onbevestigd_afgekapt, geen_contactgegevens_drempel,
    boven_drempel, uitkomst, aangemaakt_op, afgerond_op
)
VALUES (
    gen_random_uuid(), 1002, '2025-01-01', 'mailto', 0, false, 0.3, false, 'niets-te-melden',
    nmc.now(), nmc.now()
);
SELECT nmc.advance_clock('1 hour');
SELECT is(
    pg_temp.metriek('nmc_beheerrapport_leeftijd_seconden', '{"dv": 1002}'),
    3600::DOUBLE PRECISION,
    'seconds since its last report was finished'
);

SELECT * FROM finish();
ROLLBACK;
