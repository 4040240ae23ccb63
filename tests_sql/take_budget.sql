-- The send budget: never more than the budget in a window; unused tokens expire.
BEGIN;
SELECT plan(10);

INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel)
VALUES ('klein', 100, 0.2);
UPDATE nmc.klok SET verschuiving = date_trunc('minute', now()) + interval '1 day' - now();

SELECT
    is(nmc.take_budget('klein', 'verzenden', 30), 30, 'a take within the budget is granted whole');
SELECT
    is(
        nmc.take_budget('klein', 'verzenden', 60),
        50,
        'the send part is the budget minus the reconciliation share (80)'
    );
SELECT is(nmc.take_budget('klein', 'verzenden', 1), 0, 'a used-up window grants nothing');
SELECT
    is(nmc.take_budget('klein', 'navraag', 50), 20, 'reconciliation has its own fixed share (20)');
SELECT is(nmc.take_budget('klein', 'navraag', 5), 0, 'which it cannot exceed either');
SELECT is(
    (SELECT sum(gebruikt)::integer FROM nmc.verzendbudget WHERE notify_service = 'klein'),
    100,
    'the window holds exactly the budget'
);
SELECT is(nmc.take_budget('klein', 'verzenden', 0), 0, 'asking for nothing takes nothing');

SELECT nmc.advance_clock('59 seconds');
SELECT is(nmc.take_budget('klein', 'verzenden', 1), 0, 'the window lasts to its minute''s end');
SELECT nmc.advance_clock('1 second');
SELECT is(
    nmc.take_budget('klein', 'verzenden', 500), 80,
    'the next window starts full: unused tokens did not carry over, none are added'
);
SELECT is(
    nmc.take_budget('onbekend', 'verzenden', 2000), 1260,
    'a service without settings gets the default 1400 a minute, minus 10% for reconciliation'
);

SELECT * FROM finish();
ROLLBACK;
