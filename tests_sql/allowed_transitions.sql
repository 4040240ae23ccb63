-- The table of allowed pairs is exactly SPEC §4's, and the helpers agree with it.
BEGIN;
SELECT plan(6);

SELECT set_eq(
    'SELECT van::text, naar::text FROM nmc.allowed_transitions()',
    $$VALUES
        (NULL, 'aangenomen'),
        ('aangenomen', 'in-verzending'), ('aangenomen', 'geannuleerd'),
        ('aangenomen', 'verlopen'),
        ('in-verzending', 'verzonden'), ('in-verzending', 'niet-bezorgbaar'),
        ('in-verzending', 'technisch-mislukt'), ('in-verzending', 'verlopen'),
        ('verzonden', 'verzonden'), ('verzonden', 'bezorgd'),
        ('verzonden', 'niet-bezorgbaar'), ('verzonden', 'technisch-mislukt'),
        ('verzonden', 'verlopen'), ('verzonden', 'bezorgstatus-onbekend'),
        ('bezorgd', 'definitief-bezorgd'), ('bezorgd', 'verzonden'),
        ('bezorgd', 'niet-bezorgbaar'), ('bezorgd', 'verlopen'),
        ('bezorgstatus-onbekend', 'bezorgd'), ('bezorgstatus-onbekend', 'niet-bezorgbaar')
    $$,
    'the allowed pairs are exactly those of SPEC §4'
);

SELECT is(
    (SELECT count(*)::integer FROM nmc.allowed_transitions()),
    20,
    'no pair is listed twice'
);

SELECT set_eq(
    $$SELECT v::text, n::text
      FROM unnest(enum_range(NULL::nmc.notificatie_status) || NULL::nmc.notificatie_status) AS v,
           unnest(enum_range(NULL::nmc.notificatie_status)) AS n
      WHERE nmc.transition_allowed(v, n)$$,
    'SELECT van::text, naar::text FROM nmc.allowed_transitions()',
    'transition_allowed() answers true for exactly the listed pairs'
);

SELECT set_eq(
    $$SELECT s::text FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS s
      WHERE nmc.is_terminal(s)$$,
    $$VALUES ('definitief-bezorgd'), ('niet-bezorgbaar'), ('technisch-mislukt'),
             ('bezorgstatus-onbekend'), ('verlopen'), ('geannuleerd')$$,
    'is_terminal() names the six terminal statuses'
);

SELECT set_eq(
    $$SELECT van::text, naar::text FROM nmc.allowed_transitions()
      WHERE nmc.is_terminal(van)$$,
    $$VALUES ('bezorgstatus-onbekend', 'bezorgd'),
             ('bezorgstatus-onbekend', 'niet-bezorgbaar')$$,
    'terminal statuses absorb, except bezorgstatus-onbekend'
);

SELECT set_eq(
    $$SELECT s::text, r::text
      FROM unnest(enum_range(NULL::nmc.notificatie_status)) AS s,
           unnest(enum_range(NULL::nmc.reden) || NULL::nmc.reden) AS r
      WHERE nmc.reden_fits(s, r)$$,
    $$VALUES ('aangenomen', NULL), ('in-verzending', NULL), ('verzonden', NULL),
             ('bezorgd', NULL), ('definitief-bezorgd', NULL),
             ('bezorgstatus-onbekend', NULL),
             ('niet-bezorgbaar', 'onbereikbaar'), ('niet-bezorgbaar', 'geen-contactgegevens'),
             ('technisch-mislukt', 'technisch'), ('verlopen', 'verlopen'),
             ('geannuleerd', 'geannuleerd')$$,
    'reden_fits() allows a coarse reason on exactly the terminal failures'
);

SELECT * FROM finish();
ROLLBACK;
