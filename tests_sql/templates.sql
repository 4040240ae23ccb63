-- The berichttypen's NotifyNL templates: recording reads, the maintenance job templates,
-- marking a template stale, and the intake's two template rules (NM032, NM033).
BEGIN;
SELECT plan(41);
\ir fixtures/setup.sql

SELECT nmc.advance_clock('1 hour');

-- One batch through the current intake; p_namen per item (normalized, space-separated).
CREATE FUNCTION pg_temp.batch_v3(p_berichttypen text[], p_namen text[])
RETURNS TABLE (item integer, notificatie_id uuid, nieuw boolean)
LANGUAGE sql AS $$
    SELECT * FROM nmc.intake_notificaties_v3(
        1001, 'decentraal', 1::smallint, 1::smallint, 'kek-1', NULL,
        ARRAY(SELECT gen_random_uuid() FROM unnest(p_berichttypen)),
        p_berichttypen,
        ARRAY(SELECT pg_temp.b32(gen_random_uuid()::text) FROM unnest(p_berichttypen)),
        ARRAY(SELECT pg_temp.b32('p') FROM unnest(p_berichttypen)),
        ARRAY(SELECT '\x0a'::bytea FROM unnest(p_berichttypen)),
        ARRAY(SELECT '\x0b'::bytea FROM unnest(p_berichttypen)),
        ARRAY(SELECT '\x0c'::bytea FROM unnest(p_berichttypen)),
        ARRAY(SELECT NULL::timestamptz FROM unnest(p_berichttypen)),
        ARRAY(SELECT '0123456789abcdef0123456789abcdef' FROM unnest(p_berichttypen)),
        ARRAY(SELECT NULL::text FROM unnest(p_berichttypen)),
        p_namen
    )
$$;

-- 'SQLSTATE:DETAIL:HINT' of the error p_sql raises (NULL when none).
CREATE FUNCTION pg_temp.fout_hint(p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_detail text;
    v_hint text;
BEGIN
    BEGIN
        EXECUTE p_sql;
        RETURN NULL;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_detail = PG_EXCEPTION_DETAIL,
            v_hint = PG_EXCEPTION_HINT;
    END;
    RETURN v_state || ':' || coalesce(v_detail, '') || ':' || coalesce(v_hint, '');
END
$$;

-- ---------------------------------------------------------------- not read yet: no check
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM pg_temp.batch_v3('{aanslag}', '{""}')),
    1, 'a template not read yet is not checked: the intake accepts'
);

-- ---------------------------------------------------------------- record_template
SELECT is(
    nmc.record_template(
        'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'gelezen', 3,
        '{Naam,"Datum Besluit"}', '{naam,datumbesluit}', NULL
    ),
    'beschikbaar', 'a read template is beschikbaar'
);
SELECT results_eq(
    $$SELECT versie, placeholders, sleutels, gelezen_op = nmc.now(),
             verversen_na = nmc.now() + interval '15 minutes', laatste_fout
      FROM nmc.notifynl_template WHERE template_id = 'a0a0a0a0-0000-4000-8000-000000000001'$$,
    $$VALUES (3, '{Naam,"Datum Besluit"}'::text[], '{naam,datumbesluit}'::text[], true, true,
              NULL::text)$$,
    'it keeps the version and the names (as listed and normalized), due again after 15 minutes'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.record_template('standaard', gen_random_uuid(), 'gelezen', 1,
        '{a,b}', '{a}', NULL)$$),
    '22023:', 'names and normalized names come in the same number'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.record_template('standaard', gen_random_uuid(), 'raar', NULL,
        NULL, NULL, NULL)$$),
    '22023:', 'an unknown outcome is refused'
);

