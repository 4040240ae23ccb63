"""The status vocabulary of SPEC §4 as the shell sees it.

The database is the authority: `nmc.allowed_transitions()` holds the table the guard
trigger enforces. This copy exists for readers of the Python code (the API documents the
statuses, the admin CLI offers forced transitions along allowed pairs); a test checks it
against the SQL function, so the two cannot drift.
"""

NOTIFICATIE_STATUSES = (
    "aangenomen",
    "in-verzending",
    "verzonden",
    "bezorgd",
    "definitief-bezorgd",
    "niet-bezorgbaar",
    "technisch-mislukt",
    "bezorgstatus-onbekend",
    "verlopen",
    "geannuleerd",
)

TERMINAL_STATUSES = frozenset(
    {
        "definitief-bezorgd",
        "niet-bezorgbaar",
        "technisch-mislukt",
        "bezorgstatus-onbekend",
        "verlopen",
        "geannuleerd",
    }
)

REDENEN = ("onbereikbaar", "geen-contactgegevens", "verlopen", "geannuleerd", "technisch")

# (van, naar); van None is the intake.
ALLOWED_TRANSITIONS = frozenset(
    {
        (None, "aangenomen"),
        ("aangenomen", "in-verzending"),
        ("aangenomen", "geannuleerd"),
        ("aangenomen", "verlopen"),
        ("in-verzending", "verzonden"),
        ("in-verzending", "niet-bezorgbaar"),
        ("in-verzending", "technisch-mislukt"),
        ("in-verzending", "verlopen"),
        ("verzonden", "verzonden"),
        ("verzonden", "bezorgd"),
        ("verzonden", "niet-bezorgbaar"),
        ("verzonden", "technisch-mislukt"),
        ("verzonden", "verlopen"),
        ("verzonden", "bezorgstatus-onbekend"),
        ("bezorgd", "definitief-bezorgd"),
        ("bezorgd", "verzonden"),
        ("bezorgd", "niet-bezorgbaar"),
        ("bezorgd", "verlopen"),
        ("bezorgstatus-onbekend", "bezorgd"),
        ("bezorgstatus-onbekend", "niet-bezorgbaar"),
    }
)
