-- What can be claimed (nmc.taak_claimbaar), as the worker's lookout (nmc.soorten_met_werk)
-- sees it and as the claims (nmc.lock_due_verzenden, nmc.lock_due_taken) take it: the two
-- never disagree about a deferred task, a lease that ran out, or the moment either comes
-- due. The rule itself is one inlinable function that keeps the claims' index use.
BEGIN;
SELECT plan(32);
\ir fixtures/setup.sql

DELETE FROM nmc.taak;
-- 12:00 UTC, so the day (and a send's daily budget) does not turn during the test.
UPDATE nmc.klok SET verschuiving = (
    date_trunc('day', now() AT TIME ZONE 'UTC') + INTERVAL '2 days 12 hours'
) AT TIME ZONE 'UTC' - now();

CREATE FUNCTION pg_temp.werk() RETURNS TEXT[]
LANGUAGE sql AS $$ SELECT nmc.soorten_met_werk('{verzenden,ongeldig-melden}') $$;
CREATE FUNCTION pg_temp.te_verzenden() RETURNS INTEGER
LANGUAGE sql AS $$ SELECT count(*)::integer FROM nmc.lock_due_verzenden(20) $$;
CREATE FUNCTION pg_temp.te_melden() RETURNS INTEGER
LANGUAGE sql AS $$ SELECT count(*)::integer FROM nmc.lock_due_taken('ongeldig-melden', 20) $$;
-- Moves the clock to exactly p_tot.
CREATE FUNCTION pg_temp.klok_naar(p_tot TIMESTAMPTZ) RETURNS VOID
LANGUAGE sql AS $$ SELECT nmc.advance_clock(p_tot - nmc.now()) $$;

-- A send, claimed: under a live lease it is nobody's work.
SELECT pg_temp.nieuwe_notificatie(1001) AS notificatie \gset
SELECT taak_id, claim_epoch FROM nmc.claim_verzenden('worker-a', 20) \gset
SELECT is(pg_temp.werk(), '{}'::TEXT[], 'a send under a live lease: the lookout sees no work');
SELECT is(pg_temp.te_verzenden(), 0, 'and the claim takes nothing');

-- Deferred after an outage (the Profielservice did not answer): it waits for its backoff.
SELECT is(
    nmc.defer_taak(:taak_id, :claim_epoch, 'profielservice-timeout'), 'uitgesteld',
    'an outage defers the send'
);
SELECT ok(
    (SELECT t.staat = 'open' AND t.due > nmc.now() FROM nmc.taak AS t WHERE t.id = :taak_id),
    'the deferred send is open, due later'
);
SELECT is(pg_temp.werk(), '{}'::TEXT[], 'deferred, not due yet: the lookout sees no work');
SELECT is(pg_temp.te_verzenden(), 0, 'and the claim takes nothing');

-- One microsecond before its due: still nothing; at its due exactly: both see it.
SELECT pg_temp.klok_naar(
    (SELECT t.due FROM nmc.taak AS t WHERE t.id = :taak_id)
    - INTERVAL '1 microsecond'
);
SELECT is(pg_temp.werk(), '{}'::TEXT[], 'just before its due: no work');
SELECT is(pg_temp.te_verzenden(), 0, 'just before its due: the claim takes nothing');
SELECT nmc.advance_clock('1 microsecond');
SELECT is(pg_temp.werk(), '{verzenden}'::TEXT[], 'at its due: the lookout sees work');
SELECT is(pg_temp.te_verzenden(), 1, 'at its due: the claim takes it');
SELECT results_eq(
    $$SELECT taak_id, herclaim FROM nmc.claim_verzenden('worker-b', 20)$$,
    format('VALUES (%s::bigint, true)', :taak_id),
    'the re-claim of the deferred send: the same task, looked up by reference first'
);

-- The lease runs out (the worker was killed): at lease_tot still its own, just after it
-- work for the lookout and the claim alike.
SELECT pg_temp.klok_naar((SELECT t.lease_tot FROM nmc.taak AS t WHERE t.id = :taak_id));
SELECT is(pg_temp.werk(), '{}'::TEXT[], 'at the end of its lease: no work yet');
SELECT is(pg_temp.te_verzenden(), 0, 'at the end of its lease: the claim takes nothing');
SELECT nmc.advance_clock('1 microsecond');
SELECT is(pg_temp.werk(), '{verzenden}'::TEXT[], 'a lease that ran out: the lookout sees work');
SELECT is(pg_temp.te_verzenden(), 1, 'a lease that ran out: the claim takes it');
SELECT taak_id AS t2, claim_epoch AS e2 FROM nmc.claim_verzenden('worker-c', 20) \gset
SELECT is(:t2::BIGINT, :taak_id::BIGINT, 'and the re-claim is of that task');

-- Deferred again and again (the chaos of the soak): the backoff stops growing at
-- uitstel_max, so the send comes due again within 10 minutes of NMC time.
UPDATE nmc.taak SET uitstellen = 40 WHERE id = :taak_id;
SELECT nmc.defer_taak(:t2, :e2, 'notifynl-timeout');
SELECT is(
    (SELECT t.due - nmc.now() FROM nmc.taak AS t WHERE t.id = :taak_id),
    (SELECT i.uitstel_max FROM nmc.instellingen AS i),
    'the 41st deferral waits uitstel_max, no longer'
);
SELECT nmc.advance_clock((SELECT i.uitstel_max FROM nmc.instellingen AS i));
SELECT is(pg_temp.werk(), '{verzenden}'::TEXT[], 'and after uitstel_max it is work again');
SELECT is(pg_temp.te_verzenden(), 1, 'which the claim takes');

-- A kind without a pace or pairs (nmc.lock_due_taken): the same agreement.
DELETE FROM nmc.taak;
INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op)
VALUES ('ongeldig-melden', 1001, nmc.now(), nmc.now());
SELECT taak_id AS m, claim_epoch AS me FROM nmc.claim_taken('ongeldig-melden', 'worker-a', 20)
\gset
SELECT nmc.defer_taak(:m, :me, 'webhook-503');
SELECT is(pg_temp.werk(), '{}'::TEXT[], 'a deferred task of another kind: no work');
SELECT is(pg_temp.te_melden(), 0, 'and its claim takes nothing');
SELECT pg_temp.klok_naar((SELECT t.due FROM nmc.taak AS t WHERE t.id = :m));
SELECT is(pg_temp.werk(), '{ongeldig-melden}'::TEXT[], 'at its due: work');
SELECT is(pg_temp.te_melden(), 1, 'at its due: its claim takes it');

