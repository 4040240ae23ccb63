-- Operator actions (beheer): an audit trail of forced transitions and reopened tasks.

CREATE TABLE nmc.beheeractie (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    soort text NOT NULL CHECK (soort IN ('forceer-overgang', 'heropen-taak')),
    notificatie_id uuid,
    taak_id bigint,
    van nmc.notificatie_status,
    naar nmc.notificatie_status,
    toelichting text NOT NULL CHECK (pg_catalog.length(toelichting) BETWEEN 1 AND 500),
    door text NOT NULL CHECK (pg_catalog.length(door) BETWEEN 1 AND 100),
    tijdstip timestamptz NOT NULL
);
COMMENT ON TABLE nmc.beheeractie IS
'Audit trail of what operators did by hand: forced transitions (which also wrote their '
'event through the single writer) and reopened tasks, with who and why. The explanation '
'must not hold personal data (the CLI says so). Retention: the delivery-proof retention '
'(1 year), like the events it explains.';
CREATE INDEX beheeractie_notificatie ON nmc.beheeractie (notificatie_id)
WHERE notificatie_id IS NOT NULL;
