-- The console's sessions: held in the database, so every console replica
-- knows every session, a logout ends one for good, and the audit trail's operator is the
-- session's, not a name the console process passes along. The cookie carries only a random
-- session id; the table holds its SHA-256.

CREATE TABLE nmc.console_sessie (
    sessie_hash bytea PRIMARY KEY CHECK (pg_catalog.octet_length(sessie_hash) = 32),
    -- The IAM's subject id of the operator (never a name or an e-mail address).
    subject text NOT NULL CHECK (pg_catalog.length(subject) BETWEEN 1 AND 200),
    mag_handelen boolean NOT NULL,
    -- The CSRF token of the session's forms: random, so no key has to be shared.
    csrf text NOT NULL,
    aangemaakt_op timestamptz NOT NULL,
    verloopt_op timestamptz NOT NULL,
    ingetrokken_op timestamptz
);
COMMENT ON TABLE nmc.console_sessie IS
'Sessions of the operator console: the SHA-256 of the random id in the operator''s cookie '
'(or of the bearer token the platform''s proxy sends), the IAM subject, whether the role '
'may act, the CSRF token of its forms, and when it ends (the token''s expiry, at most the '
'console''s session length, by nmc.now()) or was ended by a logout. Retention: a day after '
'a session ends (removed by nmc.console_open_sessie).';
CREATE INDEX console_sessie_verloopt_op ON nmc.console_sessie (verloopt_op);
