-- The operator console's reads and actions, as the console's own role (nmc_console).
BEGIN;
SELECT plan(28);
\ir fixtures/setup.sql

-- Two notifications of DV 1001 open, one cancelled an hour ago, one of DV 1002 verzonden.
SELECT pg_temp.nieuwe_notificatie() AS open1 \gset
SELECT pg_temp.nieuwe_notificatie() AS open2 \gset
SELECT pg_temp.nieuwe_notificatie() AS weg \gset
SELECT pg_temp.nieuwe_notificatie(1002, NULL, 'herinnering') AS verzonden \gset
SELECT nmc.cancel_notificatie(1001, :'weg');
SELECT pg_temp.naar_status(:'verzonden', 'verzonden');
-- Budget used in this window, an hour ago.
SELECT nmc.take_budget('standaard', 'verzenden', 7);
SELECT nmc.advance_clock('1 hour');

-- A mislukt task with its error class.
INSERT INTO nmc.taak (
    soort, dv_id, notificatie_id, due, staat, pogingen, laatste_fout, aangemaakt_op
)
VALUES ('vaststellen', 1002, :'verzonden', nmc.now(), 'mislukt', 5, 'database-fout', nmc.now())
RETURNING id AS mislukt \gset

-- A webhook whose URL carries a path, a query and credentials; paused after failures.
UPDATE nmc.dienstverlener
SET webhook_url = 'https://gebruiker:geheim@hook.dv.example:8443/pad/geheim?token=x'
WHERE dv_id = 1001;
SELECT nmc.ensure_terugkoppelen();
UPDATE nmc.webhookpositie
SET mislukt = 10, gepauzeerd_tot = nmc.now() + INTERVAL '1 hour'
WHERE dv_id = 1001;

GRANT EXECUTE ON FUNCTION pg_temp.fout(TEXT) TO nmc_console;
SET LOCAL ROLE nmc_console;

SELECT results_eq(
    $$SELECT dv_id, status::text, uur IS NULL, aantal FROM nmc.console_statussen(24)$$,
    $$VALUES (1001, 'aangenomen', true, 2::bigint), (1001, 'geannuleerd', false, 1::bigint),
             (1002, 'verzonden', true, 1::bigint)$$,
    'statuses per DV: now in each open status, and terminal ones per hour'
);
SELECT is(
    (SELECT uur FROM nmc.console_statussen(24) WHERE status = 'geannuleerd'),
    date_trunc('hour', nmc.now() - INTERVAL '1 hour'),
    'a terminal status counts in the hour it was reached'
);
SELECT is_empty(
    $$SELECT 1 FROM nmc.console_statussen(1) WHERE uur IS NOT NULL$$,
    'outside the window asked for, a terminal status is not counted per hour'
);
SELECT results_eq(
    $$SELECT soort::text, dv_id, open, due, mislukt FROM nmc.console_achterstand()
      WHERE soort IN ('verzenden', 'vaststellen')$$,
    $$VALUES ('verzenden', 1001, 2::bigint, 2::bigint, 0::bigint),
             ('verzenden', 1002, 1::bigint, 1::bigint, 0::bigint),
             ('vaststellen', 1002, 0::bigint, 0::bigint, 1::bigint)$$,
    'backlog per kind and DV: open, due, mislukt'
);
SELECT results_eq(
    $$SELECT id, soort::text, dv_id, naam, status::text, laatste_fout
      FROM nmc.console_mislukt()$$,
    format($$VALUES (%s::bigint, 'vaststellen', 1002, 'Test DV twee', 'verzonden',
                     'database-fout')$$, :mislukt),
    'the mislukt tasks with their error class and their notification''s status'
);
SELECT is_empty(
    $$SELECT 1 FROM nmc.console_mislukt(10, 'wissen')$$, 'the list filters on kind'
);
SELECT results_eq(
    format(
        $$SELECT staat::text, soort::text, status::text FROM nmc.console_taak(%s)$$,
        :mislukt
    ),
    $$VALUES ('mislukt', 'vaststellen', 'verzonden')$$,
    'one task with its state'
);
SELECT is(
    (SELECT overgangen FROM nmc.console_notificatie(:'verzonden')),
    '[{"naar": "niet-bezorgbaar", "redenen": ["onbereikbaar", "geen-contactgegevens"]},
      {"naar": "technisch-mislukt", "redenen": ["technisch"]},
      {"naar": "bezorgstatus-onbekend", "redenen": []},
      {"naar": "verlopen", "redenen": ["verlopen"]}]'::JSONB,
    'a notification offers exactly the allowed pairs from its status (not verzonden itself, '
    || 'nor bezorgd: nmc.forceerbaar), each with the reasons that fit'
);
SELECT results_eq(
    format(
        $$SELECT sequence, van::text, naar::text FROM nmc.console_notificatie_events(%L)$$,
        :'verzonden'
    ),
    $$VALUES (1, NULL, 'aangenomen'), (2, 'aangenomen', 'in-verzending'),
             (3, 'in-verzending', 'verzonden')$$,
    'the events of one notification in sequence order'
);
SELECT results_eq(
    $$SELECT dv_id, webhook_host, mislukt, max_mislukt, gepauzeerd_tot > nmc.now(),
             taak_staat::text
      FROM nmc.console_webhooks()$$,
    $$VALUES (1001, 'hook.dv.example', 10, 10, true, 'open')$$,
    'a webhook: the host of its URL only, its failures against the limit, paused until'
);
SELECT results_eq(
    'SELECT * FROM nmc.console_webhooks()',
    $$SELECT dv_id, naam, webhook_host, epoch, xid, event_id, geleverd_op, mislukt,
             max_mislukt, gepauzeerd_tot, uitgeschakeld, taak_staat, taak_due
      FROM nmc.console_webhooks_v2()$$,
    'the previous release''s form gives what the new one does, without the gap pause'
);
SELECT is(
    (SELECT gat_op FROM nmc.console_webhooks_v2() WHERE dv_id = 1001), NULL,
    'no gap: the webhook is not paused for one'
);
RESET ROLE;
UPDATE nmc.webhookpositie SET gat_op = nmc.now() WHERE dv_id = 1001;
SET LOCAL ROLE nmc_console;
SELECT is(
    (SELECT gat_op FROM nmc.console_webhooks_v2() WHERE dv_id = 1001), nmc.now(),
    'a webhook paused for a gap says since when'
);
RESET ROLE;
UPDATE nmc.webhookpositie SET gat_op = NULL WHERE dv_id = 1001;
SET LOCAL ROLE nmc_console;
SELECT results_eq(
    $$SELECT dv_id, aantal, bevestigd_op IS NULL FROM nmc.console_onbevestigd()
      WHERE dv_id = 1001$$,
    $$VALUES (1001, 0::bigint, true)$$,
    'unacknowledged: nothing past the ack term yet'
);
SELECT results_eq(
    $$SELECT notify_service, soort, gebruikt, plafond FROM nmc.console_budget(120)$$,
    $$VALUES ('standaard', 'verzenden', 7, 2700)$$,
    'budget per window with the ceiling of its kind'
);
SELECT is_empty(
    $$SELECT 1 FROM nmc.console_budget(30)$$, 'older windows are left out'
);
RESET ROLE;
SELECT nmc.advance_clock('8 days');
SET LOCAL ROLE nmc_console;
SELECT results_eq(
    $$SELECT dv_id, aantal, afgekapt FROM nmc.console_onbevestigd() WHERE dv_id = 1001$$,
    $$VALUES (1001, 1::bigint, false)$$,
    'unacknowledged per DV: the cancelled one, past its ack term'
);
SELECT results_eq(
    $$SELECT partitie IS NOT NULL, partities, default_rijen, vulgraad BETWEEN 0 AND 100
      FROM nmc.console_onderhoud()$$,
    $$VALUES (true, 1, 0::bigint, true)$$,
    'maintenance: the current range and how full, the live ranges, the default partition''s rows'
);
RESET ROLE;
INSERT INTO nmc.taak (soort, due, staat, laatste_fout, pogingen, payload, aangemaakt_op)
VALUES ('onderhoud', nmc.now(), 'mislukt', 'partitie-fout', 5, '{"werk": "partities"}', nmc.now());
SET LOCAL ROLE nmc_console;
SELECT results_eq(
    $$SELECT soort::text, werk, staat::text, laatste_fout FROM nmc.console_onderhoud_taken()
      WHERE soort = 'onderhoud'$$,
    $$VALUES ('onderhoud', 'partities', 'mislukt', 'partitie-fout')$$,
    'maintenance tasks that are not done, with their error class'
);

