-- The operators' view: the daily report on a DV's beheer channel (ADR 0024: unacknowledged
-- terminal statuses past the DV's term, an unusually high share of geen-contactgegevens)
-- and the validation of a DV's webhook before it is used (the NL GOV CloudEvents webhook
-- handshake, no private targets unless allowed).

-- The report is a task kind of its own: one open task per DV with a beheer channel, planned
-- and re-planned like the maintenance jobs (functions/beheer/rapportage.sql). A value added
-- here cannot be used before this migration commits, so no index or SQL-language body names
-- it: the task's payload names its job ({"werk": "beheerrapport"}), and the index that keeps
-- one open task per DV is on that.
ALTER TYPE nmc.taak_soort ADD VALUE IF NOT EXISTS 'beheerrapport';

CREATE UNIQUE INDEX taak_uniek_beheerrapport ON nmc.taak (dv_id)
WHERE staat IN ('open', 'claimed') AND payload ->> 'werk' = 'beheerrapport';

-- The NMC's own template for reports sent by e-mail, configured like a berichttype: the
-- NotifyNL template and the Notify service it is sent through (whose key and budget it
-- uses); and the local time of day the reports go out.
ALTER TABLE nmc.instellingen
ADD COLUMN beheerrapport_template_id uuid,
ADD COLUMN beheerrapport_notify_service text NOT NULL DEFAULT 'standaard'
CHECK (pg_catalog.length(beheerrapport_notify_service) BETWEEN 1 AND 100),
ADD COLUMN beheerrapport_tijd time NOT NULL DEFAULT '07:00',
ADD COLUMN beheerrapport_max_ids integer NOT NULL DEFAULT 100
CHECK (beheerrapport_max_ids BETWEEN 0 AND 1000);
COMMENT ON COLUMN nmc.instellingen.beheerrapport_template_id IS
'The NotifyNL template of the daily beheer report sent to a mailto: beheer channel (NULL: '
'not configured; such a report waits, deferred, until it is).';
COMMENT ON COLUMN nmc.instellingen.beheerrapport_notify_service IS
'The Notify service the beheer report e-mail is sent through (its key, its send budget). '
'Best a service of its own whose NotifyNL callback is not the NMC''s: a receipt for a '
'report matches no attempt and would be counted as an unknown reference.';
COMMENT ON COLUMN nmc.instellingen.beheerrapport_tijd IS
'The time of day (Europe/Amsterdam) the daily beheer reports become due.';
COMMENT ON COLUMN nmc.instellingen.beheerrapport_max_ids IS
'How many notification ids (oldest first) a beheer report lists at most; the count is '
'always given.';

CREATE TABLE nmc.beheerrapport (
    -- The report's identity: the NotifyNL reference of its e-mail and the id of its
    -- https: call, so a report sent again after a lost answer is recognised as the same.
    id uuid PRIMARY KEY,
    dv_id integer NOT NULL REFERENCES nmc.dienstverlener (dv_id),
    dag date NOT NULL,
    kanaal text NOT NULL CHECK (kanaal IN ('mailto', 'https')),
    onbevestigd integer NOT NULL CHECK (onbevestigd >= 0),
    onbevestigd_afgekapt boolean NOT NULL,
    geen_contactgegevens_aandeel double precision,
    geen_contactgegevens_drempel double precision NOT NULL,
    boven_drempel boolean NOT NULL,
    uitkomst text CHECK (uitkomst IN (
        'verzonden',       -- sent: NotifyNL accepted the e-mail, or the https: call got a 2xx
        'niets-te-melden'  -- nothing overdue and the share not above the threshold: not sent
    )),
    notifynl_id uuid,
    aangemaakt_op timestamptz NOT NULL,
    afgerond_op timestamptz,
    UNIQUE (dv_id, dag),
    CHECK ((uitkomst IS NULL) = (afgerond_op IS NULL))
);
COMMENT ON TABLE nmc.beheerrapport IS
'The daily beheer reports per DV and day (Europe/Amsterdam), at most one per DV and day: '
'the channel kind (never its address), the counts reported (unacknowledged terminal '
'statuses past the DV''s bevestigingstermijn, the share of geen-contactgegevens and its '
'threshold) and whether it went out. No notification ids and no personal data. Retention: '
'rows older than the delivery-proof retention are deleted when the DV''s next report is '
'finished.';
COMMENT ON COLUMN nmc.beheerrapport.uitkomst IS
'NULL while the day''s report is under way (its task claimed, deferred or failed).';

CREATE TABLE nmc.webhookvalidatie (
    dv_id integer PRIMARY KEY REFERENCES nmc.dienstverlener (dv_id),
    url text NOT NULL,
    uitkomst text NOT NULL CHECK (uitkomst IN (
        'geldig',           -- the handshake answered with WebHook-Allowed-Origin
        'bestaand',         -- in use before webhooks were validated (this migration)
        'adres-geweigerd',  -- resolves to a loopback, link-local or private address
        'geen-handshake',   -- answered, but not with the handshake
        'onbereikbaar',     -- no answer (connection error, timeout, name not found)
        'ongeldige-url'     -- not an http(s) URL with a host
    )),
    detail text CHECK (pg_catalog.length(detail) <= 200),
    gevalideerd_op timestamptz NOT NULL
);
COMMENT ON TABLE nmc.webhookvalidatie IS
'Per DV the latest validation of its webhook URL (`nmc admin dv apply`): the URL validated, '
'the outcome (geldig and bestaand allow delivery, and only for that same URL), a short '
'error class and when. A webhook is not used until its current URL is validated. Kept '
'while the DV exists.';

-- Webhooks in use before this release keep working: they are recorded as validated for
-- their current URL (a new URL is validated when it is applied).
INSERT INTO nmc.webhookvalidatie (dv_id, url, uitkomst, detail, gevalideerd_op)
SELECT
    d.dv_id,
    d.webhook_url,
    'bestaand' AS uitkomst,
    NULL AS detail,
    pg_catalog.now() AS gevalideerd_op
FROM nmc.dienstverlener AS d
WHERE d.webhook_url IS NOT NULL;
