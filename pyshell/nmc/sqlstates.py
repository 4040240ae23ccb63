"""The SQLSTATEs the shell acts on, by name: the NMC's own (class NM, docs/errors.md) and the
PostgreSQL ones it treats specially.

The only module that spells a code: the API's problem table (nmc.api.problems), the worker
and the console name them from here, so the worker needs nothing of the API to read one.
"""

# The NMC's SQL functions (docs/errors.md).
TRANSITION_NOT_ALLOWED = "NM001"
EVENT_MISSING = "NM002"
VERSION_NOT_NEXT = "NM003"
EVENT_LOG_APPEND_ONLY = "NM004"
NOT_FOUND = "NM005"
CANCEL_REFUSED = "NM006"
DVREF_CONFLICT = "NM007"
BERICHTTYPE_NOT_ALLOWED = "NM008"
QUOTA_EXCEEDED = "NM009"
UNKNOWN_DIENSTVERLENER = "NM010"
STALE_CLAIM = "NM011"
CLOCK_BACKWARDS = "NM012"
REASON_MISMATCH = "NM013"
GELDIG_TOT_OUT_OF_RANGE = "NM014"
CURSOR_EXPIRED = "NM018"
FEED_RATE_EXCEEDED = "NM019"
REOPEN_NOT_FAILED = "NM020"
FORCE_NOT_ALLOWED = "NM021"
# Not a refusal: a standby too far behind (the API's lag bound, or a snapshot page's first
# watermark) for this read; DETAIL = its replay lag in seconds. The API reads on the primary.
REPLICA_BEHIND = "NMR01"
# The intake against the berichttype's NotifyNL template (DETAIL: the item index; HINT of
# NM032: the missing placeholder names as a JSON array).
MISSING_PERSONALISATION = "NM032"
BERICHTTYPE_UNAVAILABLE = "NM033"
# Not a refusal: the intake asks for the unkeyed payload hashes, to judge a replay of a row
# stored before the payload pepper; the call is made again with them.
SHA256_NEEDED = "NMP01"

# PostgreSQL's own.
CHECK_VIOLATION = "23514"
INSUFFICIENT_PRIVILEGE = "42501"  # also: a console action without a live operator session
DEADLOCK_DETECTED = "40P01"
SERIALIZATION_FAILURE = "40001"
ADMIN_SHUTDOWN = "57P01"
CRASH_SHUTDOWN = "57P02"
CANNOT_CONNECT_NOW = "57P03"
# Classes (the first two characters): a broken connection, an operator's intervention
# (shutdown, cancel, statement timeout).
CONNECTION_EXCEPTION_CLASS = "08"
OPERATOR_INTERVENTION_CLASS = "57"