-- The rule, once: open and due, or claimed with its lease run out; nothing else.
SELECT ok(nmc.taak_claimbaar('open', nmc.now(), NULL, nmc.now()), 'open, due now: claimable');
SELECT ok(
    NOT nmc.taak_claimbaar('open', nmc.now() + INTERVAL '1 second', NULL, nmc.now()),
    'open, due later: not claimable'
);
SELECT ok(
    NOT nmc.taak_claimbaar('claimed', nmc.now() - INTERVAL '1 hour', nmc.now(), nmc.now()),
    'claimed, its lease ends now: not claimable (whatever its due)'
);
SELECT ok(
    nmc.taak_claimbaar('claimed', nmc.now(), nmc.now() - INTERVAL '1 second', nmc.now()),
    'claimed, its lease ran out: claimable'
);
SELECT ok(
    NOT nmc.taak_claimbaar('done', nmc.now() - INTERVAL '1 hour', NULL, nmc.now())
    AND NOT nmc.taak_claimbaar('mislukt', nmc.now() - INTERVAL '1 hour', NULL, nmc.now()),
    'done or mislukt: never claimable'
);

-- Inlinable (LANGUAGE sql, no SET, not SECURITY DEFINER, not STRICT), and inlined with the
-- state as a constant it is the comparison written out: the same plan, the same index.
SELECT ok(
    (
        SELECT
            p.prolang = (SELECT l.oid FROM pg_catalog.pg_language AS l WHERE l.lanname = 'sql')
            AND p.proconfig IS NULL
            AND NOT p.prosecdef
            AND NOT p.proisstrict AND p.provolatile = 'i'
        FROM pg_catalog.pg_proc AS p
        WHERE
            p.oid = 'nmc.taak_claimbaar(nmc.taak_staat, timestamptz, timestamptz, timestamptz)'
            ::REGPROCEDURE
    ),
    'nmc.taak_claimbaar is an inlinable SQL function'
);
CREATE FUNCTION pg_temp.plan(p_sql TEXT) RETURNS TEXT
LANGUAGE plpgsql AS $$
DECLARE
    v_regel text;
    v_plan text := '';
BEGIN
    FOR v_regel IN EXECUTE 'EXPLAIN (COSTS OFF) ' || p_sql LOOP
        v_plan := v_plan || v_regel || E'\n';
    END LOOP;
    RETURN v_plan;
END
$$;
SET LOCAL enable_seqscan = off;
SELECT is(
    pg_temp.plan($$SELECT 1 FROM nmc.taak AS t WHERE t.soort = 'vaststellen'
        AND t.staat = 'open' AND nmc.taak_claimbaar('open', t.due, t.lease_tot, now())$$),
    pg_temp.plan($$SELECT 1 FROM nmc.taak AS t WHERE t.soort = 'vaststellen'
        AND t.staat = 'open' AND t.due <= now()$$),
    'open: the plan of due <= now'
);
SELECT matches(
    pg_temp.plan($$SELECT 1 FROM nmc.taak AS t WHERE t.soort = 'vaststellen'
        AND t.staat = 'open' AND nmc.taak_claimbaar('open', t.due, t.lease_tot, now())$$),
    'Index Only Scan using taak_due on taak t\s+'
    || 'Index Cond: \(\(soort = ''vaststellen''::nmc.taak_soort\) AND \(due <= now\(\)\)\)',
    'open: one seek in taak_due, the comparison its index condition'
);
SELECT is(
    pg_temp.plan($$SELECT 1 FROM nmc.taak AS t WHERE t.soort = 'verzenden'
        AND t.staat = 'claimed' AND nmc.taak_claimbaar('claimed', t.due, t.lease_tot, now())$$),
    pg_temp.plan($$SELECT 1 FROM nmc.taak AS t WHERE t.soort = 'verzenden'
        AND t.staat = 'claimed' AND t.lease_tot < now()$$),
    'claimed: the plan of lease_tot < now (taak_lease)'
);
RESET enable_seqscan;

SELECT * FROM finish();
ROLLBACK;
