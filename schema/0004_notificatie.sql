-- Notifications and their send attempts: the source of truth of the lifecycle.

CREATE TABLE nmc.notificatie (
    id uuid PRIMARY KEY,
    -- (dv_id, berichttype) references berichttype, whose dv_id references the DV: one
    -- foreign-key check per row instead of two on the intake path.
    dv_id integer NOT NULL,
    berichttype text NOT NULL,
    regie nmc.regie NOT NULL,
    status nmc.notificatie_status NOT NULL,
    reden nmc.reden,
    versie integer NOT NULL CHECK (versie >= 1),
    geldig_tot timestamptz NOT NULL,
    dvref_hmac bytea NOT NULL CHECK (pg_catalog.octet_length(dvref_hmac) = 32),
    pepper_versie smallint NOT NULL CHECK (pepper_versie >= 1),
    payload_hash bytea NOT NULL CHECK (pg_catalog.octet_length(payload_hash) = 32),
    batch_id uuid,
    dienst text CHECK (pg_catalog.length(dienst) BETWEEN 1 AND 100),
    trace_id text NOT NULL CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    ontvanger_versleuteld bytea NOT NULL,
    gegevens_versleuteld bytea,
    sleutel_gewrapt bytea,
    kek_id text CHECK (pg_catalog.length(kek_id) BETWEEN 1 AND 100),
    aangenomen_op timestamptz NOT NULL,
    bijgewerkt_op timestamptz NOT NULL,
    terminaal_op timestamptz,
    gewist_op timestamptz,
    FOREIGN KEY (dv_id, berichttype) REFERENCES nmc.berichttype (dv_id, code),
    -- A reason belongs to exactly the terminal failures (SPEC §4).
    CONSTRAINT notificatie_reden_past CHECK (
        CASE status
            WHEN 'niet-bezorgbaar' THEN reden IN ('onbereikbaar', 'geen-contactgegevens')
            WHEN 'technisch-mislukt' THEN reden = 'technisch'
            WHEN 'verlopen' THEN reden = 'verlopen'
            WHEN 'geannuleerd' THEN reden = 'geannuleerd'
            ELSE reden IS NULL
        END
    ),
    -- The wrapped key goes (erasure) but never comes back without its KEK id.
    CONSTRAINT notificatie_sleutel_met_kek CHECK (sleutel_gewrapt IS NULL OR kek_id IS NOT NULL)
);
COMMENT ON TABLE nmc.notificatie IS
'One row per accepted notification; status is a projection kept in step with the event '
'log by nmc.transition_notificatie (the only writer, guarded by triggers). Recipient and '
'personalisation are AES-256-GCM ciphertext under a per-notification data key, wrapped '
'by a KEK; erasure destroys the wrapped key (wissen task, 7 days after the terminal '
'status). Retention: deleted with its attempts after the delivery-proof retention '
'(1 year, config).';
COMMENT ON COLUMN nmc.notificatie.versie IS
'Raised by exactly one per transition; equals the sequence of the latest event.';
COMMENT ON COLUMN nmc.notificatie.dvref_hmac IS
'HMAC-SHA256 over (dv_id, dvRef) with the dvref pepper of pepper_versie. The DV''s '
'reference itself is never stored.';
COMMENT ON COLUMN nmc.notificatie.payload_hash IS
'SHA-256 of the canonical request, for idempotent replays (same dvRef, same payload).';
COMMENT ON COLUMN nmc.notificatie.dienst IS
'The DV''s service name (dienstNaam) the Profielservice uses to pick the e-mail address.';
COMMENT ON COLUMN nmc.notificatie.ontvanger_versleuteld IS
'Ciphertext of the e-mail address (decentraal) or the identifying number (centraal).';
COMMENT ON COLUMN nmc.notificatie.sleutel_gewrapt IS
'The data key wrapped by KEK kek_id; NULL after erasure (the ciphertext is then unreadable).';

CREATE UNIQUE INDEX notificatie_dvref ON nmc.notificatie (dv_id, dvref_hmac);
COMMENT ON INDEX nmc.notificatie_dvref IS
'Idempotency and dvRef search: one notification per (DV, dvRef) within the retention.';
CREATE INDEX notificatie_open_status ON nmc.notificatie (status)
WHERE terminaal_op IS NULL;
CREATE INDEX notificatie_terminaal_op ON nmc.notificatie (terminaal_op)
WHERE terminaal_op IS NOT NULL;

CREATE TABLE nmc.poging (
    id uuid PRIMARY KEY,
    notificatie_id uuid NOT NULL REFERENCES nmc.notificatie (id) ON DELETE CASCADE,
    nummer smallint NOT NULL CHECK (nummer IN (1, 2)),
    status nmc.poging_status NOT NULL DEFAULT 'gepland',
    notifynl_id uuid,
    duplicaat_ids uuid[] NOT NULL DEFAULT '{}',
    claim_epoch integer NOT NULL DEFAULT 0 CHECK (claim_epoch >= 0),
    contactgegeven_id uuid,
    verzonden_op timestamptz,
    afgerond_op timestamptz,
    laatste_receipt_status text CHECK (pg_catalog.length(laatste_receipt_status) <= 50),
    laatste_receipt_op timestamptz,
    aangemaakt_op timestamptz NOT NULL,
    UNIQUE (notificatie_id, nummer)
);
COMMENT ON TABLE nmc.poging IS
'One row per send attempt (at most two). id is the NotifyNL reference. Source timestamps '
'(sent_at, completed_at) from NotifyNL are the delivery proof. Retention: deleted with '
'its notification.';
COMMENT ON COLUMN nmc.poging.duplicaat_ids IS
'Other NotifyNL ids seen for this attempt (a resend after a lost commit); receipts on '
'them count as receipts on this attempt.';
COMMENT ON COLUMN nmc.poging.contactgegeven_id IS
'Id of the Profielservice contactgegeven used (centraal); never the address itself.';
COMMENT ON COLUMN nmc.poging.laatste_receipt_op IS
'completed_at (capped at the NMC clock) of the newest receipt applied: older receipts '
'never override it.';
CREATE UNIQUE INDEX poging_notifynl_id ON nmc.poging (notifynl_id);
