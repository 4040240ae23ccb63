-- The console's sessions (functions/beheer/console_sessie.sql), as the console's own role:
-- opened after the token was verified, expiring by the NMC clock, ended by a logout; the
-- actions name a session and the audit trail holds the session's operator.
BEGIN;
SELECT plan(26);
\ir fixtures/setup.sql

SELECT pg_temp.nieuwe_notificatie() AS open1 \gset
SELECT pg_temp.nieuwe_notificatie() AS weg \gset
SELECT nmc.cancel_notificatie(1001, :'weg');
INSERT INTO nmc.taak (
    soort, dv_id, notificatie_id, due, staat, pogingen, laatste_fout, aangemaakt_op
)
VALUES ('ongeldig-melden', 1001, :'weg', nmc.now(), 'mislukt', 5, 'database-fout', nmc.now())
RETURNING id AS mislukt \gset
UPDATE nmc.dienstverlener SET webhook_url = 'https://hook.dv.example/h' WHERE dv_id = 1001;
SELECT nmc.ensure_terugkoppelen();

SET LOCAL ROLE nmc_console;
SELECT sha256('beheerder') AS beheerder, sha256('lezer') AS lezer, sha256('kort') AS kort \gset

SELECT ok(
    nmc.console_open_sessie(:'beheerder', 'op-1', true, '1 hour') ~ '^[0-9a-f]{64}$',
    'a session opens with a random CSRF token of its own'
);
SELECT nmc.console_open_sessie(:'lezer', 'lezer-1', false, '1 hour') AS csrf_lezer \gset
SELECT isnt(
    :'csrf_lezer', (SELECT s.csrf FROM nmc.console_sessie(:'beheerder') AS s),
    'every session its own CSRF token'
);
SELECT results_eq(
    $$SELECT s.subject, s.mag_handelen, s.verloopt_op = nmc.now() + interval '1 hour'
      FROM nmc.console_sessie(sha256('beheerder')) AS s$$,
    $$VALUES ('op-1', true, true)$$,
    'the session holds the subject, the role and its end by the NMC clock'
);
SELECT is(
    nmc.console_open_sessie(:'lezer', 'lezer-1', false, '2 hours'), :'csrf_lezer',
    'the same hash again (the proxy''s next request) keeps the CSRF token'
);
SELECT is(
    (SELECT s.verloopt_op FROM nmc.console_sessie(:'lezer') AS s), nmc.now() + interval '2 hours',
    'and prolongs the session'
);
SELECT nmc.console_open_sessie(:'kort', 'op-2', true, '3 days');
SELECT is(
    (SELECT s.verloopt_op FROM nmc.console_sessie(:'kort') AS s), nmc.now() + interval '8 hours',
    'a session lasts at most 8 hours, however long the token lives'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.console_open_sessie(sha256('x'), 'op-3', true, '-1 second')$$),
    '22023:', 'an expired token opens nothing'
);
SELECT is_empty(
    $$SELECT * FROM nmc.console_sessie(sha256('onbekend'))$$, 'an unknown session is none'
);

-- The actions name the session; SQL writes its operator.
SELECT lives_ok(
    format(
        $$SELECT nmc.console_reopen_taak_v2(%s, 'database hersteld', %L)$$,
        :mislukt, :'beheerder'
    ),
    'an operator''s session reopens a mislukt task'
);
SELECT is(
    nmc.console_force_transition_v2(:'open1', 'verlopen', 'verlopen', 'ticket 7', :'beheerder'),
    2, 'and forces a transition'
);
SELECT is(
    nmc.resume_webhook_beheer_v2(1001, 'DV meldt hersteld', :'beheerder'), 'hervat',
    'and resumes a webhook'
);
SELECT results_eq(
    $$SELECT soort, door FROM nmc.console_beheeracties()$$,
    $$VALUES ('hervat-webhook', 'console:op-1'), ('forceer-overgang', 'console:op-1'),
             ('heropen-taak', 'console:op-1')$$,
    'the audit trail names the session''s operator'
);
SELECT is(
    pg_temp.fout(format($$SELECT nmc.console_reopen_taak_v2(%s, 'x', %L)$$, :mislukt, :'lezer')),
    '42501:', 'a reader''s session cannot act'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.resume_webhook_beheer_v2(1001, 'x', %L)$$, sha256('onbekend')
    )),
    '42501:', 'nor can an unknown session'
);
SELECT is(
    pg_temp.fout(format(
        $$SELECT nmc.console_force_transition_v2(%L, 'verlopen', 'verlopen', 'x', %L)$$,
        :'open1', sha256('onbekend')
    )),
    '42501:', 'whatever the action'
);

-- Logout ends a session for good.
SELECT ok(nmc.console_sluit_sessie(:'beheerder'), 'logout ends the session');
SELECT ok(NOT nmc.console_sluit_sessie(:'beheerder'), 'once');
SELECT is_empty(
    $$SELECT * FROM nmc.console_sessie(sha256('beheerder'))$$, 'an ended session is none'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.console_open_sessie(sha256('beheerder'), 'op-1', true, '1 hour')$$),
    '42501:', 'and cannot be opened again'
);
SELECT is(
    pg_temp.fout(format($$SELECT nmc.resume_webhook_beheer_v2(1001, 'x', %L)$$, :'beheerder')),
    '42501:', 'nor act'
);

-- The NMC clock ends a session.
RESET ROLE;
SELECT nmc.advance_clock('2 hours 1 second');
SET LOCAL ROLE nmc_console;
SELECT is_empty($$SELECT * FROM nmc.console_sessie(sha256('lezer'))$$, 'past its end: none');
SELECT isnt_empty($$SELECT * FROM nmc.console_sessie(sha256('kort'))$$, 'a longer one lives');

-- What may be forced, from SQL: nothing from a terminal status.
SELECT is(nmc.console_overgangen('geannuleerd'), '[]'::jsonb, 'nothing to force from geannuleerd');
SELECT ok(
    nmc.console_overgangen('aangenomen') @> '[{"naar": "verlopen", "redenen": ["verlopen"]}]',
    'from aangenomen, verlopen with its reason'
);
SELECT is(
    pg_temp.fout($$SELECT nmc.console_door(sha256('kort'))$$), '42501:',
    'the console role cannot name an operator itself'
);

RESET ROLE;
SELECT is(
    nmc.console_door(sha256('kort')), 'console:op-2',
    'nmc.console_door: the live operator session''s subject, for the audit trail'
);
SELECT * FROM finish();
ROLLBACK;
