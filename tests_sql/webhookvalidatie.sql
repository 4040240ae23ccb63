-- A DV's webhook is validated before it is used and when its URL changes (SPEC §7): the
-- result is recorded, and the webhook task delivers nothing until the current URL passed.
BEGIN;
SELECT plan(20);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook' WHERE dv_id = 1001;
SELECT nmc.ensure_terugkoppelen();
-- An event committed "long ago" past the position: an xid just above it.
UPDATE nmc.webhookpositie SET xid = '10';
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, tijdstip, xid)
VALUES (gen_random_uuid(), 1001, 1, NULL, 'aangenomen', nmc.now(), '11');

CREATE TEMP TABLE geclaimd AS
SELECT 'v2 ongevalideerd' AS stap, c.*
FROM nmc.claim_terugkoppelen_v2('w', 5) AS c;
SELECT is(
    (SELECT row(g.dv_id, g.webhook_url, g.gevalideerd, g.pagina IS NULL)::text FROM geclaimd AS g),
    '(1001,https://dv.example/hook,f,t)',
    'a webhook without a validation is claimed as not validated, without reading a page'
);
SELECT is(nmc.get_webhookvalidatie(1001) ->> 'gevalideerd', 'false', 'and it is not validated');

SELECT nmc.defer_taak(g.taak_id, g.claim_epoch, 'webhook-niet-gevalideerd') FROM geclaimd AS g;
UPDATE nmc.taak SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL, due = nmc.now()
WHERE soort = 'terugkoppelen';

SELECT is(
    nmc.record_webhookvalidatie(1001, 'https://dv.example/hook', 'geen-handshake', 'http-405'),
    FALSE, 'a refused handshake is recorded, and does not validate'
);
SELECT is(
    (SELECT row(v.url, v.uitkomst, v.detail)::text FROM nmc.webhookvalidatie AS v),
    '(https://dv.example/hook,geen-handshake,http-405)', 'with its outcome and error class'
);
SELECT is(
    (SELECT c.gevalideerd FROM nmc.claim_terugkoppelen_v2('w', 5) AS c), FALSE,
    'so the webhook stays unused'
);
UPDATE nmc.taak SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL, due = nmc.now()
WHERE soort = 'terugkoppelen';

SELECT is(
    nmc.record_webhookvalidatie(1001, 'https://dv.example/hook', 'geldig', NULL), TRUE,
    'a handshake answered validates the URL'
);
INSERT INTO geclaimd
SELECT 'v2 geldig', c.* FROM nmc.claim_terugkoppelen_v2('w', 5) AS c;
SELECT is(
    (
        SELECT row(g.gevalideerd, json_array_length(g.pagina -> 'events'))::text
        FROM geclaimd AS g WHERE g.stap = 'v2 geldig'
    ),
    '(t,1)', 'a validated webhook is claimed with its batch'
);
SELECT is(
    (nmc.get_webhookvalidatie(1001) ->> 'uitkomst'), 'geldig', 'the register says so'
);

-- A new URL needs its own validation.
UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/nieuw' WHERE dv_id = 1001;
SELECT is(
    (nmc.get_webhookvalidatie(1001) ->> 'gevalideerd'), 'false',
    'a changed URL is not validated by the old one''s validation'
);
UPDATE nmc.taak SET staat = 'open', lease_eigenaar = NULL, lease_tot = NULL, due = nmc.now()
WHERE soort = 'terugkoppelen';
SELECT is(
    (SELECT c.gevalideerd FROM nmc.claim_terugkoppelen_v2('w', 5) AS c), FALSE,
    'and its webhook is not used'
);
SELECT is(
    nmc.record_webhookvalidatie(1001, 'https://dv.example/hook', 'geldig', NULL), FALSE,
    'a validation of a URL that is no longer the DV''s validates nothing'
);

SELECT throws_ok(
    $$SELECT nmc.record_webhookvalidatie(1001, 'https://dv.example/nieuw', 'prima', NULL)$$,
    '23514', NULL, 'an outcome the register does not know is refused'
);
SELECT throws_ok(
    $$SELECT nmc.record_webhookvalidatie(1002, 'https://dv.example/nieuw', 'geldig', NULL)$$,
    'NM005', NULL, 'a DV without a webhook has nothing to validate'
);
SELECT throws_ok(
    $$SELECT nmc.record_webhookvalidatie(1001, 'https://dv.example/nieuw', 'bestaand', NULL)$$,
    '22023', NULL, 'bestaand is the migration''s outcome: no validation records it'
);

-- nmc.webhook_gevalideerd: only a geldig or bestaand outcome, for exactly that URL and DV.
DELETE FROM nmc.webhookvalidatie;
SELECT is(
    nmc.webhook_gevalideerd(1001, 'https://dv.example/nieuw'), FALSE,
    'a webhook without any validation is not validated'
);
INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, detail, gevalideerd_op)
VALUES (1001, 'https://dv.example/nieuw', 'geldig', NULL, nmc.now());
SELECT is(
    nmc.webhook_gevalideerd(1001, 'https://dv.example/nieuw'), TRUE,
    'a geldig outcome validates exactly the URL it was for'
);
SELECT is(
    ARRAY[
        nmc.webhook_gevalideerd(1001, 'https://dv.example/nieuw/'),
        nmc.webhook_gevalideerd(1001, 'HTTPS://DV.EXAMPLE/NIEUW'),
        nmc.webhook_gevalideerd(1001, NULL)
    ],
    ARRAY[FALSE, FALSE, FALSE],
    'any other URL (a trailing slash, another case, none) is not validated by it'
);
SELECT is(
    nmc.webhook_gevalideerd(1002, 'https://dv.example/nieuw'), FALSE,
    'nor is the same URL of another DV'
);
UPDATE nmc.webhookvalidatie SET uitkomst = 'bestaand' WHERE dv_id = 1001;
SELECT is(
    nmc.webhook_gevalideerd(1001, 'https://dv.example/nieuw'), TRUE,
    'a webhook in use before validation existed (bestaand) stays validated for its URL'
);
-- The outcome recorded, then whether the URL counts as validated.
CREATE FUNCTION pg_temp.gevalideerd_na(p_uitkomst text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE nmc.webhookvalidatie SET uitkomst = p_uitkomst WHERE dv_id = 1001;
    RETURN nmc.webhook_gevalideerd(1001, 'https://dv.example/nieuw');
END $$;
SELECT is(
    (
        SELECT array_agg(pg_temp.gevalideerd_na(u.uitkomst) ORDER BY u.uitkomst)
        FROM unnest(
            ARRAY['adres-geweigerd', 'geen-handshake', 'onbereikbaar', 'ongeldige-url']
        ) AS u (uitkomst)
    ),
    ARRAY[FALSE, FALSE, FALSE, FALSE],
    'no failed outcome (adres-geweigerd, geen-handshake, onbereikbaar, ongeldige-url) validates'
);

SELECT * FROM finish();
ROLLBACK;
