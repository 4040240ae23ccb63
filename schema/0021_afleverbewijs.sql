-- The delivery proof (afleverbewijs, SPEC §7): what it rests on beside the event log and
-- the attempts. A processed receipt task is cleaned up after a short term, and a
-- settlement task with it; the proof must show every receipt (source time, arrival, and
-- whether it changed the outcome) and the settlement for as long as the notification is
-- kept. So both are written down here, once, by the functions that judge them.

CREATE TABLE nmc.receiptgeschiedenis (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notificatie_id uuid NOT NULL REFERENCES nmc.notificatie (id) ON DELETE CASCADE,
    -- Not a foreign key: the attempt goes with its notification, and that key is above.
    poging_id uuid NOT NULL,
    bron text NOT NULL CHECK (bron IN ('callback', 'navraag')),
    notifynl_id uuid,
    status text NOT NULL CHECK (pg_catalog.length(status) BETWEEN 1 AND 50),
    completed_at timestamptz,
    sent_at timestamptz,
    template_id uuid,
    template_versie integer CHECK (template_versie >= 0),
    ontvangen_op timestamptz NOT NULL,
    verwerkt_op timestamptz NOT NULL,
    resultaat text NOT NULL CHECK (pg_catalog.length(resultaat) BETWEEN 1 AND 50),
    toegepast boolean NOT NULL,
    na_eindstatus boolean NOT NULL,
    notificatie_versie integer NOT NULL CHECK (notificatie_versie >= 1)
);
COMMENT ON TABLE nmc.receiptgeschiedenis IS
'Every NotifyNL outcome judged on an attempt, one row per judgement: a receipt from the '
'callback (bron callback) or a reconciliation answer (bron navraag), with NotifyNL''s '
'status, id and source times, the template from the receipt, when it arrived and was '
'judged, and what it did. Written by nmc.apply_receipt_v2 in the judging transaction; '
'append only. Holds no e-mail address, identifying number or DV reference (pseudonymous, '
'like the event log). Read by the delivery proof and the history '
'(nmc.get_afleverbewijs, nmc.get_geschiedenis). Retention: deleted with its notification '
'(ON DELETE CASCADE from nmc.delete_expired), after the delivery-proof retention '
'(instellingen.bewijs_bewaartermijn, 1 year).';
COMMENT ON COLUMN nmc.receiptgeschiedenis.status IS
'The raw NotifyNL status (at most 50 characters, as on the attempt), also one the NMC does '
'not know.';
COMMENT ON COLUMN nmc.receiptgeschiedenis.completed_at IS
'completed_at as NotifyNL sent it: the source time of the delivery proof (not capped).';
COMMENT ON COLUMN nmc.receiptgeschiedenis.ontvangen_op IS
'When the NMC received it (NMC clock): the callback''s store, or the reconciliation answer.';
COMMENT ON COLUMN nmc.receiptgeschiedenis.resultaat IS
'What nmc.apply_receipt answered (bezorgd, herverzenden, niet-bezorgbaar, vastgelegd, '
'ouder, niet-definitief, onbekende-status, ...).';
COMMENT ON COLUMN nmc.receiptgeschiedenis.toegepast IS
'True when it changed the outcome: the attempt''s status, completed_at or applied receipt, '
'or the notification''s status. False: only recorded.';
COMMENT ON COLUMN nmc.receiptgeschiedenis.na_eindstatus IS
'Judged while the notification was already terminal, and changed nothing: not part of the '
'final proof (which stays the same at every later request), shown in the history.';
COMMENT ON COLUMN nmc.receiptgeschiedenis.notificatie_versie IS
'The notification''s version after the judgement.';

CREATE INDEX receiptgeschiedenis_notificatie
ON nmc.receiptgeschiedenis (notificatie_id, id);

CREATE TABLE nmc.vaststelling (
    notificatie_id uuid PRIMARY KEY REFERENCES nmc.notificatie (id) ON DELETE CASCADE,
    poging_id uuid NOT NULL,
    completed_at timestamptz NOT NULL,
    termijn interval NOT NULL,
    callback_venster interval NOT NULL,
    gepland_op timestamptz NOT NULL,
    vastgesteld_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.vaststelling IS
'The settlement of a delivered notification (bezorgd -> definitief-bezorgd): the attempt it '
'rested on and its completed_at, the settlement term and callback window, when the '
'settlement task was due and when it settled. Written by nmc.process_vaststellingen in '
'the settling transaction; the settlement task itself is cleaned up after a short term. '
'Read by the delivery proof. Retention: deleted with its notification (ON DELETE CASCADE '
'from nmc.delete_expired), after the delivery-proof retention (1 year).';