-- ---------------------------------------------------------------- NM032
SELECT is(
    (
        SELECT pg_catalog.count(*)::integer
        FROM pg_temp.batch_v3('{aanslag}', '{"naam datumbesluit extra"}')
    ),
    1, 'every placeholder present (extra fields allowed): accepted'
);
SELECT is(
    pg_temp.fout_hint($$SELECT * FROM pg_temp.batch_v3('{aanslag,aanslag}',
        '{"naam datumbesluit","extra"}')$$),
    'NM032:1:["Naam", "Datum Besluit"]',
    'an item lacking placeholders is refused with its index and the names it lacks'
);
SELECT is(
    pg_temp.fout_hint($$SELECT * FROM pg_temp.batch_v3('{aanslag}', '{naam}')$$),
    'NM032:0:["Datum Besluit"]', 'only the missing ones, as the template spells them'
);
SELECT is(
    pg_temp.fout($$SELECT * FROM pg_temp.batch_v3('{aanslag}', '{naam,extra}')$$),
    'NM016:', 'p_namen has one entry per item'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM nmc.intake_notificaties_v2(
        1001, 'decentraal', 1::smallint, 1::smallint, 'kek-1', NULL,
        ARRAY[gen_random_uuid()], '{aanslag}', ARRAY[pg_temp.b32('v2-1')],
        ARRAY[pg_temp.b32('p')], '{"\\x0a"}', '{"\\x0b"}', '{"\\x0c"}', '{NULL}',
        '{0123456789abcdef0123456789abcdef}', '{NULL}'
    )),
    1, 'the previous release''s intake (no names) is not checked'
);
SELECT is(
    pg_temp.fout_hint($$SELECT * FROM nmc.intake_notificatie_v3(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('s-1'), 1::smallint,
        pg_temp.b32('p'), 1::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef', NULL, 'naam')$$),
    'NM032:0:["Datum Besluit"]', 'the single form refuses the same way'
);
-- ---------------------------------------------------------------- verdwenen: NM033
SELECT is(
    nmc.record_template(
        'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'verdwenen', NULL, NULL, NULL,
        NULL
    ),
    'verdwenen', 'a 404 makes the template verdwenen'
);
SELECT is(
    pg_temp.fout($$SELECT * FROM pg_temp.batch_v3('{aanslag}', '{"naam datumbesluit"}')$$),
    'NM033:0', 'its berichttype is unavailable: the intake refuses with the item index'
);
SELECT is(
    (
        SELECT
            m.waarde FROM nmc.metrics() AS m WHERE
            m.naam = 'nmc_berichttype_niet_beschikbaar'
            AND m.labels = '{"dv": 1001, "berichttype": "aanslag"}'
    ),
    1::double precision, 'the metric says so, per DV and berichttype (the alert reads it)'
);
SELECT is(
    (
        SELECT pg_catalog.count(*)::integer FROM nmc.metrics() AS m
        WHERE m.naam = 'nmc_berichttype_niet_beschikbaar' AND m.waarde = 0
    ),
    0, 'a berichttype whose template was never read is not reported'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM nmc.intake_notificatie_v2(
        gen_random_uuid(), 1001, 'aanslag', 'decentraal', pg_temp.b32('v2-2'), 1::smallint,
        pg_temp.b32('p'), 1::smallint, '\x0a', '\x0b', '\x0c', 'kek-1', NULL, NULL,
        '0123456789abcdef0123456789abcdef'
    )),
    1, 'the previous release''s single intake does not know the rule, as before'
);
SELECT is(
    nmc.record_template(
        'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'mislukt', NULL, NULL, NULL,
        'notifynl-http-503'
    ),
    'verdwenen', 'a failed read keeps the state'
);
SELECT results_eq(
    $$SELECT verversen_na = nmc.now() + interval '1 minute', laatste_fout, verdwenen_op IS NOT NULL
      FROM nmc.notifynl_template WHERE template_id = 'a0a0a0a0-0000-4000-8000-000000000001'$$,
    $$VALUES (true, 'notifynl-http-503', true)$$,
    'and is tried again within a minute'
);
SELECT is(
    nmc.record_template(
        'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'gelezen', 4, '{naam}', '{naam}',
        NULL
    ),
    'beschikbaar', 'found again: beschikbaar'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM pg_temp.batch_v3('{aanslag}', '{naam}')),
    1, 'and its berichttype is available again, checked against the new version'
);
SELECT is(
    (
        SELECT
            m.waarde FROM nmc.metrics() AS m WHERE
            m.naam = 'nmc_berichttype_niet_beschikbaar'
            AND m.labels = '{"dv": 1001, "berichttype": "aanslag"}'
    ),
    0::double precision, 'and the metric is 0 again'
);

