-- Onboarding: one JSON document creates or updates a DV and its berichttypen.
BEGIN;
SELECT plan(11);

SELECT nmc.apply_dienstverlener($${
    "oin": "00000009999999999000", "naam": "Gemeente Voorbeeld",
    "quotumPerMinuut": 120, "quotumPerDag": 5000,
    "webhook": {"url": "https://dv.example/webhook", "maxMislukt": 3},
    "bevestigingstermijn": "2 days", "maxCursorleeftijd": "14 days",
    "beheerkanaal": "mailto:beheer@dv.example",
    "berichttypen": [
        {"code": "aanslag", "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-0000000000aa",
         "regie": ["centraal"], "geldigheidStandaard": "1 day", "geldigheidMax": "10 days"},
        {"code": "herinnering", "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-0000000000bb"}
    ]
}$$::jsonb) AS dv \gset

SELECT results_eq(
    format($$SELECT naam, quotum_per_minuut, quotum_per_dag, webhook_url, webhook_max_mislukt,
             bevestigingstermijn, max_cursorleeftijd, actief FROM nmc.dienstverlener
             WHERE dv_id = %s$$, :dv),
    $$VALUES ('Gemeente Voorbeeld', 120, 5000, 'https://dv.example/webhook', 3,
              interval '2 days', interval '14 days', true)$$,
    'a new DV is created with its settings'
);
SELECT results_eq(
    format($$SELECT code, regie_toegestaan::text, geldigheid_standaard, geldigheid_max, actief
             FROM nmc.berichttype WHERE dv_id = %s ORDER BY code$$, :dv),
    $$VALUES ('aanslag', '{centraal}', interval '1 day', interval '10 days', true),
             ('herinnering', '{centraal,decentraal}', interval '3 days', interval '30 days',
              true)$$,
    'its berichttypen are created, defaults filled in'
);
SELECT results_eq(
    'SELECT dv_id, naam FROM nmc.find_dienstverlener(''00000009999999999000'')',
    format($$VALUES (%s, 'Gemeente Voorbeeld')$$, :dv),
    'find_dienstverlener maps the OIN to the DV'
);

SELECT is(
    nmc.apply_dienstverlener($${
        "oin": "00000009999999999000", "naam": "Gemeente Voorbeeld (nieuw)",
        "berichttypen": [
            {"code": "herinnering", "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-0000000000cc",
             "regie": ["decentraal"]}
        ]
    }$$::jsonb),
    :dv,
    'applying the same OIN again updates the same DV'
);
SELECT results_eq(
    format($$SELECT code, actief, notifynl_template_id::text FROM nmc.berichttype
             WHERE dv_id = %s ORDER BY code$$, :dv),
    $$VALUES ('aanslag', false, 'a0a0a0a0-0000-4000-8000-0000000000aa'),
             ('herinnering', true, 'a0a0a0a0-0000-4000-8000-0000000000cc')$$,
    'a berichttype left out is retired, a listed one updated'
);
SELECT is(
    (SELECT webhook_url FROM nmc.dienstverlener WHERE dv_id = :dv),
    NULL,
    'a webhook left out is removed'
);
SELECT results_eq(
    format('SELECT oin, berichttypen FROM nmc.list_dienstverleners() WHERE dv_id = %s', :dv),
    $$VALUES ('00000009999999999000', '{herinnering}'::text [])$$,
    'list_dienstverleners shows the active berichttypen'
);

UPDATE nmc.dienstverlener SET actief = FALSE WHERE dv_id = :dv;
SELECT is_empty(
    'SELECT * FROM nmc.find_dienstverlener(''00000009999999999000'')',
    'an inactive DV is not found'
);

SELECT throws_ok(
    $$SELECT nmc.apply_dienstverlener('{"oin": "00000009999999999001", "naam": "x",
        "berichttypen": [], "quotum": 5}')$$,
    '22023', 'unknown fields in the DV document: quotum',
    'an unknown field is refused, named'
);
SELECT throws_ok(
    $$SELECT nmc.apply_dienstverlener('{"oin": "123", "naam": "x", "berichttypen": []}')$$,
    '23514', NULL,
    'an OIN that is not 20 digits is refused by the table check'
);
SELECT throws_ok(
    $$SELECT nmc.apply_dienstverlener('{"oin": "00000009999999999001", "naam": "x"}')$$,
    '22023', 'the DV document needs a berichttypen array',
    'a document without berichttypen is refused'
);

SELECT * FROM finish();
ROLLBACK;
