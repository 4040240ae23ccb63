-- Tasks: every side effect still to do, with its timer (due) and its lease.

CREATE TABLE nmc.taak (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    soort nmc.taak_soort NOT NULL,
    -- Not a foreign key: DVs are never deleted, and a check per task on the hot path buys
    -- nothing (the notification's own key already ties it to its DV).
    dv_id integer,
    notificatie_id uuid REFERENCES nmc.notificatie (id) ON DELETE CASCADE,
    poging_id uuid REFERENCES nmc.poging (id) ON DELETE CASCADE,
    due timestamptz NOT NULL,
    staat nmc.taak_staat NOT NULL DEFAULT 'open',
    lease_eigenaar text CHECK (pg_catalog.length(lease_eigenaar) <= 200),
    lease_tot timestamptz,
    claim_epoch integer NOT NULL DEFAULT 0 CHECK (claim_epoch >= 0),
    pogingen integer NOT NULL DEFAULT 0 CHECK (pogingen >= 0),
    uitstellen integer NOT NULL DEFAULT 0 CHECK (uitstellen >= 0),
    laatste_fout text CHECK (pg_catalog.length(laatste_fout) <= 500),
    trace_id text CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    payload jsonb,
    receipt_completed_at timestamptz,
    aangemaakt_op timestamptz NOT NULL,
    afgerond_op timestamptz,
    CONSTRAINT taak_lease_bij_claim CHECK ((staat = 'claimed') = (lease_tot IS NOT NULL)),
    CONSTRAINT taak_receipt_op_poging CHECK (
        soort <> 'receipt' OR (poging_id IS NOT NULL AND payload IS NOT NULL)
    )
);
COMMENT ON TABLE nmc.taak IS
'Side effects to do (SPEC §5): kind, owner DV, the notification or attempt concerned, '
'due (the timer), lease owner and lease end, claim epoch (fencing), attempts (internal '
'failures only), deferrals (outages; for the backoff), state. Receipt tasks carry the '
'stored receipt (without the e-mail address). Retention: done tasks are removed by the '
'maintenance task after a short term; mislukt tasks stay until an operator acts.';
COMMENT ON COLUMN nmc.taak.pogingen IS
'Failures inside the NMC; after 5 the task is exhausted. Outages do not count.';
COMMENT ON COLUMN nmc.taak.uitstellen IS
'Deferrals after an outage of a called service; drives the growing backoff.';
COMMENT ON COLUMN nmc.taak.claim_epoch IS
'Raised by every claim; a commit carrying a lower epoch than the row''s is refused.';

-- Claims walk open tasks per (kind, DV) in due order.
CREATE INDEX taak_claim ON nmc.taak (soort, dv_id, due) WHERE staat = 'open';
-- Re-claims find leases that ran out.
CREATE INDEX taak_lease ON nmc.taak (soort, lease_tot) WHERE staat = 'claimed';
CREATE INDEX taak_notificatie ON nmc.taak (notificatie_id) WHERE notificatie_id IS NOT NULL;
CREATE INDEX taak_poging ON nmc.taak (poging_id) WHERE poging_id IS NOT NULL;
CREATE INDEX taak_mislukt ON nmc.taak (soort) WHERE staat = 'mislukt';
-- No double planning: one open task per (notification, kind); receipts are outside it,
-- and reconciliation is per attempt (an answer concerns the attempt it asked about).
CREATE UNIQUE INDEX taak_uniek_open ON nmc.taak (notificatie_id, soort)
WHERE staat IN ('open', 'claimed') AND soort NOT IN ('receipt', 'reconciliëren')
AND notificatie_id IS NOT NULL;
CREATE UNIQUE INDEX taak_uniek_navraag ON nmc.taak (poging_id)
WHERE staat IN ('open', 'claimed') AND soort = 'reconciliëren';
-- A duplicate callback is a no-op: receipts are unique per (attempt, completed_at, status).
CREATE UNIQUE INDEX taak_receipt_uniek ON nmc.taak (
    poging_id, receipt_completed_at, (payload ->> 'status')
) NULLS NOT DISTINCT
WHERE soort = 'receipt';
-- One open webhook task per DV, and one open watchdog.
CREATE UNIQUE INDEX taak_uniek_terugkoppelen ON nmc.taak (dv_id)
WHERE staat IN ('open', 'claimed') AND soort = 'terugkoppelen';
CREATE UNIQUE INDEX taak_uniek_controle ON nmc.taak (soort)
WHERE staat IN ('open', 'claimed') AND soort = 'controle';

CREATE TABLE nmc.notify_service (
    code text PRIMARY KEY CHECK (pg_catalog.length(code) BETWEEN 1 AND 100),
    budget_per_minuut integer NOT NULL DEFAULT 1400 CHECK (budget_per_minuut > 0),
    navraag_aandeel numeric NOT NULL DEFAULT 0.1 CHECK (navraag_aandeel BETWEEN 0 AND 0.5)
);
COMMENT ON TABLE nmc.notify_service IS
'The NotifyNL services the NMC sends through, with the send budget per minute (below '
'NotifyNL''s rate limit) and the fixed share of it reserved for reconciliation. A '
'berichttype whose service is not listed uses the defaults. Kept while in use.';

CREATE TABLE nmc.verzendbudget (
    notify_service text NOT NULL,
    venster_start timestamptz NOT NULL,
    soort text NOT NULL CHECK (soort IN ('verzenden', 'navraag')),
    gebruikt integer NOT NULL CHECK (gebruikt >= 0),
    laatst_toegekend integer NOT NULL CHECK (laatst_toegekend >= 0),
    PRIMARY KEY (notify_service, venster_start, soort)
);
COMMENT ON TABLE nmc.verzendbudget IS
'Tokens used per NotifyNL service per one-minute window, for sends and for '
'reconciliation (its fixed share). Taken with INSERT … ON CONFLICT DO UPDATE … RETURNING; '
'unused tokens expire with the window. Retention: windows older than a day are removed '
'by maintenance.';
COMMENT ON COLUMN nmc.verzendbudget.laatst_toegekend IS
'Tokens granted by the latest take, so the upsert can return the grant in one statement.';

CREATE TABLE nmc.quotumgebruik (
    dv_id integer NOT NULL REFERENCES nmc.dienstverlener (dv_id),
    venster text NOT NULL CHECK (venster IN ('minuut', 'dag')),
    venster_start timestamptz NOT NULL,
    deel smallint NOT NULL DEFAULT 0 CHECK (deel BETWEEN 0 AND 15),
    aantal integer NOT NULL CHECK (aantal >= 0),
    PRIMARY KEY (dv_id, venster, venster_start, deel)
);
COMMENT ON TABLE nmc.quotumgebruik IS
'Notifications accepted per DV per minute and per day, for the intake quota (429), in up '
'to 16 counter rows (deel) per window so concurrent intakes of one DV do not queue on one '
'row lock until commit. Retention: windows older than two days are removed by maintenance.';

CREATE TABLE nmc.bevestiging (
    dv_id integer PRIMARY KEY REFERENCES nmc.dienstverlener (dv_id),
    epoch integer NOT NULL,
    xid xid8 NOT NULL,
    event_id bigint NOT NULL,
    bevestigd_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.bevestiging IS
'Per DV the feed cursor it acknowledged as processed, with the time. Only moves forward. '
'Kept while the DV exists.';

CREATE TABLE nmc.webhookpositie (
    dv_id integer PRIMARY KEY REFERENCES nmc.dienstverlener (dv_id),
    epoch integer NOT NULL,
    xid xid8 NOT NULL,
    event_id bigint NOT NULL,
    mislukt integer NOT NULL DEFAULT 0 CHECK (mislukt >= 0),
    gepauzeerd_tot timestamptz,
    uitgeschakeld boolean NOT NULL DEFAULT FALSE,
    bijgewerkt_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.webhookpositie IS
'Per DV the webhook delivery position (not an acknowledgement), consecutive failures and '
'pause. Kept while the DV has a webhook.';