-- ---------------------------------------------------------------- the job templates
DELETE FROM nmc.taak WHERE soort = 'onderhoud';
SELECT nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1');
SELECT c.taak_id, c.claim_epoch FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c
WHERE c.payload ->> 'werk' = 'templates' \gset
SELECT set_eq(
    format(
        'SELECT notify_service, template_id FROM nmc.claim_template_verversen(%s, %s)',
        :taak_id, :claim_epoch
    ),
    $$VALUES ('standaard', 'a0a0a0a0-0000-4000-8000-000000000002'::uuid),
             ('standaard', 'a0a0a0a0-0000-4000-8000-000000000003'::uuid)$$,
    'the job reads the templates of active berichttypen not read yet (the read one is not due)'
);
SELECT is(
    pg_temp.fout(format(
        'SELECT * FROM nmc.claim_template_verversen(%s, %s)',
        :taak_id, :claim_epoch - 1
    )),
    'NM011:', 'fenced by the claim epoch'
);
SELECT is(
    nmc.finish_template_verversen(:taak_id, :claim_epoch, FALSE),
    nmc.now(), 'with templates still due (never read) the next run is due at once'
);
SELECT is(
    (SELECT t.staat::text FROM nmc.taak AS t WHERE t.id = :taak_id), 'open',
    'the task is open again'
);
SELECT nmc.record_template(
    'standaard', 'a0a0a0a0-0000-4000-8000-000000000002', 'gelezen', 1,
    '{}', '{}', NULL
);
SELECT nmc.record_template(
    'standaard', 'a0a0a0a0-0000-4000-8000-000000000003', 'gelezen', 1,
    '{}', '{}', NULL
);
SELECT c.claim_epoch AS epoch2 FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c
WHERE c.taak_id = :taak_id \gset
SELECT is_empty(
    format('SELECT * FROM nmc.claim_template_verversen(%s, %s)', :taak_id, :epoch2),
    'nothing due: nothing to read'
);
SELECT is(
    nmc.finish_template_verversen(:taak_id, :epoch2, FALSE) - nmc.now(),
    interval '15 minutes', 'then the next run after the job''s 15 minutes'
);

-- ---------------------------------------------------------------- listing and reading on demand
SELECT results_eq(
    $$SELECT berichttype, staat, versie, placeholders FROM nmc.list_templates()
      WHERE dv_id = 1001 ORDER BY berichttype$$,
    $$VALUES ('aanslag', 'beschikbaar', 4, '{naam}'::text[]),
             ('alleen-centraal', 'beschikbaar', 1, '{}'::text[])$$,
    'list_templates: per berichttype its template as last read'
);
SELECT is(
    (SELECT pg_catalog.count(*)::integer FROM nmc.te_lezen_templates(FALSE, 10)), 0,
    'te_lezen_templates: nothing due right after the reads'
);
SELECT set_eq(
    'SELECT template_id FROM nmc.lees_templates(true)',
    $$VALUES ('a0a0a0a0-0000-4000-8000-000000000001'::uuid),
             ('a0a0a0a0-0000-4000-8000-000000000002'::uuid),
             ('a0a0a0a0-0000-4000-8000-000000000003'::uuid)$$,
    'lees_templates(true): every template of an active berichttype, due or not'
);

-- ---------------------------------------------------------------- markeer_template_verouderd
SELECT ok(nmc.markeer_template_verouderd(1001, 'aanslag'), 'a known berichttype is marked');
SELECT results_eq(
    format($$SELECT (SELECT t.verversen_na FROM nmc.notifynl_template AS t
                     WHERE t.template_id = 'a0a0a0a0-0000-4000-8000-000000000001') = nmc.now(),
                    (SELECT k.due FROM nmc.taak AS k WHERE k.id = %s) = nmc.now()$$, :taak_id),
    $$VALUES (true, true)$$,
    'its template is due now, and so is the job''s task'
);
SELECT ok(NOT nmc.markeer_template_verouderd(1001, 'bestaat-niet'), 'an unknown one is not');

