-- Value types of the lifecycle: exactly the values of SPEC §4, nothing more.

CREATE TYPE nmc.notificatie_status AS ENUM (
    'aangenomen',            -- accepted and stored; first send task planned
    'in-verzending',         -- attempt 1 claimed, NotifyNL call under way
    'verzonden',             -- NotifyNL accepted an attempt; waiting for its outcome
    'bezorgd',               -- delivered receipt; not final for the settlement term
    'definitief-bezorgd',    -- terminal: no failure within the settlement term
    'niet-bezorgbaar',       -- terminal: address unusable or no contact details
    'technisch-mislukt',     -- terminal: technical failure on the last attempt
    'bezorgstatus-onbekend', -- terminal, but a late receipt may still correct it
    'verlopen',              -- terminal: geldig_tot passed before an outcome
    'geannuleerd'            -- terminal: cancelled by the DV before the claim
);
COMMENT ON TYPE nmc.notificatie_status IS
'Status of a notification (SPEC §4). Only nmc.transition_notificatie writes it.';

CREATE TYPE nmc.reden AS ENUM (
    'onbereikbaar',          -- permanent failure, or temporary failure on attempt 2
    'geen-contactgegevens',  -- Profielservice knows no party or no e-mail address
    'verlopen',              -- geldig_tot passed
    'geannuleerd',           -- cancelled by the DV
    'technisch'              -- technical failure, exhausted send task
);
COMMENT ON TYPE nmc.reden IS
'Coarse reason shown to the DV on a terminal failure (SPEC §4). Never personal data.';

CREATE TYPE nmc.poging_status AS ENUM (
    'gepland',            -- created by the send claim, not yet accepted by NotifyNL
    'verzonden',          -- NotifyNL accepted it (running)
    'bezorgd',            -- delivered receipt
    'tijdelijk-mislukt',  -- temporary-failure
    'permanent-mislukt',  -- permanent-failure
    'technisch-mislukt',  -- technical-failure
    'onbekend'            -- reconciliation found nothing (running: a late receipt counts)
);
COMMENT ON TYPE nmc.poging_status IS
'Status of one send attempt. An attempt is running while verzonden or onbekend.';

CREATE TYPE nmc.regie AS ENUM (
    'centraal',   -- the DV sends an identifying number; the NMC asks the Profielservice
    'decentraal'  -- the DV sends the e-mail address itself
);
COMMENT ON TYPE nmc.regie IS 'Who supplies the e-mail address (SPEC §1).';

CREATE TYPE nmc.taak_soort AS ENUM (
    'verzenden',       -- send or resend, including the Profielservice lookup
    'receipt',         -- process one stored NotifyNL delivery receipt
    'reconciliëren',   -- ask NotifyNL for the status of an attempt
    'vaststellen',     -- settle delivery after the settlement term
    'terugkoppelen',   -- webhook delivery per DV
    'ongeldig-melden', -- report an address invalid at the Profielservice
    'wissen',          -- erase the wrapped data key
    'controle',        -- watchdog
    'onderhoud'        -- partitions, KEK rewrap, retention
);
COMMENT ON TYPE nmc.taak_soort IS 'Kinds of side effects a worker performs (SPEC §5).';

CREATE TYPE nmc.taak_staat AS ENUM (
    'open',     -- waiting for its due time and a claim
    'claimed',  -- leased by a worker until lease_tot
    'done',     -- finished (also: closed without work)
    'mislukt'   -- exhausted; waits for an operator
);
COMMENT ON TYPE nmc.taak_staat IS 'State of a task row (SPEC §3).';
