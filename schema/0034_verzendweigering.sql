-- NotifyNL's send-time refusals, by whose fault they are (notifynl-contract.md, Errors):
-- only `email_address Not a valid email address` is the recipient's. A request NotifyNL
-- cannot render (the template changed after the intake) ends its notification
-- technisch-mislukt and is counted per DV, berichttype and day; a refusal of our
-- configuration (template, key type, service, request, credentials, any unknown 400) defers
-- the send and is recorded per berichttype until a send of that berichttype goes out again.

CREATE TABLE nmc.verzendweigering (
    dv_id integer NOT NULL,
    berichttype text NOT NULL,
    soort text NOT NULL CHECK (soort IN (
        'template',   -- Template not found / has been deleted / is not suitable
        'sleutel',    -- the key type: team-only key, service in trial mode
        'dienst',     -- Service is not allowed to send emails
        'verzoek',    -- a ValidationError on a field other than email_address
        'toegang',    -- 401/403 AuthError: our credentials or our clock
        'onbekend'    -- any other 400: ours until proven otherwise
    )),
    sinds timestamptz NOT NULL,
    laatst timestamptz NOT NULL,
    aantal bigint NOT NULL CHECK (aantal >= 1),
    PRIMARY KEY (dv_id, berichttype),
    FOREIGN KEY (dv_id, berichttype) REFERENCES nmc.berichttype (dv_id, code)
    ON DELETE CASCADE,
    CHECK (laatst >= sinds)
);
COMMENT ON TABLE nmc.verzendweigering IS
'The berichttypen whose sends NotifyNL refuses for a reason of our own configuration '
'(nmc.defer_verzenden): the kind of the latest refusal, since when the berichttype is '
'refused, the latest refusal and how many sends were refused (each deferred, none counted '
'as an attempt). A row goes at the next send of that berichttype NotifyNL accepts '
'(nmc.finish_verzenden_batch). Read by the metrics (an alert), the console and the admin '
'CLI. No personal data. Retention: while the refusal lasts.';
COMMENT ON COLUMN nmc.verzendweigering.soort IS
'The kind of the latest refusal (template, sleutel, dienst, verzoek, toegang, onbekend), '
'classified by the NotifyNL adapter from the error type and, where the type cannot tell, '
'the start of the message.';
COMMENT ON COLUMN nmc.verzendweigering.sinds IS
'The first refusal since the berichttype last sent (NMC clock).';

CREATE TABLE nmc.onverwerkbaar (
    dv_id integer NOT NULL,
    berichttype text NOT NULL,
    dag date NOT NULL,
    aantal bigint NOT NULL CHECK (aantal >= 1),
    PRIMARY KEY (dv_id, berichttype, dag)
);
COMMENT ON TABLE nmc.onverwerkbaar IS
'Per DV, berichttype and day (Europe/Amsterdam, NMC clock, as the beheer report): how '
'many notifications ended technisch-mislukt because NotifyNL could not render the '
'request (Missing personalisation, message too long: the template changed after the '
'intake). Written by nmc.finish_verzenden_batch; read by the metrics and the DV''s beheer '
'report. No personal data. Retention: the delivery-proof retention '
'(instellingen.bewijs_bewaartermijn).';
