-- The NMC clock: real time plus a forward-only test offset.
BEGIN;
SELECT plan(6);

SELECT is(nmc.now(), now(), 'with no offset the NMC clock is the transaction time');
SELECT is(nmc.advance_clock('7 days'), now() + interval '7 days', 'advance returns the new time');
SELECT is(nmc.now(), now() + interval '7 days', 'every rule now reads the moved clock');
SELECT nmc.advance_clock('1 hour');
SELECT is(nmc.now(), now() + interval '7 days 1 hour', 'moves add up');
SELECT throws_ok(
    $$SELECT nmc.advance_clock('-1 second')$$,
    'NM012', 'the NMC clock only moves forward',
    'the clock never moves back (NM012)'
);
SELECT throws_ok(
    $$SELECT nmc.advance_clock(NULL)$$,
    'NM012', 'the NMC clock only moves forward',
    'a NULL move is refused (NM012)'
);

SELECT * FROM finish();
ROLLBACK;