-- A worker of the previous release calling run_onderhoud on the job hands it back.
SELECT c.claim_epoch AS epoch3 FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c
WHERE c.taak_id = :taak_id \gset
SELECT is(
    nmc.run_onderhoud(:taak_id, :epoch3),
    '{"werk": "templates", "meer": false}'::jsonb,
    'run_onderhoud (the previous release''s worker) does not run the job'
);
SELECT is(
    (SELECT k.due - nmc.now() FROM nmc.taak AS k WHERE k.id = :taak_id AND k.staat = 'open'),
    interval '30 seconds', 'and hands the task back, due in 30 seconds'
);

-- ---------------------------------------------------------------- the attempt's version
SELECT nmc.record_template(
    'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'gelezen', 4,
    '{}', '{}', NULL
);
SELECT r.notificatie_id AS sent FROM pg_temp.batch_v3('{aanslag,aanslag}', '{"",""}') AS r
ORDER BY r.item LIMIT 1 \gset
DELETE FROM nmc.taak WHERE soort = 'verzenden' AND notificatie_id <> :'sent';
SELECT k.taak_id AS st, k.claim_epoch AS se, k.poging_id AS sp
FROM nmc.claim_verzenden('w1', 10) AS k \gset
SELECT is(
    pg_temp.fout(format(
        $$SELECT * FROM nmc.finish_verzenden_batch_v2(ARRAY[%s::bigint],
        ARRAY[%s], '{verzonden}', '{e0e0e0e0-0000-4000-8000-0000000000f1}', '{NULL}', '{}')$$,
        :st, :se
    )),
    '22023:', 'one template version per item'
);
SELECT results_eq(
    format($$SELECT item, status::text, fout FROM nmc.finish_verzenden_batch_v2(
        ARRAY[%s::bigint], ARRAY[%s], '{verzonden}', '{e0e0e0e0-0000-4000-8000-0000000000f1}',
        '{NULL}', '{4}')$$, :st, :se),
    $$VALUES (1, 'verzonden', NULL::text)$$,
    'finish_verzenden_batch_v2 commits the outcome as finish_verzenden_batch does'
);
SELECT is(
    (SELECT p.template_versie FROM nmc.poging AS p WHERE p.id = :'sp'), 4,
    'and keeps on the attempt the template version NotifyNL rendered'
);
SELECT is(
    nmc.bewijs_pogingen_json((SELECT n FROM nmc.notificatie AS n WHERE n.id = :'sent'), FALSE)
    #> '{0,templateVersie}',
    '4'::jsonb, 'the delivery proof shows it per attempt'
);

-- ---------------------------------------------------------------- the beheer report
SELECT nmc.record_template(
    'standaard', 'a0a0a0a0-0000-4000-8000-000000000001', 'verdwenen',
    NULL, NULL, NULL, NULL
);
UPDATE nmc.dienstverlener SET beheerkanaal = 'https://dv.example/beheer' WHERE dv_id = 1001;
DELETE FROM nmc.taak WHERE soort = 'beheerrapport';
SELECT nmc.ensure_beheerrapporten();
UPDATE nmc.taak SET due = nmc.now() WHERE soort = 'beheerrapport';
SELECT c.taak_id AS bt, c.claim_epoch AS be FROM nmc.claim_taken('beheerrapport', 'w', 10) AS c
WHERE c.dv_id = 1001 \gset
SELECT results_eq(
    format(
        'SELECT niet_beschikbaar, te_melden FROM nmc.begin_beheerrapport_v2(%s, %s, 0.3)',
        :bt, :be
    ),
    $$VALUES ('{aanslag}'::text[], true)$$,
    'the DV''s beheer report names its unavailable berichttypen and is sent for them'
);
SELECT results_eq(
    format($$SELECT b.rapport_id, b.onbevestigd, b.te_melden, b.budget
             FROM nmc.begin_beheerrapport(%s, %s, 0.3) AS b$$, :bt, :be),
    format($$SELECT b.rapport_id, b.onbevestigd, b.onbevestigd > 0 OR b.boven_drempel, b.budget
             FROM nmc.begin_beheerrapport_v2(%s, %s, 0.3) AS b$$, :bt, :be),
    'the previous release''s form gives the same report, te_melden as it judged it'
);

SELECT * FROM finish();
ROLLBACK;