-- The actions, as the console's role.
SELECT lives_ok(
    format(
        $$SELECT nmc.console_reopen_taak(%s, 'database hersteld', 'console:op-1')$$,
        :mislukt
    ),
    'the console reopens a mislukt task'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.console_reopen_taak(%s, 'nog eens', 'console:op-1')$$,
        :mislukt
    )),
    'NM020:', 'a task that is not mislukt is refused (NM020)'
);
SELECT is(
    nmc.console_force_transition(:'open1', 'verlopen', 'verlopen', 'ticket 7', 'console:op-1'),
    2, 'the console forces a transition through the single writer'
);
SELECT is(
    pg_temp.fout(format($$SELECT nmc.console_force_transition(%L, 'verzonden', NULL, 'x',
        'console:op-1')$$, :'open2')),
    'NM001:aangenomen', 'only along allowed pairs (NM001)'
);
SELECT is(
    nmc.resume_webhook_beheer(1001, 'DV meldt hersteld', 'console:op-1'), 'hervat',
    'the console resumes a paused webhook'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.resume_webhook_beheer(1002, 'x', 'console:op-1')$$),
    'NM005:', 'a DV without a webhook is refused (NM005)'
);
SELECT results_eq(
    $$SELECT soort, taak_id IS NOT NULL, notificatie_id IS NOT NULL, dv_id, toelichting, door
      FROM nmc.console_beheeracties()$$,
    $$VALUES ('hervat-webhook', false, false, 1001, 'DV meldt hersteld', 'console:op-1'),
             ('forceer-overgang', false, true, NULL, 'ticket 7', 'console:op-1'),
             ('heropen-taak', true, true, NULL, 'database hersteld', 'console:op-1')$$,
    'every action is in the audit trail, newest first, with who and why'
);
SELECT is(
    pg_temp.fout('SELECT * FROM nmc.notificatie'), '42501:',
    'the console role cannot read a table'
);
SELECT is(
    pg_temp.fout(format($$SELECT nmc.reopen_taak(%s, 'x', 'y')$$, :mislukt)), '42501:',
    'the console role cannot call the beheer functions behind the console''s own'
);

RESET ROLE;
SELECT * FROM finish();
ROLLBACK;
